// RUN: opt %s --passes=torch-to-ten
// hypot: m·sqrt(1 + (n/m)²) with m, n the larger and smaller magnitude (no overflow), 0 where
// both are 0, NaN where either is NaN, inf where either is ±inf. ldexp: self · pow(2, other),
// an integer exponent promoted to the float result.
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>, %e: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "torch.aten.hypot"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("hypot"("model.py":3:0))
  %1 = "torch.aten.ldexp.Tensor"(%a, %e) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
