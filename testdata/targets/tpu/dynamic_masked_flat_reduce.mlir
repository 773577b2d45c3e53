// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A mean over a symbolic batch merged with the static dim after it (`4*s0` elements, as
// cross-entropy's `batch * seq` rows): the padded bucket keeps the true elements first, so the
// mask is iota < 4 × the true size, and the mean's count is the true one.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%x: tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.input = "x"}) -> tensor<f32> {
    %0 = "torch.aten.view"(%x) {size = #ember.dims<["4*s0"]>} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<?xf32, #ember.dims<["4*s0"]>>
    %1 = "torch.aten.mean"(%0) : (tensor<?xf32, #ember.dims<["4*s0"]>>) -> tensor<f32> loc("mean"("model.py":9:0))
    return %1 : tensor<f32>
  }
}
