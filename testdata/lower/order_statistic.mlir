// RUN: opt %s --passes=torch-to-ten
// median.dim / nanmedian.dim / kthvalue: one stable ascending argsort and each row's element at
// a position of that order: median's (n - 1) / 2 unless the row has a NaN (then the first NaN:
// the non-NaN count), nanmedian's (c - 1) / 2 of the c non-NaN values, kthvalue's k - 1;
// median over every element flattens first.
func.func @main(%x: tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3xi64>, tensor<3x1xf32>, tensor<3x1xi64>, tensor<5xf32>, tensor<5xi64>, tensor<f32>) {
  %0:2 = "torch.aten.median.dim"(%x) {dim = 1 : i64} : (tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3xi64>) loc("median"("model.py":5:0))
  %1:2 = "torch.aten.nanmedian.dim"(%x) {dim = 1 : i64, keepdim = true} : (tensor<3x5xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>) loc("nanmedian"("model.py":6:0))
  %2:2 = "torch.aten.kthvalue"(%x) {k = 2 : i64, dim = 0 : i64} : (tensor<3x5xf32>) -> (tensor<5xf32>, tensor<5xi64>) loc("kthvalue"("model.py":7:0))
  %3 = "torch.aten.median"(%x) : (tensor<3x5xf32>) -> tensor<f32> loc("median_1"("model.py":8:0))
  return %0#0, %0#1, %1#0, %1#1, %2#0, %2#1, %3 : tensor<3xf32>, tensor<3xi64>, tensor<3x1xf32>, tensor<3x1xi64>, tensor<5xf32>, tensor<5xi64>, tensor<f32>
}
