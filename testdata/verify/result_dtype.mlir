// RUN: opt %s
func.func @main(%a: tensor<2x3xi64>) -> (tensor<2x3xi64>) {
  %0 = "torch.aten.div.Scalar"(%a) {other = 2 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}
