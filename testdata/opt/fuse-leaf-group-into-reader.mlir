// RUN: opt %s --passes=fuse
// Ops that read only arguments find no producer group to join: `x <= 0` and `x / 3` each start a
// loop group. Both are read only by the group of `exp(g)` (which `mul` and `select` continue, its
// operand being the latest), so they move into it: one kernel instead of three, and the two
// full-size values are never written (a batch norm backward on a saved activation).
func.func @main(%x: tensor<8x16xf32>, %g: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %zero = "ten.constant"() {dtype = f32, shape = array<i64: 8, 16>, value = 0.0 : f64} : () -> tensor<8x16xf32>
  %three = "ten.constant"() {dtype = f32, shape = array<i64: 8, 16>, value = 3.0 : f64} : () -> tensor<8x16xf32>
  %c = "ten.compare"(%x, %zero) {direction = "LE"} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
  %h = "ten.div"(%x, %three) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %a = "ten.exp"(%g) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %b = "ten.mul"(%a, %h) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %d = "ten.select"(%c, %zero, %b) : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = "ten.reduce"(%d) {dims = array<i64: 0>, kind = "sum"} : (tensor<8x16xf32>) -> tensor<16xf32>
  return %d, %s : tensor<8x16xf32>, tensor<16xf32>
}
