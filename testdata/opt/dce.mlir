// RUN: opt %s --passes=dce
// Unused pure chains go; an unused random op stays (it advances the generator).
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "torch.aten.neg"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "torch.aten.rand"() {size = array<i64: 2, 3>} : () -> tensor<2x3xf32>
  %3 = "torch.aten.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}
