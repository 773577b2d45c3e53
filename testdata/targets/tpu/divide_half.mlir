// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// An f16/bf16 ten.div is an f32 stablehlo.divide between converts: XLA rewrites a / broadcast(b)
// as a * broadcast(1 / b), which in f16 rounds twice (cosine_similarity's x / |x| was off by up
// to an ulp in a quarter of its elements); in f32 and rounded once the quotient is torch's.
func.func @main(%a: tensor<4x8xf16> {ember.input = "a"}, %b: tensor<4x1xf16> {ember.input = "b"}, %c: tensor<4x8xbf16> {ember.input = "c"}, %d: tensor<4x8xf32> {ember.input = "d"}) -> (tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %0 = "ten.broadcast"(%b) {dims = array<i64: 0, 1>, shape = array<i64: 4, 8>} : (tensor<4x1xf16>) -> tensor<4x8xf16>
  %1 = "ten.div"(%a, %0) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  %2 = "ten.div"(%c, %c) : (tensor<4x8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16>
  %3 = "ten.div"(%d, %d) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1, %2, %3 : tensor<4x8xf16>, tensor<4x8xbf16>, tensor<4x8xf32>
}
