// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A sum over the symbolic dim would add the padding rows of a bucket: the tpu target's rewrite
// masks them (iota < the true size, an `ember.size` argument the runner fills; 0 elsewhere),
// in every bucket.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%x: tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.input = "x"}) -> tensor<4xf32> {
    %0 = "ten.exp"(%x) : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?x4xf32, #ember.dims<["s0", 4]>>
    %1 = "ten.reduce"(%0) {dims = array<i64: 0>, kind = "sum"} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<4xf32> loc("sum"("model.py":9:0))
    return %1 : tensor<4xf32>
  }
}
