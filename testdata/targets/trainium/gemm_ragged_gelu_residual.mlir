// RUN: trainium %s
func.func @main(%x0: tensor<3x67x300xf32> {ember.input = "x0"}, %x1: tensor<700x300xf32> {ember.input = "x1"}, %x2: tensor<700xf32> {ember.input = "x2"}, %x3: tensor<3x67x700xf32> {ember.input = "x3"}) -> (tensor<3x67x700xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2, %x3) ({
  ^bb0(%a0: tensor<3x67x300xf32>, %a1: tensor<700x300xf32>, %a2: tensor<700xf32>, %a3: tensor<3x67x700xf32>):
    %v1 = "ten.dot_general"(%a0, %a1) {lhs_batch = array<i64>, lhs_contract = array<i64: 2>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>} : (tensor<3x67x300xf32>, tensor<700x300xf32>) -> tensor<3x67x700xf32>
    %v2 = "ten.broadcast"(%a2) {dims = array<i64: 2>, shape = array<i64: 3, 67, 700>} : (tensor<700xf32>) -> tensor<3x67x700xf32>
    %v3 = "ten.add"(%v1, %v2) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v4 = "ten.constant"() {dtype = f32, shape = array<i64: 3, 67, 700>, value = 0.7071067811865475 : f64} : () -> tensor<3x67x700xf32>
    %v5 = "ten.mul"(%v3, %v4) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v6 = "ten.erf"(%v5) : (tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v7 = "ten.constant"() {dtype = f32, shape = array<i64: 3, 67, 700>, value = 0.5 : f64} : () -> tensor<3x67x700xf32>
    %v8 = "ten.mul"(%v3, %v7) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v9 = "ten.constant"() {dtype = f32, shape = array<i64: 3, 67, 700>, value = 1.0 : f64} : () -> tensor<3x67x700xf32>
    %v10 = "ten.add"(%v6, %v9) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v11 = "ten.mul"(%v8, %v10) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    %v12 = "ten.add"(%v11, %a3) : (tensor<3x67x700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32>
    "ember.yield"(%v12) : (tensor<3x67x700xf32>) -> ()
  }) {activation = "gelu", kind = "gemm"} : (tensor<3x67x300xf32>, tensor<700x300xf32>, tensor<700xf32>, tensor<3x67x700xf32>) -> tensor<3x67x700xf32> loc("gemm"("model.py":7:0))
  return %0 : tensor<3x67x700xf32>
}
