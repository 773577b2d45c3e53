// RUN: opt %s --passes=torch-to-ten
// bf16/f16 addmm and addbmm: the product stays the f32 accumulator (`ten.dot_general {dtype =
// f32}`), scaled and biased in f32 and rounded once, as torch's GEMMs add the bias before they
// round; mm rounds its product directly (one rounding either way).
func.func @main(%b: tensor<8xbf16>, %x: tensor<4x16xbf16>, %w: tensor<16x8xbf16>, %h: tensor<4x8xf16>, %p: tensor<3x4x16xf16>, %q: tensor<3x16x8xf16>) -> (tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>) {
  %0 = "torch.aten.addmm"(%b, %x, %w) {alpha = 2.0 : f64, beta = 0.5 : f64} : (tensor<8xbf16>, tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16> loc("addmm"("model.py":4:0))
  %1 = "torch.aten.addbmm"(%h, %p, %q) : (tensor<4x8xf16>, tensor<3x4x16xf16>, tensor<3x16x8xf16>) -> tensor<4x8xf16> loc("addbmm"("model.py":5:0))
  %2 = "torch.aten.mm"(%x, %w) : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16> loc("mm"("model.py":6:0))
  return %0, %1, %2 : tensor<4x8xbf16>, tensor<4x8xf16>, tensor<4x8xbf16>
}
