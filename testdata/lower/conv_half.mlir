// RUN: opt %s --passes=torch-to-ten
// A bf16 convolution with a bias keeps its product's f32 accumulator (`ten.dot_general {dtype =
// f32}`) for the bias and rounds once, as torch's; without a bias the product rounds directly.
func.func @main(%x: tensor<1x2x5x5xbf16>, %w: tensor<3x2x3x3xbf16>, %b: tensor<3xbf16>) -> (tensor<1x3x3x3xbf16>, tensor<1x3x3x3xbf16>) {
  %0 = "torch.aten.convolution"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x2x5x5xbf16>, tensor<3x2x3x3xbf16>, tensor<3xbf16>) -> tensor<1x3x3x3xbf16> loc("conv"("model.py":3:0))
  %1 = "torch.aten.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x2x5x5xbf16>, tensor<3x2x3x3xbf16>) -> tensor<1x3x3x3xbf16> loc("conv_nobias"("model.py":4:0))
  return %0, %1 : tensor<1x3x3x3xbf16>, tensor<1x3x3x3xbf16>
}
