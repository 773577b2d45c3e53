// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Symbolic dims become padded buckets: one static module per size of s0 (powers of two from the
// minimum, and the maximum). Rows stay independent: a reshape keeps s0 in dim 0, the reduction
// and the contraction run over static dims, the broadcast and the transpose only move rows.
module attributes {ember.symbols = {s0 = array<i64: 3, 16>}} {
  func.func @main(%x: tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.input = "x"}, %w: tensor<4x2xf32> {ember.param = "w"}) -> (tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<?xf32, #ember.dims<["s0"]>>, tensor<2x?xf32, #ember.dims<[2, "s0"]>>) {
    %0 = "ten.exp"(%x) : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?x4xf32, #ember.dims<["s0", 4]>>
    %1 = "ten.dot_general"(%0, %w) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>, tensor<4x2xf32>) -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
    %2 = "ten.reshape"(%0) {shape = #ember.dims<["2*s0", 2]>} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?x2xf32, #ember.dims<["2*s0", 2]>>
    %3 = "ten.reduce"(%2) {dims = array<i64: 1>, kind = "max"} : (tensor<?x2xf32, #ember.dims<["2*s0", 2]>>) -> tensor<?xf32, #ember.dims<["2*s0"]>>
    %4 = "ten.reshape"(%3) {shape = #ember.dims<["s0", 2]>} : (tensor<?xf32, #ember.dims<["2*s0"]>>) -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
    %5 = "ten.reduce"(%4) {dims = array<i64: 1>, kind = "sum"} : (tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> tensor<?xf32, #ember.dims<["s0"]>>
    %6 = "ten.transpose"(%1) {dims = array<i64: 1, 0>} : (tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> tensor<2x?xf32, #ember.dims<[2, "s0"]>>
    return %1, %5, %6 : tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<?xf32, #ember.dims<["s0"]>>, tensor<2x?xf32, #ember.dims<[2, "s0"]>>
  }
}
