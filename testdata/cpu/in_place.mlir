// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce,fuse
// Functionalized in-place updates of inputs (results marked `ember.input_mutation`), as an
// optimizer step hands them over: the cpu target computes `m` and `p` in their inputs' memory;
// `w` (a transpose reads other elements than the one written) and `s` (read again, with its
// new value, after its update) keep buffers of their own (tools/tests/cpu/kernels.rs compiles and runs it).
func.func @main(%p: tensor<64x32xf32> {ember.input = "p"}, %g: tensor<64x32xf32> {ember.input = "g"}, %m: tensor<64x32xf32> {ember.input = "m"}, %w: tensor<32x32xf32> {ember.input = "w"}, %s: tensor<8xf32> {ember.input = "s"}) -> (tensor<64x32xf32> {ember.input_mutation = "m"}, tensor<64x32xf32> {ember.input_mutation = "p"}, tensor<32x32xf32> {ember.input_mutation = "w"}, tensor<8xf32> {ember.input_mutation = "s"}, tensor<f32> {ember.output = "total"}) {
  %0 = "torch.aten.mul.Scalar"(%m) {other = 0.9 : f64} : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %1 = "torch.aten.mul.Scalar"(%g) {other = 0.1 : f64} : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %2 = "torch.aten.add.Tensor"(%0, %1) {alpha = 1 : i64} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %3 = "torch.aten.mul.Scalar"(%2) {other = 0.01 : f64} : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %4 = "torch.aten.sub.Tensor"(%p, %3) {alpha = 1 : i64} : (tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x32xf32>
  %5 = "torch.aten.permute"(%w) {dims = array<i64: 1, 0>} : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %6 = "torch.aten.add.Scalar"(%5) {other = 1.0 : f64, alpha = 1 : i64} : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %7 = "torch.aten.mul.Scalar"(%s) {other = 2.0 : f64} : (tensor<8xf32>) -> tensor<8xf32>
  %8 = "torch.aten.mul.Tensor"(%s, %7) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %9 = "torch.aten.sum"(%8) : (tensor<8xf32>) -> tensor<f32>
  return %2, %4, %6, %7, %9 : tensor<64x32xf32>, tensor<64x32xf32>, tensor<32x32xf32>, tensor<8xf32>, tensor<f32>
}
