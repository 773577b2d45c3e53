// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A scatter whose index has a symbolic dim: a bucket's padding entries (index 0) would update a
// real element. Refused, naming the op and its line.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%x: tensor<8xf32> {ember.input = "x"}, %i: tensor<?xi64, #ember.dims<["s0"]>> {ember.input = "i"}, %u: tensor<?xf32, #ember.dims<["s0"]>> {ember.input = "u"}) -> tensor<8xf32> {
    %0 = "ten.scatter"(%x, %i, %u) {kind = "set"} : (tensor<8xf32>, tensor<?xi64, #ember.dims<["s0"]>>, tensor<?xf32, #ember.dims<["s0"]>>) -> tensor<8xf32> loc("index_put"("model.py":12:0))
    return %0 : tensor<8xf32>
  }
}
