// RUN: opt %s --passes=torch-to-ten
// cumsum/cumprod: ten.cumsum/ten.cumprod (dim normalized) of the input converted to the result
// dtype: bool and ints accumulate in int64 unless `dtype` says otherwise.
func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<5xi32>, %b: tensor<1x16xi1>) -> (tensor<2x3x4xf32>, tensor<5xi64>, tensor<1x16xi64>, tensor<5xf64>, tensor<2x3x4xf32>, tensor<5xi64>) {
  %0 = "torch.aten.cumsum"(%x) {dim = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> loc("cumsum"("model.py":4:0))
  %1 = "torch.aten.cumsum"(%i) {dim = 0 : i64} : (tensor<5xi32>) -> tensor<5xi64>
  %2 = "torch.aten.cumsum"(%b) {dim = -1 : i64} : (tensor<1x16xi1>) -> tensor<1x16xi64>
  %3 = "torch.aten.cumsum"(%i) {dim = 0 : i64, dtype = f64} : (tensor<5xi32>) -> tensor<5xf64>
  %4 = "torch.aten.cumprod"(%x) {dim = -1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %5 = "torch.aten.cumprod"(%i) {dim = 0 : i64} : (tensor<5xi32>) -> tensor<5xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x4xf32>, tensor<5xi64>, tensor<1x16xi64>, tensor<5xf64>, tensor<2x3x4xf32>, tensor<5xi64>
}
