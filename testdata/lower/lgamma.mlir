// RUN: opt %s --passes=torch-to-ten
// lgamma: Lanczos' series (g = 7, 9 terms) for x >= 1/2; below, the reflection
// log(π / |sin π(x - round x)|) - lgamma(1 - x), the sine taken of the exact distance to the
// nearest integer; +inf at 0, the negative integers and ±inf. Integers are promoted to f32.
// `tools/tests/cpu/mod.rs` (math_ops_match_eager) checks it against torch eager.
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "torch.aten.lgamma"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("lgamma"("model.py":3:0))
  %1 = "torch.aten.lgamma"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
