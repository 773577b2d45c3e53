// RUN: opt %s --passes=torch-to-ten
// Max pooling's gradient: each output's gradient added at its window's argmax (`indices`, flat
// positions in the input plane), one scatter-add over the flattened pooled dims; overlapping
// windows (stride 1 < kernel 2) can share an argmax, and their gradients add up.
func.func @main(%g2: tensor<1x2x2x2xf32>, %x2: tensor<1x2x3x3xf32>, %i2: tensor<1x2x2x2xi64>, %g3: tensor<1x1x1x2x2xf32>, %x3: tensor<1x1x2x3x3xf32>, %i3: tensor<1x1x1x2x2xi64>) -> (tensor<1x2x3x3xf32>, tensor<1x1x2x3x3xf32>) {
  %0 = "torch.aten.max_pool2d_with_indices_backward"(%g2, %x2, %i2) {kernel_size = array<i64: 2, 2>, stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<1x2x2x2xf32>, tensor<1x2x3x3xf32>, tensor<1x2x2x2xi64>) -> tensor<1x2x3x3xf32> loc("pool_grad"("model.py":12:0))
  %1 = "torch.aten.max_pool3d_with_indices_backward"(%g3, %x3, %i3) {kernel_size = array<i64: 2, 2, 2>, stride = array<i64: 1, 1, 1>, padding = array<i64: 0, 0, 0>, dilation = array<i64: 1, 1, 1>, ceil_mode = false} : (tensor<1x1x1x2x2xf32>, tensor<1x1x2x3x3xf32>, tensor<1x1x1x2x2xi64>) -> tensor<1x1x2x3x3xf32> loc("pool_grad"("model.py":13:0))
  return %0, %1 : tensor<1x2x3x3xf32>, tensor<1x1x2x3x3xf32>
}
