// RUN: opt models/gpt2_block_dynamic.pt2 --passes=torch-to-ten,cse,dce
