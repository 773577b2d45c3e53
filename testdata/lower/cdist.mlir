// RUN: opt %s --passes=torch-to-ten
// cdist: the difference broadcast to [.., P, R, M] (x2's batch dim of 1 broadcasts), then per p:
// 2 is sqrt of a sum of squares, inf the max of |d|, 0 a count of nonzero d, others pow forms.
func.func @main(%a: tensor<2x5x3xf32>, %b: tensor<1x6x3xf32>) -> (tensor<2x5x6xf32>, tensor<2x5x6xf32>, tensor<2x5x6xf32>, tensor<2x5x6xf32>) {
  %0 = "torch.aten._cdist_forward"(%a, %b) {p = 2.0 : f64} : (tensor<2x5x3xf32>, tensor<1x6x3xf32>) -> tensor<2x5x6xf32>
  %1 = "torch.aten._cdist_forward"(%a, %b) {p = 0x7FF0000000000000 : f64} : (tensor<2x5x3xf32>, tensor<1x6x3xf32>) -> tensor<2x5x6xf32>
  %2 = "torch.aten._cdist_forward"(%a, %b) {p = 0.0 : f64} : (tensor<2x5x3xf32>, tensor<1x6x3xf32>) -> tensor<2x5x6xf32>
  %3 = "torch.aten._cdist_forward"(%a, %b) {p = 3.0 : f64} : (tensor<2x5x3xf32>, tensor<1x6x3xf32>) -> tensor<2x5x6xf32>
  return %0, %1, %2, %3 : tensor<2x5x6xf32>, tensor<2x5x6xf32>, tensor<2x5x6xf32>, tensor<2x5x6xf32>
}
