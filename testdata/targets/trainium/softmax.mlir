// RUN: trainium %s
func.func @main(%x0: tensor<2x65x33xf32> {ember.input = "x0"}) -> (tensor<2x65x33xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0) ({
  ^bb0(%a0: tensor<2x65x33xf32>):
    %v1 = "ten.reduce"(%a0) {dims = array<i64: 2>, kind = "max"} : (tensor<2x65x33xf32>) -> tensor<2x65xf32>
    %v2 = "ten.broadcast"(%v1) {dims = array<i64: 0, 1>, shape = array<i64: 2, 65, 33>} : (tensor<2x65xf32>) -> tensor<2x65x33xf32>
    %v3 = "ten.sub"(%a0, %v2) : (tensor<2x65x33xf32>, tensor<2x65x33xf32>) -> tensor<2x65x33xf32>
    %v4 = "ten.exp"(%v3) : (tensor<2x65x33xf32>) -> tensor<2x65x33xf32>
    %v5 = "ten.reduce"(%v4) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x65x33xf32>) -> tensor<2x65xf32>
    %v6 = "ten.broadcast"(%v5) {dims = array<i64: 0, 1>, shape = array<i64: 2, 65, 33>} : (tensor<2x65xf32>) -> tensor<2x65x33xf32>
    %v7 = "ten.div"(%v4, %v6) : (tensor<2x65x33xf32>, tensor<2x65x33xf32>) -> tensor<2x65x33xf32>
    "ember.yield"(%v7) : (tensor<2x65x33xf32>) -> ()
  }) {dim = 2 : i64, kind = "softmax"} : (tensor<2x65x33xf32>) -> tensor<2x65x33xf32> loc("softmax"("model.py":7:0))
  return %0 : tensor<2x65x33xf32>
}
