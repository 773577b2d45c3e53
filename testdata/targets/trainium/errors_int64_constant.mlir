// RUN: trainium %s --emit stablehlo
// An int64 constant outside int32 cannot be narrowed: an error naming it (--native-int64 keeps it).
func.func @main(%x: tensor<4xi64> {ember.input = "x"}) -> (tensor<4xi64> {ember.output = "y"}) {
  %0 = "ten.constant"() {dtype = i64, shape = array<i64: 4>, value = 1099511627776 : i64} : () -> tensor<4xi64> loc("full"("model.py":3:0))
  %1 = "ten.add"(%x, %0) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64> loc("add"("model.py":4:0))
  return %1 : tensor<4xi64>
}
