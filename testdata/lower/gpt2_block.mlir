// RUN: opt models/gpt2_block.pt2 --passes=torch-to-ten,cse,dce
