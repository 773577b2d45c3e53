// RUN: opt %s --passes=fuse --trace
// rule: transpose-transpose
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.transpose"(%x) {dims = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %1 = "ten.transpose"(%0) {dims = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %2 = "ten.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
