// RUN: opt %s --passes=torch-to-ten
// native_group_norm views [N, C, *] as [N, group, C/group * HxW], normalizes each row like layer
// norm (mean, biased variance, rsqrt(var + eps)), then applies the per-channel weight and bias.
// mean and rstd are [N, group]. A symbolic channel or spatial dim stays a torch op.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main(%x: tensor<2x6x3x2xf32>, %w: tensor<6xf32>, %b: tensor<6xf32>, %s: tensor<2x4x?xf32, #ember.dims<[2, 4, "s0"]>>) -> (tensor<2x6x3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x6x3x2xf32>, tensor<2x4x?xf32, #ember.dims<[2, 4, "s0"]>>) {
    %0:3 = "torch.aten.native_group_norm"(%x, %w, %b) {C = 6 : i64, HxW = 6 : i64, N = 2 : i64, eps = 1.0e-05 : f64, group = 3 : i64, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<2x6x3x2xf32>, tensor<6xf32>, tensor<6xf32>) -> (tensor<2x6x3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>) loc("group_norm"("model.py":5:0))
    // no weight or bias
    %1:3 = "torch.aten.native_group_norm"(%x) {C = 6 : i64, HxW = 6 : i64, N = 2 : i64, eps = 1.0e-05 : f64, group = 1 : i64, operandSegmentSizes = array<i64: 1, 0, 0>} : (tensor<2x6x3x2xf32>) -> (tensor<2x6x3x2xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
    %2:3 = "torch.aten.native_group_norm"(%s) {C = 4 : i64, HxW = #ember.dims<["s0"]>, N = 2 : i64, eps = 1.0e-05 : f64, group = 2 : i64, operandSegmentSizes = array<i64: 1, 0, 0>} : (tensor<2x4x?xf32, #ember.dims<[2, 4, "s0"]>>) -> (tensor<2x4x?xf32, #ember.dims<[2, 4, "s0"]>>, tensor<2x2xf32>, tensor<2x2xf32>)
    return %0#0, %0#1, %0#2, %1#0, %2#0 : tensor<2x6x3x2xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x6x3x2xf32>, tensor<2x4x?xf32, #ember.dims<[2, 4, "s0"]>>
  }
}
