// RUN: opt %s --passes=fuse
// A loop op joins the group of its latest-produced operand: `mul(%a, %b)` continues %b's group
// (%a comes from an older group, defined before it), so sin, mul and add are one kernel rather
// than sin alone and mul + add in a third.
func.func @main(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8xf32>) {
  %a = "ten.exp"(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = "ten.reduce"(%a) {dims = array<i64: 1>, kind = "sum"} : (tensor<8x16xf32>) -> tensor<8xf32>
  %b = "ten.sin"(%y) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = "ten.mul"(%a, %b) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %d = "ten.add"(%c, %x) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %d, %s : tensor<8x16xf32>, tensor<8xf32>
}
