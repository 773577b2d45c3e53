// RUN: opt %s --passes=fuse --trace
// rule: gelu-erf
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.7071067811865476} : () -> tensor<4x8xf32>
  %1 = "ten.mul"(%x, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.erf"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.5} : () -> tensor<4x8xf32>
  %4 = "ten.mul"(%x, %3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 1.0} : () -> tensor<4x8xf32>
  %6 = "ten.add"(%2, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = "ten.mul"(%4, %6) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %7 : tensor<4x8xf32>
}
