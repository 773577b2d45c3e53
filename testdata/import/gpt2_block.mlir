// RUN: import models/gpt2_block.pt2
