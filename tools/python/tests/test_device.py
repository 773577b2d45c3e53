"""The `ember` device: tensors whose values stay on the PJRT device, eager ops on them, and
training through torch.compile with weights, optimizer state, saved activations and gradients
kept there."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

pytest.importorskip("jax")

import ember  # noqa: E402,F401  (registers the device)
from ember import backend, device  # noqa: E402


def test_tensors_round_trip_and_views_write_through() -> None:
    torch.manual_seed(0)
    x = torch.randn(4, 5)
    e = x.to("ember")
    assert e.device.type == "ember"
    assert torch.equal(e.cpu(), x)
    assert torch.allclose((e * 2 + 1).sum(1).cpu(), (x * 2 + 1).sum(1))
    # A view made here (transpose, select) writes through to its root; one torch makes by
    # sharing the storage (detach) aliases it.
    e.t()[1].add_(100)
    want = x.clone()
    want.t()[1].add_(100)
    assert torch.equal(e.cpu(), want)
    e.detach().mul_(0)
    assert e.cpu().abs().sum().item() == 0
    # `out=` resizes: torch.arange on the device writes into an empty tensor.
    assert torch.equal(torch.arange(3, 9, device="ember").cpu(), torch.arange(3, 9))
    v = e.view(-1)
    e.fill_(7)
    assert torch.equal(v.cpu(), torch.full((20,), 7.0))
    # A dtype view reads (and writes) the same bytes.
    f = torch.tensor([1.0, 2.0, 3.0, 4.0])
    fe = f.to("ember")
    fe.view(torch.int32)[1:3].add_(1)
    f.view(torch.int32)[1:3].add_(1)
    assert torch.equal(fe.cpu(), f) and torch.equal(fe.view(torch.uint8).cpu(), f.view(torch.uint8))
    # 0-d stays 0-d; a reduction whose kernel resizes its `out=` buffer (mse_loss) has its shape
    s = torch.tensor(3.0).to("ember")
    assert s.shape == () and s.item() == 3.0
    y = torch.randn(4, 5)
    got = torch.nn.functional.mse_loss(y.to("ember"), x.to("ember"))
    assert got.shape == () and torch.allclose(got.cpu(), torch.nn.functional.mse_loss(y, x))


def test_tied_weights_stay_tied() -> None:
    """`model.to("ember")` cannot move a parameter's data in place (CPU and ember tensors are
    different kinds), so it swaps the objects: shared parameters stay shared."""
    emb = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = emb.weight
    model = torch.nn.ModuleDict({"emb": emb, "head": head}).to("ember")
    assert model["head"].weight is model["emb"].weight
    assert model["emb"].weight.device.type == "ember"


def test_eager_training_on_the_device_matches_the_cpu() -> None:
    """With nothing compiled every op runs on the host (downloaded, torch's kernel, uploaded):
    slow, and exactly torch's results, autograd and the optimizer included."""
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    model = copy.deepcopy(ref).to("ember")
    x = torch.randn(2, 5)
    for m, inp in ((ref, x), (model, x.to("ember"))):
        opt = torch.optim.AdamW(m.parameters(), lr=0.1)
        m(inp).pow(2).sum().backward()
        opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.allclose(p.cpu(), q, atol=1e-6)


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_gpt2_trains_with_its_state_on_the_device(target: str) -> None:
    """A transformers GPT-2 LM on the ember device, the model and the AdamW step compiled for
    `target`: losses and first-step gradients are eager's, nothing falls back, and after the
    first step only the loss crosses to the host (plus AdamW's step counters, host scalars)."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=300, n_positions=64,
                                  attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, use_cache=False)
    ref = transformers.GPT2LMHeadModel(cfg)
    model = copy.deepcopy(ref).to("ember")
    assert model.lm_head.weight is model.transformer.wte.weight
    ids = torch.randint(0, 300, (2, 16))
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-3)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    run = torch.compile(model, backend="ember", options={"target": target})

    @torch.compile(backend="ember", options={"target": target})
    def step() -> None:
        opt.step()

    before = backend.stats["fallbacks"]
    targets = dict(backend.stats["targets"])
    moved = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            d0 = dict(device.stats)
            x = ids.to("ember")
            loss = run(input_ids=x, labels=x).loss
            loss.backward()
            want = ref(input_ids=ids, labels=ids).loss
            want.backward()
            if i == 0:
                for (name, p), q in zip(model.named_parameters(), ref.parameters()):
                    err = (p.grad.cpu() - q.grad).norm() / q.grad.norm()
                    assert err < 1e-4, (name, float(err))
            step()
            opt.zero_grad()
            opt_ref.step()
            opt_ref.zero_grad()
            assert loss.item() == pytest.approx(want.item(), rel=1e-5)
            moved.append({k: device.stats[k] - d0[k] for k in d0})
    assert backend.stats["fallbacks"] == before, [str(w.message) for w in caught if "ember" in str(w.message)]
    # forward, backward and the optimizer step, all for `target`
    assert backend.stats["targets"].get(target, 0) - targets.get(target, 0) >= 3
    for m in moved[1:]:
        # the batch up (2×16 int64), the loss down; `.item()` is the one eager op
        assert m == {"eager_ops": 1, "to_device_bytes": 256, "from_device_bytes": 4}, moved
    # AdamW's steps are lr-sized whatever the gradient's size: a float's worth of difference in
    # a tiny gradient moves a weight by up to a step.
    worst = max(float((p.cpu() - q).abs().max()) for p, q in zip(model.parameters(), ref.parameters()))
    assert worst < 5e-5, worst


def test_the_cpu_target_refuses_device_tensors() -> None:
    m = torch.nn.Linear(4, 4).to("ember")
    run = torch.compile(m, backend="ember", options={"target": "cpu"})
    with pytest.raises(Exception, match="ember-device tensors, which the cpu target does not take"):
        run(torch.randn(2, 4).to("ember"))


def test_device_tensors_pick_the_tpu_target() -> None:
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(3, 4)
    want = m(x)
    tpu = backend.stats["targets"].get("tpu", 0)
    out = torch.compile(copy.deepcopy(m).to("ember"), backend="ember")(x.to("ember"))
    assert out.device.type == "ember"
    assert torch.allclose(out.cpu(), want, atol=1e-5)
    assert backend.stats["targets"].get("tpu", 0) > tpu


@pytest.mark.parametrize("target", ["tpu", "trainium"])
def test_batchnorm_convnet_trains_on_the_device(target: str) -> None:
    """BatchNorm's running statistics (buffers the forward writes) and SGD's momentum stay on the
    device too; weights and statistics after three steps are eager's."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    ref = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(8 * 8 * 8, 10),
    )  # fmt: skip
    model = copy.deepcopy(ref).to("ember")
    opt, opt_ref = (torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in (model, ref))
    run = torch.compile(lambda m, x, y: F.cross_entropy(m(x), y), backend="ember", options={"target": target})
    step = torch.compile(opt.step, backend="ember", options={"target": target})
    before = backend.stats["fallbacks"]
    for i in range(3):
        x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
        d0 = dict(device.stats)
        loss = run(model, x.to("ember"), y.to("ember"))
        loss.backward()
        step()
        opt.zero_grad()
        want = F.cross_entropy(ref(x), y)
        want.backward()
        opt_ref.step()
        opt_ref.zero_grad()
        assert loss.item() == pytest.approx(want.item(), rel=1e-5)
        if i == 0:
            continue  # the first step also creates the momentum buffers
        # the batch up, the loss down
        assert device.stats["to_device_bytes"] - d0["to_device_bytes"] == x.nbytes + y.nbytes
        assert device.stats["from_device_bytes"] - d0["from_device_bytes"] == 4
    assert backend.stats["fallbacks"] == before
    for p, q in zip(list(model.parameters()) + list(model.buffers()), list(ref.parameters()) + list(ref.buffers())):
        assert torch.allclose(p.cpu().float(), q.float(), atol=1e-5), (p.shape, float((p.cpu().float() - q.float()).abs().max()))


def test_a_written_input_aliasing_another_is_refused() -> None:
    """Views made on the device have storages of their own, so what torch.compile knows of
    aliasing between inputs comes from `_base` alone: a function writing one input while reading
    another view of the same memory is refused, never compiled as if they were apart."""

    @torch.compile(backend="ember")
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a.add_(1)
        return b * 2

    x = torch.zeros(4, device="ember")
    with pytest.raises(RuntimeError, match="reads the same ember-device memory"):
        f(x, x.view(2, 2))


def test_checkpoints_save_and_load(tmp_path) -> None:
    """torch.save writes an ember tensor as its host value (its storage holds no bytes), and it
    loads back onto the device; a CPU checkpoint loads into an ember model."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    want = {k: v.clone() for k, v in model.state_dict().items()}
    model.to("ember")
    torch.save(model.state_dict(), tmp_path / "m.pt")
    got = torch.load(tmp_path / "m.pt", weights_only=True)
    assert all(v.device.type == "ember" and torch.equal(v.cpu(), want[k]) for k, v in got.items())
    fresh = torch.nn.Linear(3, 2).to("ember")
    fresh.load_state_dict(torch.load(tmp_path / "m.pt", map_location="cpu", weights_only=True))
    assert torch.equal(fresh.weight.cpu(), want["weight"])
    twin = copy.deepcopy(model)
    twin.weight.data.zero_()
    assert torch.equal(model.weight.cpu(), want["weight"])


def test_dynamic_batches_run_padded_on_the_device() -> None:
    """Once the batch is dynamic, each graph runs in power-of-two buckets: ember inputs are
    padded and outputs sliced on the device, with eager's gradients at every size."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    model = copy.deepcopy(ref).to("ember")
    run = torch.compile(model, backend="ember", options={"target": "tpu"})
    before = backend.stats["fallbacks"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the new-bucket notices
        for b in [3, 5, 9, 4]:
            x, y = torch.randn(b, 16), torch.randn(b, 4)
            got = F.mse_loss(run(x.to("ember")), y.to("ember")) + run(x.to("ember")).mean(0).pow(2).sum()
            got.backward()
            want = F.mse_loss(ref(x), y) + ref(x).mean(0).pow(2).sum()
            want.backward()
            assert got.item() == pytest.approx(want.item(), rel=1e-5)
            for p, q in zip(model.parameters(), ref.parameters()):
                assert torch.allclose(p.grad.cpu(), q.grad, atol=1e-5)
            model.zero_grad()
            ref.zero_grad()
    assert backend.stats["fallbacks"] == before
