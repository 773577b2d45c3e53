// RUN: opt %s --passes=torch-to-ten
// Inference batch norm per channel (dim 1), as torch's CPU kernel: alpha = weight *
// rsqrt(running_var + eps), beta = bias - running_mean * alpha, out = x * alpha + beta. The two
// statistics results are empty ([0]) splats. f16 computes in f32. Training mode stays a torch op.
func.func @main(%x: tensor<2x3x4x4xf32>, %w: tensor<3xf32>, %b: tensor<3xf32>, %m: tensor<3xf32>, %v: tensor<3xf32>, %h: tensor<2x3xf16>) -> (tensor<2x3x4x4xf32>, tensor<0xf32>, tensor<0xf32>, tensor<2x3xf16>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>) {
  %0:3 = "torch.aten._native_batch_norm_legit_no_training"(%x, %w, %b, %m, %v) {eps = 1.0e-05 : f64, momentum = 0.1 : f64, operandSegmentSizes = array<i64: 1, 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<0xf32>, tensor<0xf32>) loc("batch_norm"("model.py":5:0))
  // no weight or bias; f16 input with f32 statistics
  %1:3 = "torch.aten._native_batch_norm_legit_no_training"(%h, %m, %v) {eps = 1.0e-03 : f64, momentum = 0.1 : f64, operandSegmentSizes = array<i64: 1, 0, 0, 1, 1>} : (tensor<2x3xf16>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3xf16>, tensor<0xf16>, tensor<0xf16>)
  %2:3 = "torch.aten._native_batch_norm_legit"(%x, %w, %b, %m, %v) {training = false, eps = 1.0e-05 : f64, momentum = 0.1 : f64, operandSegmentSizes = array<i64: 1, 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<0xf32>, tensor<0xf32>)
  %3:3 = "torch.aten._native_batch_norm_legit"(%x, %w, %b, %m, %v) {training = true, eps = 1.0e-05 : f64, momentum = 0.1 : f64, operandSegmentSizes = array<i64: 1, 1, 1, 1, 1>} : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1, %0#2, %1#0, %2#0, %3#0, %3#1 : tensor<2x3x4x4xf32>, tensor<0xf32>, tensor<0xf32>, tensor<2x3xf16>, tensor<2x3x4x4xf32>, tensor<2x3x4x4xf32>, tensor<3xf32>
}
