// RUN: opt %s --passes=torch-to-ten
// Max pooling's indices, when the model reads them: the argmax over each padded window
// (row-major within the window, the first maximum) turned into a flat position in the input
// plane: o·stride - padding + digit·dilation per spatial dim, combined row-major.
func.func @main(%x: tensor<1x1x5x5xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>) {
  %0:2 = "torch.aten.max_pool2d_with_indices"(%x) {kernel_size = array<i64: 2, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x1x5x5xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>) loc("max_pool"("model.py":9:0))
  return %0#0, %0#1 : tensor<1x1x3x3xf32>, tensor<1x1x3x3xi64>
}
