// RUN: trainium %s
func.func @main(%x0: tensor<4x30000xf32> {ember.input = "x0"}, %x1: tensor<30000xf32> {ember.input = "x1"}, %x2: tensor<30000xf32> {ember.input = "x2"}) -> (tensor<4x30000xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1, %x2) ({
  ^bb0(%a0: tensor<4x30000xf32>, %a1: tensor<30000xf32>, %a2: tensor<30000xf32>):
    %v1 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 30000>, value = 30000.0 : f64} : () -> tensor<4x30000xf32>
    %v2 = "ten.reduce"(%a0) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x30000xf32>) -> tensor<4xf32>
    %v3 = "ten.broadcast"(%v2) {dims = array<i64: 0>, shape = array<i64: 4, 30000>} : (tensor<4xf32>) -> tensor<4x30000xf32>
    %v4 = "ten.div"(%v3, %v1) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v5 = "ten.sub"(%a0, %v4) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v6 = "ten.mul"(%v5, %v5) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v7 = "ten.reduce"(%v6) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x30000xf32>) -> tensor<4xf32>
    %v8 = "ten.broadcast"(%v7) {dims = array<i64: 0>, shape = array<i64: 4, 30000>} : (tensor<4xf32>) -> tensor<4x30000xf32>
    %v9 = "ten.div"(%v8, %v1) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v10 = "ten.constant"() {dtype = f32, shape = array<i64: 4, 30000>, value = 1e-05 : f64} : () -> tensor<4x30000xf32>
    %v11 = "ten.add"(%v9, %v10) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v12 = "ten.rsqrt"(%v11) : (tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v13 = "ten.mul"(%v5, %v12) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v14 = "ten.broadcast"(%a1) {dims = array<i64: 1>, shape = array<i64: 4, 30000>} : (tensor<30000xf32>) -> tensor<4x30000xf32>
    %v15 = "ten.mul"(%v13, %v14) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    %v16 = "ten.broadcast"(%a2) {dims = array<i64: 1>, shape = array<i64: 4, 30000>} : (tensor<30000xf32>) -> tensor<4x30000xf32>
    %v17 = "ten.add"(%v15, %v16) : (tensor<4x30000xf32>, tensor<4x30000xf32>) -> tensor<4x30000xf32>
    "ember.yield"(%v17) : (tensor<4x30000xf32>) -> ()
  }) {eps = 1e-05 : f64, kind = "layer_norm"} : (tensor<4x30000xf32>, tensor<30000xf32>, tensor<30000xf32>) -> tensor<4x30000xf32> loc("layer_norm"("model.py":7:0))
  return %0 : tensor<4x30000xf32>
}
