// RUN: opt %s
func.func @main(%a: tensor<2xq7>) -> () {
  return
}
