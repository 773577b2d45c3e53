// RUN: opt %s --passes=torch-to-ten
// Bit shifts without a shift op: 2^b as the product of 2^(2^k) over b's set bits; a << b is
// a·2^b, a >> b the floored quotient by 2^b; a shift below 0 or of the width or more gives 0
// (left) or the sign (right, signed types), as torch's CPU kernels.
func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>, %u: tensor<4xui8>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xui8>) {
  %0 = "torch.aten.bitwise_left_shift.Tensor"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("shl"("model.py":3:0))
  %1 = "torch.aten.bitwise_right_shift.Tensor"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32> loc("shr"("model.py":4:0))
  %2 = "torch.aten.bitwise_right_shift.Tensor_Scalar"(%u) {other = 3 : i64} : (tensor<4xui8>) -> tensor<4xui8> loc("shr"("model.py":5:0))
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xui8>
}
