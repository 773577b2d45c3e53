// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A torch op without a ten lowering stays after torch-to-ten; the tpu target names it.
func.func @main(%x: tensor<2x3xf32> {ember.input = "x"}) -> tensor<2x3xf32> {
  %0 = "torch.aten.rand"() {size = array<i64: 2, 3>} : () -> tensor<2x3xf32> loc("rand"("model.py":7:0))
  %1 = "torch.aten.add.Tensor"(%x, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
