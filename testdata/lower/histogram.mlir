// RUN: opt %s --passes=torch-to-ten
// histogram: bin_ct's edges are torch's f32 linspace (start + step·i for the first half,
// end - step·(bins - i) after) over `range` or the data's min and max; an element's bin is the
// number of edges at or below it minus one, capped at the last; elements outside the first and
// last edge count nowhere. Weights replace the ones; density divides by the total and the widths.
func.func @main(%x: tensor<6xf32>, %w: tensor<6xf32>, %b: tensor<4xf32>) -> (tensor<3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>) {
  %0:2 = "torch.aten.histogram.bin_ct"(%x) {bins = 3 : i64, operandSegmentSizes = array<i64: 1, 0>} : (tensor<6xf32>) -> (tensor<3xf32>, tensor<4xf32>) loc("histogram"("model.py":7:0))
  %1:2 = "torch.aten.histogram.bin_ct"(%x, %w) {bins = 2 : i64, range = array<f64: -1.0, 1.0>, density = true, operandSegmentSizes = array<i64: 1, 1>} : (tensor<6xf32>, tensor<6xf32>) -> (tensor<2xf32>, tensor<3xf32>)
  %2:2 = "torch.aten.histogram.bins_tensor"(%x, %b) {operandSegmentSizes = array<i64: 1, 1, 0>} : (tensor<6xf32>, tensor<4xf32>) -> (tensor<3xf32>, tensor<4xf32>)
  return %0#0, %0#1, %1#0, %2#0, %2#0, %2#1 : tensor<3xf32>, tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>
}
