// RUN: opt %s --passes=torch-to-ten
// Unary math (integer inputs of float functions convert first; rounding ops are the identity on
// integers) and activations as formulas: relu = max(x, 0), gelu (erf and tanh forms), silu.
func.func @main(%f: tensor<4xf32>, %i: tensor<4xi64>, %lo: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "torch.aten.exp"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  %1 = "torch.aten.rsqrt"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "torch.aten.floor"(%i) : (tensor<4xi64>) -> tensor<4xi64>
  %3 = "torch.aten.round"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "torch.aten.neg"(%i) : (tensor<4xi64>) -> tensor<4xi64>
  %5 = "torch.aten.reciprocal"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  %6 = "torch.aten.isnan"(%f) : (tensor<4xf32>) -> tensor<4xi1>
  %7 = "torch.aten.isinf"(%i) : (tensor<4xi64>) -> tensor<4xi1>
  %8 = "torch.aten.relu"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %9 = "torch.aten.leaky_relu"(%f) {negative_slope = 0.2 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %10 = "torch.aten.hardtanh"(%f) {min_val = 0 : i64, max_val = 6 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %11 = "torch.aten.clamp"(%f) {min = -1.5 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %12 = "torch.aten.clamp.Tensor"(%f, %lo) {operandSegmentSizes = array<i64: 1, 1, 0>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  // gelu(x) = 0.5 * x * (1 + erf(x * M_SQRT1_2))
  %13 = "torch.aten.gelu"(%f) {approximate = "none"} : (tensor<4xf32>) -> tensor<4xf32>
  // gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
  %14 = "torch.aten.gelu"(%f) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %15 = "torch.aten.silu"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  %16 = "torch.aten.sigmoid"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  // pow with a scalar exponent: 2 is x*x, 0.5 is sqrt, others ten.pow
  %17 = "torch.aten.pow.Tensor_Scalar"(%f) {exponent = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %18 = "torch.aten.pow.Tensor_Scalar"(%i) {exponent = 0.5 : f64} : (tensor<4xi64>) -> tensor<4xf32>
  %19 = "torch.aten.pow.Tensor_Scalar"(%f) {exponent = 3.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %20 = "torch.aten.pow.Tensor_Tensor"(%f, %i) : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20 : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi64>, tensor<4xf32>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
