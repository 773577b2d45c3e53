// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// Inserting or dropping dims of size 1 around symbolic dims (an attention mask's [s, s] ->
// [1, 1, s, s]) moves no element, so a padded bucket may reshape that way.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>}} {
  func.func @main(%m: tensor<?x?xf32, #ember.dims<["s0", "s0"]>> {ember.input = "m"}) -> tensor<1x1x?x?xf32, #ember.dims<[1, 1, "s0", "s0"]>> {
    %0 = "torch.aten.view"(%m) {size = #ember.dims<[1, 1, "s0", "s0"]>} : (tensor<?x?xf32, #ember.dims<["s0", "s0"]>>) -> tensor<1x1x?x?xf32, #ember.dims<[1, 1, "s0", "s0"]>> loc("view"("model.py":9:0))
    return %0 : tensor<1x1x?x?xf32, #ember.dims<[1, 1, "s0", "s0"]>>
  }
}
