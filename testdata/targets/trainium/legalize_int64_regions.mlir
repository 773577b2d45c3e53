// RUN: trainium %s --emit stablehlo
// int64 narrowed to int32 inside regions too: the index operand, init value and block arguments
// of argmax's stablehlo.reduce and of argsort's stablehlo.sort comparator (sort, topk) are i32,
// like the results they feed; XLA refuses a region whose types disagree with its op's results.
func.func @main(%x: tensor<2x5xf32> {ember.input = "x"}) -> (tensor<2xi64> {ember.output = "am"}, tensor<2x5xi64> {ember.output = "order"}, tensor<2x2xi64> {ember.output = "top"}) {
  %0 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "argmax"} : (tensor<2x5xf32>) -> tensor<2xi64> loc("argmax"("model.py":3:0))
  %1 = "ten.argsort"(%x) {dim = 1 : i64, descending = false} : (tensor<2x5xf32>) -> tensor<2x5xi64> loc("sort"("model.py":4:0))
  %2 = "ten.argsort"(%x) {dim = 1 : i64, descending = true} : (tensor<2x5xf32>) -> tensor<2x5xi64> loc("topk"("model.py":5:0))
  %3 = "ten.slice"(%2) {start = array<i64: 0, 0>, shape = array<i64: 2, 2>, step = array<i64: 1, 1>} : (tensor<2x5xi64>) -> tensor<2x2xi64> loc("topk"("model.py":5:0))
  return %0, %1, %3 : tensor<2xi64>, tensor<2x5xi64>, tensor<2x2xi64>
}
