// RUN: opt %s --passes=torch-to-ten
// convolution as im2col and one GEMM: ten.pad (zeros) -> ten.windows [N, C, K.., O..] ->
// transpose to [C, K.., N, O..] -> reshape [C*K, N*P] -> ten.dot_general with the weight viewed
// as [CO, C*K] -> [CO, N, O..] -> transpose to [N, CO, O..] (a reshape when N is 1) -> + bias.
// Groups are a batch dim of the GEMM: [G, CO/G, C/G*K] x [G, C/G*K, N*P].
module attributes {ember.symbols = {s0 = array<i64: 1, 8>}} {
  func.func @main(%x: tensor<2x4x9x9xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %wg: tensor<6x2x3x3xf32>, %x1: tensor<1x4x8xf32>, %w1: tensor<3x4x2xf32>, %xd: tensor<?x4x9x9xf32, #ember.dims<["s0", 4, 9, 9]>>, %wp: tensor<5x4x1x1xf32>) -> (tensor<2x6x5x5xf32>, tensor<2x6x5x5xf32>, tensor<2x6x7x7xf32>, tensor<1x3x7xf32>, tensor<?x6x9x9xf32, #ember.dims<["s0", 6, 9, 9]>>, tensor<2x5x9x9xf32>) {
    // padding 1, stride 2, bias
    %0 = "torch.aten.convolution"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, transposed = false} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<2x6x5x5xf32> loc("conv"("model.py":3:0))
    // dilation 2, no padding, no bias
    %1 = "torch.aten.convolution"(%x, %w) {dilation = array<i64: 2, 2>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
    // groups 2
    %2 = "torch.aten.convolution"(%x, %wg) {dilation = array<i64: 1, 1>, groups = 2 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x7x7xf32>
    // 1-d, batch 1
    %3 = "torch.aten.convolution"(%x1, %w1) {dilation = array<i64: 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0>, padding = array<i64: 0>, stride = array<i64: 1>, transposed = false} : (tensor<1x4x8xf32>, tensor<3x4x2xf32>) -> tensor<1x3x7xf32>
    // symbolic batch
    %4 = "torch.aten.convolution"(%xd, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<?x4x9x9xf32, #ember.dims<["s0", 4, 9, 9]>>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<?x6x9x9xf32, #ember.dims<["s0", 6, 9, 9]>>
    // 1x1, stride 1: no windows, the columns are the input transposed to [C, N, H, W]
    %5 = "torch.aten.convolution"(%x, %wp) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x9x9xf32>, tensor<5x4x1x1xf32>) -> tensor<2x5x9x9xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<2x6x5x5xf32>, tensor<2x6x5x5xf32>, tensor<2x6x7x7xf32>, tensor<1x3x7xf32>, tensor<?x6x9x9xf32, #ember.dims<["s0", 6, 9, 9]>>, tensor<2x5x9x9xf32>
  }
}
