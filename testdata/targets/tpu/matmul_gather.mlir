// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// dot_general keeps its dimension numbers; float operands get precision = [HIGHEST, HIGHEST]
// (a TPU's default rounds f32 operands to bf16). ten.gather (index_select / embedding) is a
// stablehlo.gather of size-1 slices along `dim` with index_vector_dim = rank(index).
func.func @main(%a: tensor<2x3x4xf32> {ember.input = "a"}, %b: tensor<2x4x5xf32> {ember.input = "b"}, %m: tensor<3x4xi32> {ember.input = "m"}, %n: tensor<4xi32> {ember.input = "n"}, %t: tensor<10x8xf32> {ember.param = "table"}, %ids: tensor<2x5xi64> {ember.input = "ids"}, %k: tensor<i64> {ember.input = "k"}) -> (tensor<2x3x5xf32>, tensor<3xi32>, tensor<3x4x4xi32>, tensor<2x5x8xf32>, tensor<10x2x5xf32>, tensor<8xf32>) {
  %0 = "ten.dot_general"(%a, %b) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = "ten.dot_general"(%m, %n) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3xi32>
  %2 = "ten.dot_general"(%m, %n) {lhs_batch = array<i64>, lhs_contract = array<i64>, rhs_batch = array<i64>, rhs_contract = array<i64>} : (tensor<3x4xi32>, tensor<4xi32>) -> tensor<3x4x4xi32>
  %3 = "ten.gather"(%t, %ids) {dim = 0 : i64} : (tensor<10x8xf32>, tensor<2x5xi64>) -> tensor<2x5x8xf32>
  %4 = "ten.gather"(%t, %ids) {dim = 1 : i64} : (tensor<10x8xf32>, tensor<2x5xi64>) -> tensor<10x2x5xf32>
  %5 = "ten.gather"(%t, %k) {dim = 0 : i64} : (tensor<10x8xf32>, tensor<i64>) -> tensor<8xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x5xf32>, tensor<3xi32>, tensor<3x4x4xi32>, tensor<2x5x8xf32>, tensor<10x2x5xf32>, tensor<8xf32>
}
