// RUN: opt %s --passes=torch-to-ten
// grid_sampler_2d/3d: grid x/y(/z) unnormalized to pixel coordinates (border padding clips them
// to the input; reflection padding first folds them into one double span: min(e, T - e) of the
// distance e past its last whole span), then bilinear: the 2^k floor/floor+1 neighbours weighted
// by the distances, nearest: the round-half-even neighbour; a neighbour outside the input reads 0
// (its position is clamped to 0 for the gather from the flattened input, then selected away).
func.func @main(%x: tensor<1x2x3x4xf32>, %g: tensor<1x2x2x2xf32>, %v: tensor<1x1x2x3x2xf32>, %h: tensor<1x1x2x1x3xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x1x1x2x1xf32>, tensor<1x1x1x2x1xf32>) {
  %0 = "torch.aten.grid_sampler_2d"(%x, %g) {align_corners = false, interpolation_mode = 0 : i64, padding_mode = 1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> loc("grid_sample"("model.py":13:0))
  %1 = "torch.aten.grid_sampler_2d"(%x, %g) {align_corners = true, interpolation_mode = 1 : i64, padding_mode = 0 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = "torch.aten.grid_sampler_2d"(%x, %g) {align_corners = false, interpolation_mode = 0 : i64, padding_mode = 2 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = "torch.aten.grid_sampler_3d"(%v, %h) {align_corners = true, interpolation_mode = 0 : i64, padding_mode = 2 : i64} : (tensor<1x1x2x3x2xf32>, tensor<1x1x2x1x3xf32>) -> tensor<1x1x1x2x1xf32> loc("grid_sample"("model.py":14:0))
  %4 = "torch.aten.grid_sampler_3d"(%v, %h) {align_corners = false, interpolation_mode = 1 : i64, padding_mode = 0 : i64} : (tensor<1x1x2x3x2xf32>, tensor<1x1x2x1x3xf32>) -> tensor<1x1x1x2x1xf32>
  return %0, %1, %2, %3, %4 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x1x1x2x1xf32>, tensor<1x1x1x2x1xf32>
}
