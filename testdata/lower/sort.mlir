// RUN: opt %s --passes=torch-to-ten
// sort, sort.stable and topk: ten.argsort along the dim, then the values gathered at the sorted
// positions from the flattened input; topk keeps the first k positions (descending for largest).
func.func @main(%x: tensor<3x4xf32>, %i: tensor<5xi64>) -> (tensor<3x4xf32>, tensor<3x4xi64>, tensor<5xi64>, tensor<5xi64>, tensor<2x4xf32>, tensor<2x4xi64>) {
  %0:2 = "torch.aten.sort"(%x) {dim = 0 : i64, descending = true} : (tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  %1:2 = "torch.aten.sort.stable"(%i) {stable = true, dim = -1 : i64, descending = false} : (tensor<5xi64>) -> (tensor<5xi64>, tensor<5xi64>)
  %2:2 = "torch.aten.topk"(%x) {k = 2 : i64, dim = 0 : i64, largest = false, sorted = true} : (tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xi64>)
  return %0#0, %0#1, %1#0, %1#1, %2#0, %2#1 : tensor<3x4xf32>, tensor<3x4xi64>, tensor<5xi64>, tensor<5xi64>, tensor<2x4xf32>, tensor<2x4xi64>
}
