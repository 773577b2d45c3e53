// RUN: opt %s --passes=fuse --trace
// rule: reshape-reshape
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.reshape"(%x) {shape = array<i64: 32>} : (tensor<4x8xf32>) -> tensor<32xf32>
  %1 = "ten.reshape"(%0) {shape = array<i64: 8, 4>} : (tensor<32xf32>) -> tensor<8x4xf32>
  %2 = "ten.transpose"(%1) {dims = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %3 = "ten.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}
