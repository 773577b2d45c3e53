"""bfloat16 and float16 end to end, on models Ember does not bundle (transformers configs):
a LayerNorm MLP, a ViT, a Llama and a Qwen3 in `model.to(dtype)` form, through torch.compile
on cpu, tpu and trainium (XLA's CPU client here) and through `ember compile`/`ember run` with
`.npz` bf16 (`ml_dtypes`, saved as `<V2`).

Two checks per output: against torch eager in the same dtype with `numerics.assert_close`
(torch.testing's rtol for the dtype times the output's scale), and against an f64 evaluation
of the same model, where Ember's error must stay within twice eager's own: as accurate as
eager, not only close to it.
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from numerics import as_typed, assert_close, narrow_atol

pytest.importorskip("transformers")
pytest.importorskip("jax")

import ember.backend as backend  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
EMBER = REPO / "target" / "debug" / "ember"
TARGETS = ["cpu", "tpu", "trainium"]


class _LNMLP(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.ln, self.b = torch.nn.Linear(32, 64), torch.nn.LayerNorm(64), torch.nn.Linear(64, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.gelu(self.ln(self.a(x))))


class _Logits(torch.nn.Module):
    def __init__(self, m: torch.nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.m(input_ids=ids, use_cache=False).logits


class _Hidden(torch.nn.Module):
    def __init__(self, m: torch.nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.m(pixel_values=x).last_hidden_state


def _model(name: str, dtype: torch.dtype) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import transformers as tf

    torch.manual_seed(0)
    lm = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128, vocab_size=256, max_position_embeddings=64)
    if name == "ln_mlp":
        m, x = _LNMLP(), (torch.randn(4, 32).to(dtype),)
    elif name == "vit":
        cfg = tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, image_size=32, patch_size=8)
        m, x = _Hidden(tf.ViTModel(cfg)), (torch.randn(2, 3, 32, 32).to(dtype),)
    elif name == "llama":
        m, x = _Logits(tf.LlamaForCausalLM(tf.LlamaConfig(**lm))), (torch.randint(0, 256, (2, 16)),)
    else:
        m, x = _Logits(tf.Qwen3ForCausalLM(tf.Qwen3Config(**lm, head_dim=16))), (torch.randint(0, 256, (2, 16)),)
    return m.eval().to(dtype), x


CASES = [("ln_mlp", torch.bfloat16), ("ln_mlp", torch.float16), ("vit", torch.float16), ("vit", torch.bfloat16), ("llama", torch.bfloat16), ("qwen3", torch.bfloat16)]


def _reference(m: torch.nn.Module, x: tuple[torch.Tensor, ...]) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        eager = m(*x)
        exact = copy.deepcopy(m).double()(*[t.double() if t.is_floating_point() else t for t in x])
    return eager.double().numpy(), exact.numpy()


def _check(got: np.ndarray, eager: np.ndarray, exact: np.ndarray, what: str) -> None:
    err, own = np.abs(got - exact).max(), np.abs(eager - exact).max()
    assert err <= 2 * own + 1e-5, f"{what}: |ember - f64| = {err:.3g}, more than twice eager's {own:.3g}"


def _scale_close(got: np.ndarray, want: np.ndarray, dtype: torch.dtype, what: str) -> None:
    """`numerics.assert_close`'s rule for a narrow dtype, on values already widened to f64."""
    np.testing.assert_allclose(got, want, rtol=0, atol=narrow_atol(str(dtype), float(np.abs(want).max())), err_msg=what)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name,dtype", CASES, ids=[f"{n}-{str(d).removeprefix('torch.')}" for n, d in CASES])
def test_torch_compile_matches_eager(name: str, dtype: torch.dtype, target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    m, x = _model(name, dtype)
    eager, exact = _reference(m, x)
    fallbacks = backend.stats["fallbacks"]
    with torch.no_grad():
        got = torch.compile(m, backend="ember", options={"target": target})(*x)
    assert backend.stats["fallbacks"] == fallbacks, "a graph fell back to eager"
    assert got.dtype == dtype
    what = f"{name} {dtype} {target}"
    _scale_close(got.double().numpy(), eager, dtype, what)
    _check(got.double().numpy(), eager, exact, what)


@pytest.mark.parametrize("target", TARGETS)
def test_cli_runs_bf16_npz(target: str, tmp_path: Path) -> None:
    """`ember compile` + `ember run` on a bf16 archive whose .npz holds ml_dtypes arrays (<V2):
    the inputs are read as bfloat16 and the outputs written so, on every target."""
    import ml_dtypes

    from ember.export import export_model

    pt2 = tmp_path / "m.pt2"
    export_model(lambda: _model("qwen3", torch.bfloat16), pt2)
    ref = np.load(tmp_path / "m.npz")
    assert ref["out0"].dtype.str == "|V2"
    art, got = tmp_path / "art", tmp_path / "got.npz"
    for cmd in (["compile", str(pt2), "--target", target, "-o", str(art)], ["run", str(art), "--inputs", str(tmp_path / "m.npz"), "--outputs", str(got)]):
        r = subprocess.run([str(EMBER), *cmd], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    out = np.load(got)["out0"]
    assert out.dtype.str in ("<V2", "|V2")
    assert_close(out.view(ml_dtypes.bfloat16), as_typed(ref["out0"]), err_msg=target)


def test_autocast_inference_compiles() -> None:
    """`torch.autocast("cpu", bfloat16)` inference: bf16 matmuls, f32 elsewhere, one graph on
    Ember's CPU target, as accurate as eager autocast against f64."""
    torch._dynamo.reset()
    m, (x,) = _model("ln_mlp", torch.float32)
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            eager = m(x)
            fallbacks, compiled = backend.stats["fallbacks"], backend.stats["compiled"] + backend.stats["cache_hits"]
            got = torch.compile(m, backend="ember")(x)
        exact = copy.deepcopy(m).double()(x.double())
    assert backend.stats["fallbacks"] == fallbacks and backend.stats["compiled"] + backend.stats["cache_hits"] > compiled
    assert got.dtype == eager.dtype == torch.bfloat16
    _scale_close(got.double().numpy(), eager.double().numpy(), torch.bfloat16, "autocast")
    _check(got.double().numpy(), eager.double().numpy(), exact.numpy(), "autocast")
