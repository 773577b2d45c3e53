// RUN: opt %s --passes=fuse --trace
// rule: fold-neg
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 8>, value = 4.0} : () -> tensor<4x8xf32>
  %1 = "ten.neg"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.add"(%x, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ten.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
