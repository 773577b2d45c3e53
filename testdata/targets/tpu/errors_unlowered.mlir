// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A torch op without a ten lowering stays after torch-to-ten; the tpu target names it.
func.func @main(%x: tensor<2x3xf32> {ember.input = "x"}) -> tensor<2x3xf32> {
  %0:2 = "torch.aten.sort"(%x) {dim = 1 : i64, descending = false} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi64>) loc("sort"("model.py":7:0))
  return %0#0 : tensor<2x3xf32>
}
