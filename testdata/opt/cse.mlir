// RUN: opt %s --passes=cse
// Equal pure ops merge; random ops never do.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "torch.aten.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "torch.aten.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "torch.aten.add.Tensor"(%0, %1) {alpha = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "torch.aten.add.Tensor"(%0, %1) {alpha = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "torch.aten.rand"() {size = array<i64: 2, 3>} : () -> tensor<2x3xf32>
  %5 = "torch.aten.rand"() {size = array<i64: 2, 3>} : () -> tensor<2x3xf32>
  return %2, %3, %4, %5 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
