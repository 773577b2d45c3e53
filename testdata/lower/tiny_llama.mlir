// RUN: opt models/tiny_llama.pt2 --passes=torch-to-ten,cse,dce | summary
