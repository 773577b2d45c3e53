// RUN: import import/async_asserts.pt2
