"""Training under ``torch.compile(backend="ember")``: both graphs compiled by Ember, gradients and
losses against torch eager."""

from __future__ import annotations

import copy
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Callable

import pytest
import torch
import torch.nn.functional as F

from ember import backend, decompositions, rng
from numerics import assert_close_torch


@pytest.fixture(autouse=True)
def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()


def _assert_grads_match(want: dict, got: dict) -> None:
    """Per tensor, |ember - eager| within 1e-3 of the gradient's norm, floored at 1e-3 of the
    largest gradient's norm (tiny gradients carry rounding from much larger sums)."""
    missing = [n for n, g in got.items() if g is None]
    assert not missing, f"no gradient for {missing}"
    floor = 1e-3 * max(float(w.norm()) for w in want.values())
    errors = {n: (float(w.norm()), float((w - got[n]).norm())) for n, w in want.items()}
    bad = {n: e for n, e in errors.items() if e[1] > max(1e-3 * e[0], floor)}
    assert not bad, f"gradients differ from torch eager (name: |grad|, |ember - eager|): {bad}"


def _train(model: torch.nn.Module, make_opt: Callable, step: Callable, batches: list, compiled: bool, target: str = "cpu") -> tuple[list[float], dict]:
    """Three optimizer steps; the losses and the first step's gradients."""
    run = torch.compile(model, backend="ember", options={"target": target}) if compiled else model
    opt = make_opt(model.parameters())
    losses, first = [], {}
    for i, batch in enumerate(batches):
        opt.zero_grad()
        loss = step(run, batch)
        loss.backward()
        if i == 0:
            first = {n: None if p.grad is None else p.grad.clone() for n, p in model.named_parameters()}
        opt.step()
        losses.append(float(loss))
    return losses, first


def _check_training(model: torch.nn.Module, make_opt: Callable, step: Callable, batches: list, target: str = "cpu", partitioned: bool = False) -> None:
    """`partitioned`: the graphs are partitioned around torch's convolutions, and each piece is
    compiled ahead of its first call for the layouts it gets."""
    before = dict(backend.stats, targets=dict(backend.stats["targets"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got_losses, got = _train(copy.deepcopy(model), make_opt, step, batches, compiled=True, target=target)
    want_losses, want = _train(model, make_opt, step, batches, compiled=False)
    ember_warnings = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert not ember_warnings, ember_warnings
    assert backend.stats["fallbacks"] == before["fallbacks"]
    assert backend.stats["backward"] > before["backward"], "no backward graph was compiled by Ember"
    assert backend.stats["targets"].get(target, 0) > before["targets"].get(target, 0), f"nothing ran on {target}"
    _assert_grads_match(want, got)
    assert got_losses == pytest.approx(want_losses, rel=1e-4), (got_losses, want_losses)
    if partitioned:
        assert backend.stats["ahead"] > before["ahead"] and backend.stats["ahead_missed"] == before["ahead_missed"]


def test_gpt2_lm_gradients_match_eager() -> None:
    """A transformers GPT-2 LM. Regression: torch's decomposition of the CPU flash-attention op
    returned the probabilities where the log-sum-exp goes, so every gradient below the last
    block's attention was wrong (|ember - eager| > |grad|)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    batches = [torch.randint(0, 300, (2, 16)) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.1), lambda m, ids: m(input_ids=ids, labels=ids).loss, batches)


def test_moe_lm_compiles_its_backward() -> None:
    """A transformers Mixtral (mixture of experts): its experts' `grouped_mm_fallback` has an
    autograd formula calling a second custom op, which Ember decomposes too, so the backward
    graph compiles (it ran with torch eager before) and the experts' gradients match eager."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.MixtralConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                                     num_local_experts=4, num_experts_per_tok=2, vocab_size=128, max_position_embeddings=64)
    model = transformers.MixtralForCausalLM(cfg)
    batches = [torch.randint(0, 128, (2, 12)) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.1), lambda m, ids: m(input_ids=ids, labels=ids).loss, batches)


def test_swin_backward_compiles_its_as_strided_scatter() -> None:
    """A transformers Swin: its backward holds `as_strided_scatter` into a computed zero tensor
    (lowered over that tensor's storage in the layout eager gives it) and reads activations the
    channels-last forward saved NHWC. The whole backward compiles, with eager's gradients."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 4], window_size=4, num_labels=10, drop_path_rate=0.0)
    model = transformers.SwinForImageClassification(cfg).train()
    want_model = copy.deepcopy(model)
    x, y = torch.randn(2, 3, 32, 32), torch.randint(0, 10, (2,))
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(model, backend="ember")(pixel_values=x, labels=y).loss.backward()
    want_model(pixel_values=x, labels=y).loss.backward()
    assert not [str(w.message) for w in caught if "ember" in str(w.message)]
    assert backend.stats["fallbacks"] == before["fallbacks"] and backend.stats["backward"] > before["backward"]
    _assert_grads_match({n: p.grad for n, p in want_model.named_parameters()}, {n: p.grad for n, p in model.named_parameters()})


def test_a_backward_op_without_lowering_runs_eagerly_and_the_rest_compiles() -> None:
    """A channels-last conv net's backward holds `grid_sampler_2d_backward`, which Ember does not
    import, between convolutions (torch's on the CPU) and reading an activation the forward
    saved NHWC: that op runs with torch eager on its inputs as AOT declared them, and only it
    (one warning): the rest of its piece still compiles, in pieces around it. Gradients match."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c1, self.c2 = torch.nn.Conv2d(3, 8, 3), torch.nn.Conv2d(8, 4, 3)

        def forward(self, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
            h = torch.relu(self.c1(x))
            h = F.grid_sample(h, grid, align_corners=False) * h.mean()
            return self.c2(torch.tanh(h)).square().mean()

    torch.manual_seed(0)
    model = Net().to(memory_format=torch.channels_last)
    want_model = copy.deepcopy(model)
    x, grid = torch.randn(2, 3, 12, 12).to(memory_format=torch.channels_last), torch.rand(2, 10, 10, 2) * 2 - 1
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.compile(model, backend="ember")(x, grid).backward()
    want_model(x, grid).backward()
    messages = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert len(messages) == 1 and "grid_sampler_2d_backward" in messages[0] and messages[0].endswith("the rest of it still compiles"), messages
    assert backend.stats["backward"] - before["backward"] >= 2, "the backward's other ops did not compile"
    _assert_grads_match({n: p.grad for n, p in want_model.named_parameters()}, {n: p.grad for n, p in model.named_parameters()})


def test_weight_norm_backward_compiles() -> None:
    """`weight_norm` (a wav2vec2's positional convolution: over dim 2; a linear layer's over dim
    0): its backward op, which core ATen keeps, is decomposed, so the backward compiles (it ran
    with torch eager), with eager's gradients."""
    from torch.nn.utils.parametrizations import weight_norm

    torch.manual_seed(0)
    model = torch.nn.Sequential(weight_norm(torch.nn.Conv1d(4, 6, 3, padding=1), dim=2), torch.nn.Flatten(), weight_norm(torch.nn.Linear(48, 5), dim=0))
    batches = [torch.randn(2, 4, 8) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.1), lambda m, x: m(x).square().mean(), batches)


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (2, 3), "divisor_override": 5}, {"kernel_size": 3, "stride": 2},
                                {"kernel_size": 2, "ceil_mode": True}, {"kernel_size": 3, "stride": 1, "padding": 1, "count_include_pad": False}])
def test_average_pooling_backward(kw: dict) -> None:
    """Average pooling's backward, which core ATen keeps, compiles with eager's gradients: as a
    broadcast where the windows tile the input (a DenseNet's transitions; here over an odd size,
    whose last row and column no window covers, and with a divisor override), as a transposed
    convolution otherwise (overlapping windows, ceil mode's partial last window, padding not
    counted in the divisor)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.AvgPool2d(**kw), torch.nn.Flatten())
    x = torch.randn(2, 3, 9, 11)
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.1), lambda m, x: m(x).square().mean(), [x, x * 2, x - 1])


def test_activation_checkpointing_compiles_and_keeps_eager_checkpointing_working() -> None:
    """`torch.utils.checkpoint` (transformers' `gradient_checkpointing_enable()`): compiled, the
    recomputed forward and the backward compile with eager's gradients. Importing ember made the
    ember device torch's current accelerator, whose autocast the recomputation enters: torch
    eager's checkpointing failed (the device module had no `get_amp_supported_dtype`)."""
    from torch.utils.checkpoint import checkpoint

    class Blocks(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()) for _ in range(2))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = checkpoint(layer, x, use_reentrant=False)
            return x

    torch.manual_seed(0)
    batches = [torch.randn(4, 16) for _ in range(3)]
    _check_training(Blocks(), lambda p: torch.optim.SGD(p, lr=0.1), lambda m, x: m(x).square().mean(), batches)


def test_batchnorm_convnet_gradients_match_eager() -> None:
    """Conv + BatchNorm (running statistics updated in the forward graph) + max pooling, SGD with momentum."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10),
    )  # fmt: skip
    batches = [(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), lambda m, b: F.cross_entropy(m(b[0]), b[1]), batches, partitioned=True)


def test_mobilenet_style_convnet_gradients_match_eager() -> None:
    """torchvision's MobileNetV3 blocks: a depthwise convolution, hardswish, squeeze-excitation
    (1x1 spatial activations, whose strides AOT declares channels-last) and a residual add."""
    torch.manual_seed(0)

    class Block(torch.nn.Module):
        def __init__(self, c: int) -> None:
            super().__init__()
            self.dw = torch.nn.Sequential(torch.nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False), torch.nn.BatchNorm2d(c), torch.nn.Hardswish())
            self.se = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Conv2d(c, 4, 1), torch.nn.ReLU(), torch.nn.Conv2d(4, c, 1), torch.nn.Hardsigmoid())
            self.pw = torch.nn.Sequential(torch.nn.Conv2d(c, c, 1, bias=False), torch.nn.BatchNorm2d(c))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.dw(x)
            return x + self.pw(y * self.se(y))

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.BatchNorm2d(16), torch.nn.Hardswish(),
        Block(16), Block(16), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(16, 10),
    )  # fmt: skip
    batches = [(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), lambda m, b: F.cross_entropy(m(b[0]), b[1]), batches, partitioned=True)


def _bn_convnet() -> torch.nn.Module:
    """Two convolutions with BatchNorm and ReLU, pooled into a linear layer of 10."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10),
    )  # fmt: skip


def test_convnet_with_a_changing_batch_compiles_once_for_every_size() -> None:
    """A BatchNorm conv net whose batch changes (a last, smaller batch): Dynamo compiles it again
    with a symbolic batch at the second size, and that graph serves every later size. Its pieces
    between the convolutions compile from AOT's symbolic values; making their layouts concrete
    specialized the batch (a guard), so every size compiled the whole model again. Gradients as
    eager's at every size, no piece eager."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    model = _bn_convnet()
    want = copy.deepcopy(model)
    run = torch.compile(model, backend="ember")
    counters.clear()
    before = dict(backend.stats)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for b in (4, 6, 8, 5):
            x, y = torch.randn(b, 3, 16, 16), torch.randint(0, 10, (b,))
            grads = []
            for m, params in ((run, model), (want, want)):
                params.zero_grad(set_to_none=True)
                F.cross_entropy(m(x), y).backward()
                grads.append({n: p.grad.clone() for n, p in params.named_parameters()})
            _assert_grads_match(grads[1], grads[0])
    assert counters["stats"]["unique_graphs"] == 2, dict(counters["stats"])
    # The batch norms' 1 / (n - 1) at a symbolic batch, a float input of two pieces, is passed
    # as a 0-d tensor: no piece runs eagerly.
    assert backend.stats["fallbacks"] == before["fallbacks"], [str(w.message) for w in caught if "ember" in str(w.message)]


def test_micro_batches_keep_each_forwards_saved_tensors() -> None:
    """Two forwards before one backward (gradient accumulation): the first forward's saved
    activations are alive when the graphs run again, so those calls must not write their outputs
    over them (a graph reuses only output memory torch has freed: `OutputSlot`)."""
    torch.manual_seed(0)
    model = _bn_convnet()
    batches = [[(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(2)] for _ in range(3)]
    step = lambda m, micro: sum(F.cross_entropy(m(x), y) for x, y in micro)  # noqa: E731
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), step, batches)


def test_channels_last_convnet_keeps_the_user_visible_layouts() -> None:
    """Between its convolutions the CPU target runs activations channels-last; what the user's
    code sees keeps eager's layouts: a convolution's output returned as is (a segmentation head),
    in training and in eval, the input's gradient, and a lone convolution of the graph's input."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 3, padding=1),
    )  # fmt: skip
    compiled = torch.compile(model, backend="ember")
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    fallbacks = backend.stats["fallbacks"]
    got, want = compiled(x), model(x)
    assert got.stride() == want.stride()
    assert_close_torch(got.detach(), want.detach())
    got.sum().backward()
    gx, x.grad = x.grad, None
    want.sum().backward()
    assert gx.stride() == x.grad.stride()
    assert_close_torch(gx, x.grad)
    model.eval()
    with torch.no_grad():
        got, want = compiled(x), model(x)
    assert got.stride() == want.stride() and got.view(-1).shape == (2 * 4 * 16 * 16,)
    assert_close_torch(got, want)
    conv = torch.nn.Conv2d(3, 4, 3)  # one convolution, its input a graph input
    with torch.no_grad():
        got, want = torch.compile(conv, backend="ember")(x), conv(x)
    assert got.stride() == want.stride()
    assert_close_torch(got, want)
    assert backend.stats["fallbacks"] == fallbacks


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 3}, {"weight": True, "ignore_index": 2}, {"label_smoothing": 0.1}])
def test_cross_entropy_gradients_match_eager(kw: dict) -> None:
    """`nll_loss_backward` as Ember decomposes it (a one-hot select), every reduction, an
    ignored class on two rows, class weights."""
    torch.manual_seed(0)
    kw = {k: (torch.rand(7) if k == "weight" else v) for k, v in kw.items()}
    x, t = torch.randn(10, 7, requires_grad=True), torch.randint(0, 7, (10,))
    t[:2] = kw.get("ignore_index", 0)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(x, t, **kw).sum()

    grads = []
    fallbacks = backend.stats["fallbacks"]
    for f in (torch.compile(loss, backend="ember"), loss):
        f(x).backward()
        grads.append(x.grad)
        x.grad = None
    assert_close_torch(grads[0], grads[1])
    assert backend.stats["fallbacks"] == fallbacks


def test_mlp_adamw_gradients_match_eager() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 8))
    batches = [(torch.randn(16, 32), torch.randn(16, 8)) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.AdamW(p, lr=1e-2), lambda m, b: F.mse_loss(m(b[0]), b[1]), batches)


def test_batchnorm_running_stats_are_updated() -> None:
    torch.manual_seed(0)
    bn = torch.nn.BatchNorm1d(6)
    x = torch.randn(8, 6)
    want = copy.deepcopy(bn)
    want(x).sum().backward()
    torch.compile(bn, backend="ember")(x).sum().backward()
    torch.testing.assert_close(bn.running_mean, want.running_mean)
    torch.testing.assert_close(bn.running_var, want.running_var)
    assert int(bn.num_batches_tracked) == 1


@pytest.mark.parametrize("case", ["causal", "mask", "plain", "gqa", "bf16", "f16"])
def test_flash_attention_decompositions_match_the_kernels(case: str) -> None:
    """Ember's decompositions of the CPU flash-attention op and its backward give the kernels'
    outputs, log-sum-exp (shape, values, layout, and float32 for every input dtype) and
    gradients; grouped-query attention too (6 query heads on 2 key/value heads, causal), and
    bf16/f16 inputs (computed in f32 as the kernel accumulates; its tolerance for the dtype)."""
    torch.manual_seed(0)
    heads = (6, 2) if case == "gqa" else (3, 3)
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}.get(case, torch.float32)
    q, k, v = (torch.randn(2, hd, 5, 8).transpose(1, 2).contiguous().transpose(1, 2).to(dt) for hd in (heads[0], heads[1], heads[1]))
    kw = {"attn_mask": torch.randn(5, 5)} if case == "mask" else {}
    causal = case in ("causal", "gqa", "bf16", "f16")
    fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
    table = decompositions.table()
    out, lse = fwd(q, k, v, 0.0, causal, **kw)
    d_out, d_lse = table[fwd](q, k, v, 0.0, causal, **kw)
    assert_close_torch(d_out, out)
    torch.testing.assert_close(d_lse, lse, rtol=1e-4, atol=1e-5)
    assert d_lse.shape == lse.shape == (2, heads[0], 5) and d_lse.stride() == lse.stride()
    assert d_out.dtype == dt and d_lse.dtype == lse.dtype == torch.float32
    grad = torch.randn_like(out)
    want = bwd(grad, q, k, v, out, lse, 0.0, causal, **kw)
    got = table[bwd](grad, q, k, v, out, lse, 0.0, causal, **kw)
    for w, g in zip(want, got):
        assert_close_torch(g, w)
        assert g.stride() == w.stride() and g.dtype == w.dtype


def test_outputs_keep_declared_views_and_aliases() -> None:
    """Outputs that are inputs, views of inputs, views of computed values (non-contiguous, one
    aliasing another) come back with torch's shapes, strides, offsets and aliasing."""

    def f(x: torch.Tensor, w: torch.Tensor):
        y = torch.relu(x @ w)
        return y, y.t(), y[1:, ::2], x.t(), w, (y * 2).transpose(0, 1).contiguous().transpose(0, 1)

    torch.manual_seed(0)
    x, w = torch.randn(6, 4), torch.randn(4, 6)
    want = f(x, w)
    with torch.no_grad():
        got = torch.compile(f, backend="ember")(x, w)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
        assert a.stride() == b.stride() and a.storage_offset() == b.storage_offset()
    assert got[1].untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()
    assert got[2].untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()


class _TanhLayer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


def test_check_mode_names_a_wrong_output(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model, x = _TanhLayer(), torch.randn(4, 8)
    torch.compile(model, backend="ember", options={"check": True})(x).sum().backward()  # right results pass
    torch._dynamo.reset()
    real = backend._Compiled.run_core

    def wrong(self, args):
        outs = real(self, args)
        outs[0] = outs[0] + 0.5  # an injected kernel error
        return outs

    monkeypatch.setattr(backend._Compiled, "run_core", wrong)
    with pytest.raises(backend.CheckError, match=r"output 0 of a forward graph, node `tanh` \(.*test_training\.py:\d+\), differs from torch eager"):
        torch.compile(model, backend="ember", options={"check": True})(x)


def test_unknown_options_and_targets_are_errors() -> None:
    m = torch.nn.Linear(2, 2)
    with pytest.raises(Exception, match="unknown option 'chek'"):
        torch.compile(m, backend="ember", options={"chek": True})(torch.randn(1, 2))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown target 'nonsense'"):
        torch.compile(m, backend="ember", options={"target": "nonsense"})(torch.randn(1, 2))


def test_philox_known_answer() -> None:
    """Philox4x32-10 at counter 0, key 0 (Random123's known-answer vector)."""
    words = [int(w) for w in rng.philox(torch.tensor(0), 0, 1)]
    assert words == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


class _Noise(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        u = torch.rand_like(x)
        return u, torch.randn(x.shape), torch.bernoulli(torch.full_like(x, 0.25)), torch.randint(3, 10, x.shape), F.dropout(x, 0.4)


def test_random_ops_compile_with_the_right_statistics() -> None:
    before = dict(backend.stats)
    x = torch.ones(256, 1024)
    compiled = torch.compile(_Noise(), backend="ember", options={"check": True})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.manual_seed(0)
        first = compiled(x)
        torch.manual_seed(0)
        again = compiled(x)
        later = compiled(x)
    assert not [str(w.message) for w in caught if "ember" in str(w.message)]
    assert backend.stats["fallbacks"] == before["fallbacks"] and backend.stats["compiled"] > before["compiled"]
    assert all(torch.equal(a, b) for a, b in zip(first, again)), "a fixed seed gives the same numbers"
    assert not torch.equal(first[0], later[0]), "consecutive calls draw new numbers"
    u, z, b, i, d = first
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0
    assert abs(float(u.mean()) - 0.5) < 5e-3 and abs(float(u.var()) - 1 / 12) < 2e-3
    assert abs(float(z.mean())) < 1e-2 and abs(float(z.var()) - 1.0) < 2e-2
    assert abs(float(b.mean()) - 0.25) < 5e-3 and set(b.unique().tolist()) == {0.0, 1.0}
    assert i.dtype == torch.int64 and set(i.unique().tolist()) == set(range(3, 10))
    kept = d != 0
    assert abs(float(kept.float().mean()) - 0.6) < 5e-3
    torch.testing.assert_close(d[kept], torch.full_like(d[kept], 1 / 0.6))
    # Streams of different ops are independent.
    assert abs(float(torch.corrcoef(torch.stack([u.flatten(), z.flatten()]))[0, 1])) < 1e-2


def test_dropout_training_compiles_and_its_gradients_use_the_mask() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.Dropout(0.5))
    x = torch.randn(64, 32)
    before = dict(backend.stats)
    out = torch.compile(model, backend="ember", options={"check": True})(x)
    out.sum().backward()
    assert backend.stats["backward"] > before["backward"] and backend.stats["fallbacks"] == before["fallbacks"]
    scale = (out != 0).float() / 0.5  # the mask the forward drew (a linear layer's outputs are nonzero)
    assert abs(float((out != 0).float().mean()) - 0.5) < 0.02
    torch.testing.assert_close(model[0].weight.grad, scale.t() @ x, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(model[0].bias.grad, scale.sum(0))


@pytest.mark.parametrize("name", ["sgd_momentum", "adam", "adamw", "adam_cpu_default", "adamw_cpu_default", "adamw_dynamic",
                                  "sgd_nesterov", "rmsprop", "adagrad", "nadam", "radam"])
def test_compiled_optimizer_steps_match_eager(name: str) -> None:
    """`torch.compile(opt.step)`, with foreach and in the per-tensor form torch picks by default
    for CPU tensors (where Dynamo writes `addcmul_(value=...)` as `prims.fma`), and with dynamic
    shapes (a step compiled again for other shapes: its learning rate arrives as a float64 tensor
    that AOT converts with `prims.convert_element_type`): the step compiles (no fallback) and
    three steps give eager's parameters."""
    make = {
        "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
        "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
        "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, foreach=True),
        "adam_cpu_default": lambda p: torch.optim.Adam(p, lr=1e-2),
        "adamw_cpu_default": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05),
        "adamw_dynamic": lambda p: torch.optim.AdamW(p, lr=1e-2),
        "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
        "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, momentum=0.9),
        "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2),
        "nadam": lambda p: torch.optim.NAdam(p, lr=1e-2),
        "radam": lambda p: torch.optim.RAdam(p, lr=1e-2),
    }[name]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    want_model = copy.deepcopy(model)
    opt, want_opt = make(model.parameters()), make(want_model.parameters())
    step = torch.compile(opt.step, backend="ember", dynamic=name.endswith("_dynamic"))
    before = dict(backend.stats)
    for i in range(3):
        x = torch.randn(8, 16)
        for m, o, s in ((model, opt, step), (want_model, want_opt, want_opt.step)):
            o.zero_grad()
            F.mse_loss(m(x), torch.zeros(8, 4)).backward()
            s()
    assert backend.stats["fallbacks"] == before["fallbacks"]
    assert backend.stats["compiled"] + backend.stats["cache_hits"] > before["compiled"] + before["cache_hits"]
    for (n, p), q in zip(model.named_parameters(), want_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=lambda m: f"{n}: {m}")
        for k, v in opt.state[p].items():
            # Relative to the state's norm: RMSprop's momentum divides by square roots of tiny
            # averages, where float32 rounding alone differs by 7e-5 of an element.
            w = want_opt.state[q][k].to(v.dtype)
            assert float((v - w).norm()) <= 1e-5 * float(w.norm()) + 1e-6, f"{n} {k}: {float((v - w).norm())} of {float(w.norm())}"


def test_input_updates_are_computed_in_place_where_no_old_value_is_read_after() -> None:
    """An inference graph that updates its inputs (an optimizer step's form) computes an update in
    its input's memory, without AOT's copy back, where nothing reads the input's old value after
    it (`stats["in_place"]`); an update that reads other elements of its input (a transpose) or
    whose old value is read with the new one gets memory of its own. Values as eager's."""

    def step(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        a.mul_(0.5).add_(b)
        c.copy_(c.t() + b)
        old = d * 3
        d.add_(b)
        return old + d

    torch.manual_seed(0)
    args = [torch.randn(256, 256) for _ in range(4)]
    want = [x.clone() for x in args]
    addresses = [x.data_ptr() for x in args]
    before = dict(backend.stats)
    compiled = torch.compile(step, backend="ember")
    for _ in range(2):
        out, out_want = compiled(*args), step(*want)
        torch.testing.assert_close(out, out_want)
        for x, w in zip(args, want):
            torch.testing.assert_close(x, w)
    assert backend.stats["fallbacks"] == before["fallbacks"]
    assert backend.stats["in_place"] - before["in_place"] == 1, "a only"
    assert [x.data_ptr() for x in args] == addresses


class _Mutating(torch.nn.Module):
    """A training forward that mutates a buffer and a user input, and returns aliasing views."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 6)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor, scratch: torch.Tensor):
        self.calls.add_(1)
        scratch.mul_(2)
        y = torch.tanh(self.lin(x * scratch))
        return y, y.t(), y[:, 1:3], y.detach()


def test_training_graph_with_input_mutations_and_aliased_outputs() -> None:
    torch.manual_seed(0)
    model, x = _Mutating(), torch.randn(4, 8)
    want_model, scratch, want_scratch = copy.deepcopy(model), torch.ones(4, 8), torch.ones(4, 8)
    before = dict(backend.stats)
    got = torch.compile(model, backend="ember")(x, scratch)
    want = want_model(x, want_scratch)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()
    assert got[1].untyped_storage().data_ptr() == got[0].untyped_storage().data_ptr()
    (got[0].sum() + got[1].pow(2).sum() + got[2].sum()).backward()
    (want[0].sum() + want[1].pow(2).sum() + want[2].sum()).backward()
    torch.testing.assert_close(scratch, want_scratch)
    assert float(model.calls) == 1.0
    torch.testing.assert_close(model.lin.weight.grad, want_model.lin.weight.grad)
    torch.testing.assert_close(model.lin.bias.grad, want_model.lin.bias.grad)
    assert backend.stats["backward"] > before["backward"] and backend.stats["fallbacks"] == before["fallbacks"]


def test_compiled_train_step_function() -> None:
    """A compiled function doing forward, backward and the AdamW step: every graph Dynamo makes
    of it (forward, backward, the optimizer's) runs on Ember and the parameters follow eager's."""

    def train_step(model, opt, x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    want_model = copy.deepcopy(model)
    opt, want_opt = (torch.optim.AdamW(m.parameters(), lr=1e-2, foreach=True) for m in (model, want_model))
    step = torch.compile(train_step, backend="ember")
    before = dict(backend.stats)
    for _ in range(3):
        x, y = torch.randn(8, 16), torch.randn(8, 4)
        assert float(step(model, opt, x, y)) == pytest.approx(float(train_step(want_model, want_opt, x, y)), rel=1e-5)
    assert backend.stats["fallbacks"] == before["fallbacks"] and backend.stats["backward"] > before["backward"]
    assert backend.stats["compiled"] - before["compiled"] >= 3
    for p, q in zip(model.parameters(), want_model.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_training_on_the_xla_targets(target: str) -> None:
    """`options={"target": ...}`: both graphs compiled for the accelerator target and run by PJRT
    (jax's CPU client here; the TPU client on a TPU host is untested), gradients and losses
    against torch eager: an MLP with AdamW and a transformers GPT-2 LM."""
    pytest.importorskip("jax")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.LayerNorm(64), torch.nn.Linear(64, 8))
    batches = [(torch.randn(16, 32), torch.randn(16, 8)) for _ in range(3)]
    _check_training(mlp, lambda p: torch.optim.AdamW(p, lr=1e-2), lambda m, b: F.mse_loss(m(b[0]), b[1]), batches, target)
    torch._dynamo.reset()
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    gpt2 = transformers.GPT2LMHeadModel(cfg)
    ids = [torch.randint(0, 300, (2, 16)) for _ in range(3)]
    _check_training(gpt2, lambda p: torch.optim.SGD(p, lr=0.1), lambda m, i: m(input_ids=i, labels=i).loss, ids, target)


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_xla_targets_keep_unchanged_inputs_on_the_device(target: str) -> None:
    """Weights cross to the device once: a later call uploads only inputs that are new or were
    written in place since (torch's version counter), and an in-place update is seen."""
    pytest.importorskip("jax")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 8)).eval()
    f = torch.compile(m, backend="ember", options={"target": target})
    x = torch.randn(4, 64)

    def call(inp: torch.Tensor) -> int:
        before = backend.stats["to_device_bytes"]
        with torch.no_grad():
            torch.testing.assert_close(f(inp), m(inp), rtol=1e-5, atol=1e-5)
        return backend.stats["to_device_bytes"] - before

    weights = sum(p.numel() * 4 for p in m.parameters())
    assert call(x) >= weights + x.numel() * 4
    assert call(x) == 0
    with torch.no_grad():
        m[0].weight.mul_(0.5)
    assert call(x) == m[0].weight.numel() * 4
    assert call(torch.randn(4, 64)) == x.numel() * 4


def _spmd_result(tmp_path: Path, launcher: list[str]) -> dict:
    import subprocess
    import sys

    import socket

    with socket.socket() as s:  # a free port for jax's coordinator (not torchrun's port + 1)
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"), JAX_COORDINATOR_ADDRESS=f"localhost:{port}")
    env.pop("XLA_FLAGS", None)
    out = tmp_path / "result.pt"
    script = Path(__file__).with_name("spmd_train.py")
    r = subprocess.run([*launcher, str(script), str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-6000:]
    return torch.load(out)


def _check_spmd(result: dict) -> None:
    assert not result["warnings"], result["warnings"]
    assert result["stats"]["fallbacks"] == 0 and result["stats"]["backward"] >= 1
    # Megatron's row-parallel sums and FSDP's gathers, inside the compiled modules.
    assert {"all-reduce", "all-gather"} <= set(result["collectives"]), result["collectives"]
    for name in ("sharded", "device", "flat"):
        losses, grads = result[name]
        _assert_grads_match(result["eager"][1], grads)
        assert losses == pytest.approx(result["eager"][0], rel=1e-5), (name, losses, result["eager"][0])
    assert result["sharded"][0] == pytest.approx(result["flat"][0], rel=1e-5)


def test_sharded_training_on_8_devices(tmp_path: Path) -> None:
    """`options={"target": "tpu", "mesh": {"dp": 2, "tp": 4}, "shard": "dp,tp,fsdp"}`: a GPT-2 LM
    trains SPMD on 8 virtual devices (one module per graph, its collectives inside), with the
    losses and gradients of the unsharded run and of torch eager."""
    pytest.importorskip("jax")
    pytest.importorskip("transformers")
    result = _spmd_result(tmp_path, [sys.executable])
    assert result["processes"] == 1
    _check_spmd(result)


def test_sharded_training_on_2_processes(tmp_path: Path) -> None:
    """The same program under `torchrun --nproc-per-node 2`: one mesh over both processes' 4
    devices each (jax's distributed client on localhost, collectives over gloo), the results of
    one process."""
    pytest.importorskip("jax")
    pytest.importorskip("transformers")
    result = _spmd_result(tmp_path, [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"])
    assert result["processes"] == 2
    _check_spmd(result)


def test_unusable_mesh_options_are_errors() -> None:
    """Mesh options are checked before any graph compiles (a failed compile would fall back to
    eager and hide them)."""
    pytest.importorskip("jax")
    m = torch.nn.Linear(4, 4)
    for options, message in [
        ({"target": "cpu", "mesh": {"x": 2}}, "option 'mesh' is a tpu option"),
        ({"target": "tpu", "shard": "tp"}, "option 'shard' needs option 'mesh'"),
        ({"target": "tpu", "mesh": "x=2", "shard": "pp"}, "unknown strategy `pp`"),
        ({"target": "tpu", "mesh": "x=two"}, "axis `x` has size `two`"),
        ({"target": "tpu", "mesh": 8}, "option 'mesh' must be a string or a dict"),
    ]:
        torch._dynamo.reset()
        with pytest.raises(Exception, match=re.escape(message)):
            torch.compile(m, backend="ember", options=options)(torch.randn(2, 4))


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_dynamic_batch_on_the_xla_targets(target: str) -> None:
    """Seven batch sizes, a mean over the batch in the loss: once Dynamo marks the batch dynamic,
    each graph compiles once per padded bucket (sizes (P/2, P] run padded to P), saying so for
    every bucket after the first, never falling back; gradients are eager's at every size."""
    pytest.importorskip("jax")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    compiled = torch.compile(model, backend="ember", options={"target": target})
    before = dict(backend.stats, targets=dict(backend.stats["targets"]))

    def loss(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # a mean over the batch, and one over batch × features (a dim of size 4*s0)
        return F.mse_loss(out, y) + out.mean(0).pow(2).sum() + out.reshape(-1).mean()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for b in [3, 5, 6, 7, 9, 12, 4]:
            x, y = torch.randn(b, 16), torch.randn(b, 4)
            got_loss = loss(compiled(x), y)
            got_loss.backward()
            got = {n: p.grad.clone() for n, p in model.named_parameters()}
            model.zero_grad()
            want_loss = loss(model(x), y)
            want_loss.backward()
            want = {n: p.grad.clone() for n, p in model.named_parameters()}
            model.zero_grad()
            assert float(got_loss) == pytest.approx(float(want_loss), rel=1e-5), b
            _assert_grads_match(want, got)
    messages = [str(w.message) for w in caught if "ember" in str(w.message)]
    assert backend.stats["fallbacks"] == before["fallbacks"], messages
    # 3: static graphs; 5: the dynamic graphs' first bucket (4, 8]; 9: (8, 16]; 4: (2, 4].
    buckets = sorted(re.search(r"padded to (\d+)", m).group(1) for m in messages)
    assert buckets == ["16", "16", "4", "4"], messages
    assert backend.stats["targets"][target] - before["targets"].get(target, 0) == 2 + 2 + 2 + 2


@pytest.mark.parametrize(("target", "dim"), [("cpu", "batch"), ("cpu", "seq"), ("tpu", "batch"), ("trainium", "batch")])
def test_gpt2_lm_with_a_dynamic_size_compiles_whole(target: str, dim: str) -> None:
    """A transformers GPT-2 LM trained on four batch sizes (or sequence lengths): once the size is
    dynamic, every graph compiles (sizes saved for the backward, SymInt inputs rebuilt from
    input dims or passed as [s, 0] tensors; the loss's gather, the full-slice scatter and the
    position embedding's gradient lowered with a symbolic batch; on tpu/trainium, padded
    buckets masked exactly), nothing falls back, and the gradients are eager's at every size.
    (tpu/trainium with a dynamic sequence still refuse the attention mask's reshape.)"""
    transformers = pytest.importorskip("transformers")
    if target != "cpu":
        pytest.importorskip("jax")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=1, n_head=4, n_embd=64, vocab_size=256, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    _train_at_sizes(model, [torch.randint(0, 256, (n, 16) if dim == "batch" else (2, n)) for n in [3, 5, 6, 9]], target)


def _train_at_sizes(model: torch.nn.Module, batches: list[torch.Tensor], target: str = "cpu") -> None:
    """A language model's first-step gradients at each batch, compiled against eager; nothing
    falls back and Ember warns only of new padded buckets."""
    compiled = torch.compile(model, backend="ember", options={"target": target})
    before = backend.stats["fallbacks"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for ids in batches:
            compiled(input_ids=ids, labels=ids).loss.backward()
            got = {k: p.grad.clone() for k, p in model.named_parameters()}
            model.zero_grad()
            model(input_ids=ids, labels=ids).loss.backward()
            _assert_grads_match({k: p.grad.clone() for k, p in model.named_parameters()}, got)
            model.zero_grad()
    messages = [str(w.message) for w in caught if "ember" in str(w.message) and "new padded bucket" not in str(w.message)]
    assert not messages, messages
    assert backend.stats["fallbacks"] == before


def test_t5_with_a_dynamic_sequence_compiles_whole() -> None:
    """T5's shift right (`y[..., 1:] = x[..., :-1]`) is a slice_scatter along the dynamic
    sequence dim: lowered as a pad and a select, so nothing falls back."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.T5Config(d_model=64, d_ff=128, num_layers=1, num_heads=4, vocab_size=256, d_kv=16, dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    model = transformers.T5ForConditionalGeneration(cfg)
    _train_at_sizes(model, [torch.randint(0, 256, (2, n)) for n in [3, 5, 6, 9]])


def test_batchnorm_convnet_trains_on_tpu() -> None:
    pytest.importorskip("jax")
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10),
    )  # fmt: skip
    batches = [(torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))) for _ in range(3)]
    _check_training(model, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), lambda m, b: F.cross_entropy(m(b[0]), b[1]), batches, "tpu")


@pytest.mark.parametrize("target", ["cpu", "tpu"])
def test_bf16_autocast_training_step(target: str) -> None:
    """`torch.autocast("cpu", bfloat16)` inside a compiled training step (bf16 matmuls, f32
    master weights, norms and loss): both graphs compiled, and the first-step gradients as
    accurate as eager autocast's, per tensor against an f64 step (within twice eager's error,
    floored at 1e-3 of the largest gradient's norm), the loss within bf16's rounding of eager's."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.LayerNorm(128), torch.nn.GELU(), torch.nn.Linear(128, 10))
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))

    def step(m: torch.nn.Module, x: torch.Tensor, autocast: bool = True) -> torch.Tensor:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss = F.cross_entropy(m(x), y)
        loss.backward()
        return loss

    compiled, eager, exact = copy.deepcopy(model), copy.deepcopy(model), copy.deepcopy(model).double()
    before = dict(backend.stats, targets=dict(backend.stats["targets"]))
    got = step(torch.compile(compiled, backend="ember", options={"target": target}), x)
    assert backend.stats["fallbacks"] == before["fallbacks"] and backend.stats["backward"] > before["backward"]
    assert backend.stats["targets"].get(target, 0) > before["targets"].get(target, 0)
    want = step(eager, x)
    step(exact, x.double(), autocast=False)
    assert float(got) == pytest.approx(float(want), rel=1e-2)
    floor = 1e-3 * max(float(p.grad.norm()) for p in exact.parameters())
    for (name, p), q, e in zip(compiled.named_parameters(), eager.parameters(), exact.parameters()):
        assert p.grad is not None and p.grad.dtype == torch.float32, name
        err, own = float((p.grad.double() - e.grad).norm()), float((q.grad.double() - e.grad).norm())
        assert err <= 2 * own + floor, f"{name}: |ember - f64| {err:.3g}, eager autocast's {own:.3g}"
