// RUN: opt %s --passes=torch-to-ten
// Scatters become ten.scatter into the flattened input at the row-major positions gather reads
// (the index along `dim`, negative entries wrapped, iotas elsewhere), then a reshape back. src
// larger than index is sliced to index's shape. scatter_reduce without include_self first sets
// the touched elements to the kind's identity; mean divides the sum by max(count, 1), counting
// self when it is included. index_put writes (accumulate: adds) values broadcast to the shape
// of self[indices] (of a symbolic count too: a backward's positions); a bool mask stays a torch op.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x4xi64>, %s: tensor<3x4xf32>, %p: tensor<2xi64>, %v: tensor<4xf32>, %m: tensor<3xi1>, %q: tensor<?xi64, #ember.dims<["s0"]>>, %w: tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %0 = "torch.aten.scatter.src"(%x, %i, %s) {dim = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<3x4xf32>) -> tensor<3x4xf32> loc("scatter"("model.py":7:0))
  %1 = "torch.aten.scatter.value"(%x, %i) {dim = 1 : i64, value = 2.5 : f64} : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<3x4xf32>
  %2 = "torch.aten.scatter_add"(%x, %i, %s) {dim = 0 : i64} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = "torch.aten.scatter.reduce"(%x, %i, %s) {dim = 0 : i64, reduce = "multiply"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = "torch.aten.scatter_reduce.two"(%x, %i, %s) {dim = 0 : i64, include_self = false, reduce = "amax"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %5 = "torch.aten.scatter_reduce.two"(%x, %i, %s) {dim = 0 : i64, include_self = true, reduce = "mean"} : (tensor<3x4xf32>, tensor<2x4xi64>, tensor<3x4xf32>) -> tensor<3x4xf32>
  // x[p] = v: rows p, values broadcast to [2, 4]
  %6 = "torch.aten.index_put"(%x, %p, %v) {accumulate = true, indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<3x4xf32>, tensor<2xi64>, tensor<4xf32>) -> tensor<3x4xf32> loc("index_put"("model.py":8:0))
  %7 = "torch.aten.index_put"(%x, %m, %v) {accumulate = false, indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<3x4xf32>, tensor<3xi1>, tensor<4xf32>) -> tensor<3x4xf32>
  %8 = "torch.aten.index_put"(%x, %q, %w) {accumulate = true, indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<3x4xf32>, tensor<?xi64, #ember.dims<["s0"]>>, tensor<?x4xf32, #ember.dims<["s0", 4]>>) -> tensor<3x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
}
}
