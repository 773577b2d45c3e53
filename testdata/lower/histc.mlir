// RUN: opt %s --passes=torch-to-ten
// histc: each element's bin is trunc((x - min) / (max - min) * bins), capped at the last bin
// (max itself); a one-hot over the elements inside [min, max] is summed. min == max means the
// data's range: its reduced min and max (each moved out by 1 when equal) as splats.
func.func @main(%x: tensor<2x3xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "torch.aten.histc"(%x) {bins = 4 : i64, min = 0 : i64, max = 3 : i64} : (tensor<2x3xf32>) -> tensor<4xf32> loc("histc"("moe.py":634:0))
  %1 = "torch.aten.histc"(%x) {bins = 4 : i64} : (tensor<2x3xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}
