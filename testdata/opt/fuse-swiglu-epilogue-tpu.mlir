// RUN: opt %s --passes=fuse --trace
// The tpu target keeps silu(gate) in gate's epilogue (XLA fuses as it likes; Trainium's matmul
// kernel applies the activation): fuse-swiglu-epilogue.mlir has the CPU's choice.
module attributes {ember.target = "tpu"} {
func.func @main(%x: tensor<16x32xf32>, %wg: tensor<32x64xf32>, %wu: tensor<32x64xf32>) -> (tensor<16x64xf32>) {
  %g = "ten.dot_general"(%x, %wg) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %s = "ten.sigmoid"(%g) : (tensor<16x64xf32>) -> tensor<16x64xf32>
  %a = "ten.mul"(%g, %s) : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  %u = "ten.dot_general"(%x, %wu) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %y = "ten.mul"(%a, %u) : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  return %y : tensor<16x64xf32>
}
}
