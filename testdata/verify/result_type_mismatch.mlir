// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> (tensor<2x4xf32>) {
  %0 = "torch.aten.mm"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32> loc("mm"("model.py":9:0))
  return %0 : tensor<2x4xf32>
}
