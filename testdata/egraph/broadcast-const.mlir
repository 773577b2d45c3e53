// RUN: opt %s --passes=fuse --trace
// rule: broadcast-const
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.constant"() {dtype = f32, shape = array<i64: 8>, value = 2.0} : () -> tensor<8xf32>
  %1 = "ten.broadcast"(%0) {dims = array<i64: 1>, shape = array<i64: 4, 8>} : (tensor<8xf32>) -> tensor<4x8xf32>
  %2 = "ten.mul"(%x, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ten.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
