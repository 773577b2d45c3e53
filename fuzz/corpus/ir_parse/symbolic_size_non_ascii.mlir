// RUN: opt %s
func.func @main(%a: tensor<?xf32, #ember.dims<["s77+é"]>>) -> () {
  return
}
