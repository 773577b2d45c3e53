// RUN: opt %s --passes=torch-to-ten
// torch.linalg as the ten factorizations and solves plus formulas over them: cholesky_ex with its
// check attached (`ember.check_errors`, raised by the runtime when an info is non-zero), det as
// LU of Aᵀ (torch's, for a contiguous A), U's diagonal product and the pivots' sign; slogdet the
// same in logs; inv an LU solve of the identity; a right-hand triangular solve as the left-hand
// one of the transposes; svd without U and V gives torch's empty placeholders.
func.func @main(%a: tensor<2x3x3xf32>, %b: tensor<3x4xf32>, %w: tensor<4x3xf64>) -> (tensor<2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x3x3xf32>, tensor<2xi32>, tensor<4x3xf64>, tensor<3xf64>, tensor<3x3xf64>, tensor<2x3x4xf32>, tensor<4x3xf64>, tensor<3x3xf64>, tensor<3xf64>, tensor<3x3xf64>, tensor<0xf64>, tensor<3xf64>) {
  %0:2 = "torch.aten.linalg_cholesky_ex"(%a) {upper = false, check_errors = false} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
  "torch.aten._linalg_check_errors"(%0#1) {api_name = "linalg.cholesky", is_matrix = true} : (tensor<2xi32>) -> ()
  %1:3 = "torch.aten._linalg_det"(%a) : (tensor<2x3x3xf32>) -> (tensor<2xf32>, tensor<2x3x3xf32>, tensor<2x3xi32>)
  %2:4 = "torch.aten._linalg_slogdet"(%a) : (tensor<2x3x3xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2x3x3xf32>, tensor<2x3xi32>)
  %3:2 = "torch.aten.linalg_inv_ex"(%a) {check_errors = false} : (tensor<2x3x3xf32>) -> (tensor<2x3x3xf32>, tensor<2xi32>)
  %4:3 = "torch.aten._linalg_svd"(%w) {full_matrices = false, compute_uv = true} : (tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3xf64>, tensor<3x3xf64>)
  %5 = "torch.aten.linalg_solve_triangular"(%a, %b) {upper = true, left = true, unitriangular = false} : (tensor<2x3x3xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %6:2 = "torch.aten.linalg_qr"(%w) {mode = "reduced"} : (tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3x3xf64>)
  %7:2 = "torch.aten._linalg_eigh"(%4#2) {UPLO = "U", compute_v = true} : (tensor<3x3xf64>) -> (tensor<3xf64>, tensor<3x3xf64>)
  %8:3 = "torch.aten._linalg_svd"(%w) {full_matrices = true, compute_uv = false} : (tensor<4x3xf64>) -> (tensor<0xf64>, tensor<3xf64>, tensor<0xf64>)
  return %0#0, %1#0, %2#0, %2#1, %3#0, %3#1, %4#0, %4#1, %4#2, %5, %6#0, %6#1, %7#0, %7#1, %8#0, %8#1 : tensor<2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x3x3xf32>, tensor<2xi32>, tensor<4x3xf64>, tensor<3xf64>, tensor<3x3xf64>, tensor<2x3x4xf32>, tensor<4x3xf64>, tensor<3x3xf64>, tensor<3xf64>, tensor<3x3xf64>, tensor<0xf64>, tensor<3xf64>
}
// -----
// The rest of the family: lu_factor_ex and lu_solve from the right (a transposed solve with the
// other `adjoint`); solve_ex with a vector right-hand side; triangular_solve's transpose flips the
// triangle; cholesky_solve and cholesky_inverse as two triangular solves; pinv's float64
// tolerances; geqrf, householder_product, and ormqr over reflectors padded to m columns; P of
// linalg_lu and lu_unpack as an LU solve of the identity (pivots extended to m rows for a tall
// matrix); polar and matrix_sqrth as products over the SVD and eigh.
func.func @main(%a: tensor<3x3xf32>, %b: tensor<2x3xf32>, %v: tensor<3xf32>, %t: tensor<4x3xf32>, %tau: tensor<3xf32>, %c: tensor<4x2xf32>, %r: tensor<3x2xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>, tensor<2x3xf32>, tensor<3xf32>, tensor<i32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x3xf32>, tensor<3x3xf32>, tensor<4x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %0:3 = "torch.aten.linalg_lu_factor_ex"(%a) {pivot = true, check_errors = false} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>)
  %1 = "torch.aten.linalg_lu_solve"(%0#0, %0#1, %b) {left = false, adjoint = false} : (tensor<3x3xf32>, tensor<3xi32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2:4 = "torch.aten._linalg_solve_ex"(%a, %v) {left = true, check_errors = false} : (tensor<3x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>, tensor<3xi32>, tensor<i32>)
  %3:2 = "torch.aten.triangular_solve"(%r, %a) {upper = true, transpose = true, unitriangular = false} : (tensor<3x2xf32>, tensor<3x3xf32>) -> (tensor<3x2xf32>, tensor<3x3xf32>)
  %4 = "torch.aten.cholesky_solve"(%3#0, %a) {upper = false} : (tensor<3x2xf32>, tensor<3x3xf32>) -> tensor<3x2xf32>
  %5 = "torch.aten.cholesky_inverse"(%a) {upper = true} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %6 = "torch.aten.linalg_pinv.atol_rtol_tensor"(%a) {hermitian = false, operandSegmentSizes = array<i64: 1, 0, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %7:2 = "torch.aten.geqrf"(%t) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
  %8 = "torch.aten.linalg_householder_product"(%7#0, %tau) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  %9 = "torch.aten.ormqr"(%7#0, %7#1, %c) {left = true, transpose = true} : (tensor<4x3xf32>, tensor<3xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %10:3 = "torch.aten.linalg_lu"(%t) {pivot = true} : (tensor<4x3xf32>) -> (tensor<4x4xf32>, tensor<4x3xf32>, tensor<3x3xf32>)
  %11:2 = "torch.aten.linalg_polar"(%t) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
  %12 = "torch.aten.linalg_matrix_sqrth"(%a) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0#0, %0#1, %0#2, %1, %2#0, %2#3, %3#0, %3#1, %4, %5, %6, %7#0, %7#1, %8, %9, %10#0, %10#1, %10#2, %11#0, %11#1, %12 : tensor<3x3xf32>, tensor<3xi32>, tensor<i32>, tensor<2x3xf32>, tensor<3xf32>, tensor<i32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<4x2xf32>, tensor<4x4xf32>, tensor<4x3xf32>, tensor<3x3xf32>, tensor<4x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}
