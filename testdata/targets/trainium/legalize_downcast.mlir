// RUN: trainium %s --emit stablehlo --allow-downcast
// --allow-downcast computes the f64 values in f32.
func.func @main(%x: tensor<4xf32> {ember.input = "x"}) -> (tensor<4xf32> {ember.output = "y"}) {
  %0 = "ten.convert"(%x) {dtype = f64} : (tensor<4xf32>) -> tensor<4xf64> loc("to_double"("model.py":3:0))
  %1 = "ten.exp"(%0) : (tensor<4xf64>) -> tensor<4xf64> loc("exp"("model.py":4:0))
  %2 = "ten.convert"(%1) {dtype = f32} : (tensor<4xf64>) -> tensor<4xf32> loc("to_float"("model.py":5:0))
  return %2 : tensor<4xf32>
}
