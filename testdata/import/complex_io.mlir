// RUN: import cpu/complex_io.pt2
