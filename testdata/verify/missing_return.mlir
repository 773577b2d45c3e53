// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
}
