// RUN: opt %s --passes=canonicalize,torch-to-ten,cse,dce
// compare (compare_type FLOAT / SIGNED / UNSIGNED by operand dtype), select, convert, splat
// constants (non-finite floats are hex bit patterns of the element type; out-of-range f16 is inf)
// and iota.
func.func @main(%x: tensor<2x3xf32> {ember.input = "x"}, %y: tensor<2x3xf32> {ember.input = "y"}, %i: tensor<2x3xi64> {ember.input = "i"}, %u: tensor<2x3xui8> {ember.input = "u"}, %b: tensor<2x3xi1> {ember.input = "b"}) -> (tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f16>, tensor<f16>, tensor<bf16>, tensor<f64>, tensor<i64>, tensor<ui8>, tensor<2x3xi1>, tensor<2x3xi64>, tensor<3x2xf32>) {
  %0 = "ten.compare"(%x, %y) {direction = "LT"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %1 = "ten.compare"(%i, %i) {direction = "GE"} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %2 = "ten.compare"(%u, %u) {direction = "NE"} : (tensor<2x3xui8>, tensor<2x3xui8>) -> tensor<2x3xi1>
  %3 = "ten.compare"(%b, %0) {direction = "EQ"} : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %4 = "ten.select"(%0, %x, %y) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "ten.convert"(%x) {dtype = i64} : (tensor<2x3xf32>) -> tensor<2x3xi64>
  %6 = "ten.convert"(%i) {dtype = f32} : (tensor<2x3xi64>) -> tensor<2x3xf32>
  %7 = "ten.convert"(%x) {dtype = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %8 = "ten.convert"(%b) {dtype = f32} : (tensor<2x3xi1>) -> tensor<2x3xf32>
  %9 = "ten.convert"(%x) {dtype = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %10 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 3>, value = 0xFFF0000000000000 : f64} : () -> tensor<2x3xf32>
  %11 = "ten.constant"() {dtype = f32, shape = array<i64: 2, 3>, value = 0x7FF8000000000000 : f64} : () -> tensor<2x3xf32>
  %12 = "ten.constant"() {dtype = f16, shape = array<i64>, value = 1.0e5 : f64} : () -> tensor<f16>
  %13 = "ten.constant"() {dtype = f16, shape = array<i64>, value = 0.1 : f64} : () -> tensor<f16>
  %14 = "ten.constant"() {dtype = bf16, shape = array<i64>, value = 0x7FF0000000000000 : f64} : () -> tensor<bf16>
  %15 = "ten.constant"() {dtype = f64, shape = array<i64>, value = 0.1 : f64} : () -> tensor<f64>
  %16 = "ten.constant"() {dtype = i64, shape = array<i64>, value = -9223372036854775808 : i64} : () -> tensor<i64>
  %17 = "ten.constant"() {dtype = ui8, shape = array<i64>, value = 255 : i64} : () -> tensor<ui8>
  %18 = "ten.constant"() {dtype = i1, shape = array<i64: 2, 3>, value = true} : () -> tensor<2x3xi1>
  %19 = "ten.iota"() {dim = 1 : i64, dtype = i64, shape = array<i64: 2, 3>} : () -> tensor<2x3xi64>
  %20 = "ten.iota"() {dim = 0 : i64, dtype = f32, shape = array<i64: 3, 2>} : () -> tensor<3x2xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20 : tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi64>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<f16>, tensor<f16>, tensor<bf16>, tensor<f64>, tensor<i64>, tensor<ui8>, tensor<2x3xi1>, tensor<2x3xi64>, tensor<3x2xf32>
}
