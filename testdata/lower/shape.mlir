// RUN: opt %s --passes=torch-to-ten
// Layout ops take their result shapes from the torch result types, so symbolic sizes flow
// through: views become ten.reshape, permute/transpose ten.transpose, expand a right-aligned
// ten.broadcast, slices ten.slice with normalized starts, select a slice plus a reshape.
module attributes {ember.symbols = {s0 = array<i64: 8, 64>}} {
  func.func @main(%x: tensor<2x3x4xf32>, %y: tensor<2x1x4xf32>, %d: tensor<?x64xf32, #ember.dims<["s0", 64]>>, %xi: tensor<2x3x4xi64>, %e: tensor<0xf32>) -> (tensor<?x16xf32, #ember.dims<["4*s0", 16]>>, tensor<6x4xf32>, tensor<24xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>, tensor<2x3x4x1xf32>, tensor<2x4xf32>, tensor<3x2x5x4xf32>, tensor<2x3x2xf32>, tensor<2x2x4xf32>, tensor<2x3x3xf32>, tensor<4x64xf32>, tensor<2x4xf32>, tensor<64xf32>, tensor<?x16xf32, #ember.dims<["s0", 16]>>, tensor<?x48xf32, #ember.dims<["s0", 48]>>, tensor<2x3x8xf32>, tensor<2x2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x2x3x4xf32>) {
    %0 = "torch.aten.view"(%d) {size = array<i64: -1, 16>} : (tensor<?x64xf32, #ember.dims<["s0", 64]>>) -> tensor<?x16xf32, #ember.dims<["4*s0", 16]>> loc("view"("model.py":4:0))
    %1 = "torch.aten.reshape"(%x) {shape = array<i64: 6, -1>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %2 = "torch.aten._unsafe_view"(%x) {size = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
    %3 = "torch.aten.permute"(%x) {dims = array<i64: -1, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    // the identity permutation is nothing
    %4 = "torch.aten.permute"(%x) {dims = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %5 = "torch.aten.transpose.int"(%x) {dim0 = 0 : i64, dim1 = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
    %6 = "torch.aten.unsqueeze"(%x) {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
    %7 = "torch.aten.squeeze.dims"(%y) {dim = array<i64: 1>} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
    // new leading dim 3, -1 keeps 2, 1 -> 5
    %8 = "torch.aten.expand"(%y) {size = array<i64: 3, -1, 5, 4>, implicit = false} : (tensor<2x1x4xf32>) -> tensor<3x2x5x4xf32>
    // x[:, :, 1::2] (end = INT64_MAX)
    %9 = "torch.aten.slice.Tensor"(%x) {dim = 2 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
    // x[:, -2:] (end None)
    %10 = "torch.aten.slice.Tensor"(%x) {dim = 1 : i64, start = -2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
    // x[..., :-1]
    %11 = "torch.aten.slice.Tensor"(%x) {dim = -1 : i64, start = 0 : i64, end = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
    // d[-4:] on a symbolic dim starts at s0 - 4
    %12 = "torch.aten.slice.Tensor"(%d) {dim = 0 : i64, start = -4 : i64} : (tensor<?x64xf32, #ember.dims<["s0", 64]>>) -> tensor<4x64xf32>
    %13 = "torch.aten.select.int"(%x) {dim = 1 : i64, index = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    %14 = "torch.aten.select.int"(%d) {dim = 0 : i64, index = 0 : i64} : (tensor<?x64xf32, #ember.dims<["s0", 64]>>) -> tensor<64xf32>
    %15:2 = "torch.aten.split_with_sizes"(%d) {dim = 1 : i64, split_sizes = array<i64: 16, 48>} : (tensor<?x64xf32, #ember.dims<["s0", 64]>>) -> (tensor<?x16xf32, #ember.dims<["s0", 16]>>, tensor<?x48xf32, #ember.dims<["s0", 48]>>)
    // cat promotes to f32 and skips the legacy empty 1-D input
    %16 = "torch.aten.cat"(%x, %e, %xi) {dim = -1 : i64} : (tensor<2x3x4xf32>, tensor<0xf32>, tensor<2x3x4xi64>) -> tensor<2x3x8xf32>
    %17 = "torch.aten.stack"(%x, %x) {dim = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x2x3x4xf32>
    %18 = "torch.aten.flip"(%x) {dims = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %19 = "torch.aten.repeat"(%y) {repeats = array<i64: 2, 1, 3, 1>} : (tensor<2x1x4xf32>) -> tensor<2x2x3x4xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15#0, %15#1, %16, %17, %18, %19 : tensor<?x16xf32, #ember.dims<["4*s0", 16]>>, tensor<6x4xf32>, tensor<24xf32>, tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<4x3x2xf32>, tensor<2x3x4x1xf32>, tensor<2x4xf32>, tensor<3x2x5x4xf32>, tensor<2x3x2xf32>, tensor<2x2x4xf32>, tensor<2x3x3xf32>, tensor<4x64xf32>, tensor<2x4xf32>, tensor<64xf32>, tensor<?x16xf32, #ember.dims<["s0", 16]>>, tensor<?x48xf32, #ember.dims<["s0", 48]>>, tensor<2x3x8xf32>, tensor<2x2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x2x3x4xf32>
  }
}
