// RUN: trainium %s
func.func @main(%x0: tensor<2x16x64xf32> {ember.input = "x0"}, %x1: tensor<192x64xf32> {ember.input = "x1"}, %x2: tensor<192xf32> {ember.input = "x2"}, %x3: tensor<2x16x192xf32> {ember.input = "x3"}) -> (tensor<2x16x192xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2, %x3) ({
  ^bb0(%a0: tensor<2x16x64xf32>, %a1: tensor<192x64xf32>, %a2: tensor<192xf32>, %a3: tensor<2x16x192xf32>):
    %v1 = "ten.reshape"(%a0) {shape = array<i64: 32, 64>} : (tensor<2x16x64xf32>) -> tensor<32x64xf32>
    %v2 = "ten.transpose"(%a1) {dims = array<i64: 1, 0>} : (tensor<192x64xf32>) -> tensor<64x192xf32>
    %v3 = "ten.dot_general"(%v1, %v2) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<32x64xf32>, tensor<64x192xf32>) -> tensor<32x192xf32>
    %v4 = "ten.broadcast"(%a2) {dims = array<i64: 1>, shape = array<i64: 32, 192>} : (tensor<192xf32>) -> tensor<32x192xf32>
    %v5 = "ten.add"(%v4, %v3) : (tensor<32x192xf32>, tensor<32x192xf32>) -> tensor<32x192xf32>
    %v6 = "ten.reshape"(%v5) {shape = array<i64: 2, 16, 192>} : (tensor<32x192xf32>) -> tensor<2x16x192xf32>
    %v7 = "ten.add"(%v6, %a3) : (tensor<2x16x192xf32>, tensor<2x16x192xf32>) -> tensor<2x16x192xf32>
    "ember.yield"(%v7) : (tensor<2x16x192xf32>) -> ()
  }) {activation = "none", kind = "gemm"} : (tensor<2x16x64xf32>, tensor<192x64xf32>, tensor<192xf32>, tensor<2x16x192xf32>) -> tensor<2x16x192xf32> loc("gemm"("model.py":7:0))
  return %0 : tensor<2x16x192xf32>
}
