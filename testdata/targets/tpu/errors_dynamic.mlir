// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Symbolic dims: the tpu target refuses them naming the symbol and its bounds (bounded dynamic
// shapes are not built yet).
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%x: tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.input = "x"}) -> tensor<?x4xf32, #ember.dims<["s0", 4]>> {
    %0 = "ten.exp"(%x) : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?x4xf32, #ember.dims<["s0", 4]>>
    return %0 : tensor<?x4xf32, #ember.dims<["s0", 4]>>
  }
}
