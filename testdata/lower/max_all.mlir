// RUN: opt %s --passes=torch-to-ten
// max/min of every element (torch.max(x) without a dim): a reduction over all dims to a scalar.
func.func @main(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<f32>, tensor<f32>, tensor<i64>) {
  %0 = "torch.aten.max"(%x) : (tensor<2x3xf32>) -> tensor<f32>
  %1 = "torch.aten.min"(%x) : (tensor<2x3xf32>) -> tensor<f32>
  %2 = "torch.aten.max"(%i) : (tensor<4xi64>) -> tensor<i64>
  return %0, %1, %2 : tensor<f32>, tensor<f32>, tensor<i64>
}
