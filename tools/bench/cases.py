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
from ember.models import CausalLMLogits, GPT2Block, tiny_llama  # noqa: E402


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


class MathChain(nn.Module):
    """22 elementwise ops with sin (2), cos, log, pow, atan, tan and log1p: libm-bound without a
    vector math library."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = torch.sin(x) * 1.5 + y
        b = torch.cos(a) - 0.25 * x
        c = torch.log(torch.abs(b) + 1.0)
        d = torch.pow(torch.abs(c) + 0.5, y)
        e = torch.atan(d - x) * 0.5
        f = torch.tan(e) + torch.log1p(torch.abs(a))
        return f * c + torch.sin(d)


class RMSNormSwiGLU(nn.Module):
    def __init__(self, d: int = 512, hidden: int = 1376) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class Add1(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1.0


class LastHidden(nn.Module):
    """A transformers encoder as ``input_ids -> last_hidden_state``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids).last_hidden_state


def mlp():
    return MLP(), (torch.randn(4096, 1024),)


def gpt2_block():
    return GPT2Block(d_model=768, n_head=12), (torch.randn(4, 128, 768),)


def elementwise20():
    return Elementwise20(), (torch.randn(2048, 2048),)


def layernorm_softmax():
    return LayerNormSoftmax(768), (torch.randn(64, 128, 768),)


def math_chain():
    n = 4 * 1024 * 1024
    return MathChain(), (torch.randn(n), torch.rand(n) * 2.0)


def rmsnorm_swiglu():
    return RMSNormSwiGLU(), (torch.randn(8, 128, 512),)


def add1():
    """Sixteen elements: the time is the per-call overhead."""
    return Add1(), (torch.randn(16),)


def tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64, use_cache=False)
    config._attn_implementation = "sdpa"
    return CausalLMLogits(GPT2LMHeadModel(config)), (torch.randint(0, 300, (2, 16)),)


def bert_small():
    """Not tuned for: a BERT encoder (4 layers, d 256, B4 T64) from transformers' defaults."""
    from transformers import BertConfig, BertModel

    config = BertConfig(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, intermediate_size=1024,
                        vocab_size=1000)
    return LastHidden(BertModel(config, add_pooling_layer=False)), (torch.randint(0, 1000, (4, 64)),)


def gpt2_small():
    """GPT-2 small (124M parameters), seq 128: a compile-time case."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(use_cache=False)
    config._attn_implementation = "sdpa"
    return CausalLMLogits(GPT2LMHeadModel(config)), (torch.randint(0, config.vocab_size, (1, 128)),)


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
    "math_chain": dict(factory=math_chain, kind="mem", bytes=3.0 * 4 * 1024 * 1024 * F32),
    "rmsnorm_swiglu": dict(factory=rmsnorm_swiglu, kind="gemm", flops=2.0 * 8 * 128 * 512 * 1376 * 3),
    "tiny_gpt2": dict(factory=tiny_gpt2, kind="call"),
    "tiny_llama": dict(factory=tiny_llama, kind="call"),
    "add1": dict(factory=add1, kind="call"),
    "bert_small": dict(factory=bert_small, kind="untuned"),
    # Through torch.compile only (its point is the first call; the CLI compile is in cpu.md's history).
    "gpt2_small": dict(factory=gpt2_small, kind="first-call", compile_only=True, rounds=5),
}
