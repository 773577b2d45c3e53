// RUN: opt %s
// Operands: each split breaks one rule; the verifier names the op and the rule.

// Too few operands.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.add.Tensor"(%a) {alpha = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// An integer where a tensor operand belongs.
func.func @main(%a: tensor<2x3xf32>, %n: i64) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.add.Tensor"(%a, %n) {alpha = 1 : i64} : (tensor<2x3xf32>, i64) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// An op with optional operands needs `operandSegmentSizes`.
func.func @main(%a: tensor<2x3xf32>, %w: tensor<3xf32>) -> (tensor<2x3xf32>) {
  %0:3 = "torch.aten.native_layer_norm"(%a, %w) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 3>} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x3xf32>
}

// -----

// Operands that do not broadcast.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.add.Tensor"(%a, %b) {alpha = 1 : i64} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Contraction dims that differ.
func.func @main(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> (tensor<2x5xf32>) {
  %0 = "torch.aten.mm"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}
