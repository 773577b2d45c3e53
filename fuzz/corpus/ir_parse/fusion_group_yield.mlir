// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  %0 = "ember.fusion_group"(%a) ({
  ^bb0(%x: tensor<2x3xf32>):
    %1 = "torch.aten.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "ember.yield"(%x, %1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }) {kind = "elementwise"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
