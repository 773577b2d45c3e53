// RUN: opt %s --passes=fuse --trace
// rule: zero-add
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 0.0} : () -> tensor<4x8xf32>
  %1 = "ten.add"(%0, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
