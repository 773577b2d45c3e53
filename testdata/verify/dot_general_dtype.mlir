// RUN: opt %s
// `dtype` on ten.dot_general is only f32, of f16/bf16 (or f32) operands: the accumulator.
func.func @main(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<2x3xf32>, %d: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf16>) {
  %0 = "ten.dot_general"(%a, %b) {dtype = f32, lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  %1 = "ten.dot_general"(%c, %d) {dtype = f16, lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf16>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf16>
}
