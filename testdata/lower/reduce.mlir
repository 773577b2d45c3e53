// RUN: opt %s --passes=torch-to-ten
// Reductions: ten.reduce over normalized dims, then ten.reshape for keepdim. Integer sums
// accumulate in int64. mean = sum / count, where a symbolic count is the sum of a ones tensor;
// var divides the squared deviations by max(0, N - correction). Half floats accumulate in f32.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main(%x: tensor<2x3x4xf32>, %i: tensor<2x3xi32>, %b: tensor<2x3xi1>, %d: tensor<?x8xf32, #ember.dims<["s0", 8]>>, %h: tensor<2x8xf16>) -> (tensor<2x1x4xf32>, tensor<i64>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>, tensor<1x3xi1>, tensor<2x3x1xf32>, tensor<8xf32>, tensor<f32>, tensor<2x1xf16>, tensor<2x4xf32>, tensor<?xf32, #ember.dims<["s0"]>>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<3xf32>) {
    %0 = "torch.aten.sum.dim_IntList"(%x) {dim = array<i64: -2>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32> loc("sum"("model.py":5:0))
    %1 = "torch.aten.sum"(%i) : (tensor<2x3xi32>) -> tensor<i64>
    %2 = "torch.aten.prod.dim_int"(%x) {dim = 1 : i64, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    %3 = "torch.aten.amax"(%x) {dim = array<i64: 2>, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
    %4 = "torch.aten.amin"(%i) {dim = array<i64: 0>, keepdim = false} : (tensor<2x3xi32>) -> tensor<3xi32>
    %5 = "torch.aten.any.dim"(%i) {dim = 1 : i64, keepdim = false} : (tensor<2x3xi32>) -> tensor<2xi1>
    %6 = "torch.aten.any.dims"(%b) {dim = array<i64: 0>, keepdim = true} : (tensor<2x3xi1>) -> tensor<1x3xi1>
    %7 = "torch.aten.mean.dim"(%x) {dim = array<i64: -1>, keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
    // the reduced dim is symbolic: count = sum(ones[s0])
    %8 = "torch.aten.mean.dim"(%d) {dim = array<i64: 0>, keepdim = false} : (tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> tensor<8xf32>
    %9 = "torch.aten.mean"(%d) : (tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> tensor<f32>
    // f16 mean accumulates in f32
    %10 = "torch.aten.mean.dim"(%h) {dim = array<i64: 1>, keepdim = true} : (tensor<2x8xf16>) -> tensor<2x1xf16>
    %11 = "torch.aten.var.correction"(%x) {dim = array<i64: 1>, correction = 1 : i64, keepdim = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    %12 = "torch.aten.var.dim"(%d) {dim = array<i64: 1>, unbiased = false, keepdim = false} : (tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> tensor<?xf32, #ember.dims<["s0"]>>
    // symbolic N - correction
    %13 = "torch.aten.var.correction"(%d) {dim = array<i64: 0>, correction = 1 : i64} : (tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> tensor<8xf32>
    %14:2 = "torch.aten.var_mean.correction"(%h) {dim = array<i64: 1>, correction = 0 : i64, keepdim = true} : (tensor<2x8xf16>) -> (tensor<2x1xf16>, tensor<2x1xf16>)
    %15 = "torch.aten.sum.dim_IntList"(%i) {dim = array<i64: 0>, dtype = f32} : (tensor<2x3xi32>) -> tensor<3xf32>
    %16 = "torch.aten._to_copy"(%14#0) {dtype = f32} : (tensor<2x1xf16>) -> tensor<2x1xf32>
    %17 = "torch.aten._to_copy"(%14#1) {dtype = f32} : (tensor<2x1xf16>) -> tensor<2x1xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %16, %17, %15 : tensor<2x1x4xf32>, tensor<i64>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<3xi32>, tensor<2xi1>, tensor<1x3xi1>, tensor<2x3x1xf32>, tensor<8xf32>, tensor<f32>, tensor<2x1xf16>, tensor<2x4xf32>, tensor<?xf32, #ember.dims<["s0"]>>, tensor<8xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<3xf32>
  }
}
