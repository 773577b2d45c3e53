// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A two-layer MLP as torch.compile hands it over: the weights are user inputs. With
// `--param-inputs w1,w2` the sharding rules treat them as parameters (tp, fsdp), not as data (dp).
func.func @main(%x: tensor<8x16xf32> {ember.input = "x"}, %w1: tensor<32x16xf32> {ember.input = "w1"}, %w2: tensor<16x32xf32> {ember.input = "w2"}) -> tensor<8x16xf32> {
  %h = "ten.dot_general"(%x, %w1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>} : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %y = "ten.dot_general"(%h, %w2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>} : (tensor<8x32xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
