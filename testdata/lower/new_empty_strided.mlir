// RUN: opt %s --passes=torch-to-ten
// new_empty_strided: uninitialized memory of the result type, filled with zeros (deterministic,
// like the rest of the empty family).
func.func @main(%x: tensor<3xf32>) -> tensor<2x2xf32> {
  %0 = "torch.aten.new_empty_strided"(%x) {size = array<i64: 2, 2>, stride = array<i64: 2, 1>} : (tensor<3xf32>) -> tensor<2x2xf32> loc("empty"("model.py":2:0))
  return %0 : tensor<2x2xf32>
}
