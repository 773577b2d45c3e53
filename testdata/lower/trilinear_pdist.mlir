// RUN: opt %s --passes=torch-to-ten
// _trilinear (nn.functional.bilinear): each input unsqueezed at its expand dims, the three
// broadcast and multiplied, summed over sumdim. _pdist_forward: the p-norm of the [N, N, M]
// differences, the upper triangle (i < j) compacted by each kept position's running count.
func.func @main(%x1: tensor<4x3xf32>, %w: tensor<6x3x5xf32>, %x2: tensor<4x5xf32>) -> (tensor<4x6xf32>, tensor<6xf32>) {
  %0 = "torch.aten._trilinear"(%x1, %w, %x2) {expand1 = array<i64: 1, 3>, expand2 = array<i64: 0>, expand3 = array<i64: 1, 2>, sumdim = array<i64: 2, 3>, unroll_dim = 1 : i64} : (tensor<4x3xf32>, tensor<6x3x5xf32>, tensor<4x5xf32>) -> tensor<4x6xf32> loc("_trilinear"("model.py":5:0))
  %1 = "torch.aten._pdist_forward"(%x1) {p = 2.0 : f64} : (tensor<4x3xf32>) -> tensor<6xf32> loc("_pdist_forward"("model.py":6:0))
  return %0, %1 : tensor<4x6xf32>, tensor<6xf32>
}
