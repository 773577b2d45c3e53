// RUN: trainium %s
// The gemm kernel computes act(x @ w + bias) + residual; a body in another order gets no kernel
// (`ember compile` keeps it as plain HLO).
func.func @main(%x0: tensor<4x8xf32> {ember.input = "x0"}, %x1: tensor<8x16xf32> {ember.input = "x1"}, %x2: tensor<16xf32> {ember.input = "x2"}, %x3: tensor<4x16xf32> {ember.input = "x3"}) -> (tensor<4x16xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2, %x3) ({
  ^bb0(%a0: tensor<4x8xf32>, %a1: tensor<8x16xf32>, %a2: tensor<16xf32>, %a3: tensor<4x16xf32>):
    %v1 = "ten.dot_general"(%a0, %a1) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %v2 = "ten.add"(%v1, %a3) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %v3 = "ten.broadcast"(%a2) {dims = array<i64: 1>, shape = array<i64: 4, 16>} : (tensor<16xf32>) -> tensor<4x16xf32>
    %v4 = "ten.add"(%v2, %v3) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %v5 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 16>, value = 0.0 : f64} : () -> tensor<4x16xf32>
    %v6 = "ten.max"(%v4, %v5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    "ember.yield"(%v6) : (tensor<4x16xf32>) -> ()
  }) {activation = "relu", kind = "gemm"} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> loc("linear"("model.py":9:0))
  return %0 : tensor<4x16xf32>
}
