// RUN: opt %s
// Attributes: each split breaks one rule of the op's signature.

// A required attribute missing.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>) {
  %0 = "torch.aten.permute"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// An attribute the signature does not have.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "torch.aten.relu"(%a) {inplace = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// An attribute of the wrong kind.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<3x2xf32>) {
  %0 = "torch.aten.permute"(%a) {dims = "1,0"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
