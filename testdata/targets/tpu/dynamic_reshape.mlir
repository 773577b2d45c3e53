// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Splitting the static dim after a symbolic one ([2, s0, 8] -> [2, s0, 2, 4], attention's
// heads) keeps each row's padding after its real elements: every bucket compiles.
module attributes {ember.symbols = {s0 = array<i64: 2, 4>}} {
  func.func @main(%x: tensor<2x?x8xf32, #ember.dims<[2, "s0", 8]>> {ember.input = "x"}) -> tensor<2x?x2x4xf32, #ember.dims<[2, "s0", 2, 4]>> {
    %0 = "ten.reshape"(%x) {shape = #ember.dims<[2, "s0", 2, 4]>} : (tensor<2x?x8xf32, #ember.dims<[2, "s0", 8]>>) -> tensor<2x?x2x4xf32, #ember.dims<[2, "s0", 2, 4]>> loc("view"("model.py":11:0))
    return %0 : tensor<2x?x2x4xf32, #ember.dims<[2, "s0", 2, 4]>>
  }
}
