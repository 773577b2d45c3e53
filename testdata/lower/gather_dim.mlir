// RUN: opt %s --passes=torch-to-ten
// torch.gather is one ten.gather from the flattened input: the linear index is the index along
// `dim` (negative entries wrap) times its stride plus an iota times the stride of every other
// dim, over the index's shape (which may be smaller than the input's). An empty index gives an
// empty result. A symbolic input lowers where the size along `dim` and the strides of the dims
// the index spans are static (a symbolic batch in front, as in cross-entropy's rows, with an
// index of one column or one row); a gather along a symbolic dim stays a torch op.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main(%x: tensor<10x5xf32>, %i: tensor<4x3xi64>, %j: tensor<2x3xi32>, %e: tensor<5xf32>, %z: tensor<2x0xui8>, %s: tensor<?x5xf32, #ember.dims<["s0", 5]>>, %k: tensor<?x1xi64, #ember.dims<["s0", 1]>>, %r: tensor<1x5xi64>) -> (tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x0xf32>, tensor<4x3xf32>, tensor<?x1xf32, #ember.dims<["s0", 1]>>, tensor<1x5xf32>) {
    %0 = "torch.aten.gather"(%x, %i) {dim = 0 : i64, sparse_grad = false} : (tensor<10x5xf32>, tensor<4x3xi64>) -> tensor<4x3xf32> loc("gather"("model.py":3:0))
    %1 = "torch.aten.gather"(%x, %j) {dim = -1 : i64, sparse_grad = false} : (tensor<10x5xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
    %2 = "torch.aten.gather"(%e, %z) {dim = 0 : i64, sparse_grad = false} : (tensor<5xf32>, tensor<2x0xui8>) -> tensor<2x0xf32>
    %3 = "torch.aten.gather"(%s, %i) {dim = 1 : i64, sparse_grad = false} : (tensor<?x5xf32, #ember.dims<["s0", 5]>>, tensor<4x3xi64>) -> tensor<4x3xf32>
    %4 = "torch.aten.gather"(%s, %k) {dim = 1 : i64, sparse_grad = false} : (tensor<?x5xf32, #ember.dims<["s0", 5]>>, tensor<?x1xi64, #ember.dims<["s0", 1]>>) -> tensor<?x1xf32, #ember.dims<["s0", 1]>>
    %5 = "torch.aten.gather"(%s, %r) {dim = 0 : i64, sparse_grad = false} : (tensor<?x5xf32, #ember.dims<["s0", 5]>>, tensor<1x5xi64>) -> tensor<1x5xf32>
    return %0, %1, %2, %3, %4, %5 : tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x0xf32>, tensor<4x3xf32>, tensor<?x1xf32, #ember.dims<["s0", 1]>>, tensor<1x5xf32>
  }
}
