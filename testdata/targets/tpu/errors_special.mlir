// RUN: opt %s --passes=cse
// The tpu target has no StableHLO form for `ten.special` yet (its loops run
// a number of steps that is data): refused, naming the op and its line (the cpu target runs them).
func.func @main(%x: tensor<4xf32> {ember.input = "x"}, %n: tensor<4xf32> {ember.input = "n"}) -> tensor<4xf32> {
  %0 = "ten.special"(%x, %n) {kind = "hermite_h"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("hermite"("model.py":4:0))
  return %0 : tensor<4xf32>
}
