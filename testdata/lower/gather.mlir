// RUN: opt %s --passes=torch-to-ten
// embedding and index_select are one ten.gather. index.Tensor with adjacent integer indices over
// static dims gathers once from the merged indexed dims with a linearized index (negative
// indices wrap); non-adjacent indices stay a torch op.
func.func @main(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %t: tensor<5x6x7xf32>, %k: tensor<4xi64>, %j: tensor<3xi32>) -> (tensor<2x3x4xf32>, tensor<5x6x4xf32>, tensor<5x2x3x7xf32>, tensor<2x3x7xf32>, tensor<2x3x6xf32>) {
  %0 = "torch.aten.embedding"(%w, %ids) {padding_idx = -1 : i64, scale_grad_by_freq = false, sparse = false} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32> loc("embedding"("model.py":2:0))
  %1 = "torch.aten.index_select"(%t, %k) {dim = -1 : i64} : (tensor<5x6x7xf32>, tensor<4xi64>) -> tensor<5x6x4xf32>
  // t[:, ids]
  %2 = "torch.aten.index.Tensor"(%t, %ids) {indices = array<i64: 0, 1>, operandSegmentSizes = array<i64: 1, 1>} : (tensor<5x6x7xf32>, tensor<2x3xi64>) -> tensor<5x2x3x7xf32>
  // t[ids, j]: linear index ids * 6 + j over the merged [30] dim
  %3 = "torch.aten.index.Tensor"(%t, %ids, %j) {indices = array<i64: 1, 1>, operandSegmentSizes = array<i64: 1, 2>} : (tensor<5x6x7xf32>, tensor<2x3xi64>, tensor<3xi32>) -> tensor<2x3x7xf32>
  // t[ids, :, ids]: not lowered
  %4 = "torch.aten.index.Tensor"(%t, %ids, %ids) {indices = array<i64: 1, 0, 1>, operandSegmentSizes = array<i64: 1, 2>} : (tensor<5x6x7xf32>, tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3x6xf32>
  return %0, %1, %2, %3, %4 : tensor<2x3x4xf32>, tensor<5x6x4xf32>, tensor<5x2x3x7xf32>, tensor<2x3x7xf32>, tensor<2x3x6xf32>
}
