// RUN: opt %s --passes=cse
// The tpu target has no StableHLO form for the linalg factorizations and solves yet: refused,
// naming the op and its line (the cpu target runs them).
func.func @main(%a: tensor<3x3xf32> {ember.input = "a"}, %b: tensor<3x2xf32> {ember.input = "b"}) -> (tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %0:2 = "ten.cholesky"(%a) {upper = false} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<i32>) loc("cholesky"("model.py":4:0))
  %1:3 = "ten.lu"(%a) : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xi32>, tensor<i32>) loc("lu"("model.py":5:0))
  %2 = "ten.lu_solve"(%1#0, %1#1, %b) {adjoint = false} : (tensor<3x3xf32>, tensor<3xi32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("lu_solve"("model.py":6:0))
  %3 = "ten.triangular_solve"(%a, %b) {upper = true, unitriangular = false} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32> loc("solve"("model.py":7:0))
  %4:2 = "ten.qr"(%a) {complete = false} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) loc("qr"("model.py":8:0))
  %5:2 = "ten.eigh"(%a) {upper = false} : (tensor<3x3xf32>) -> (tensor<3xf32>, tensor<3x3xf32>) loc("eigh"("model.py":9:0))
  %6:3 = "ten.svd"(%a) {full_matrices = false} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>, tensor<3x3xf32>) loc("svd"("model.py":10:0))
  %7:2 = "ten.geqrf"(%a) : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>) loc("geqrf"("model.py":11:0))
  %8 = "ten.householder_product"(%7#0, %7#1) : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3x3xf32> loc("orgqr"("model.py":12:0))
  return %0#0, %2, %3, %4#0, %5#1, %6#1, %6#2, %8 : tensor<3x3xf32>, tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}
