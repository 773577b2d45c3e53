// RUN: opt models/mlp_dynamic.pt2 --passes=torch-to-ten,cse,dce
