// RUN: opt %s --passes=fuse --trace
// rule: mul-const-const
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 3.0} : () -> tensor<4x8xf32>
  %1 = "ten.mul"(%x, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.5} : () -> tensor<4x8xf32>
  %3 = "ten.mul"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "ten.exp"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
