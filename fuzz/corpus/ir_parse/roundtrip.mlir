// RUN: opt %s
// Every construct the printer writes: module attributes, argument and result attributes,
// symbolic dims, every attribute kind, multi-result ops, regions, locations.
module attributes {ember.symbols = {s0 = array<i64: 2, 64>, s1 = array<i64: 1>}, torch.schema = "8.20"} {
  func.func @main(%x: tensor<?x8xf32, #ember.dims<["s0", 8]>> {ember.input = "x"}, %w: tensor<8x4xf32> {ember.param = "fc.weight"}, %i: tensor<3xi64> {ember.input = "idx"}) -> (tensor<?x4xf32, #ember.dims<["s0", 4]>> {ember.output = "y"}, tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<3x8xf32>) {
    %mm = "torch.aten.mm"(%x, %w) : (tensor<?x8xf32, #ember.dims<["s0", 8]>>, tensor<8x4xf32>) -> tensor<?x4xf32, #ember.dims<["s0", 4]>> loc("mm"("model.py":12:0))
    %s:2 = "torch.aten.split_with_sizes"(%mm) {dim = 1 : i64, split_sizes = array<i64: 2, 2>} : (tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> (tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<?x2xf32, #ember.dims<["s0", 2]>>) loc(fused["model.py":13:4, "lib.py":7:0])
    %g = "ember.fusion_group"(%s#0, %s#1) ({
    ^bb0(%a: tensor<?x2xf32, #ember.dims<["s0", 2]>>, %b: tensor<?x2xf32, #ember.dims<["s0", 2]>>):
      %t = "torch.aten.add.Tensor"(%a, %b) {alpha = 1 : i64} : (tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
      %u = "torch.aten.mul.Scalar"(%t) {other = -2.5e-07 : f64} : (tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
      "ember.yield"(%u) : (tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> ()
    }) {kind = "elementwise"} : (tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<?x2xf32, #ember.dims<["s0", 2]>>) -> tensor<?x2xf32, #ember.dims<["s0", 2]>>
    %v = "torch.aten.view"(%x) {size = #ember.dims<["2*s0", 4]>} : (tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> tensor<?x4xf32, #ember.dims<["2*s0", 4]>>
    %f = "torch.aten.full"() {dtype = f32, fill_value = 0x7FF0000000000000 : f64, size = array<i64: 3, 8>} : () -> tensor<3x8xf32>
    %e = "torch.aten.index_select"(%f, %i) {dim = 0 : i64} : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x8xf32>
    %n:3 = "torch.aten.native_layer_norm"(%e) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 8>, operandSegmentSizes = array<i64: 1, 0, 0>} : (tensor<3x8xf32>) -> (tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>)
    return %mm, %g, %e : tensor<?x4xf32, #ember.dims<["s0", 4]>>, tensor<?x2xf32, #ember.dims<["s0", 2]>>, tensor<3x8xf32>
  }
}
