// RUN: import cpu/complex_ops.pt2
