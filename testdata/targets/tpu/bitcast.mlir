// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten.bitcast_convert is stablehlo.bitcast_convert (same width: f32 and i32, f64 and i64);
// nextafter, frexp and signbit read a float's sign, exponent and mantissa through it.
func.func @main(%x: tensor<4xf32> {ember.input = "x"}, %y: tensor<4xf32> {ember.input = "y"}, %d: tensor<4xf64> {ember.input = "d"}) -> (tensor<4xi32>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>) {
  %0 = "ten.bitcast_convert"(%x) {dtype = i32} : (tensor<4xf32>) -> tensor<4xi32>
  %1 = "ten.bitcast_convert"(%d) {dtype = i64} : (tensor<4xf64>) -> tensor<4xi64>
  %2 = "ten.bitcast_convert"(%1) {dtype = f64} : (tensor<4xi64>) -> tensor<4xf64>
  %3 = "torch.aten.nextafter"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %4:2 = "torch.aten.frexp.Tensor"(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>)
  %5 = "torch.aten.signbit"(%x) : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %2, %3, %4#0, %4#1, %5 : tensor<4xi32>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>, tensor<4xi1>
}
