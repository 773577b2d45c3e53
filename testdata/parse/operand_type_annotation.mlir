// RUN: opt %s
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>) {
  %0 = "torch.aten.relu"(%a) : (tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
