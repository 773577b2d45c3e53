// RUN: trainium %s
func.func @main(%x0: tensor<2x8x256xf32> {ember.input = "x0"}, %x1: tensor<2x8x256xf32> {ember.input = "x1"}, %x2: tensor<2x8x600xf32> {ember.input = "x2"}) -> (tensor<2x8x600xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2) ({
  ^bb0(%a0: tensor<2x8x256xf32>, %a1: tensor<2x8x256xf32>, %a2: tensor<2x8x600xf32>):
    %v1 = "ten.dot_general"(%a0, %a1) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x8x256xf32>, tensor<2x8x256xf32>) -> tensor<2x8x8xf32>
    %v2 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 8, 8>, value = 0.0625 : f64} : () -> tensor<2x8x8xf32>
    %v3 = "ten.mul"(%v1, %v2) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %v4 = "ten.reduce"(%v3) {dims = array<i64: 2>, kind = "max"} : (tensor<2x8x8xf32>) -> tensor<2x8xf32>
    %v5 = "ten.broadcast"(%v4) {dims = array<i64: 0, 1>, shape = array<i64: 2, 8, 8>} : (tensor<2x8xf32>) -> tensor<2x8x8xf32>
    %v6 = "ten.sub"(%v3, %v5) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %v7 = "ten.exp"(%v6) : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %v8 = "ten.reduce"(%v7) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x8x8xf32>) -> tensor<2x8xf32>
    %v9 = "ten.broadcast"(%v8) {dims = array<i64: 0, 1>, shape = array<i64: 2, 8, 8>} : (tensor<2x8xf32>) -> tensor<2x8x8xf32>
    %v10 = "ten.div"(%v7, %v9) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
    %v11 = "ten.dot_general"(%v10, %a2) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x8x8xf32>, tensor<2x8x600xf32>) -> tensor<2x8x600xf32>
    "ember.yield"(%v11) : (tensor<2x8x600xf32>) -> ()
  }) {scale = 0.0625 : f64, kind = "attention"} : (tensor<2x8x256xf32>, tensor<2x8x256xf32>, tensor<2x8x600xf32>) -> tensor<2x8x600xf32> loc("attention"("model.py":7:0))
  return %0 : tensor<2x8x600xf32>
}
