// RUN: opt %s --passes=canonicalize,fuse-everything
func.func @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32>) {
  return %a : tensor<2x3xf32>
}
