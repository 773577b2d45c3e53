// RUN: opt %s --passes=torch-to-ten,cse
// Random ops are Philox4x32-10 in int64 ten ops over a seed argument the pass appends
// (`ember_seed`, marked ember.rng_seed), one stream each in program order (the module's
// ember.rng_streams): rand's uniform is a word's top 24 bits times 2^-24; training dropout
// keeps where another stream's uniform is >= p and scales by 1/(1 - p).
func.func @main(%x: tensor<3xf32> {ember.input = "x"}) -> (tensor<2xf32>, tensor<3xf32>, tensor<3xi1>) {
  %0 = "torch.aten.rand"() {size = array<i64: 2>} : () -> tensor<2xf32> loc("rand"("model.py":4:0))
  %1:2 = "torch.aten.native_dropout"(%x) {p = 0.25 : f64, train = true} : (tensor<3xf32>) -> (tensor<3xf32>, tensor<3xi1>) loc("dropout"("model.py":5:0))
  return %0, %1#0, %1#1 : tensor<2xf32>, tensor<3xf32>, tensor<3xi1>
}
