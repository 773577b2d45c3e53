// RUN: opt %s --passes=torch-to-ten
// embedding_bag: an index's bag is the count of the bags' offsets at or before it, minus one
// (offset2bag); sum and mean scatter the gathered (weighted) rows at the count over every offset,
// so with include_last_offset rows past the last offset leave the sum but not the bag size. Max
// takes torch's running `x > best`: the largest non-NaN value and its first index, or the first
// row where it is NaN. Padding rows count nowhere; empty bags give 0.
func.func @main(%w: tensor<5x3xf32>, %i: tensor<6xi64>, %o: tensor<3xi64>, %p: tensor<6xf32>) -> (tensor<3x3xf32>, tensor<0xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x3xf32>, tensor<6xi64>, tensor<2xi64>, tensor<2xi64>, tensor<3x3xf32>, tensor<6xi64>, tensor<3xi64>, tensor<3x3xi64>) {
  %0:4 = "torch.aten._embedding_bag_forward_only"(%w, %i, %o, %p) {mode = 0 : i64, operandSegmentSizes = array<i64: 1, 1, 1, 1>} : (tensor<5x3xf32>, tensor<6xi64>, tensor<3xi64>, tensor<6xf32>) -> (tensor<3x3xf32>, tensor<0xi64>, tensor<3xi64>, tensor<3xi64>) loc("embedding_bag"("model.py":9:0))
  %1:4 = "torch.aten._embedding_bag"(%w, %i, %o) {mode = 1 : i64, include_last_offset = true, padding_idx = 2 : i64, operandSegmentSizes = array<i64: 1, 1, 1, 0>} : (tensor<5x3xf32>, tensor<6xi64>, tensor<3xi64>) -> (tensor<2x3xf32>, tensor<6xi64>, tensor<2xi64>, tensor<2xi64>)
  %2:4 = "torch.aten._embedding_bag_forward_only"(%w, %i, %o) {mode = 2 : i64, operandSegmentSizes = array<i64: 1, 1, 1, 0>} : (tensor<5x3xf32>, tensor<6xi64>, tensor<3xi64>) -> (tensor<3x3xf32>, tensor<6xi64>, tensor<3xi64>, tensor<3x3xi64>)
  return %0#0, %0#1, %0#2, %0#3, %1#0, %1#1, %1#2, %1#3, %2#0, %2#1, %2#2, %2#3 : tensor<3x3xf32>, tensor<0xi64>, tensor<3xi64>, tensor<3xi64>, tensor<2x3xf32>, tensor<6xi64>, tensor<2xi64>, tensor<2xi64>, tensor<3x3xf32>, tensor<6xi64>, tensor<3xi64>, tensor<3x3xi64>
}
