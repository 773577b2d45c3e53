// RUN: opt %s --passes=torch-to-ten
// put: `source` written (added, with accumulate) at flat row-major indices of `self`, negative
// ones from the end; as_strided_scatter: `src` written at offset + Σ iota_k·stride_k of a
// function input's row-major elements, or of a computed value's storage in the layout eager gave
// it (here column-major: transposed into storage order and back).
func.func @main(%x: tensor<2x3xf32>, %i: tensor<2xi64>, %s: tensor<2xf32>, %v: tensor<2x2xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = "torch.aten.put"(%x, %i, %s) {accumulate = false} : (tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<2x3xf32> loc("put"("model.py":4:0))
  %1 = "torch.aten.put"(%x, %i, %s) {accumulate = true} : (tensor<2x3xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<2x3xf32> loc("put"("model.py":5:0))
  %2 = "torch.aten.as_strided_scatter"(%x, %v) {size = array<i64: 2, 2>, stride = array<i64: 3, 1>, storage_offset = 1 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32> loc("scatter"("model.py":6:0))
  %3 = "torch.aten.mul.Tensor"(%x, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("square"("model.py":7:0))
  %4 = "torch.aten.as_strided_scatter"(%3, %v) {size = array<i64: 2, 2>, stride = array<i64: 1, 2>, storage_offset = 0 : i64, ember.self_strides = array<i64: 1, 2>, ember.self_offset = 0 : i64} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32> loc("scatter_cm"("model.py":8:0))
  return %0, %1, %2, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
