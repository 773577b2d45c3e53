// RUN: import import/asserts.pt2
