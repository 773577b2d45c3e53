// RUN: opt %s --passes=torch-to-ten
// as_strided of a function input gathers from its flattened (row-major, dense) elements at
// storage_offset + sum_k i_k * stride_k. A computed operand, whose eager storage may be laid out
// differently, stays a torch op.
func.func @main(%x: tensor<3x3xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = "torch.aten.as_strided"(%x) {size = array<i64: 2, 2>, storage_offset = 1 : i64, stride = array<i64: 1, 2>} : (tensor<3x3xf32>) -> tensor<2x2xf32> loc("as_strided"("model.py":11:0))
  %1 = "torch.aten.neg"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %2 = "torch.aten.as_strided"(%1) {size = array<i64: 2, 2>, stride = array<i64: 3, 1>} : (tensor<3x3xf32>) -> tensor<2x2xf32>
  return %0, %2 : tensor<2x2xf32>, tensor<2x2xf32>
}
