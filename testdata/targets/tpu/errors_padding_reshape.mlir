// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Flattening [4, s0] interleaves each row's padding with the next row's elements: refused.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%x: tensor<4x?xf32, #ember.dims<[4, "s0"]>> {ember.input = "x"}) -> tensor<?xf32, #ember.dims<["4*s0"]>> {
    %0 = "ten.reshape"(%x) {shape = #ember.dims<["4*s0"]>} : (tensor<4x?xf32, #ember.dims<[4, "s0"]>>) -> tensor<?xf32, #ember.dims<["4*s0"]>> loc("view"("model.py":12:0))
    return %0 : tensor<?xf32, #ember.dims<["4*s0"]>>
  }
}
