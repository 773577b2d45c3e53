// RUN: opt %s --passes=torch-to-ten
// softmax = exp(x - max) / sum(exp(x - max)); log_softmax = (x - max) - log(sum(exp(x - max))).
// native_layer_norm: out = (x - mean) * rsqrt(var + eps) * weight + bias, with mean and rstd
// returned keeping the normalized dims as 1; f16 inputs compute (and return stats) in f32.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<3x4xf32>, %b: tensor<3x4xf32>, %h: tensor<?x8xf16, #ember.dims<["s0", 8]>>, %hw: tensor<8xf16>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>) {
    %0 = "torch.aten._softmax"(%x) {dim = -1 : i64, half_to_float = false} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("softmax"("model.py":7:0))
    %1 = "torch.aten._log_softmax"(%x) {dim = 1 : i64, half_to_float = false} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    // f16 computes in f32 and converts back
    %2 = "torch.aten._softmax"(%h) {dim = 1 : i64, half_to_float = false} : (tensor<?x8xf16, #ember.dims<["s0", 8]>>) -> tensor<?x8xf16, #ember.dims<["s0", 8]>>
    %3:3 = "torch.aten.native_layer_norm"(%x, %w, %b) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 3, 4>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) loc("layer_norm"("model.py":8:0))
    // no bias, f16 with symbolic rows
    %4:3 = "torch.aten.native_layer_norm"(%h, %hw) {eps = 1.0e-06 : f64, normalized_shape = array<i64: 8>, operandSegmentSizes = array<i64: 1, 1, 0>} : (tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<8xf16>) -> (tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>)
    return %0, %1, %2, %3#0, %3#1, %3#2, %4#0, %4#1, %4#2 : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>, tensor<?x8xf16, #ember.dims<["s0", 8]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>, tensor<?x1xf32, #ember.dims<["s0", 1]>>
  }
}
