// RUN: trainium %s --emit stablehlo --native-int64
// --native-int64 keeps int64 (neuronx-cc flag, trn2+).
func.func @main(%x: tensor<4x8xf32> {ember.input = "x"}, %ids: tensor<4xi64> {ember.input = "ids"}) -> (tensor<4x8xf32> {ember.output = "y"}, tensor<4xi64> {ember.output = "pos"}) {
  %0 = "ten.iota"() {dim = 0 : i64, dtype = i64, shape = array<i64: 4>} : () -> tensor<4xi64> loc("arange"("model.py":3:0))
  %1 = "ten.add"(%0, %ids) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("add"("model.py":4:0))
  %2 = "ten.constant"() {dtype = i64, shape = array<i64: 4>, value = 7 : i64} : () -> tensor<4xi64> loc("add_1"("model.py":4:0))
  %3 = "ten.add"(%1, %2) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("add_1"("model.py":4:0))
  %4 = "ember.fusion_group"(%x) ({
  ^bb0(%a0: tensor<4x8xf32>):
    %v1 = "ten.reduce"(%a0) {dims = array<i64: 1>, kind = "max"} : (tensor<4x8xf32>) -> tensor<4xf32>
    %v2 = "ten.broadcast"(%v1) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
    %v3 = "ten.sub"(%a0, %v2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %v4 = "ten.exp"(%v3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %v5 = "ten.reduce"(%v4) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
    %v6 = "ten.broadcast"(%v5) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
    %v7 = "ten.div"(%v4, %v6) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    "ember.yield"(%v7) : (tensor<4x8xf32>) -> ()
  }) {dim = 1 : i64, kind = "softmax"} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("softmax"("model.py":5:0))
  %5 = "ember.fusion_group"(%4) ({
  ^bb0(%b0: tensor<4x8xf32>):
    %w1 = "ten.exp"(%b0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "ember.yield"(%w1) : (tensor<4x8xf32>) -> ()
  }) {kind = "loop"} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("exp"("model.py":6:0))
  return %5, %3 : tensor<4x8xf32>, tensor<4xi64>
}
