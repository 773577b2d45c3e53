// RUN: opt %s --passes=torch-to-ten
// bf16/f16 ops whose formula takes several ten ops compute in f32 and round once, as torch's
// kernels do: rounding each step loses the result where the formula cancels (gelu's
// 1 + erf(x/√2) for negative x, atanh's 1 - x near 1, a bf16 running sum that stops growing,
// a norm's x - mean). Layer/group norm statistics stored narrow (a CPU export's bf16 mean and
// rstd) are computed in f32 too and rounded as results.
func.func @main(%x: tensor<4x8xbf16>, %h: tensor<4x8xf16>, %w: tensor<8xbf16>, %g: tensor<2x4x3xf16>) -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x1xbf16>, tensor<4x1xbf16>, tensor<2x4x3xf16>, tensor<2x2xf16>, tensor<2x2xf16>) {
  %0 = "torch.aten.gelu"(%x) : (tensor<4x8xbf16>) -> tensor<4x8xbf16> loc("gelu"("model.py":4:0))
  %1 = "torch.aten.atanh"(%h) : (tensor<4x8xf16>) -> tensor<4x8xf16> loc("atanh"("model.py":5:0))
  %2 = "torch.aten.exp"(%x) : (tensor<4x8xbf16>) -> tensor<4x8xbf16> loc("exp"("model.py":6:0))
  %3 = "torch.aten.cumsum"(%x) {dim = 1 : i64} : (tensor<4x8xbf16>) -> tensor<4x8xbf16> loc("cumsum"("model.py":7:0))
  %4:3 = "torch.aten.native_layer_norm"(%x, %w) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 8>, operandSegmentSizes = array<i64: 1, 1, 0>} : (tensor<4x8xbf16>, tensor<8xbf16>) -> (tensor<4x8xbf16>, tensor<4x1xbf16>, tensor<4x1xbf16>) loc("layer_norm"("model.py":8:0))
  %5:3 = "torch.aten.native_group_norm"(%g) {N = 2 : i64, C = 4 : i64, HxW = 3 : i64, group = 2 : i64, eps = 1.0e-05 : f64, operandSegmentSizes = array<i64: 1, 0, 0>} : (tensor<2x4x3xf16>) -> (tensor<2x4x3xf16>, tensor<2x2xf16>, tensor<2x2xf16>) loc("group_norm"("model.py":9:0))
  return %0, %1, %2, %3, %4#0, %4#1, %4#2, %5#0, %5#1, %5#2 : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x1xbf16>, tensor<4x1xbf16>, tensor<2x4x3xf16>, tensor<2x2xf16>, tensor<2x2xf16>
}
