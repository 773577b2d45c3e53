// RUN: import models/mlp_dynamic.pt2
