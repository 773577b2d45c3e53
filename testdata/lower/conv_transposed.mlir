// RUN: opt %s --passes=torch-to-ten
// A transposed convolution is a stride-1 convolution of the input dilated by `stride` (a size-1
// dim per spatial dim padded to `stride` and merged: each element followed by stride - 1
// zeros), padded by dilation * (kernel - 1) - padding before and that plus output_padding after
// (minus the stride - 1 trailing zeros the merge added; negative amounts crop), with the weight
// [Cin, Cout/g, K..] regrouped to [Cout, Cin/g, K..] and its spatial dims reversed.
func.func @main(%x: tensor<1x4x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>) -> (tensor<1x2x7x7xf32>, tensor<1x4x12x7xf32>) {
  %0 = "torch.aten.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = true} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x7x7xf32> loc("conv_transpose"("model.py":7:0))
  // stride (2, 2), padding (1, 2), output_padding (1, 0), dilation (2, 1), groups 2
  %1 = "torch.aten.convolution"(%x, %w, %b) {dilation = array<i64: 2, 1>, groups = 2 : i64, operandSegmentSizes = array<i64: 1, 1, 1>, output_padding = array<i64: 1, 0>, padding = array<i64: 1, 2>, stride = array<i64: 2, 2>, transposed = true} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x12x7xf32>
  return %0, %1 : tensor<1x2x7x7xf32>, tensor<1x4x12x7xf32>
}
