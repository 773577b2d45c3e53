// RUN: opt %s --passes=fuse --trace
// rule: dot-unflatten-batch
func.func @main(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x8x5xf32>) -> (tensor<2x3x4x5xf32>) {
  %0 = "ten.reshape"(%a) {shape = array<i64: 6, 4, 8>} : (tensor<2x3x4x8xf32>) -> tensor<6x4x8xf32>
  %1 = "ten.reshape"(%b) {shape = array<i64: 6, 8, 5>} : (tensor<2x3x8x5xf32>) -> tensor<6x8x5xf32>
  %2 = "ten.dot_general"(%0, %1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<6x4x8xf32>, tensor<6x8x5xf32>) -> tensor<6x4x5xf32>
  %3 = "ten.reshape"(%2) {shape = array<i64: 2, 3, 4, 5>} : (tensor<6x4x5xf32>) -> tensor<2x3x4x5xf32>
  return %3 : tensor<2x3x4x5xf32>
}
