// RUN: opt %s --passes=torch-to-ten
// Arithmetic: broadcasting (ten.broadcast only where shapes differ), type promotion (ten.convert
// to the result dtype), wrapped scalars (ten.constant splats), alpha, true and rounding division.
func.func @main(%f: tensor<2x3xf32>, %row: tensor<3xf32>, %i: tensor<2x3xi64>, %j: tensor<3xi32>, %h: tensor<2x3xf16>, %s: tensor<f32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>) {
  // add with broadcasting and alpha: f + 2 * row
  %0 = "torch.aten.add.Tensor"(%f, %row) {alpha = 2 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("add"("model.py":10:0))
  // int tensor + float scalar promotes to f32
  %1 = "torch.aten.add.Scalar"(%i) {other = 0.5 : f64, alpha = 1 : i64} : (tensor<2x3xi64>) -> tensor<2x3xf32> loc("add_1"("model.py":11:0))
  // sub with alpha 1: no multiply; int32 row promotes to f32
  %2 = "torch.aten.sub.Tensor"(%f, %j) {alpha = 1 : i64} : (tensor<2x3xf32>, tensor<3xi32>) -> tensor<2x3xf32>
  // int * int scalar stays int
  %3 = "torch.aten.mul.Scalar"(%i) {other = 3 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  // true division of ints gives float: convert first
  %4 = "torch.aten.div.Tensor"(%i, %j) : (tensor<2x3xi64>, tensor<3xi32>) -> tensor<2x3xf32>
  %5 = "torch.aten.div.Scalar"(%f) {other = 4 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // rounding division: ints floor with a sign fix-up, floats floor/trunc the quotient
  %6 = "torch.aten.div.Tensor_mode"(%i, %j) {rounding_mode = "floor"} : (tensor<2x3xi64>, tensor<3xi32>) -> tensor<2x3xi64>
  %7 = "torch.aten.div.Tensor_mode"(%f, %row) {rounding_mode = "trunc"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %8 = "torch.aten.div.Scalar_mode"(%i) {other = 2 : i64, rounding_mode = "trunc"} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  // a zero-dim tensor does not promote a higher-category dim tensor: f32 stays f32
  %9 = "torch.aten.mul.Tensor"(%f, %s) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %10 = "torch.aten.maximum"(%f, %row) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %11 = "torch.aten.minimum"(%i, %f) : (tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // f16 * f32 zero-dim tensor: the f16 dim tensor wins
  %12 = "torch.aten.mul.Tensor"(%h, %s) : (tensor<2x3xf16>, tensor<f32>) -> tensor<2x3xf16>
  %13 = "torch.aten.remainder.Scalar"(%i) {other = -3 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %14 = "torch.aten.fmod.Tensor"(%f, %row) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %15 = "torch.aten.bitwise_and.Scalar"(%i) {other = 6 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %16 = "torch.aten.pow.Scalar"(%f) {self = 2.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>
}
