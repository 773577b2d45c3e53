"""Benchmark cases for tools/bench/bench_cpu.py.

Every factory takes no arguments and returns ``(module, example_inputs)``, the
contract of ``python -m ember.export MODULE:FACTORY`` (seed the torch RNG first
for reproducible weights/inputs; ``ember.export`` does). ``CASES`` maps a case
name to its factory plus the numbers the roofline needs: ``flops`` for GEMM-bound
cases and ``bytes`` (minimum traffic: inputs + outputs + weights) for
memory-bound ones.
"""

from __future__ import annotations

import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "python"))
from ember.models import GPT2Block  # noqa: E402


class MLP(nn.Module):
    def __init__(self, d_in: int = 1024, d_hidden: int = 4096) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, d_in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class Elementwise20(nn.Module):
    """20 elementwise ops, one input, one output."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 0.5            # 1
        y = y + 1.0            # 2
        y = torch.tanh(y)      # 3
        y = y * 3.0            # 4
        y = y - 0.25           # 5
        y = torch.relu(y)      # 6
        y = y + x              # 7
        y = torch.sigmoid(y)   # 8
        y = y * y              # 9
        y = y - x              # 10
        y = y * 0.125          # 11
        y = torch.exp(y)       # 12
        y = y + 2.0            # 13
        y = torch.abs(y)       # 14
        y = y * x              # 15
        y = torch.neg(y)       # 16
        y = torch.clamp(y, -4.0, 4.0)  # 17
        y = y - 1.0            # 18
        y = torch.relu(y) + y  # 19, 20
        return y


class LayerNormSoftmax(nn.Module):
    def __init__(self, d: int = 768) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(d)
        with torch.no_grad():  # non-trivial affine params
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.2, 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.ln(x), dim=-1)


def mlp():
    return MLP(), (torch.randn(4096, 1024),)


def gpt2_block():
    return GPT2Block(d_model=768, n_head=12), (torch.randn(4, 128, 768),)


def elementwise20():
    return Elementwise20(), (torch.randn(2048, 2048),)


def layernorm_softmax():
    return LayerNormSoftmax(768), (torch.randn(64, 128, 768),)


def _gpt2_flops(b: int = 4, t: int = 128, d: int = 768, h: int = 12) -> float:
    n = b * t
    linear = 2 * n * d * (3 * d + d + 4 * d + 4 * d)  # c_attn, c_proj, c_fc, mlp c_proj
    attn = 2 * 2 * b * h * t * t * (d // h)  # QK^T and PV (full, not causal-halved)
    return float(linear + attn)


F32 = 4
CASES = {
    "mlp": dict(factory=mlp, kind="gemm", flops=2.0 * 4096 * 1024 * 4096 * 2),
    "gpt2_block": dict(factory=gpt2_block, kind="gemm", flops=_gpt2_flops()),
    "elementwise20": dict(factory=elementwise20, kind="mem", bytes=2.0 * 2048 * 2048 * F32),
    "layernorm_softmax": dict(factory=layernorm_softmax, kind="mem",
                              bytes=2.0 * 64 * 128 * 768 * F32 + 2 * 768 * F32),
}
