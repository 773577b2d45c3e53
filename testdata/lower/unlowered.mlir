// RUN: opt %s --passes=torch-to-ten
// Ops without a ten lowering stay torch ops and the pass succeeds: sorts, top-k, bool-mask
// (data-dependent) index_put, randperm. Their operands and users
// are still lowered around them.
func.func @main(%x: tensor<2x3xf32>, %idx: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x3xf32>, tensor<3xi64>) {
  %0 = "torch.aten.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1:2 = "torch.aten.sort"(%0) {dim = 1 : i64, descending = false} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>)
  %2 = "torch.aten.neg"(%1#0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3:2 = "torch.aten.topk"(%x) {k = 2 : i64, dim = 1 : i64, largest = true, sorted = true} : (tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %b = "torch.aten.gt.Scalar"(%x) {other = 0.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %5 = "torch.aten.index_put"(%x, %b, %x) {accumulate = true, indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "torch.aten.randperm"() {n = 3 : i64} : () -> tensor<3xi64>
  %7 = "torch.aten.neg"(%6) : (tensor<3xi64>) -> tensor<3xi64>
  return %2, %1#1, %3#0, %3#1, %5, %7 : tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x2xf32>, tensor<2x2xi64>, tensor<2x3xf32>, tensor<3xi64>
}
