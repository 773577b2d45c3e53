// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten.scatter is one stablehlo.scatter into the 1-D operand (index_vector_dim = the index rank,
// so each index entry is one position), the kind's combiner as its update region; `set` returns
// the update. No updates: the operand itself.
func.func @main(%x: tensor<6xf32> {ember.input = "x"}, %i: tensor<2x2xi64> {ember.input = "i"}, %u: tensor<2x2xf32> {ember.input = "u"}, %k: tensor<6xi32> {ember.input = "k"}, %j: tensor<3xi32> {ember.input = "j"}, %v: tensor<3xi32> {ember.input = "v"}, %e: tensor<0xi64> {ember.input = "e"}, %w: tensor<0xf32> {ember.input = "w"}) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xf32>) {
  %0 = "ten.scatter"(%x, %i, %u) {kind = "set"} : (tensor<6xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<6xf32>
  %1 = "ten.scatter"(%x, %i, %u) {kind = "sum"} : (tensor<6xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<6xf32>
  %2 = "ten.scatter"(%x, %i, %u) {kind = "prod"} : (tensor<6xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<6xf32>
  %3 = "ten.scatter"(%k, %j, %v) {kind = "max"} : (tensor<6xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<6xi32>
  %4 = "ten.scatter"(%k, %j, %v) {kind = "min"} : (tensor<6xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<6xi32>
  %5 = "ten.scatter"(%x, %e, %w) {kind = "sum"} : (tensor<6xf32>, tensor<0xi64>, tensor<0xf32>) -> tensor<6xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>, tensor<6xf32>
}
