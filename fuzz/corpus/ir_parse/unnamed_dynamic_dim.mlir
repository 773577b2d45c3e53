// RUN: opt %s
func.func @main(%a: tensor<?x2xf32>) -> () {
  return
}
