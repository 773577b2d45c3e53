"""`ember.eager(target="tpu")` (and "trainium"): regions compiled to StableHLO (trainium: its HLO)
and run on PJRT (jax's CPU client here), ember-device tensors recorded and kept on the device
between regions."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("jax")

import ember  # noqa: E402
from ember import deferred, device  # noqa: E402

from eager_common import ATOL, RTOL, TorchEager, mlp, train, train_steps  # noqa: E402


def tpu():
    return ember.eager(target="tpu")


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_gpt2_training_on_the_device_matches_eager(target: str) -> None:
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64,
                                  attn_pdrop=0.0, embd_pdrop=0.0, resid_pdrop=0.0)
    ids = torch.randint(0, 300, (2, 16), generator=torch.Generator().manual_seed(3))

    def run(on_device: bool):
        torch.manual_seed(0)
        m = transformers.GPT2LMHeadModel(cfg).train()
        x = ids
        if on_device:
            m.to("ember")
            x = ids.to("ember")
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        ctx = (lambda: ember.eager(target=target)) if on_device else TorchEager
        w = m.transformer.h[0].mlp.c_fc.weight
        after = (lambda: ptrs.append(device._state(w).array.unsafe_buffer_pointer())) if on_device else None
        losses, caught = train_steps(ctx, opt, lambda: m(x, labels=x).loss, 4, after_step=after)
        return torch.stack(losses), m, opt, caught

    ptrs: list[int] = []

    deferred.reset_stats(clear_plans=True)
    down = device.stats["from_device_bytes"]
    got, m, opt, caught = run(True)
    moved = device.stats["from_device_bytes"] - down
    s = deferred.stats()
    want, ref, _, _ = run(False)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    mine = dict(m.named_parameters())
    for name, p in ref.named_parameters():
        torch.testing.assert_close(mine[name].detach().cpu(), p.detach(), rtol=1e-4, atol=1e-4, msg=name)
    # Weights and optimizer state live on the device; only the four losses came back.
    assert all(p.device.type == "ember" for p in m.parameters())
    assert all(v.device.type == "ember" for st in opt.state.values() for k, v in st.items() if k != "step")
    assert moved == 4 * 4, moved
    # One region per step, compiled once.
    assert (s["flushes"], s["misses"], s["hits"]) == (4, 1, 3), s
    # Parameters are updated in their own device buffers (donated to the region's results).
    assert ptrs[1:] == ptrs[:-1], ptrs
    assert not [w for w in caught if "ember" in str(w.message)], [str(w.message) for w in caught]


def test_host_tensors_run_on_the_device_and_come_back() -> None:
    # A model left on the CPU: its regions still run on PJRT; results are host tensors.
    m = mlp()
    want = train(m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), 3, TorchEager)
    m = mlp()
    deferred.reset_stats()
    plans = deferred.stats()["plans"]
    got = train(m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), 3, tpu)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)
    assert all(p.device.type == "cpu" for p in m.parameters())
    assert deferred.stats()["plans"] > plans


def test_results_are_placed_as_in_torch() -> None:
    a = torch.randn(3, 4)
    w = torch.arange(16.0).reshape(4, 4).to("ember")
    want = torch.arange(16.0).reshape(4, 4)
    with tpu():
        b = a.to("ember") * 2  # placed by name: recorded, on the device
        c = (b + 1).sum(0)
        h = a * 3  # host tensors only: a host result
        w[1].add_(c)  # written through a view of a device tensor
        w.t()[2].mul_(-1)
        assert b.device.type == "ember" and c.device.type == "ember" and h.device.type == "cpu"
    want[1] += (a * 2 + 1).sum(0)
    want.t()[2] *= -1
    torch.testing.assert_close(c.cpu(), (a * 2 + 1).sum(0))
    torch.testing.assert_close(h, a * 3)
    torch.testing.assert_close(w.cpu(), want)


def test_strict_mode_on_the_device() -> None:
    x = torch.randn(5, 6)
    with ember.eager("strict", target="tpu"):
        y = F.gelu(x.to("ember")).softmax(-1)
        s = y.sum()
        assert y.device.type == "ember"
    torch.testing.assert_close(y.cpu(), F.gelu(x).softmax(-1))
    assert abs(s.item() - 5.0) < 1e-4


def test_unknown_target_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"unknown target 'gpu' \(use 'cpu', 'tpu' or 'trainium'\)"):
        ember.eager(target="gpu")


def test_log_explains_device_flushes(monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EMBER_EAGER_LOG", "1")
    deferred.reset_stats(clear_plans=True)
    x = torch.randn(8, 8).to("ember")
    with tpu():
        for i in range(3):
            y = (x * 2 + 1).relu() if i != 2 else (x * 2 + 1).sigmoid()
            y.cpu()
    lines = [l for l in capfd.readouterr().err.splitlines() if l.startswith("ember.eager: flush")]
    assert len(lines) == 3, lines
    assert f"(cpu) at {__file__}:" in lines[0] and "miss (no region cached yet)" in lines[0], lines
    assert "plan cache hit" in lines[1], lines
    assert "differs at op 2 (`aten.sigmoid.default` here, `aten.relu.default` there)" in lines[2], lines


def test_a_shared_device_array_is_not_donated() -> None:
    # `b.copy_(a)` on the device shares `a`'s array with `b` (arrays are immutable); an in-place
    # write to `a` in a region that donates `a`'s buffer must leave `b`'s value readable.
    torch.manual_seed(0)
    a = torch.randn(64).to("ember")
    want = a.cpu()
    b = torch.empty(64, device="ember")
    b.copy_(a)
    copied = deferred.stats()["donations_copied"]
    for _ in range(2):  # the second step runs the program compiled with the donation
        with tpu():
            a.mul_(2).add_(1)
        want = want * 2 + 1
    torch.testing.assert_close(a.cpu(), want)
    torch.testing.assert_close(b.cpu(), (want - 3) / 4)
    assert deferred.stats()["donations_copied"] > copied
