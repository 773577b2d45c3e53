// RUN: opt %s --passes=torch-to-ten
// Ops without a ten lowering stay torch ops and the pass succeeds: scans, arg-reductions, values
// with indices, torch.gather (elementwise indices), random ops, math ten has no op for. Their operands and users are
// still lowered around them.
func.func @main(%x: tensor<2x3xf32>, %idx: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>, tensor<2xi64>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "torch.aten.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "torch.aten.cumsum"(%0) {dim = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "torch.aten.neg"(%1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "torch.aten.argmax"(%x) {dim = 1 : i64, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xi64>
  %4:2 = "torch.aten.max.dim"(%x) {dim = 1 : i64, keepdim = false} : (tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi64>)
  %5 = "torch.aten.gather"(%x, %idx) {dim = 1 : i64, sparse_grad = false} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  %6 = "torch.aten.rand"() {size = array<i64: 2, 3>} : () -> tensor<2x3xf32>
  %7 = "torch.aten.log2"(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %2, %3, %4#0, %4#1, %5, %7 : tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>, tensor<2xi64>, tensor<2x3xf32>, tensor<2x3xf32>
}
