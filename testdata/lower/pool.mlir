// RUN: opt %s --passes=torch-to-ten
// Pools reduce ten.windows over the kernel dims. max: padding is -inf (the lowest int for ints);
// the unused indices result is a zeros splat. ceil_mode pads the high side so the windows give
// torch's output size. avg: sum of the zero-padded windows over the window size, or over a count
// of covered elements (count_include_pad=false, or ceil-mode windows past the padding), or
// divisor_override. adaptive: output 1 is a mean; a dividing size reshapes into (out, window);
// otherwise windows [floor(i*S/O), ceil((i+1)*S/O)) are gathered per dim, masked and averaged.
module attributes {ember.symbols = {s0 = array<i64: 1, 8>}} {
  func.func @main(%x: tensor<2x3x8x8xf32>, %y: tensor<1x2x7x7xf32>, %d: tensor<?x3x8x8xf32, #ember.dims<["s0", 3, 8, 8]>>, %i: tensor<1x1x5x5xi64>) -> (tensor<2x3x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x1x2x2xi64>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x4x2xf32>, tensor<1x2x3x3xf32>, tensor<?x3x1x1xf32, #ember.dims<["s0", 3, 1, 1]>>) {
    // kernel 3, stride 2, padding 1
    %0:2 = "torch.aten.max_pool2d_with_indices"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = false} : (tensor<2x3x8x8xf32>) -> (tensor<2x3x4x4xf32>, tensor<2x3x4x4xi64>) loc("max_pool"("model.py":4:0))
    // ceil_mode: 7 -> 4 windows of 2 (the last one has one element)
    %1:2 = "torch.aten.max_pool2d_with_indices"(%y) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x2x7x7xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi64>)
    // int64, dilation 2, default stride (= kernel)
    %2:2 = "torch.aten.max_pool2d_with_indices"(%i) {kernel_size = array<i64: 2, 2>, stride = array<i64>, padding = array<i64: 0, 0>, dilation = array<i64: 2, 2>, ceil_mode = false} : (tensor<1x1x5x5xi64>) -> (tensor<1x1x2x2xi64>, tensor<1x1x2x2xi64>)
    // count_include_pad: divide by 9
    %3 = "torch.aten.avg_pool2d"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = false, count_include_pad = true} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    // count_include_pad false: divide by the in-input count
    %4 = "torch.aten.avg_pool2d"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    // ceil_mode: the last window is cut off by the input's end
    %5 = "torch.aten.avg_pool2d"(%y) {kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 0, 0>, ceil_mode = true, count_include_pad = true} : (tensor<1x2x7x7xf32>) -> tensor<1x2x4x4xf32>
    %6 = "torch.aten.avg_pool2d"(%x) {kernel_size = array<i64: 3, 3>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, ceil_mode = false, count_include_pad = true, divisor_override = 5 : i64} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
    %7 = "torch.aten._adaptive_avg_pool2d"(%x) {output_size = array<i64: 1, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x1x1xf32>
    %8 = "torch.aten._adaptive_avg_pool2d"(%x) {output_size = array<i64: 4, 2>} : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x2xf32>
    // 7 -> 3: windows [0, 3), [2, 5), [4, 7)
    %9 = "torch.aten._adaptive_avg_pool2d"(%y) {output_size = array<i64: 3, 3>} : (tensor<1x2x7x7xf32>) -> tensor<1x2x3x3xf32>
    %10 = "torch.aten._adaptive_avg_pool2d"(%d) {output_size = array<i64: 1, 1>} : (tensor<?x3x8x8xf32, #ember.dims<["s0", 3, 8, 8]>>) -> tensor<?x3x1x1xf32, #ember.dims<["s0", 3, 1, 1]>>
    return %0#0, %1#0, %2#0, %3, %4, %5, %6, %7, %8, %9, %10 : tensor<2x3x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x1x2x2xi64>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2x3x4x4xf32>, tensor<2x3x1x1xf32>, tensor<2x3x4x2xf32>, tensor<1x2x3x3xf32>, tensor<?x3x1x1xf32, #ember.dims<["s0", 3, 1, 1]>>
  }
}
