// RUN: opt %s --passes=torch-to-ten
// diagonal moves dim1 and dim2 last, merges them and takes a strided ten.slice: start `offset`
// (above the main diagonal) or `-offset * size(dim2)` (below), step size(dim2) + 1. An empty
// diagonal is an empty slice from 0.
func.func @main(%x: tensor<4x5xf32>, %t: tensor<2x3x4xf32>) -> (tensor<4xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<0xf32>) {
  %0 = "torch.aten.diagonal"(%x) {dim1 = 0 : i64, dim2 = 1 : i64, offset = 0 : i64} : (tensor<4x5xf32>) -> tensor<4xf32> loc("diagonal"("model.py":4:0))
  %1 = "torch.aten.diagonal"(%x) {dim1 = 0 : i64, dim2 = 1 : i64, offset = 2 : i64} : (tensor<4x5xf32>) -> tensor<3xf32>
  %2 = "torch.aten.diagonal"(%x) {dim1 = 0 : i64, dim2 = 1 : i64, offset = -2 : i64} : (tensor<4x5xf32>) -> tensor<2xf32>
  // dims 2 and 0 of [2, 3, 4]: transpose to [3, 4, 2], diagonal of the trailing [4, 2]
  %3 = "torch.aten.diagonal_copy"(%t) {dim1 = 2 : i64, dim2 = 0 : i64, offset = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  %4 = "torch.aten.diagonal"(%x) {dim1 = 0 : i64, dim2 = 1 : i64, offset = 7 : i64} : (tensor<4x5xf32>) -> tensor<0xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<3xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<0xf32>
}
