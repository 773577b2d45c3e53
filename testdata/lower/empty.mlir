// RUN: opt %s --passes=torch-to-ten
// empty.memory_format, empty_strided and empty_permuted are uninitialized memory in torch; Ember
// zero-fills them (dense layout), so results are deterministic.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main() -> (tensor<2x3xf32>, tensor<4xi64>, tensor<3x2xf32>, tensor<?x2xf32, #ember.dims<["s0", 2]>>) {
    %0 = "torch.aten.empty.memory_format"() {dtype = f32, size = array<i64: 2, 3>} : () -> tensor<2x3xf32> loc("empty"("model.py":6:0))
    %1 = "torch.aten.empty_strided"() {dtype = i64, size = array<i64: 4>, stride = array<i64: 1>} : () -> tensor<4xi64>
    %2 = "torch.aten.empty_permuted"() {dtype = f32, physical_layout = array<i64: 1, 0>, size = array<i64: 3, 2>} : () -> tensor<3x2xf32>
    %3 = "torch.aten.empty.memory_format"() {dtype = f32, size = #ember.dims<["s0", 2]>} : () -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
    return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<4xi64>, tensor<3x2xf32>, tensor<?x2xf32, #ember.dims<["s0", 2]>>
  }
}
