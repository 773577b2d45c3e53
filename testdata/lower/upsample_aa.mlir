// RUN: opt %s --passes=torch-to-ten
// _upsample_bilinear2d_aa: per resized dim (width first; an unchanged one is copied), torch's
// antialias weight matrix [out, in] from iotas: a triangle filter of support max(scale, 1)
// around scale·(i + 0.5), clipped to the input and normalized by its total, applied as one GEMM
// over the dim moved last.
func.func @main(%x: tensor<1x2x6x5xf32>) -> (tensor<1x2x3x7xf32>, tensor<1x2x6x2xf32>) {
  %0 = "torch.aten._upsample_bilinear2d_aa"(%x) {align_corners = false, output_size = array<i64: 3, 7>} : (tensor<1x2x6x5xf32>) -> tensor<1x2x3x7xf32> loc("interpolate"("model.py":11:0))
  %1 = "torch.aten._upsample_bilinear2d_aa"(%x) {align_corners = true, output_size = array<i64: 6, 2>, scales_h = 1.0 : f64, scales_w = 0.4 : f64} : (tensor<1x2x6x5xf32>) -> tensor<1x2x6x2xf32>
  return %0, %1 : tensor<1x2x3x7xf32>, tensor<1x2x6x2xf32>
}
