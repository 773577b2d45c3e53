// RUN: opt %s --passes=fuse --trace
// rule: gelu-tanh
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.mul"(%x, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.mul"(%0, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.044715} : () -> tensor<4x8xf32>
  %3 = "ten.mul"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "ten.add"(%x, %3) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.7978845608028654} : () -> tensor<4x8xf32>
  %6 = "ten.mul"(%4, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = "ten.tanh"(%6) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %8 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 1.0} : () -> tensor<4x8xf32>
  %9 = "ten.add"(%7, %8) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %10 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.5} : () -> tensor<4x8xf32>
  %11 = "ten.mul"(%x, %10) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %12 = "ten.mul"(%11, %9) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %12 : tensor<4x8xf32>
}
