// RUN: opt %s --passes=torch-to-ten
// A torch op the pass cannot express is an error naming the node and the user's line.
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "torch.aten.div.Tensor_mode"(%a, %b) {rounding_mode = "round"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("div"("model.py":3:0))
  return %0 : tensor<4xf32>
}
