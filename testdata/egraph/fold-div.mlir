// RUN: opt %s --passes=fuse --trace
// rule: fold-div
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 3.0} : () -> tensor<4x8xf32>
  %1 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 2.0} : () -> tensor<4x8xf32>
  %2 = "ten.div"(%0, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ten.mul"(%x, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "ten.exp"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}
