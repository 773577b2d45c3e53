// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.frobnicate"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("frob"("model.py":3:0))
  return %0 : tensor<2x3xf32>
}
