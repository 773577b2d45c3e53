// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// ten elementwise ops -> StableHLO: one op each (erf is chlo.erf; trunc is select(x < 0, ceil, floor)),
// integer floor/ceil/round/trunc and |unsigned| are the operand itself.
func.func @main(%x: tensor<8xf32> {ember.input = "x"}, %y: tensor<8xf32> {ember.input = "y"}, %i: tensor<8xi32> {ember.input = "i"}, %j: tensor<8xi32> {ember.input = "j"}, %u: tensor<8xui8> {ember.input = "u"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xui8>, tensor<8xui8>, tensor<8xi32>) {
  %0 = "ten.add"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %1 = "ten.sub"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = "ten.mul"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "ten.div"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = "ten.max"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %5 = "ten.min"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %6 = "ten.abs"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %7 = "ten.pow"(%6, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %8 = "ten.rem"(%x, %y) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %9 = "ten.neg"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %10 = "ten.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %11 = "ten.log"(%6) : (tensor<8xf32>) -> tensor<8xf32>
  %12 = "ten.log1p"(%6) : (tensor<8xf32>) -> tensor<8xf32>
  %13 = "ten.sqrt"(%6) : (tensor<8xf32>) -> tensor<8xf32>
  %14 = "ten.rsqrt"(%6) : (tensor<8xf32>) -> tensor<8xf32>
  %15 = "ten.tanh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %16 = "ten.sin"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %17 = "ten.cos"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %18 = "ten.tan"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %19 = "ten.floor"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %20 = "ten.ceil"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %21 = "ten.round"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %22 = "ten.trunc"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %23 = "ten.sign"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %24 = "ten.sigmoid"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %25 = "ten.erf"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %26 = "ten.div"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %27 = "ten.rem"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %28 = "ten.and"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %29 = "ten.or"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %30 = "ten.xor"(%i, %j) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %31 = "ten.not"(%i) : (tensor<8xi32>) -> tensor<8xi32>
  %32 = "ten.abs"(%i) : (tensor<8xi32>) -> tensor<8xi32>
  %33 = "ten.sign"(%i) : (tensor<8xi32>) -> tensor<8xi32>
  %34 = "ten.floor"(%i) : (tensor<8xi32>) -> tensor<8xi32>
  %35 = "ten.abs"(%u) : (tensor<8xui8>) -> tensor<8xui8>
  %36 = "ten.sign"(%u) : (tensor<8xui8>) -> tensor<8xui8>
  %37 = "ten.trunc"(%i) : (tensor<8xi32>) -> tensor<8xi32>
  return %0, %1, %2, %3, %4, %5, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>, tensor<8xui8>, tensor<8xui8>, tensor<8xi32>
}
