// RUN: opt %s --passes=torch-to-ten
// nonzero_static: each element's rank among the nonzero ones (a running count), the others out
// of range; each coordinate (flat position / stride mod size) scattered at those ranks into a
// column of `fill_value`s; the columns concatenated.
func.func @main(%x: tensor<3x4xf32>) -> tensor<5x2xi64> {
  %0 = "torch.aten.nonzero_static"(%x) {size = 5 : i64, fill_value = -1 : i64} : (tensor<3x4xf32>) -> tensor<5x2xi64> loc("nonzero_static"("model.py":5:0))
  return %0 : tensor<5x2xi64>
}
