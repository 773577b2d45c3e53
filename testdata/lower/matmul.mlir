// RUN: opt %s --passes=torch-to-ten
// mm/bmm as ten.dot_general; addmm = beta*self + alpha*(mat1 @ mat2) with self broadcast to
// [M, N], the multiplies skipped when a factor is 1 and self dropped when beta is 0.
module attributes {ember.symbols = {s0 = array<i64: 1, 64>}} {
  func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x5xf32>, %ba: tensor<3x4x8xf32>, %bb: tensor<3x8x5xf32>, %bias: tensor<5xf32>, %col: tensor<4x1xf32>, %d: tensor<?x8xf32, #ember.dims<["s0", 8]>>) -> (tensor<4x5xf32>, tensor<3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<?x5xf32, #ember.dims<["s0", 5]>>) {
    %0 = "torch.aten.mm"(%a, %b) : (tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32> loc("mm"("model.py":3:0))
    %1 = "torch.aten.bmm"(%ba, %bb) : (tensor<3x4x8xf32>, tensor<3x8x5xf32>) -> tensor<3x4x5xf32>
    // the linear layer: bias [N] broadcast along rows
    %2 = "torch.aten.addmm"(%bias, %a, %b) {alpha = 1 : i64, beta = 1 : i64} : (tensor<5xf32>, tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
    %3 = "torch.aten.addmm"(%col, %a, %b) {alpha = 0.5 : f64, beta = 2 : i64} : (tensor<4x1xf32>, tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
    %4 = "torch.aten.addmm"(%bias, %a, %b) {alpha = 1 : i64, beta = 0 : i64} : (tensor<5xf32>, tensor<4x8xf32>, tensor<8x5xf32>) -> tensor<4x5xf32>
    %5 = "torch.aten.addmm"(%bias, %d, %b) {alpha = 1 : i64, beta = 1 : i64} : (tensor<5xf32>, tensor<?x8xf32, #ember.dims<["s0", 8]>>, tensor<8x5xf32>) -> tensor<?x5xf32, #ember.dims<["s0", 5]>>
    return %0, %1, %2, %3, %4, %5 : tensor<4x5xf32>, tensor<3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<?x5xf32, #ember.dims<["s0", 5]>>
  }
}
