// RUN: opt %s --passes=torch-to-ten
// logcumsumexp as a Hillis-Steele scan: shifts of 1, 2 and 4 padded with -inf, each a log-add.
module {
  func.func @main(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
    %0 = "torch.aten.logcumsumexp"(%arg0) {dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
    return %0 : tensor<2x5xf32>
  }
}

// -----
// gcd and lcm of int8: Euclid unrolled to 13 steps (Lamé's bound for 128, plus two), each
// where a != 0 with the zero divisor replaced; lcm's |a / g * b| in i32, as C's int arithmetic.
module {
  func.func @main(%arg0: tensor<4xi8>, %arg1: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>) {
    %0 = "torch.aten.gcd"(%arg0, %arg1) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
    %1 = "torch.aten.lcm"(%arg0, %arg1) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
    return %0, %1 : tensor<4xi8>, tensor<4xi8>
  }
}

// -----
// special_i1e in f32: Chebyshev series (17 and 7 terms, as the f32 kernel) on either side of 8,
// odd in x.
module {
  func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "torch.aten.special_i1e"(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}

// -----
// polygamma with n < 0 is an error in torch: it stays a torch op.
module {
  func.func @main(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = "torch.aten.polygamma"(%arg0) {n = -1 : i64} : (tensor<3xf32>) -> tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
