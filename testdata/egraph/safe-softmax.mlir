// RUN: opt %s --passes=fuse --trace
// rule: safe-softmax
func.func @main(%q: tensor<4x8x16xf32>, %kt: tensor<4x16x8xf32>, %v: tensor<4x8x16xf32>, %mask: tensor<2x2x8x8xf32>) -> (tensor<4x8x16xf32>) {
  %0 = "ten.dot_general"(%q, %kt) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %1 = "ten.reshape"(%0) {shape = array<i64: 2, 2, 8, 8>} : (tensor<4x8x8xf32>) -> tensor<2x2x8x8xf32>
  %2 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 2, 8, 8>, value = 0.25} : () -> tensor<2x2x8x8xf32>
  %3 = "ten.mul"(%1, %2) : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %4 = "ten.add"(%3, %mask) : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %5 = "ten.reduce"(%4) {dims = array<i64: 3>, kind = "max"} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8xf32>
  %6 = "ten.broadcast"(%5) {dims = array<i64: 0, 1, 2>, shape = array<i64: 2, 2, 8, 8>} : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
  %7 = "ten.sub"(%4, %6) : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %8 = "ten.exp"(%7) : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %9 = "ten.reduce"(%8) {dims = array<i64: 3>, kind = "sum"} : (tensor<2x2x8x8xf32>) -> tensor<2x2x8xf32>
  %10 = "ten.broadcast"(%9) {dims = array<i64: 0, 1, 2>, shape = array<i64: 2, 2, 8, 8>} : (tensor<2x2x8xf32>) -> tensor<2x2x8x8xf32>
  %11 = "ten.div"(%8, %10) : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %12 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 2, 8, 8>, value = 0xFFF0000000000000 : f64} : () -> tensor<2x2x8x8xf32>
  %13 = "ten.compare"(%4, %12) {direction = "EQ"} : (tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xi1>
  %14 = "ten.not"(%13) : (tensor<2x2x8x8xi1>) -> tensor<2x2x8x8xi1>
  %15 = "ten.reduce"(%14) {dims = array<i64: 3>, kind = "or"} : (tensor<2x2x8x8xi1>) -> tensor<2x2x8xi1>
  %16 = "ten.reshape"(%15) {shape = array<i64: 2, 2, 8, 1>} : (tensor<2x2x8xi1>) -> tensor<2x2x8x1xi1>
  %17 = "ten.not"(%16) : (tensor<2x2x8x1xi1>) -> tensor<2x2x8x1xi1>
  %18 = "ten.broadcast"(%17) {dims = array<i64: 0, 1, 2, 3>, shape = array<i64: 2, 2, 8, 8>} : (tensor<2x2x8x1xi1>) -> tensor<2x2x8x8xi1>
  %19 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 2, 8, 8>, value = 0.0} : () -> tensor<2x2x8x8xf32>
  %20 = "ten.select"(%18, %19, %11) : (tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %21 = "ten.reshape"(%20) {shape = array<i64: 4, 8, 8>} : (tensor<2x2x8x8xf32>) -> tensor<4x8x8xf32>
  %22 = "ten.dot_general"(%21, %v) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %22 : tensor<4x8x16xf32>
}
