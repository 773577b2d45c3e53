// RUN: opt %s
// Function and region ends: `return` and `ember.yield` match the declared types.

// A function without `return`.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
}

// -----

// `return` of a type the function does not declare.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>) {
  return %a : tensor<2x3xf32>
}

// -----

// `ember.yield` operands that are not the group's results.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "ember.fusion_group"(%a) ({
  ^bb0(%x: tensor<2x3xf32>):
    %1 = "torch.aten.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "ember.yield"(%x, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }) {kind = "elementwise"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
