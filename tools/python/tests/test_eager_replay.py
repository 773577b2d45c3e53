"""``ember.eager()``'s plan cache, replay of the last region and flush policy."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.nn.functional as F

import ember
from ember import deferred
from ember.deferred import flush as deferred_flush

from eager_common import ATOL, RTOL, mlp, python_recorder  # noqa: F401 (a fixture)


@pytest.mark.usefixtures("python_recorder")
def test_replay_falls_back_on_any_difference() -> None:
    """Each iteration is one region; the replay fast path matches it against the last one, and
    whatever differs (an argument, a shape, a Python number's type, the op sequence) is recorded
    afresh, with results equal to torch eager."""
    torch.manual_seed(0)
    w, w2 = torch.randn(16, 16), torch.randn(16, 12)
    xs = [torch.randn(8, 16) for _ in range(3)] + [torch.randn(4, 16)] + [torch.randn(8, 16) for _ in range(4)]

    def step(i, x):
        h = torch.relu(x @ (w2 if i == 5 else w)) * (2 if i == 6 else 0.5)
        h = h.sum(dim=1 if i == 2 else 0)
        return h + 1.0 if i != 7 else h - 1.0

    ref = [step(i, x) for i, x in enumerate(xs)]
    before = deferred.stats()
    with ember.eager():
        got = [step(i, x).cpu() for i, x in enumerate(xs)]
    after = deferred.stats()
    for a, b in zip(ref, got):
        torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
    replayed = after["ops_replayed"] - before["ops_replayed"]
    # Iteration 1 replays 0 whole, 2..7 each differ from the one before at some op.
    assert 0 < replayed < after["ops_recorded"] - before["ops_recorded"], (before, after)


@pytest.mark.usefixtures("python_recorder")
def test_transposed_real_inputs_are_transposed_in_the_region() -> None:
    """`weight.t()` of a real weight is read as the weight plus a recorded transpose (no dense
    copy); replays match it, and writes to the weight between reads are seen."""
    torch.manual_seed(0)
    w, x = torch.randn(6, 8), torch.randn(4, 8)

    def run():
        outs = []
        for i in range(5):
            outs.append((x @ w.t() + F.linear(x, w) * 0.5).cpu())
            if i == 2:
                w.add_(1.0)  # real in place between regions: later reads see it
        return outs

    w0 = w.clone()
    ref = run()
    w.copy_(w0)
    before = deferred.stats()
    with ember.eager():
        got = run()
    after = deferred.stats()
    for a, b in zip(ref, got):
        torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
    assert after["ops_replayed"] - before["ops_replayed"] > 0, (before, after)
    assert after["regions_replayed"] - before["regions_replayed"] >= 2, (before, after)


def test_replays_of_a_cached_plan_are_bit_identical() -> None:
    torch.manual_seed(0)
    x, w = torch.randn(32, 48), torch.randn(48, 48)
    outs = []
    before = deferred.stats()
    for _ in range(3):
        with ember.eager():
            y = torch.softmax(torch.relu(x @ w) * 0.25 - 1.0, dim=-1)
        outs.append(y.cpu())
    after = deferred.stats()
    assert after["hits"] - before["hits"] >= 2
    assert all(torch.equal(outs[0], o) for o in outs[1:])
    torch.testing.assert_close(outs[0], torch.softmax(torch.relu(x @ w) * 0.25 - 1.0, dim=-1), rtol=RTOL, atol=ATOL)


def test_changing_python_scalars_do_not_recompile() -> None:
    torch.manual_seed(0)
    x = torch.randn(64, 64)
    before = deferred.stats()
    got = []
    with ember.eager():
        for step in range(1, 6):
            lr = 0.1 / step
            y = (x * lr + step).exp()
            got.append(y.cpu())
    after = deferred.stats()
    for step, y in enumerate(got, 1):
        torch.testing.assert_close(y, (x * (0.1 / step) + step).exp(), rtol=RTOL, atol=ATOL)
    assert after["misses"] - before["misses"] <= 1, (before, after)


def test_results_nobody_holds_are_not_materialized() -> None:
    x = torch.randn(32, 32)
    before = deferred.stats()
    with ember.eager():
        a = x * 2.0
        b = torch.exp(a) + 1.0
        unused = torch.tanh(b)  # dropped below: neither written nor computed
        c = torch.relu(b - 3.0)
        del a, b, unused
    after = deferred.stats()
    torch.testing.assert_close(c.cpu(), torch.relu(torch.exp(x * 2.0) + 1.0 - 3.0), rtol=RTOL, atol=ATOL)
    assert after["values_written"] - before["values_written"] == 1


@pytest.mark.usefixtures("python_recorder")
def test_replayed_ops_on_slow_paths() -> None:
    """Replayed ops carry only their input ids and the Python numbers they read; the paths that
    need their full arguments (a region whose live results changed, so its plan is not rerun; a
    queue cut in the middle, whose tail reads numbers of the cut part) re-derive them exactly."""
    torch.manual_seed(0)
    x = torch.randn(32, 32)

    def step(i, x):
        a = (x * (0.5 + i) + 0.25 * i).exp()
        b = a * (1.0 / (i + 1)) - i
        return a, b.sum(dim=0)

    ref = [step(i, x) for i in range(8)]
    before = deferred.stats()
    got = []
    with ember.eager():
        for i in range(8):
            a, b = step(i, x)
            # Iterations 4 and 5 keep the intermediate `a` alive: other region outputs.
            got.append((a.cpu() if i in (4, 5) else None, b.cpu()))
    after = deferred.stats()
    for i, ((ra, rb), (ga, gb)) in enumerate(zip(ref, got)):
        torch.testing.assert_close(gb, rb, rtol=RTOL, atol=ATOL)
        if ga is not None:
            torch.testing.assert_close(ga, ra, rtol=RTOL, atol=ATOL)
    assert after["ops_replayed"] > before["ops_replayed"], (before, after)

    # A loop-carried chain with no sync point: cut into iterations by the repeat heuristic,
    # so some flushes leave a tail queued whose ops read numbers recorded before the cut.
    torch.manual_seed(0)
    h0 = torch.randn(16, 16)

    def body(h, i):
        for k in range(5):
            h = torch.tanh(h * (0.9 + 0.01 * k) + 0.1 * i)
        return h

    h = h0
    for i in range(12):
        h = body(h, i)
    with ember.eager():
        g = h0
        for i in range(12):
            g = body(g, i)
        g = g.cpu()
    torch.testing.assert_close(g, h, rtol=RTOL, atol=ATOL)


@pytest.mark.usefixtures("python_recorder")
def test_a_new_block_replays_the_last_blocks_region() -> None:
    """A loop that opens an `ember.eager()` block per epoch: a new block's first step is matched
    against the last block's region and reruns its plan; results equal torch eager's."""
    torch.manual_seed(1)
    data = [(torch.randn(16, 32), torch.randn(16, 8)) for _ in range(3)]
    model_e, model_r = mlp(), mlp()
    opt_e = torch.optim.AdamW(model_e.parameters(), lr=1e-2)
    opt_r = torch.optim.AdamW(model_r.parameters(), lr=1e-2)

    def step(model, opt, x, y):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()

    for epoch in range(3):
        for x, y in data:
            step(model_r, opt_r, x, y)
        with ember.eager():
            for i, (x, y) in enumerate(data):
                before = deferred.stats()
                step(model_e, opt_e, x, y)
                after = deferred.stats()
                if epoch > 0 and i == 0:
                    assert after["regions_replayed"] - before["regions_replayed"] == 1, (before, after)
                    assert after["misses"] == before["misses"], (before, after)
    for p_e, p_r in zip(model_e.parameters(), model_r.parameters()):
        torch.testing.assert_close(p_e, p_r, rtol=RTOL, atol=ATOL)


def test_replay_tells_signed_zeros_apart() -> None:
    # A non-tensor float argument is compiled into the region: -0.0 and 0.0 give different
    # results (the sign of leaky_relu's zero on negative inputs), so replay must not match them.
    x = -torch.rand(8) - 0.5
    slopes = (0.0, -0.0, 0.0, -0.0)
    want = [torch.signbit(F.leaky_relu(x, s)) for s in slopes]
    with ember.eager():
        got = [F.leaky_relu(x + 0, s).cpu() for s in slopes]  # one region each: later ones replay
    for s, g, w in zip(slopes, got, want):
        assert torch.equal(torch.signbit(g), w), s


def test_small_integer_tensors_do_not_flush() -> None:
    # Ops on small real integer/bool tensors (token ids, attention masks) run with torch eager:
    # a model that branches on them (`mask.all()`, as transformers' mask code does) keeps the
    # float work of the step in one region instead of flushing at each branch.
    torch.manual_seed(0)
    emb, lin = torch.nn.Embedding(50, 16), torch.nn.Linear(16, 16)
    ids = torch.tensor([[5, 7, 0, 0], [1, 2, 3, 4]])

    def f():
        h = lin(emb(ids))
        mask = ids != 0
        if not bool(mask.all()):
            h = h * mask[..., None]
        lengths = mask.sum(-1).tolist()
        return h.sum(1) / torch.tensor(lengths)[:, None]

    want = f()
    before = deferred.stats()["flushes"]
    with torch.no_grad(), ember.eager():
        got = f()
        assert deferred.stats()["flushes"] == before
        got = got.cpu()
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("recorder", ["native", "python"])
def test_queue_cap_flushes_between_ops(monkeypatch: pytest.MonkeyPatch, recorder: str) -> None:
    # The queue-length cap flushes at the next op, never inside one (here: writes through views,
    # whose aliases are re-derived by several recorded ops, and decompositions).
    monkeypatch.setattr(deferred_flush, "_QUEUE_CAP", 6)
    monkeypatch.setenv("EMBER_EAGER_CAP", "6")
    monkeypatch.setenv("EMBER_EAGER_RECORDER", recorder)
    torch.manual_seed(0)
    x0 = torch.randn(4, 8)

    def f():
        b = x0 * 1
        rows = b.unbind(0)
        c = b.chunk(4, 1)
        for i in range(4):
            c[i].mul_(i + 1)
            rows[i].add_(torch.nn.functional.gelu(rows[(i + 1) % 4]))
        return (b, *rows, *c)

    want = [t.clone() for t in f()]
    before = deferred.stats()["flushes"]
    with torch.no_grad(), ember.eager():
        got = [t.cpu().clone() for t in f()]
    assert deferred.stats()["flushes"] - before > 2
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)


def test_large_regions_compile_in_several_llvm_modules(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A region of 32 or more kernels is compiled as several LLVM modules on parallel threads and
    # linked into one library; its results are the same.
    monkeypatch.setenv("EMBER_DUMP_LLVM", str(tmp_path / "pre.ll"))
    torch.manual_seed(0)
    x0 = torch.randn(8, 32)

    def f(x):
        for i in range(40):  # each mean is a reduction kernel
            x = torch.tanh(x - x.mean(dim=1, keepdim=True)) * (1 + i / 40)
        return x

    want = f(x0)
    with torch.no_grad(), ember.eager():
        got = f(x0 + 0.0).cpu()
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
    ir = (tmp_path / "pre.ll").read_text()
    assert ir.count("; ModuleID") >= 2 and ir.count("\ndefine") >= 32


@pytest.mark.parametrize("recorder", ["native", "python"])
def test_log_explains_flushes_and_misses(recorder: str, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    # EMBER_EAGER_LOG=1: every flush with its reason, the user's line, hit or miss, and where a
    # missed region first differs from the nearest cached one; both recorders say it alike.
    monkeypatch.setenv("EMBER_EAGER_LOG", "1")
    monkeypatch.setenv("EMBER_EAGER_RECORDER", recorder)
    deferred.reset_stats(clear_plans=True)
    x = torch.randn(8, 8)
    with ember.eager():
        for i in range(3):
            y = (x * 2 + 1).relu() if i != 2 else (x * 2 + 1).sigmoid()
            y.cpu()
            line = inspect.currentframe().f_lineno - 1
    lines = [l for l in capfd.readouterr().err.splitlines() if l.startswith("ember.eager: flush")]
    assert len(lines) == 3, lines
    assert f"(cpu) at {__file__}:{line}:" in lines[0] and "plan cache hit" in lines[1], lines
    assert "differs at op 2 (`aten.sigmoid.default` here, `aten.relu.default` there)" in lines[2], lines
