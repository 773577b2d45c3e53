// RUN: opt %s --passes=torch-to-ten
// Transposed convolution has no lowering yet: an error naming the node and the user's line.
func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> {
  %0 = "torch.aten.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = true} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> loc("conv_transpose"("model.py":7:0))
  return %0 : tensor<1x2x7x7xf32>
}
