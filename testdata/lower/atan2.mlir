// RUN: opt %s --passes=torch-to-ten
// atan2 is ten.atan2 on operands broadcast and converted to the float result dtype (integer
// inputs give float32).
func.func @main(%y: tensor<2x3xf32>, %x: tensor<3xf32>, %i: tensor<3xi64>) -> (tensor<2x3xf32>, tensor<3xf32>) {
  %0 = "torch.aten.atan2"(%y, %x) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("atan2"("model.py":12:0))
  %1 = "torch.aten.atan2"(%i, %i) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xf32>
  return %0, %1 : tensor<2x3xf32>, tensor<3xf32>
}
