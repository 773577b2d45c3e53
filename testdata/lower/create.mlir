// RUN: opt %s --passes=torch-to-ten
// Constants become ten.constant splats of the result type (symbolic shapes included); arange is
// ten.iota * step + start (fractional bounds compute in f64, as torch accumulates); _to_copy is
// ten.convert or nothing; copy-free ops and metadata asserts disappear; dropout that drops
// nothing (eval mode, or p = 0) is the input and an all-true mask (random.mlir has the rest).
module attributes {ember.symbols = {s0 = array<i64: 1, 32>}} {
  func.func @main(%x: tensor<2x3xf32>, %i: tensor<2x3xi64>, %src: tensor<3xi64>, %d: tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> (tensor<2x?xf32, #ember.dims<[2, "s0"]>>, tensor<3xi1>, tensor<2x3xf32>, tensor<f32>, tensor<4xi64>, tensor<2x2xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<5xi64>, tensor<5xf32>, tensor<4xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<?x4xf32, #ember.dims<["s0", 4]>>, tensor<?x4xi1, #ember.dims<["s0", 4]>>) {
    %0 = "torch.aten.full"() {size = #ember.dims<[2, "s0"]>, fill_value = 1.5 : f64} : () -> tensor<2x?xf32, #ember.dims<[2, "s0"]>> loc("full"("model.py":9:0))
    %1 = "torch.aten.full"() {size = array<i64: 3>, fill_value = true, dtype = i1} : () -> tensor<3xi1>
    %2 = "torch.aten.full_like"(%x) {fill_value = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "torch.aten.scalar_tensor"() {s = 0xFFF0000000000000 : f64, dtype = f32} : () -> tensor<f32>
    %4 = "torch.aten.zeros"() {size = array<i64: 4>, dtype = i64} : () -> tensor<4xi64>
    %5 = "torch.aten.ones"() {size = array<i64: 2, 2>} : () -> tensor<2x2xf32>
    %6 = "torch.aten.ones_like"(%i) {dtype = f16} : (tensor<2x3xi64>) -> tensor<2x3xf16>
    %7 = "torch.aten.fill.Scalar"(%x) {value = 7 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %8 = "torch.aten.arange"() {end = 5 : i64} : () -> tensor<5xi64>
    %9 = "torch.aten.arange.start"() {start = 2 : i64, end = 7 : i64, dtype = f32} : () -> tensor<5xf32>
    %10 = "torch.aten.arange.start_step"() {start = 0.5 : f64, end = 1.5 : f64, step = 0.25 : f64} : () -> tensor<4xf32>
    %11 = "torch.aten.arange.start_step"() {start = 1 : i64, end = 7 : i64, step = 2 : i64} : () -> tensor<3xi64>
    %12 = "torch.aten._to_copy"(%x) {dtype = i32} : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %13 = "torch.aten._to_copy"(%x) {dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %14 = "torch.aten._to_copy"(%i) {dtype = i1} : (tensor<2x3xi64>) -> tensor<2x3xi1>
    %15 = "torch.aten.copy"(%x, %src) {non_blocking = false} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x3xf32>
    %16 = "torch.aten.clone"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %17 = "torch.aten.detach"(%16) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "torch.aten._assert_tensor_metadata"(%17) {dtype = f32} : (tensor<2x3xf32>) -> ()
    %18:2 = "torch.aten.native_dropout"(%17) {p = 0.1 : f64, train = false} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    %19:2 = "torch.aten.native_dropout"(%x) {p = 0.0 : f64, train = true} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    %20:2 = "torch.aten.native_dropout"(%d) {p = 0.0 : f64} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> (tensor<?x4xf32, #ember.dims<["s0", 4]>>, tensor<?x4xi1, #ember.dims<["s0", 4]>>)
    return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %17, %18#0, %18#1, %19#0, %19#1, %20#0, %20#1 : tensor<2x?xf32, #ember.dims<[2, "s0"]>>, tensor<3xi1>, tensor<2x3xf32>, tensor<f32>, tensor<4xi64>, tensor<2x2xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<5xi64>, tensor<5xf32>, tensor<4xf32>, tensor<3xi64>, tensor<2x3xi32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<?x4xf32, #ember.dims<["s0", 4]>>, tensor<?x4xi1, #ember.dims<["s0", 4]>>
  }
}
// -----
// arange to a symbolic end (a sequence length under dynamic shapes: torch.export records the
// end as a SymInt): the result type carries the size, so it is the same ten.iota.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%ids: tensor<2x?xi64, #ember.dims<[2, "s0"]>>) -> tensor<?xi64, #ember.dims<["s0"]>> {
    %0 = "torch.aten.arange.start_step"() {start = 0 : i64, end = #ember.dims<["s0"]>, step = 1 : i64} : () -> tensor<?xi64, #ember.dims<["s0"]>> loc("arange"("modeling_gpt2.py":573:0))
    return %0 : tensor<?xi64, #ember.dims<["s0"]>>
  }
}
