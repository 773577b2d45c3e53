// RUN: opt %s --passes=torch-to-ten
// Comparisons compute in the promoted dtype of their operands (torch's result_type, wrapped
// scalars included) and give bool; logical ops read truthiness (x != 0); where selects.
func.func @main(%f: tensor<2x3xf32>, %i: tensor<2x3xi64>, %b: tensor<2x3xi1>, %col: tensor<2x1xi32>, %s: tensor<f64>) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi64>) {
  // int tensor vs float scalar: compare in f32
  %0 = "torch.aten.lt.Scalar"(%i) {other = 2.5 : f64} : (tensor<2x3xi64>) -> tensor<2x3xi1>
  // bool tensor vs int scalar: compare in i64
  %1 = "torch.aten.eq.Scalar"(%b) {other = 1 : i64} : (tensor<2x3xi1>) -> tensor<2x3xi1>
  // bool vs bool tensors: no conversion
  %2 = "torch.aten.ne.Tensor"(%b, %b) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  // i64 vs broadcast i32 column: compare in i64
  %3 = "torch.aten.ge.Tensor"(%i, %col) : (tensor<2x3xi64>, tensor<2x1xi32>) -> tensor<2x3xi1>
  // f32 vs zero-dim f64: the dim tensor's f32 wins
  %4 = "torch.aten.gt.Tensor"(%f, %s) : (tensor<2x3xf32>, tensor<f64>) -> tensor<2x3xi1>
  // i64 vs zero-dim f64: float category wins, f64
  %5 = "torch.aten.le.Tensor"(%i, %s) : (tensor<2x3xi64>, tensor<f64>) -> tensor<2x3xi1>
  %6 = "torch.aten.logical_and"(%b, %i) : (tensor<2x3xi1>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %7 = "torch.aten.logical_or"(%f, %col) : (tensor<2x3xf32>, tensor<2x1xi32>) -> tensor<2x3xi1>
  %8 = "torch.aten.logical_xor"(%b, %b) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %9 = "torch.aten.logical_not"(%f) : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %10 = "torch.aten.bitwise_not"(%b) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  // where: bool condition broadcast, branches promoted to the result dtype
  %11 = "torch.aten.where.self"(%b, %i, %f) : (tensor<2x3xi1>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %12 = "torch.aten.bitwise_xor.Tensor"(%i, %col) : (tensor<2x3xi64>, tensor<2x1xi32>) -> tensor<2x3xi64>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi64>
}
