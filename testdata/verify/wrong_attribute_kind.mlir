// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>) {
  %0 = "torch.aten.permute"(%a) {dims = "1,0"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
