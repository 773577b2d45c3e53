// RUN: trainium %s
func.func @main(%x0: tensor<2x130x96xf32> {ember.input = "x0"}, %x1: tensor<96xf32> {ember.input = "x1"}, %x2: tensor<96xf32> {ember.input = "x2"}) -> (tensor<2x130x96xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2) ({
  ^bb0(%a0: tensor<2x130x96xf32>, %a1: tensor<96xf32>, %a2: tensor<96xf32>):
    %v1 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 130, 96>, value = 96.0 : f64} : () -> tensor<2x130x96xf32>
    %v2 = "ten.reduce"(%a0) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x130x96xf32>) -> tensor<2x130xf32>
    %v3 = "ten.broadcast"(%v2) {dims = array<i64: 0, 1>, shape = array<i64: 2, 130, 96>} : (tensor<2x130xf32>) -> tensor<2x130x96xf32>
    %v4 = "ten.div"(%v3, %v1) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v5 = "ten.sub"(%a0, %v4) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v6 = "ten.mul"(%v5, %v5) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v7 = "ten.reduce"(%v6) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x130x96xf32>) -> tensor<2x130xf32>
    %v8 = "ten.broadcast"(%v7) {dims = array<i64: 0, 1>, shape = array<i64: 2, 130, 96>} : (tensor<2x130xf32>) -> tensor<2x130x96xf32>
    %v9 = "ten.div"(%v8, %v1) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v10 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 130, 96>, value = 1e-05 : f64} : () -> tensor<2x130x96xf32>
    %v11 = "ten.add"(%v9, %v10) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v12 = "ten.rsqrt"(%v11) : (tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v13 = "ten.mul"(%v5, %v12) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v14 = "ten.broadcast"(%a1) {dims = array<i64: 2>, shape = array<i64: 2, 130, 96>} : (tensor<96xf32>) -> tensor<2x130x96xf32>
    %v15 = "ten.mul"(%v13, %v14) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    %v16 = "ten.broadcast"(%a2) {dims = array<i64: 2>, shape = array<i64: 2, 130, 96>} : (tensor<96xf32>) -> tensor<2x130x96xf32>
    %v17 = "ten.add"(%v15, %v16) : (tensor<2x130x96xf32>, tensor<2x130x96xf32>) -> tensor<2x130x96xf32>
    "ember.yield"(%v17) : (tensor<2x130x96xf32>) -> ()
  }) {eps = 1e-05 : f64, kind = "layer_norm"} : (tensor<2x130x96xf32>, tensor<96xf32>, tensor<96xf32>) -> tensor<2x130x96xf32> loc("layer_norm"("model.py":7:0))
  return %0 : tensor<2x130x96xf32>
}
