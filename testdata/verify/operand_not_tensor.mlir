// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>, %n: i64) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.add.Tensor"(%a, %n) {alpha = 1 : i64} : (tensor<2x3xf32>, i64) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
