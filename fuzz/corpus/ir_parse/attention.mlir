// RUN: opt %s --passes=fuse --trace
// rule: attention
func.func @main(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x8x16xf32>, %mask: tensor<2x8x8xf32>) -> (tensor<2x8x16xf32>) {
  %0 = "ten.dot_general"(%q, %k) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 2>} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %1 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 8, 8>, value = 0.25} : () -> tensor<2x8x8xf32>
  %2 = "ten.mul"(%0, %1) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %3 = "ten.add"(%2, %mask) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %4 = "ten.reduce"(%3) {dims = array<i64: 2>, kind = "max"} : (tensor<2x8x8xf32>) -> tensor<2x8xf32>
  %5 = "ten.broadcast"(%4) {dims = array<i64: 0, 1>, shape = array<i64: 2, 8, 8>} : (tensor<2x8xf32>) -> tensor<2x8x8xf32>
  %6 = "ten.sub"(%3, %5) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %7 = "ten.exp"(%6) : (tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %8 = "ten.reduce"(%7) {dims = array<i64: 2>, kind = "sum"} : (tensor<2x8x8xf32>) -> tensor<2x8xf32>
  %9 = "ten.broadcast"(%8) {dims = array<i64: 0, 1>, shape = array<i64: 2, 8, 8>} : (tensor<2x8xf32>) -> tensor<2x8x8xf32>
  %10 = "ten.div"(%7, %9) : (tensor<2x8x8xf32>, tensor<2x8x8xf32>) -> tensor<2x8x8xf32>
  %11 = "ten.dot_general"(%10, %v) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %11 : tensor<2x8x16xf32>
}
