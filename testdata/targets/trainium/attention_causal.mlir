// RUN: trainium %s
func.func @main(%x0: tensor<2x4x16x16xf32> {ember.input = "x0"}, %x1: tensor<2x4x16x16xf32> {ember.input = "x1"}, %x2: tensor<2x4x16x16xf32> {ember.input = "x2"}, %x3: tensor<16x16xf32> {ember.input = "x3"}) -> (tensor<2x4x16x16xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2, %x3) ({
  ^bb0(%a0: tensor<2x4x16x16xf32>, %a1: tensor<2x4x16x16xf32>, %a2: tensor<2x4x16x16xf32>, %a3: tensor<16x16xf32>):
    %v1 = "ten.dot_general"(%a0, %a1) {lhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_batch = array<i64: 0, 1>, rhs_contract = array<i64: 3>} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v2 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 4, 16, 16>, value = 0.25 : f64} : () -> tensor<2x4x16x16xf32>
    %v3 = "ten.mul"(%v1, %v2) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v4 = "ten.broadcast"(%a3) {dims = array<i64: 2, 3>, shape = array<i64: 2, 4, 16, 16>} : (tensor<16x16xf32>) -> tensor<2x4x16x16xf32>
    %v5 = "ten.add"(%v3, %v4) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v6 = "ten.reduce"(%v5) {dims = array<i64: 3>, kind = "max"} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16xf32>
    %v7 = "ten.broadcast"(%v6) {dims = array<i64: 0, 1, 2>, shape = array<i64: 2, 4, 16, 16>} : (tensor<2x4x16xf32>) -> tensor<2x4x16x16xf32>
    %v8 = "ten.sub"(%v5, %v7) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v9 = "ten.exp"(%v8) : (tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v10 = "ten.reduce"(%v9) {dims = array<i64: 3>, kind = "sum"} : (tensor<2x4x16x16xf32>) -> tensor<2x4x16xf32>
    %v11 = "ten.broadcast"(%v10) {dims = array<i64: 0, 1, 2>, shape = array<i64: 2, 4, 16, 16>} : (tensor<2x4x16xf32>) -> tensor<2x4x16x16xf32>
    %v12 = "ten.div"(%v9, %v11) : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %v13 = "ten.dot_general"(%v12, %a2) {lhs_batch = array<i64: 0, 1>, lhs_contract = array<i64: 3>, rhs_batch = array<i64: 0, 1>, rhs_contract = array<i64: 2>} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    "ember.yield"(%v13) : (tensor<2x4x16x16xf32>) -> ()
  }) {scale = 0.25 : f64, kind = "attention"} : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16x16xf32> loc("attention"("model.py":7:0))
  return %0 : tensor<2x4x16x16xf32>
}
