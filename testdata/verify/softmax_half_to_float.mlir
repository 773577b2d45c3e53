// RUN: opt %s
// half_to_float (CUDA's f16 softmax kernels) makes the result float32; without it, the input's dtype.
func.func @main(%x: tensor<2x8xf16>) -> (tensor<2x8xf32>, tensor<2x8xf16>, tensor<2x8xf16>) {
  %0 = "torch.aten._softmax"(%x) {dim = 1 : i64, half_to_float = true} : (tensor<2x8xf16>) -> tensor<2x8xf32>
  %1 = "torch.aten._log_softmax"(%x) {dim = 1 : i64, half_to_float = false} : (tensor<2x8xf16>) -> tensor<2x8xf16>
  %2 = "torch.aten._softmax"(%x) {dim = 1 : i64, half_to_float = true} : (tensor<2x8xf16>) -> tensor<2x8xf16>
  return %0, %1, %2 : tensor<2x8xf32>, tensor<2x8xf16>, tensor<2x8xf16>
}
