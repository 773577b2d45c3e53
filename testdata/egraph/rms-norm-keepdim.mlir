// RUN: opt %s --passes=fuse --trace
// rule: rms-norm-keepdim
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.mul"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.reduce"(%0) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %2 = "ten.constant"() {dtype = f32, shape = array<i64: 4>, value = 8.0} : () -> tensor<4xf32>
  %3 = "ten.div"(%1, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = "ten.reshape"(%3) {shape = array<i64: 4, 1>} : (tensor<4xf32>) -> tensor<4x1xf32>
  %5 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 1>, value = 1.0e-6} : () -> tensor<4x1xf32>
  %6 = "ten.add"(%4, %5) : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %7 = "ten.rsqrt"(%6) : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %8 = "ten.broadcast"(%7) {dims = array<i64: 0, 1>, shape = array<i64: 4, 8>} : (tensor<4x1xf32>) -> tensor<4x8xf32>
  %9 = "ten.mul"(%x, %8) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}
