// RUN: opt %s --passes=torch-to-ten
// `_linalg_check_errors` on an `info` no factorization computed directly: no step could raise its
// error at run time, so the lowering refuses, naming the node and the user's line.
func.func @main(%info: tensor<2xi32>) -> tensor<2xi32> {
  "torch.aten._linalg_check_errors"(%info) {api_name = "linalg.inv", is_matrix = true} : (tensor<2xi32>) -> () loc("check"("model.py":3:0))
  return %info : tensor<2xi32>
}
// -----
// LU without pivoting stays a torch op (torch's CPU kernel refuses it too); the cpu target
// names it.
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0:3 = "torch.aten.linalg_lu_factor_ex"(%a) {pivot = false, check_errors = false} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>) loc("lu"("model.py":4:0))
  return %0#0 : tensor<3x3xf32>
}
