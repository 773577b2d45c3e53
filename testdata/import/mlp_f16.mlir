// RUN: import models/mlp_f16.pt2
