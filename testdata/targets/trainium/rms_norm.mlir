// RUN: trainium %s
func.func @main(%x0: tensor<2x129x64xf32> {ember.input = "x0"}, %x1: tensor<64xf32> {ember.input = "x1"}) -> (tensor<2x129x64xf32> {ember.output = "y"}) {
  %0 = "ember.fusion_group"(%x0, %x1) ({
  ^bb0(%a0: tensor<2x129x64xf32>, %a1: tensor<64xf32>):
    %v1 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 129, 64>, value = 64.0 : f64} : () -> tensor<2x129x64xf32>
    %v2 = "ten.mul"(%a0, %a0) : (tensor<2x129x64xf32>, tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    %v3 = "ten.reduce"(%v2) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x129x64xf32>) -> tensor<2x129xf32>
    %v4 = "ten.broadcast"(%v3) {dims = array<i64: 0, 1>, shape = array<i64: 2, 129, 64>} : (tensor<2x129xf32>) -> tensor<2x129x64xf32>
    %v5 = "ten.div"(%v4, %v1) : (tensor<2x129x64xf32>, tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    %v6 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 129, 64>, value = 1e-06 : f64} : () -> tensor<2x129x64xf32>
    %v7 = "ten.add"(%v5, %v6) : (tensor<2x129x64xf32>, tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    %v8 = "ten.rsqrt"(%v7) : (tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    %v9 = "ten.mul"(%a0, %v8) : (tensor<2x129x64xf32>, tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    %v10 = "ten.broadcast"(%a1) {dims = array<i64: 2>, shape = array<i64: 2, 129, 64>} : (tensor<64xf32>) -> tensor<2x129x64xf32>
    %v11 = "ten.mul"(%v9, %v10) : (tensor<2x129x64xf32>, tensor<2x129x64xf32>) -> tensor<2x129x64xf32>
    "ember.yield"(%v11) : (tensor<2x129x64xf32>) -> ()
  }) {eps = 1e-06 : f64, kind = "rms_norm"} : (tensor<2x129x64xf32>, tensor<64xf32>) -> tensor<2x129x64xf32> loc("rms_norm"("model.py":7:0))
  return %0 : tensor<2x129x64xf32>
}
