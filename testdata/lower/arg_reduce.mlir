// RUN: opt %s --passes=torch-to-ten
// argmax/argmin: ten.reduce kind argmax/argmin (int64; over every dim, flattened row-major, when
// `dim` is absent), then a reshape for keepdim. max.dim/min.dim: values from a max/min reduce,
// indices from an argmax/argmin reduce. A rank-0 input's index is 0.
func.func @main(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> (tensor<2x4xi64>, tensor<i64>, tensor<2x3x1xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<2x1x4xi32>, tensor<2x1x4xi64>, tensor<i64>) {
  %0 = "torch.aten.argmax"(%x) {dim = 1 : i64, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2x4xi64> loc("argmax"("model.py":3:0))
  %1 = "torch.aten.argmin"(%x) {keepdim = false} : (tensor<2x3x4xf32>) -> tensor<i64>
  %2 = "torch.aten.argmax"(%x) {dim = -1 : i64, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xi64>
  %3:2 = "torch.aten.max.dim"(%x) {dim = 0 : i64, keepdim = false} : (tensor<2x3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xi64>)
  %4 = "torch.aten.neg"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = "torch.aten._to_copy"(%4) {dtype = i32} : (tensor<2x3x4xf32>) -> tensor<2x3x4xi32>
  %6:2 = "torch.aten.min.dim"(%5) {dim = 1 : i64, keepdim = true} : (tensor<2x3x4xi32>) -> (tensor<2x1x4xi32>, tensor<2x1x4xi64>)
  %7 = "torch.aten.argmax"(%s) {keepdim = false} : (tensor<f32>) -> tensor<i64>
  return %0, %1, %2, %3#0, %3#1, %6#0, %6#1, %7 : tensor<2x4xi64>, tensor<i64>, tensor<2x3x1xi64>, tensor<3x4xf32>, tensor<3x4xi64>, tensor<2x1x4xi32>, tensor<2x1x4xi64>, tensor<i64>
}
