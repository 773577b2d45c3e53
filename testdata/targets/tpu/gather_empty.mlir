// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// A gather with an empty index (torch.take of nothing) from an empty table: the size-1 slice
// StableHLO's gather needs would not fit the table, and the result has no elements: a constant.
func.func @main(%t: tensor<0xf32> {ember.input = "t"}, %i: tensor<0xi64> {ember.input = "i"}) -> tensor<0xf32> {
  %0 = "ten.gather"(%t, %i) {dim = 0 : i64} : (tensor<0xf32>, tensor<0xi64>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}
