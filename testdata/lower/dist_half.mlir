// RUN: opt %s --passes=torch-to-ten
// f16 dist and cdist compute the p-norm in f32 and round once: Σ|d|ᵖ overflows f16 (max 65504)
// long before the norm does (an OpInfo dist sample gave inf for 30.95).
func.func @main(%a: tensor<4x8xf16>, %b: tensor<4x8xf16>, %x: tensor<3x8xf16>) -> (tensor<f16>, tensor<4x3xf16>) {
  %0 = "torch.aten.dist"(%a, %b) {p = 3.0 : f64} : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<f16> loc("dist"("model.py":3:0))
  %1 = "torch.aten._cdist_forward"(%a, %x) {p = 2.0 : f64} : (tensor<4x8xf16>, tensor<3x8xf16>) -> tensor<4x3xf16> loc("cdist"("model.py":4:0))
  return %0, %1 : tensor<f16>, tensor<4x3xf16>
}
