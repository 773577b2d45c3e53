// RUN: opt %s --passes=torch-to-ten
// unfold: windows of `size` every `step` along a dim, one gather from the row-major elements
// (window dim stride = step rows, new last dim stride = one row); negative dims count from the
// end; a scalar's one window is a reshape.
func.func @main(%x: tensor<9xf32>, %y: tensor<2x7x3xf32>, %s: tensor<f32>) -> (tensor<4x3xf32>, tensor<2x3x3x2xf32>, tensor<1xf32>) {
  %0 = "torch.aten.unfold"(%x) {dimension = 0 : i64, size = 3 : i64, step = 2 : i64} : (tensor<9xf32>) -> tensor<4x3xf32> loc("unfold"("model.py":3:0))
  %1 = "torch.aten.unfold"(%y) {dimension = -2 : i64, size = 2 : i64, step = 3 : i64} : (tensor<2x7x3xf32>) -> tensor<2x3x3x2xf32>
  %2 = "torch.aten.unfold"(%s) {dimension = 0 : i64, size = 1 : i64, step = 1 : i64} : (tensor<f32>) -> tensor<1xf32>
  return %0, %1, %2 : tensor<4x3xf32>, tensor<2x3x3x2xf32>, tensor<1xf32>
}
