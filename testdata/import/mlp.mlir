// RUN: import models/mlp.pt2
