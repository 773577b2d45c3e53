// RUN: opt %s --passes=torch-to-ten
// adaptive_max_pool2d: each spatial dim gathered into torch's windows (7 -> 3: [0, 3), [2, 5),
// [4, 7); 5 -> 2: [0, 3), [2, 5)), padded with -inf, one max and argmax over the windows'
// elements; the argmax's digits plus the windows' starts are the flat input positions. With
// the indices unused, only the max.
func.func @main(%x: tensor<2x7x5xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<2x3x2xf32>) {
  %0:2 = "torch.aten.adaptive_max_pool2d"(%x) {output_size = array<i64: 3, 2>} : (tensor<2x7x5xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>) loc("adaptive_max_pool2d"("model.py":5:0))
  %1:2 = "torch.aten.adaptive_max_pool2d"(%x) {output_size = array<i64: 3, 2>} : (tensor<2x7x5xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xi64>) loc("adaptive_max_pool2d_1"("model.py":6:0))
  return %0#0, %0#1, %1#0 : tensor<2x3x2xf32>, tensor<2x3x2xi64>, tensor<2x3x2xf32>
}
