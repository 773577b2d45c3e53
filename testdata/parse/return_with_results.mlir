// RUN: opt %s
// A generic-form `func.return` with results: the printer writes `return` in its custom form,
// which has operands only, so it would drop them (found by the ir_parse fuzz target).
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>) {
  %0 = "func.return"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %1 = "ten.exp"(%0) : (tensor<2xf32>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}
