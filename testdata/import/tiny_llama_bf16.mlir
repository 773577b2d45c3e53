// RUN: import models/tiny_llama_bf16.pt2 | summary
