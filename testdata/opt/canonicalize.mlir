// RUN: opt %s --passes=canonicalize
// alias/clone/detach, same-type view/expand/_to_copy and identity permutes fold to their input;
// metadata asserts disappear; a real reshape and a real cast stay.
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x3xf64>) {
  %0 = "torch.aten.alias"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "torch.aten.clone"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "torch.aten.view"(%1) {size = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "torch.aten.expand"(%2) {implicit = false, size = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "torch.aten.permute"(%3) {dims = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "torch.aten._to_copy"(%4) {dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  "torch.aten._assert_tensor_metadata"(%5) {dtype = f32} : (tensor<2x3xf32>) -> ()
  %6 = "torch.aten.view"(%5) {size = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %7 = "torch.aten._to_copy"(%5) {dtype = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>
  return %5, %6, %7 : tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x3xf64>
}
