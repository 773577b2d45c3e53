// RUN: opt %s --passes=fuse --trace
// rule: transpose-unary
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.transpose"(%x) {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "ten.exp"(%0) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %2 = "ten.transpose"(%1) {dims = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %3 = "ten.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
