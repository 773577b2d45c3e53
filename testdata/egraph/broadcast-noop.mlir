// RUN: opt %s --passes=fuse --trace
// rule: broadcast-noop
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.broadcast"(%x) {dims = array<i64: 0, 1>, shape = array<i64: 4, 8>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
