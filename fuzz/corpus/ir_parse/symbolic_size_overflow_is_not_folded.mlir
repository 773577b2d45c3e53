// RUN: opt %s
func.func @main(%a: tensor<?xf32, #ember.dims<["s0"]>>, %b: tensor<?xf32, #ember.dims<["9223372036854775807*s0 + 9223372036854775807*s0"]>>, %c: tensor<?xf32, #ember.dims<["(-9223372036854775807 - 1)//(-1)"]>>) -> () {
  return
}
