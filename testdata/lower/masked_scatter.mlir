// RUN: opt %s --passes=torch-to-ten
// masked_scatter: the broadcast mask's k-th true element (row-major) takes source's k-th element,
// k a running count of the mask (cumsum - 1, clamped into the source); the others keep `self`.
func.func @main(%x: tensor<3x4xf32>, %m: tensor<4xi1>, %s: tensor<2x5xf32>) -> tensor<3x4xf32> {
  %0 = "torch.aten.masked_scatter"(%x, %m, %s) : (tensor<3x4xf32>, tensor<4xi1>, tensor<2x5xf32>) -> tensor<3x4xf32> loc("masked_scatter"("model.py":4:0))
  return %0 : tensor<3x4xf32>
}
