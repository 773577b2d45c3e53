// RUN: opt %s --passes=fuse --trace
// rule: reshape-noop
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.reshape"(%x) {shape = array<i64: 4, 8>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
