// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// sort and topk: ten.argsort is a stable stablehlo.sort of (x, iota) with NaN after numbers
// (before them when descending); values are gathered at the sorted positions. An integer
// argsort compares without the NaN terms.
func.func @main(%x: tensor<2x5xf32> {ember.input = "x"}, %n: tensor<6xi32> {ember.input = "n"}) -> (tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x2xf32>, tensor<2x2xi64>, tensor<6xi64>) {
  %0:2 = "torch.aten.sort"(%x) {dim = 1 : i64, descending = false} : (tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xi64>)
  %1:2 = "torch.aten.topk"(%x) {k = 2 : i64, dim = -1 : i64, largest = true, sorted = true} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi64>)
  %2 = "ten.argsort"(%n) {dim = 0 : i64, descending = true} : (tensor<6xi32>) -> tensor<6xi64>
  return %0#0, %0#1, %1#0, %1#1, %2 : tensor<2x5xf32>, tensor<2x5xi64>, tensor<2x2xf32>, tensor<2x2xi64>, tensor<6xi64>
}
