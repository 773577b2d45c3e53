// RUN: opt %s --passes=torch-to-ten
// addmv: beta·self + alpha·(mat @ vec), the vector a one-column matrix of the product; self
// broadcast to [M]; a factor of 1 is not multiplied.
func.func @main(%b: tensor<1xf32>, %m: tensor<3x4xf32>, %v: tensor<4xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = "torch.aten.addmv"(%b, %m, %v) {beta = 0.5 : f64, alpha = 2.0 : f64} : (tensor<1xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32> loc("addmv"("model.py":5:0))
  %1 = "torch.aten.addmv"(%b, %m, %v) : (tensor<1xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32> loc("addmv"("model.py":6:0))
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
