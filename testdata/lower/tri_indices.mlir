// RUN: opt %s --passes=torch-to-ten
// tril_indices/triu_indices: each grid position goes to its rank among the kept ones (a
// running count of the triangle's mask), the others out of range (skipped by the scatter);
// a negative offset for tril, a wide grid for triu.
func.func @main() -> (tensor<2x3xi64>, tensor<2x7xi64>) {
  %0 = "torch.aten.tril_indices"() {row = 3 : i64, col = 3 : i64, offset = -1 : i64} : () -> tensor<2x3xi64> loc("tril"("model.py":3:0))
  %1 = "torch.aten.triu_indices"() {row = 2 : i64, col = 4 : i64, offset = 0 : i64} : () -> tensor<2x7xi64> loc("triu"("model.py":4:0))
  return %0, %1 : tensor<2x3xi64>, tensor<2x7xi64>
}
