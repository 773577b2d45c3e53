// RUN: opt %s --passes=fuse --trace
// rule: neg-neg
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "ten.neg"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "ten.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
