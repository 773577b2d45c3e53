"""Small built-in test models for ``python -m ember.export``.

Every factory takes no arguments and returns ``(module, example_inputs)`` or
``(module, example_inputs, dynamic_shapes)``.  Weights are random: seed the
global torch RNG (``torch.manual_seed``) before calling a factory to make it
reproducible; ``ember.export`` does that for you.  Nothing is downloaded.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

ModelFactory = Callable[[], tuple[Any, ...]]


# --------------------------------------------------------------------------- mlp


class MLP(nn.Module):
    """Linear(32, 64) -> GELU -> Linear(64, 16)."""

    def __init__(self, d_in: int = 32, d_hidden: int = 64, d_out: int = 16) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def mlp() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model = MLP()
    return model, (torch.randn(4, 32),)


def mlp_dynamic() -> tuple[nn.Module, tuple[torch.Tensor, ...], dict[str, Any]]:
    model = MLP()
    batch = torch.export.Dim("batch", min=2, max=64)
    return model, (torch.randn(8, 32),), {"x": {0: batch}}


class LayerNormMLP(nn.Module):
    """Linear(32, 64) -> LayerNorm -> GELU -> Linear(64, 16)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.norm = nn.LayerNorm(64)
        self.fc2 = nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def mlp_f16() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The LayerNorm MLP in float16 (weights, input and output)."""
    return LayerNormMLP().to(torch.float16), (torch.randn(4, 32).to(torch.float16),)


# -------------------------------------------------------------------- gpt2_block


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int) -> None:
        super().__init__()
        assert d_model % n_head == 0
        self.n_head = n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        hd = c // self.n_head
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class GPT2MLP(nn.Module):
    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    """Pre-LayerNorm GPT-2 transformer block."""

    def __init__(self, d_model: int = 64, n_head: int = 4) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = GPT2MLP(d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


def gpt2_block() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model = GPT2Block(d_model=64, n_head=4)
    return model, (torch.randn(2, 16, 64),)


def gpt2_block_dynamic() -> tuple[nn.Module, tuple[torch.Tensor, ...], dict[str, Any]]:
    """The GPT-2 block with a dynamic batch: reshapes carry symbolic sizes (sym_int_values)."""
    model = GPT2Block(d_model=64, n_head=4)
    batch = torch.export.Dim("batch", min=1, max=16)
    return model, (torch.randn(4, 16, 64),), {"x": {0: batch}}


# -------------------------------------------------------------------- tiny_llama


class CausalLMLogits(nn.Module):
    """Wraps a Hugging Face causal LM: ``input_ids -> logits``, without a KV cache."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, attention_mask=None, use_cache=False)
        return out.logits


def tiny_llama() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=128,
        max_position_embeddings=64,
        use_cache=False,
    )
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config)
    input_ids = torch.randint(0, config.vocab_size, (1, 16), dtype=torch.int64)
    return CausalLMLogits(model), (input_ids,)


def tiny_llama_bf16() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """tiny_llama with bfloat16 weights and logits (a `model.to(torch.bfloat16)` checkpoint)."""
    model, inputs = tiny_llama()
    return model.to(torch.bfloat16), inputs


# ------------------------------------------------------------------------ resnet


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample: nn.Module | None = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                nn.BatchNorm2d(c_out),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TinyResNet(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.layer1 = BasicBlock(width, width, stride=1)
        self.layer2 = BasicBlock(width, 2 * width, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def _randomize_batchnorm(model: nn.Module) -> None:
    """Give every BatchNorm non-trivial affine params and running statistics."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)


def resnet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    model = TinyResNet(num_classes=10, width=16)
    _randomize_batchnorm(model)
    return model, (torch.randn(2, 3, 16, 16),)


# ---------------------------------------------------------------------- registry

BUILTIN_MODELS: dict[str, ModelFactory] = {
    "mlp": mlp,
    "gpt2_block": gpt2_block,
    "tiny_llama": tiny_llama,
    "resnet": resnet,
    "mlp_dynamic": mlp_dynamic,
    "gpt2_block_dynamic": gpt2_block_dynamic,
    "mlp_f16": mlp_f16,
    "tiny_llama_bf16": tiny_llama_bf16,
}

__all__ = ["BUILTIN_MODELS", *BUILTIN_MODELS]

