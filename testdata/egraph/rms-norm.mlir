// RUN: opt %s --passes=fuse --trace
// rule: rms-norm
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.mul"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.reduce"(%0) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = "ten.constant"() {dtype = f32, shape = array<i64: 4>, value = 8.0} : () -> tensor<4xf32>
  %3 = "ten.div"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = "ten.constant"() {dtype = f32, shape = array<i64: 4>, value = 1.0e-6} : () -> tensor<4xf32>
  %5 = "ten.add"(%3, %4) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %6 = "ten.rsqrt"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = "ten.broadcast"(%6) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %8 = "ten.mul"(%x, %7) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %8 : tensor<4x8xf32>
}
