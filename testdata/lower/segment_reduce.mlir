// RUN: opt %s --passes=torch-to-ten
// segment_reduce: each position's segment is the count of segment ends (cumsum of lengths, or
// offsets[1:]) at or before it; positions before offsets[0] go out of range. One scatter into
// `initial` (or the identity); mean divides by a scattered count and gives `initial` (or NaN)
// for an empty segment.
func.func @main(%x: tensor<6xf32>, %l: tensor<3xi64>, %o: tensor<4xi64>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = "torch.aten.segment_reduce"(%x, %l) {reduce = "max", initial = 1.5 : f64, operandSegmentSizes = array<i64: 1, 1, 0, 0>} : (tensor<6xf32>, tensor<3xi64>) -> tensor<3xf32> loc("segment_reduce"("model.py":5:0))
  %1 = "torch.aten.segment_reduce"(%x, %o) {reduce = "mean", operandSegmentSizes = array<i64: 1, 0, 0, 1>} : (tensor<6xf32>, tensor<4xi64>) -> tensor<3xf32> loc("segment_reduce_1"("model.py":6:0))
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}
