// RUN: opt %s --passes=torch-to-ten
// upsample_bilinear2d: per spatial dim (width first), torch's f32 source coordinate from an iota,
// its two neighbours gathered along the dim and blended with weights 1 - l1 and l1. align_corners
// scales by (in - 1) / (out - 1); otherwise by 1 / scale_factor (or in / out) with the half-pixel
// offset, clamped at 0. upsample_nearest2d gathers min(floor(dst * scale), in - 1), dst / 2 when
// doubling, nothing for an unchanged dim.
func.func @main(%x: tensor<1x2x4x5xf32>) -> (tensor<1x2x6x3xf32>, tensor<1x2x6x8xf32>, tensor<1x2x8x3xf32>) {
  %0 = "torch.aten.upsample_bilinear2d.vec"(%x) {align_corners = true, output_size = array<i64: 6, 3>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x6x3xf32> loc("interpolate"("model.py":10:0))
  %1 = "torch.aten.upsample_bilinear2d.vec"(%x) {align_corners = false, scale_factors = array<f64: 1.7, 1.7>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x6x8xf32>
  %2 = "torch.aten.upsample_nearest2d.vec"(%x) {output_size = array<i64: 8, 3>} : (tensor<1x2x4x5xf32>) -> tensor<1x2x8x3xf32>
  return %0, %1, %2 : tensor<1x2x6x3xf32>, tensor<1x2x6x8xf32>, tensor<1x2x8x3xf32>
}
