// RUN: opt %s --passes=torch-to-ten
// Unary math without a ten op of its own, as formulas over exp/log/log1p/sqrt/atan2:
// expm1 (through tanh(x/2) near 0), log2/log10 (scaled log), cosh, sinh (through expm1 near 0),
// asinh/acosh (log1p forms, log x + ln 2 for huge x), atanh, asin/acos/atan (atan2), elu.
// `tools/tests/cpu.rs` (math_ops_match_eager) checks them against torch eager.
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "torch.aten.expm1"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "torch.aten.log2"(%i) : (tensor<4xi64>) -> tensor<4xf32>
  %2 = "torch.aten.log10"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "torch.aten.cosh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "torch.aten.sinh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "torch.aten.asinh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "torch.aten.acosh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = "torch.aten.atanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %8 = "torch.aten.asin"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %9 = "torch.aten.acos"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %10 = "torch.aten.atan"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  // selu: scale 1.0507, alpha 1.6733
  %11 = "torch.aten.elu"(%x) {alpha = 1.6732632423543772 : f64, scale = 1.0507009873554805 : f64, input_scale = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
