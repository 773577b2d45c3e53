// RUN: opt models/gpt2_block.pt2 --passes=canonicalize,cse,dce
