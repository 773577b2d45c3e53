// RUN: opt %s --passes=torch-to-ten
// index_reduce: scatter_reduce along `dim` with the 1-D index broadcast over the source's other
// dims; prod with self, amax without it (self's slices that receive a value start from -inf),
// mean counting self; a scalar self as a 1-element vector.
func.func @main(%x: tensor<4x3xf32>, %i: tensor<2xi64>, %s: tensor<4x2xf32>, %y: tensor<5x3xf32>, %t: tensor<2x3xf32>, %z: tensor<f32>, %j: tensor<1xi64>) -> (tensor<4x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<f32>) {
  %0 = "torch.aten.index_reduce"(%x, %i, %s) {dim = 1 : i64, reduce = "prod", include_self = true} : (tensor<4x3xf32>, tensor<2xi64>, tensor<4x2xf32>) -> tensor<4x3xf32> loc("index_reduce"("model.py":3:0))
  %1 = "torch.aten.index_reduce"(%y, %i, %t) {dim = 0 : i64, reduce = "amax", include_self = false} : (tensor<5x3xf32>, tensor<2xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %2 = "torch.aten.index_reduce"(%y, %i, %t) {dim = 0 : i64, reduce = "mean", include_self = true} : (tensor<5x3xf32>, tensor<2xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %3 = "torch.aten.index_reduce"(%z, %j, %z) {dim = 0 : i64, reduce = "amin", include_self = true} : (tensor<f32>, tensor<1xi64>, tensor<f32>) -> tensor<f32>
  return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<5x3xf32>, tensor<5x3xf32>, tensor<f32>
}
