// RUN: opt %s --passes=torch-to-ten
// slice_scatter, select_scatter and diagonal_scatter write src over the view slice/select/
// diagonal read: one ten.scatter (kind set) at the view's row-major positions, built from
// iotas over src's shape (start + i*step along the sliced dim; the selected index; the diagonal
// l + offset shifts along dim1/dim2). A slice_scatter with step 1 along a static dim is src
// padded out along it and selected where the slice lies instead, so other dims may be symbolic;
// one over the whole of self is src; along a symbolic dim, when what the slice leaves after it
// is static (T5's shift right: y[:, 1:] = x[:, :-1]).
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
func.func @main(%x: tensor<4x6xf32>, %s: tensor<4x2xf32>, %r: tensor<6xf32>, %d: tensor<4xf32>, %z: tensor<?x6xf32, #ember.dims<["s0", 6]>>, %t: tensor<?x4xf16, #ember.dims<["s0", 4]>>, %x2: tensor<?x6xf32, #ember.dims<["s0", 6]>>, %q: tensor<2x?xf32, #ember.dims<[2, "s0"]>>, %qs: tensor<2x?xf32, #ember.dims<[2, "s0 - 1"]>>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<2x?xf32, #ember.dims<[2, "s0"]>>) {
  %0 = "torch.aten.slice_scatter"(%x, %s) {dim = 1 : i64, end = 6 : i64, start = 1 : i64, step = 3 : i64} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x6xf32> loc("slice_scatter"("model.py":9:0))
  %1 = "torch.aten.select_scatter"(%x, %r) {dim = 0 : i64, index = -1 : i64} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = "torch.aten.diagonal_scatter"(%x, %d) {dim1 = 1 : i64, dim2 = 0 : i64, offset = -2 : i64} : (tensor<4x6xf32>, tensor<4xf32>) -> tensor<4x6xf32>
  %3 = "torch.aten.slice_scatter"(%z, %t) {dim = 1 : i64, end = 5 : i64, start = 1 : i64, step = 1 : i64} : (tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<?x4xf16, #ember.dims<["s0", 4]>>) -> tensor<?x6xf32, #ember.dims<["s0", 6]>>
  %4 = "torch.aten.slice_scatter"(%x2, %z) {dim = 0 : i64, end = 9223372036854775807 : i64, start = 0 : i64, step = 1 : i64} : (tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<?x6xf32, #ember.dims<["s0", 6]>>) -> tensor<?x6xf32, #ember.dims<["s0", 6]>>
  %5 = "torch.aten.slice_scatter"(%q, %qs) {dim = 1 : i64, end = 9223372036854775807 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x?xf32, #ember.dims<[2, "s0"]>>, tensor<2x?xf32, #ember.dims<[2, "s0 - 1"]>>) -> tensor<2x?xf32, #ember.dims<[2, "s0"]>>
  return %0, %1, %2, %3, %4, %5 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<2x?xf32, #ember.dims<[2, "s0"]>>
}
}
