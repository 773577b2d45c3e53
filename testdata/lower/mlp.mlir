// RUN: opt models/mlp.pt2 --passes=torch-to-ten,cse,dce
