// RUN: opt %s --passes=fuse --trace
// rule: reshape-scale
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 3.0} : () -> tensor<4x8xf32>
  %1 = "ten.mul"(%x, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.reshape"(%1) {shape = array<i64: 32>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %3 = "ten.reshape"(%2) {shape = array<i64: 4, 8>} : (tensor<32xf32>) -> tensor<4x8xf32>
  %4 = "ten.exp"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
