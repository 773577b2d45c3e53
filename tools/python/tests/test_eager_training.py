"""``ember.eager()`` on whole training steps and inference loops, against torch eager."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import ember
from ember import deferred, models

from eager_common import ATOL, RTOL, TorchEager, mlp, train, train_steps


@pytest.mark.parametrize("opt_name", ["sgd", "adamw", "sgd_foreach", "adamw_foreach"])
def test_mlp_training_matches_eager(opt_name: str) -> None:
    # The foreach forms (torch's default on devices with multi-tensor kernels) are recorded as
    # their per-tensor ops, one dispatcher round per list.
    make_opt = {
        "sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01),
        "sgd_foreach": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=0.01, foreach=True),
        "adamw_foreach": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.01, foreach=True),
    }[opt_name]
    ref = mlp()
    ref_losses = train(ref, make_opt(ref.parameters()), 10, TorchEager)
    got = mlp()
    before = deferred.stats()
    got_losses = train(got, make_opt(got.parameters()), 10, ember.eager)
    after = deferred.stats()
    for a, b in zip(ref_losses, got_losses):
        torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
    for (name, a), b in zip(ref.named_parameters(), got.parameters()):
        assert type(b) is torch.nn.Parameter
        torch.testing.assert_close(b.detach(), a.detach(), rtol=RTOL, atol=ATOL, msg=name)
    # One region per training step (the optimizer step ends it); steps 2..10 replay one plan.
    assert after["hits"] - before["hits"] >= 8, (before, after)
    # One flush per step: no op (a foreach one included) needed a deferred value at once.
    assert after["flushes"] - before["flushes"] == 10, (before, after)


def test_gpt2_block_inference_loop() -> None:
    torch.manual_seed(0)
    block = models.GPT2Block(d_model=64, n_head=4).eval()
    x0 = torch.randn(2, 16, 64)
    with torch.no_grad():
        ref = x0
        for _ in range(6):
            ref = block(ref) * 0.5
        before = deferred.stats()
        with ember.eager():
            x = x0
            for _ in range(6):
                x = block(x) * 0.5
        after = deferred.stats()
    torch.testing.assert_close(x.cpu(), ref, rtol=RTOL, atol=ATOL)
    # The repeated-subsequence heuristic cuts at iteration boundaries: later iterations hit.
    assert after["hits"] - before["hits"] >= 3, (before, after)


def test_data_dependent_control_flow() -> None:
    torch.manual_seed(0)
    w = torch.randn(16, 16) * 0.3

    def run():
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(3))
        trace = []
        for _ in range(8):
            x = torch.tanh(x @ w) + 0.1
            if x.sum() > 0:  # a sync point: Python branches on a tensor value
                x = x * 0.5
                trace.append("a")
            else:
                x = x - 1.0
                trace.append("b")
        return x, trace

    ref, ref_trace = run()
    with ember.eager():
        got, got_trace = run()
    assert got_trace == ref_trace
    torch.testing.assert_close(got.cpu(), ref, rtol=RTOL, atol=ATOL)


def test_resnet_training_matches_eager() -> None:
    # Convolutions, BatchNorm in training mode (its running statistics are updated in place),
    # max pooling, cross entropy, SGD with momentum; backward ops without a CPU lowering run
    # with torch eager (one warning) and the rest stay deferred.
    def run(ctx):
        torch.manual_seed(0)
        m, (x,) = models.resnet()
        m.train()
        opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
        y = torch.tensor([3, 7])
        losses, _ = train_steps(ctx, opt, lambda: F.cross_entropy(m(x), y), 3)
        return losses + [p.detach().clone() for p in m.parameters()] + [b.clone() for b in m.buffers()]

    want = run(TorchEager)
    before = deferred.stats()
    got = run(ember.eager)
    # Steps after the first are one region each (BatchNorm's backward reads only the saved batch
    # statistics, not the running ones with their pending write).
    assert deferred.stats()["flushes"] - before["flushes"] <= 4, (before, deferred.stats())
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)


def test_transformer_training_matches_eager() -> None:
    # nn.TransformerEncoderLayer (attention through scaled_dot_product_attention, whose backward
    # reads the forward's log-sum-exp), Adam, gradient clipping and an LR schedule.
    def run(ctx):
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        head = torch.nn.Linear(32, 5)
        params = list(layer.parameters()) + list(head.parameters())
        opt = torch.optim.Adam(params, lr=1e-3)
        sched = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
        x, y = torch.randn(4, 7, 32), torch.tensor([0, 3, 1, 4])
        losses, caught = train_steps(
            ctx, opt, lambda: F.cross_entropy(head(layer(x).mean(1)), y), 4,
            after_backward=lambda: torch.nn.utils.clip_grad_norm_(params, 1.0), after_step=sched.step,
        )
        # Attention and its backward are recorded (Ember's decompositions), not left to torch.
        assert not [w for w in caught if "scaled_dot_product" in str(w.message)], [str(w.message) for w in caught]
        return losses

    # Adam turns rounding-level gradient differences into visible parameter differences (torch's
    # own flash and math attention kernels differ by ~1.6e-4 here), so the losses are compared.
    for g, w in zip(run(ember.eager), run(TorchEager)):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_tiny_llama_inference_records_every_op() -> None:
    # flatten, RMSNorm, rotary embeddings: all recorded (no op left to torch eager, no warning).
    m, inputs = models.tiny_llama()
    m.eval()
    with torch.no_grad():
        want = m(*inputs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with ember.eager():
                got = m(*inputs).cpu()
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


def test_manual_sgd_with_gradients_zeroed_in_place() -> None:
    # The classic loop without an optimizer: autograd accumulates into the materialized .grad
    # (a pending in-place add), the update reads it, and zero_() must land after that add.
    def run(ctx):
        torch.manual_seed(0)
        w = torch.randn(3, 3, requires_grad=True)
        x = torch.randn(8, 3)
        with ctx():
            for _ in range(4):
                (x @ w).tanh().sum().backward()
                with torch.no_grad():
                    w -= 0.1 * w.grad
                    w.grad.zero_()
        return w.detach().clone(), w.grad.clone()

    for g, want in zip(run(ember.eager), run(TorchEager)):
        torch.testing.assert_close(g, want, rtol=RTOL, atol=ATOL)


def test_hf_llama_training_matches_eager() -> None:
    # A transformers Llama (grouped KV heads, rotary embeddings, RMSNorm, attention with a mask
    # tensor): gradients through attention are checked by the losses of three AdamW steps.
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    ids = torch.tensor([[5, 17, 42, 8, 99, 3, 61, 27], [12, 0, 77, 31, 9, 54, 6, 88]])

    def run(ctx):
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)
        m = transformers.LlamaForCausalLM(cfg).train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        return torch.stack(train_steps(ctx, opt, lambda: m(ids, labels=ids).loss, 3)[0])

    torch.testing.assert_close(run(ember.eager), run(TorchEager), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_training_is_recorded(cell) -> None:
    # oneDNN is off inside ember.eager(): ATen's composite LSTM (in-place ops on the gate chunks,
    # recorded through their views) replaces the opaque mkldnn_rnn_layer; one region per step.
    def run(ctx):
        torch.manual_seed(0)
        rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(8, 16, num_layers=2, batch_first=True)
        head = torch.nn.Linear(16, 1)
        opt = torch.optim.Adam(list(rnn.parameters()) + list(head.parameters()), lr=1e-2)
        x, y = torch.randn(4, 6, 8), torch.randn(4, 1)
        losses = []
        with ctx():
            for _ in range(3):
                opt.zero_grad()
                out, _ = rnn(x)
                loss = ((head(out[:, -1]) - y) ** 2).mean()
                loss.backward()
                opt.step()
                losses.append(loss.detach())
        return [torch.stack([l.cpu() for l in losses])] + [p.detach().clone() for p in rnn.parameters()]

    want = run(TorchEager)
    before = deferred.stats()["flushes"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run(ember.eager)
    assert deferred.stats()["flushes"] - before == 3
    assert torch.backends.mkldnn.enabled
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)
