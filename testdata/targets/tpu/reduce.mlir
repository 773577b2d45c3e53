// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten.reduce: one stablehlo.reduce with the kind's identity as init (max of floats starts at -inf,
// of ints at the dtype's minimum; bool max/min are or/and). argmax/argmin reduce (value, index)
// pairs, the index row-major within `dims`; the first extreme wins and NaN is the extreme.
func.func @main(%x: tensor<2x3x4xf32> {ember.input = "x"}, %i: tensor<2x3xi32> {ember.input = "i"}, %b: tensor<2x3xi1> {ember.input = "b"}) -> (tensor<2x4xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<2x3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<3xi32>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2x4xi64>, tensor<2xi64>, tensor<3xi64>) {
  %0 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "sum"} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %1 = "ten.reduce"(%x) {dims = array<i64: 1, 2>, kind = "max"} : (tensor<2x3x4xf32>) -> tensor<2xf32>
  %2 = "ten.reduce"(%x) {dims = array<i64: 0>, kind = "min"} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %3 = "ten.reduce"(%x) {dims = array<i64: 2>, kind = "prod"} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %4 = "ten.reduce"(%i) {dims = array<i64: 1>, kind = "max"} : (tensor<2x3xi32>) -> tensor<2xi32>
  %5 = "ten.reduce"(%i) {dims = array<i64: 1>, kind = "and"} : (tensor<2x3xi32>) -> tensor<2xi32>
  %6 = "ten.reduce"(%i) {dims = array<i64: 0>, kind = "min"} : (tensor<2x3xi32>) -> tensor<3xi32>
  %7 = "ten.reduce"(%b) {dims = array<i64: 1>, kind = "or"} : (tensor<2x3xi1>) -> tensor<2xi1>
  %8 = "ten.reduce"(%b) {dims = array<i64: 1>, kind = "and"} : (tensor<2x3xi1>) -> tensor<2xi1>
  %9 = "ten.reduce"(%b) {dims = array<i64: 1>, kind = "max"} : (tensor<2x3xi1>) -> tensor<2xi1>
  %10 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "argmax"} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  %11 = "ten.reduce"(%x) {dims = array<i64: 1, 2>, kind = "argmin"} : (tensor<2x3x4xf32>) -> tensor<2xi64>
  %12 = "ten.reduce"(%i) {dims = array<i64: 0>, kind = "argmax"} : (tensor<2x3xi32>) -> tensor<3xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12 : tensor<2x4xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<2x3xf32>, tensor<2xi32>, tensor<2xi32>, tensor<3xi32>, tensor<2xi1>, tensor<2xi1>, tensor<2xi1>, tensor<2x4xi64>, tensor<2xi64>, tensor<3xi64>
}
