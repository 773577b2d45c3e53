// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ember.fusion_group -> StableHLO. `loop` groups and `gemm` groups without an activation are
// inlined (their body is the semantics). softmax, layer_norm, rms_norm, attention and gemm with
// an activation become `stablehlo.composite "ember.<kind>"` whose composite_attributes are the
// group's parameters and whose decomposition is a private function holding the body. Bodies here
// are written with torch ops that torch-to-ten lowers in place.
func.func @main(%x: tensor<2x4x8xf32> {ember.input = "x"}, %w: tensor<8xf32> {ember.param = "w"}, %b: tensor<8xf32> {ember.param = "b"}, %a: tensor<4x8xf32> {ember.input = "a"}, %m: tensor<8x6xf32> {ember.param = "m"}, %bias: tensor<6xf32> {ember.param = "bias"}, %q: tensor<2x4x8xf32> {ember.input = "q"}, %k: tensor<2x4x8xf32> {ember.input = "k"}, %v: tensor<2x4x8xf32> {ember.input = "v"}, %mask: tensor<4x4xf32> {ember.input = "mask"}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %0:2 = "ember.fusion_group"(%x, %w) ({
  ^bb0(%a0: tensor<2x4x8xf32>, %a1: tensor<8xf32>):
    %1 = "ten.broadcast"(%a1) {dims = array<i64: 2>, shape = array<i64: 2, 4, 8>} : (tensor<8xf32>) -> tensor<2x4x8xf32>
    %2 = "ten.add"(%a0, %1) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %3 = "ten.exp"(%2) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    "ember.yield"(%2, %3) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> ()
  }) {kind = "loop", rules = ["elementwise"]} : (tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>)
  %4 = "ember.fusion_group"(%0#0) ({
  ^bb0(%a0: tensor<2x4x8xf32>):
    %5 = "torch.aten._softmax"(%a0) {dim = -1 : i64, half_to_float = false} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    "ember.yield"(%5) : (tensor<2x4x8xf32>) -> ()
  }) {dim = 2 : i64, kind = "softmax", rules = ["softmax"]} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %6 = "ember.fusion_group"(%x, %w, %b) ({
  ^bb0(%a0: tensor<2x4x8xf32>, %a1: tensor<8xf32>, %a2: tensor<8xf32>):
    %7:3 = "torch.aten.native_layer_norm"(%a0, %a1, %a2) {eps = 1.0e-05 : f64, normalized_shape = array<i64: 8>, operandSegmentSizes = array<i64: 1, 1, 1>} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>)
    "ember.yield"(%7#0) : (tensor<2x4x8xf32>) -> ()
  }) {eps = 1.0e-05 : f64, kind = "layer_norm", rules = ["layer-norm"]} : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %8 = "ember.fusion_group"(%x, %w) ({
  ^bb0(%a0: tensor<2x4x8xf32>, %a1: tensor<8xf32>):
    %9 = "torch.aten.mul.Tensor"(%a0, %a0) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %10 = "torch.aten.mean.dim"(%9) {dim = array<i64: -1>, keepdim = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
    %11 = "torch.aten.add.Scalar"(%10) {other = 1.0e-06 : f64} : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %12 = "torch.aten.rsqrt"(%11) : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
    %13 = "torch.aten.mul.Tensor"(%a0, %12) : (tensor<2x4x8xf32>, tensor<2x4x1xf32>) -> tensor<2x4x8xf32>
    %14 = "torch.aten.mul.Tensor"(%13, %a1) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
    "ember.yield"(%14) : (tensor<2x4x8xf32>) -> ()
  }) {eps = 1.0e-06 : f64, kind = "rms_norm", rules = ["rms-norm"]} : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %15 = "ember.fusion_group"(%a, %m, %bias) ({
  ^bb0(%a0: tensor<4x8xf32>, %a1: tensor<8x6xf32>, %a2: tensor<6xf32>):
    %16 = "torch.aten.mm"(%a0, %a1) : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %17 = "torch.aten.add.Tensor"(%16, %a2) {alpha = 1 : i64} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    "ember.yield"(%17) : (tensor<4x6xf32>) -> ()
  }) {activation = "none", kind = "gemm", rules = ["gemm-bias"]} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %18 = "ember.fusion_group"(%a, %m, %bias) ({
  ^bb0(%a0: tensor<4x8xf32>, %a1: tensor<8x6xf32>, %a2: tensor<6xf32>):
    %19 = "torch.aten.mm"(%a0, %a1) : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
    %20 = "torch.aten.add.Tensor"(%19, %a2) {alpha = 1 : i64} : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
    %21 = "torch.aten.gelu"(%20) {approximate = "none"} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    "ember.yield"(%21) : (tensor<4x6xf32>) -> ()
  }) {activation = "gelu", kind = "gemm", rules = ["gemm-bias", "gemm-gelu"]} : (tensor<4x8xf32>, tensor<8x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  %22 = "ember.fusion_group"(%q, %k, %v, %mask) ({
  ^bb0(%a0: tensor<2x4x8xf32>, %a1: tensor<2x4x8xf32>, %a2: tensor<2x4x8xf32>, %a3: tensor<4x4xf32>):
    %23 = "torch.aten.permute"(%a1) {dims = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
    %24 = "torch.aten.bmm"(%a0, %23) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
    %25 = "torch.aten.mul.Scalar"(%24) {other = 0.35355339059327373 : f64} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %26 = "torch.aten.add.Tensor"(%25, %a3) {alpha = 1 : i64} : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %27 = "torch.aten._softmax"(%26) {dim = -1 : i64, half_to_float = false} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %28 = "torch.aten.bmm"(%27, %a2) : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    "ember.yield"(%28) : (tensor<2x4x8xf32>) -> ()
  }) {kind = "attention", rules = ["attention"], scale = 0.35355339059327373 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xf32>) -> tensor<2x4x8xf32>
  return %0#1, %4, %6, %8, %15, %18, %22, %0#0 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}
