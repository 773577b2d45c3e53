// RUN: import models/tiny_llama.pt2
