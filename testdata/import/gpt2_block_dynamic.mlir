// RUN: import models/gpt2_block_dynamic.pt2
