// RUN: opt %s --passes=fuse --trace
// rule: convert-round-trip
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.convert"(%x) {dtype = f64} : (tensor<4x8xf32>) -> tensor<4x8xf64>
  %1 = "ten.convert"(%0) {dtype = f32} : (tensor<4x8xf64>) -> tensor<4x8xf32>
  %2 = "ten.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
