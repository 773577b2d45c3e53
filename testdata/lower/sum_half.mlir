// RUN: opt %s --passes=torch-to-ten
// f16/bf16 sums and products accumulate in f32 and round once, as torch's CPU and CUDA kernels
// do; a narrow accumulator (what XLA runs for a reduce in the operand's type) loses the small
// result of a sum that cancels (cosine_similarity's x·y). max and min stay in the narrow type.
func.func @main(%x: tensor<4x8xf16>, %y: tensor<4x8xbf16>) -> (tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>) {
  %0 = "torch.aten.sum.dim_IntList"(%x) {dim = array<i64: 1>, keepdim = false} : (tensor<4x8xf16>) -> tensor<4xf16> loc("sum"("model.py":4:0))
  %1 = "torch.aten.prod.dim_int"(%y) {dim = 1 : i64, keepdim = false} : (tensor<4x8xbf16>) -> tensor<4xbf16> loc("prod"("model.py":5:0))
  %2 = "torch.aten.amax"(%x) {dim = array<i64: 1>, keepdim = false} : (tensor<4x8xf16>) -> tensor<4xf16> loc("amax"("model.py":6:0))
  %3 = "torch.aten.sum.dim_IntList"(%x) {dim = array<i64: 1>, keepdim = false, dtype = f32} : (tensor<4x8xf16>) -> tensor<4xf32> loc("sum_f32"("model.py":7:0))
  return %0, %1, %2, %3 : tensor<4xf16>, tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>
}
