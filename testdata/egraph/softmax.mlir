// RUN: opt %s --passes=fuse --trace
// rule: softmax
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  %0 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "max"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = "ten.broadcast"(%0) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %2 = "ten.sub"(%x, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "ten.exp"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "ten.reduce"(%3) {dims = array<i64: 1>, kind = "sum"} : (tensor<4x8xf32>) -> tensor<4xf32>
  %5 = "ten.broadcast"(%4) {dims = array<i64: 0>, shape = array<i64: 4, 8>} : (tensor<4xf32>) -> tensor<4x8xf32>
  %6 = "ten.div"(%3, %5) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}
