// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// An embedding's gradient under a dynamic batch: index_put accumulates rows of a symbolic count
// into a static table. The padded rows' updates are masked to 0 (iota < the true size), so
// whatever position their padded index names is unchanged.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%w: tensor<10x4xf32> {ember.input = "w"}, %i: tensor<?xi64, #ember.dims<["s0"]>> {ember.input = "i"}, %g: tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.input = "g"}) -> tensor<10x4xf32> {
    %0 = "torch.aten.index_put"(%w, %i, %g) {accumulate = true, indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<10x4xf32>, tensor<?xi64, #ember.dims<["s0"]>>, tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<10x4xf32> loc("index_put"("model.py":9:0))
    return %0 : tensor<10x4xf32>
  }
}
