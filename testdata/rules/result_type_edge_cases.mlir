// RUN: opt %s
// Result-type rules the OpInfo sweep found wrong: bool arange bounds, cat of only legacy-empty
// tensors, masked_scatter broadcasting self against mask, squeeze with an empty dim list.
func.func @main(%s: tensor<5xf32>, %m: tensor<5x5xi1>, %src: tensor<5x5xf32>, %e: tensor<0xf32>, %o: tensor<1x1x1x1xf32>) -> (tensor<1xf32>, tensor<0xf32>, tensor<5x5xf32>, tensor<1x1x1x1xf32>) {
  %0 = "torch.aten.arange.start_step"() {dtype = f32, end = true, start = false, step = true} : () -> tensor<1xf32>
  %1 = "torch.aten.cat"(%e, %e) {dim = 0 : i64} : (tensor<0xf32>, tensor<0xf32>) -> tensor<0xf32>
  %2 = "torch.aten.masked_scatter"(%s, %m, %src) : (tensor<5xf32>, tensor<5x5xi1>, tensor<5x5xf32>) -> tensor<5x5xf32>
  %3 = "torch.aten.squeeze.dims"(%o) {dim = array<i64>} : (tensor<1x1x1x1xf32>) -> tensor<1x1x1x1xf32>
  return %0, %1, %2, %3 : tensor<1xf32>, tensor<0xf32>, tensor<5x5xf32>, tensor<1x1x1x1xf32>
}
