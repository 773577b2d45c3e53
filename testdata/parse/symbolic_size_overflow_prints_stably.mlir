// RUN: opt %s
// Constants whose sum or product overflows i64 stay as several terms, grouped the same however
// the input grouped them, so the printed module parses back to itself (found by fuzz/ir_parse).
func.func @main(%a: tensor<?xf32, #ember.dims<["s0"]>>, %b: tensor<?xf32, #ember.dims<["07*30 + 9223372036854775807+s0 + 96854"]>>, %c: tensor<?xf32, #ember.dims<["3*s0 + 5*s0 + 9223372036854775807*s0"]>>, %d: tensor<?xf32, #ember.dims<["2*4294967296*4294967296*s0"]>>, %e: tensor<?xf32, #ember.dims<["s0 + 9223372036854775807 + 1 - 2"]>>) -> () {
  return
}
