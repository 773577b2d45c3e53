// RUN: opt %s
func.func @main(%a: tensor<2x3xf32>, %w: tensor<3xf32>) -> (tensor<2x3xf32>) {
  %0:3 = "torch.aten.native_layer_norm"(%a, %w) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 3>} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %0#0 : tensor<2x3xf32>
}
