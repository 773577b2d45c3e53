// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten.cumsum (ten.cumprod) is a reduce_window sum (product) over a window the size of the dim,
// padded low by size-1.
// ten.windows stacks kernel-size strided slices per window dim ([.., K1, O1, K2, O2]) and
// transposes to [.., K1, K2, O1, O2].
func.func @main(%x: tensor<2x5xf32> {ember.input = "x"}, %i: tensor<4xi64> {ember.input = "i"}, %img: tensor<1x2x5x6xf32> {ember.input = "img"}) -> (tensor<2x5xf32>, tensor<4xi64>, tensor<2x3x3xf32>, tensor<1x2x3x2x2x2xf32>, tensor<2x1x5xf32>, tensor<2x5xf32>) {
  %0 = "ten.cumsum"(%x) {dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %1 = "ten.cumsum"(%i) {dim = 0 : i64} : (tensor<4xi64>) -> tensor<4xi64>
  %2 = "ten.windows"(%x) {dilation = array<i64: 1>, kernel = array<i64: 3>, stride = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<2x3x3xf32>
  %3 = "ten.windows"(%img) {dilation = array<i64: 1, 2>, kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>} : (tensor<1x2x5x6xf32>) -> tensor<1x2x3x2x2x2xf32>
  %4 = "ten.windows"(%x) {dilation = array<i64: 1>, kernel = array<i64: 1>, stride = array<i64: 1>} : (tensor<2x5xf32>) -> tensor<2x1x5xf32>
  %5 = "ten.cumprod"(%x) {dim = 0 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x5xf32>, tensor<4xi64>, tensor<2x3x3xf32>, tensor<1x2x3x2x2x2xf32>, tensor<2x1x5xf32>, tensor<2x5xf32>
}
