// RUN: opt %s --passes=fuse --trace
// rule: layer-norm-affine
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4>, value = 8.0} : () -> tensor<4xf32>
  %1 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = "ten.div"(%1, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "ten.broadcast"(%2) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %4 = "ten.sub"(%x, %3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "ten.mul"(%4, %4) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = "ten.reduce"(%5) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %7 = "ten.div"(%6, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %8 = "ten.constant"() {dtype = f32, shape = array<i64: 4>, value = 1.0e-5} : () -> tensor<4xf32>
  %9 = "ten.add"(%7, %8) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %10 = "ten.rsqrt"(%9) : (tensor<4xf32>) -> tensor<4xf32>
  %11 = "ten.broadcast"(%10) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %12 = "ten.mul"(%4, %11) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %13 = "ten.broadcast"(%w) {dims = array<i64: 1>, shape = array<i64: 4, 8>} : (tensor<8xf32>) -> tensor<4x8xf32>
  %14 = "ten.mul"(%12, %13) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %15 = "ten.broadcast"(%b) {dims = array<i64: 1>, shape = array<i64: 4, 8>} : (tensor<8xf32>) -> tensor<4x8xf32>
  %16 = "ten.add"(%14, %15) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %16 : tensor<4x8xf32>
}
