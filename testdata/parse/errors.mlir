// RUN: opt %s
// Parse errors: each split has one, reported at its line and column.

// An unknown element type.
func.func @main(%a: tensor<2xq7>) -> () {
  return
}

// -----

// A `?` dim without #ember.dims naming it.
func.func @main(%a: tensor<?x2xf32>) -> () {
  return
}

// -----

// A use of an undefined value.
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>) {
  %0 = "torch.aten.relu"(%b) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// An operand annotated with a type it does not have.
func.func @main(%a: tensor<2xf32>) -> (tensor<2xf32>) {
  %0 = "torch.aten.relu"(%a) : (tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
