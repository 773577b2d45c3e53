// RUN: opt %s --passes=torch-to-ten
// slice_scatter, select_scatter and diagonal_scatter write src over the view slice/select/
// diagonal read: one ten.scatter (kind set) at the view's row-major positions, built from
// iotas over src's shape (start + i*step along the sliced dim; the selected index; the diagonal
// l + offset shifts along dim1/dim2).
func.func @main(%x: tensor<4x6xf32>, %s: tensor<4x2xf32>, %r: tensor<6xf32>, %d: tensor<4xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %0 = "torch.aten.slice_scatter"(%x, %s) {dim = 1 : i64, end = 6 : i64, start = 1 : i64, step = 3 : i64} : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x6xf32> loc("slice_scatter"("model.py":9:0))
  %1 = "torch.aten.select_scatter"(%x, %r) {dim = 0 : i64, index = -1 : i64} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %2 = "torch.aten.diagonal_scatter"(%x, %d) {dim1 = 1 : i64, dim2 = 0 : i64, offset = -2 : i64} : (tensor<4x6xf32>, tensor<4xf32>) -> tensor<4x6xf32>
  return %0, %1, %2 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}
