// RUN: opt %s --passes=torch-to-ten
// as_strided gathers from its operand's storage at storage_offset + sum_k i_k * stride_k. A
// function input's storage is its row-major elements (%0). A computed operand's storage is laid
// out as the export recorded it (ember.self_strides / ember.self_offset): contiguous (%2, how
// ConvNeXt's pooling restrides a mean), or a dense permutation, read through a transpose (%4).
// Without a recorded layout (%5), from a layout that is not dense (%6) or reading past the
// operand's elements (%7, a view of something larger), it stays a torch op.
func.func @main(%x: tensor<3x3xf32>) -> (tensor<2x2xf32>, tensor<1x3x1x1xf32>, tensor<3x3xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %0 = "torch.aten.as_strided"(%x) {size = array<i64: 2, 2>, storage_offset = 1 : i64, stride = array<i64: 1, 2>} : (tensor<3x3xf32>) -> tensor<2x2xf32> loc("as_strided"("model.py":11:0))
  %1 = "torch.aten.mean.dim"(%x) {dim = array<i64: 1>, keepdim = true} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %m = "torch.aten.view"(%1) {size = array<i64: 1, 3, 1, 1>} : (tensor<3x1xf32>) -> tensor<1x3x1x1xf32>
  %2 = "torch.aten.as_strided"(%m) {size = array<i64: 1, 3, 1, 1>, stride = array<i64: 3, 1, 3, 3>, ember.self_strides = array<i64: 3, 1, 1, 1>, ember.self_offset = 0 : i64} : (tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %3 = "torch.aten.neg"(%x) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %4 = "torch.aten.as_strided"(%3) {size = array<i64: 3, 3>, stride = array<i64: 3, 1>, ember.self_strides = array<i64: 1, 3>, ember.self_offset = 0 : i64} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %5 = "torch.aten.as_strided"(%3) {size = array<i64: 2, 2>, stride = array<i64: 3, 1>} : (tensor<3x3xf32>) -> tensor<2x2xf32>
  %6 = "torch.aten.as_strided"(%3) {size = array<i64: 2, 2>, stride = array<i64: 3, 1>, ember.self_strides = array<i64: 6, 1>, ember.self_offset = 0 : i64} : (tensor<3x3xf32>) -> tensor<2x2xf32>
  %7 = "torch.aten.as_strided"(%3) {size = array<i64: 2, 2>, storage_offset = 6 : i64, stride = array<i64: 3, 1>, ember.self_strides = array<i64: 3, 1>, ember.self_offset = 0 : i64} : (tensor<3x3xf32>) -> tensor<2x2xf32>
  return %0, %2, %4, %5, %6, %7 : tensor<2x2xf32>, tensor<1x3x1x1xf32>, tensor<3x3xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}
