// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.add.Tensor"(%a, %b) {alpha = 1 : i64} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
