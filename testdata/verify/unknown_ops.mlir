// RUN: opt %s
// Ops the dialect tables do not have.

// An op of no Ember dialect.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "mystery.op"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A `torch` op not in the table, named with the node and the user's line.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.frobnicate"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("frob"("model.py":3:0))
  return %0 : tensor<2x3xf32>
}
