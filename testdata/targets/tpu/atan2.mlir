// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten.atan2 is stablehlo.atan2 (lhs is y).
func.func @main(%y: tensor<4xf32> {ember.input = "y"}, %x: tensor<4xf32> {ember.input = "x"}) -> tensor<4xf32> {
  %0 = "ten.atan2"(%y, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
