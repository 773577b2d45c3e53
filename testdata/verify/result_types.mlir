// RUN: opt %s
// Result types: each split declares one that the op's result-type rule does not give.

// True division of integers gives float32.
func.func @main(%a: tensor<2x3xi64>) -> (tensor<2x3xi64>) {
  %0 = "torch.aten.div.Scalar"(%a) {other = 2 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// A wrong result shape, named with the node and the user's line.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> (tensor<2x4xf32>) {
  %0 = "torch.aten.mm"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x4xf32> loc("mm"("model.py":9:0))
  return %0 : tensor<2x4xf32>
}

// -----

// half_to_float (CUDA's f16 softmax kernels) makes the result float32; without it, the input's dtype.
func.func @main(%x: tensor<2x8xf16>) -> (tensor<2x8xf32>, tensor<2x8xf16>, tensor<2x8xf16>) {
  %0 = "torch.aten._softmax"(%x) {dim = 1 : i64, half_to_float = true} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %1 = "torch.aten._log_softmax"(%x) {dim = 1 : i64, half_to_float = false} : (tensor<2x8xf16>) -> tensor<2x8xf16>
  %2 = "torch.aten._softmax"(%x) {dim = 1 : i64, half_to_float = true} : (tensor<2x8xf16>) -> tensor<2x8xf16>
  return %0, %1, %2 : tensor<2x8xf32>, tensor<2x8xf16>, tensor<2x8xf16>
}

// -----

// `dtype` on ten.dot_general is only f32, of f16/bf16 (or f32) operands: the accumulator.
func.func @main(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<2x3xf32>, %d: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf16>) {
  %0 = "ten.dot_general"(%a, %b) {dtype = f32, lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
  %1 = "ten.dot_general"(%c, %d) {dtype = f16, lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf16>
  return %0, %1 : tensor<2x4xf32>, tensor<2x4xf16>
}
