// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Layout ops: broadcast_in_dim, reshape, transpose, slice (limit = start + (n-1)*step + 1),
// concatenate, reverse, pad (negative amounts crop). Identity layouts emit nothing.
func.func @main(%x: tensor<2x3xf32> {ember.input = "x"}, %v: tensor<3xf32> {ember.input = "v"}, %s: tensor<f32> {ember.input = "s"}) -> (tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>, tensor<1x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x3xf32>, tensor<0x3xf32>, tensor<3xf32>) {
  %0 = "ten.broadcast"(%v) {dims = array<i64: 2>, shape = array<i64: 4, 2, 3>} : (tensor<3xf32>) -> tensor<4x2x3xf32>
  %1 = "ten.broadcast"(%s) {dims = array<i64>, shape = array<i64: 2, 3>} : (tensor<f32>) -> tensor<2x3xf32>
  %2 = "ten.transpose"(%x) {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %3 = "ten.reshape"(%x) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %4 = "ten.slice"(%x) {shape = array<i64: 1, 2>, start = array<i64: 1, 0>, step = array<i64: 1, 2>} : (tensor<2x3xf32>) -> tensor<1x2xf32>
  %5 = "ten.slice"(%x) {shape = array<i64: 2, 3>, start = array<i64: 0, 0>, step = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "ten.reverse"(%x) {dims = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %7 = "ten.concat"(%x, %6) {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %8 = "ten.concat"(%x, %x) {dim = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %9 = "ten.transpose"(%x) {dims = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %10 = "ten.pad"(%x) {high = array<i64: 0, 2>, low = array<i64: 1, -1>, value = 0xFFF0000000000000 : f64} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  %11 = "ten.broadcast"(%x) {dims = array<i64: 0, 1>, shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = "ten.slice"(%x) {shape = array<i64: 0, 3>, start = array<i64: 1, 0>, step = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<0x3xf32>
  %13 = "ten.slice"(%x) {shape = array<i64: 1, 3>, start = array<i64: 1, 0>, step = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
  %14 = "ten.reshape"(%13) {shape = array<i64: 3>} : (tensor<1x3xf32>) -> tensor<3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %14 : tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>, tensor<1x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x6xf32>, tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x3xf32>, tensor<0x3xf32>, tensor<3xf32>
}
