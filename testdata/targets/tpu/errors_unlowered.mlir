// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A torch op without a ten lowering stays after torch-to-ten; the tpu target names it.
func.func @main(%x: tensor<3xi64> {ember.input = "x"}) -> tensor<3xi64> {
  %0 = "torch.aten.randperm"() {n = 3 : i64} : () -> tensor<3xi64> loc("randperm"("model.py":7:0))
  %1 = "torch.aten.add.Tensor"(%x, %0) : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return %1 : tensor<3xi64>
}
