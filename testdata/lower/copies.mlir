// RUN: opt %s --passes=torch-to-ten
// Copy variants of views: as_strided_copy (as as_strided), narrow_copy (a slice of `length`
// from `start`, negative from the end), unbind_copy (each slice of the dim, reshaped without
// it); exp2 as pow(2, x).
func.func @main(%x: tensor<3x3xf32>, %v: tensor<6xf32>) -> (tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6xf32>) {
  %0 = "torch.aten.as_strided_copy"(%x) {size = array<i64: 2, 2>, storage_offset = 1 : i64, stride = array<i64: 1, 2>} : (tensor<3x3xf32>) -> tensor<2x2xf32> loc("as_strided_copy"("model.py":3:0))
  %1 = "torch.aten.narrow_copy"(%x) {dim = 1 : i64, start = -2 : i64, length = 2 : i64} : (tensor<3x3xf32>) -> tensor<3x2xf32>
  %2:3 = "torch.aten.unbind_copy.int"(%x) {dim = 1 : i64} : (tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %3 = "torch.aten.exp2"(%v) : (tensor<6xf32>) -> tensor<6xf32>
  return %0, %1, %2#0, %2#1, %2#2, %3 : tensor<2x2xf32>, tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<6xf32>
}
