// RUN: opt %s --passes=torch-to-ten
// constant_pad_nd: ten.pad with (low, high) per dim from the (before, after) pairs listed from the
// last dim backwards; negative amounts crop; the value takes the tensor's dtype.
module attributes {ember.symbols = {s0 = array<i64: 1, 8>}} {
  func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<3x4xi64>, %d: tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> (tensor<2x3x7xf32>, tensor<2x5x6xf32>, tensor<3x4xi64>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<2x3x4xf32>) {
    %0 = "torch.aten.constant_pad_nd"(%x) {pad = array<i64: 1, 2>, value = 0.0 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x7xf32> loc("pad"("model.py":2:0))
    %1 = "torch.aten.constant_pad_nd"(%x) {pad = array<i64: 1, 1, 2, 0>, value = -1.5 : f64} : (tensor<2x3x4xf32>) -> tensor<2x5x6xf32>
    // crop one in front, pad one behind, int value on int64
    %2 = "torch.aten.constant_pad_nd"(%i) {pad = array<i64: -1, 1>, value = 7 : i64} : (tensor<3x4xi64>) -> tensor<3x4xi64>
    %3 = "torch.aten.constant_pad_nd"(%d) {pad = array<i64: 1, 1>} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?x6xf32, #ember.dims<["s0", 6]>>
    // all zero: the input itself
    %4 = "torch.aten.constant_pad_nd"(%x) {pad = array<i64: 0, 0>, value = 1.0 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    return %0, %1, %2, %3, %4 : tensor<2x3x7xf32>, tensor<2x5x6xf32>, tensor<3x4xi64>, tensor<?x6xf32, #ember.dims<["s0", 6]>>, tensor<2x3x4xf32>
  }
}
