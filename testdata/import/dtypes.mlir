// RUN: import import/dtypes.pt2
