"""``with ember.eager():`` (DeferAndFuse eager mode) against torch eager: modes, errors at the
user's line, unsupported ops, sync points, saving and copying deferred tensors."""

from __future__ import annotations

import traceback
import warnings

import pytest
import torch
import torch.nn.functional as F

import ember
from ember import deferred

from eager_common import ATOL, RTOL


def test_error_after_replays_points_at_the_users_line() -> None:
    a, w, bad = torch.randn(4, 8), torch.randn(8, 8), torch.randn(5, 3)
    before = deferred.stats()
    with pytest.raises(RuntimeError) as info:
        with ember.eager():
            for i in range(4):
                c = (a * 2.0) @ (w if i < 3 else bad)  # REPLAY-MARK
                c.cpu()
    assert deferred.stats()["hits"] - before["hits"] >= 2  # iterations 2 and 3 rerun a compiled plan
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename == __file__]
    assert frames and "REPLAY-MARK" in (frames[-1].line or ""), frames


def test_shape_error_points_at_the_users_line() -> None:
    a, b = torch.randn(4, 8), torch.randn(5, 3)
    with pytest.raises(RuntimeError) as info:
        with ember.eager():
            c = a * 2.0
            bad = c @ b  # LINE-MARK
            del bad
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename == __file__]
    assert frames and "LINE-MARK" in (frames[-1].line or ""), frames


def test_deferred_nan_names_the_op_and_line() -> None:
    x = torch.tensor([1.0, -1.0, 2.0])
    with pytest.raises(deferred.EagerError) as info:
        with ember.eager(mode="strict_blocking"):
            y = torch.sqrt(x - 0.5)  # NAN-MARK
            del y
    line = next(i for i, l in enumerate(open(__file__).read().splitlines(), 1) if "NAN-MARK" in l and "sqrt" in l)
    assert f"{__file__}:{line}" in str(info.value), str(info.value)
    assert "NaN" in str(info.value)


def test_unsupported_op_falls_back_with_one_warning() -> None:
    torch.manual_seed(0)
    x = torch.randn(6, 5)
    # aten.mode has no lowering (Ember's torch dialect has no definition for it).
    ref = [torch.mode(x.abs() * i + 1.0, 0).values + 1.0 for i in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ember.eager():
            got = [torch.mode(x.abs() * i + 1.0, 0).values + 1.0 for i in range(3)]
    for a, b in zip(ref, got):
        torch.testing.assert_close(b.cpu(), a)
    mode_warnings = [w for w in caught if "aten.mode" in str(w.message)]
    assert len(mode_warnings) == 1, [str(w.message) for w in caught]
    assert "torch eager" in str(mode_warnings[0].message)


@pytest.mark.parametrize("mode", ["defer", "strict", "strict_blocking"])
def test_modes_match_eager(mode: str) -> None:
    torch.manual_seed(0)
    x, w, b = torch.randn(8, 16), torch.randn(16, 16), torch.randn(16)

    def f(x):
        h = F.gelu(x @ w + b)
        h = F.layer_norm(h, (16,))
        return (h * 2.0).sum(dim=0)

    ref = f(x)
    flushes = deferred.stats()["flushes"]
    with ember.eager(mode=mode):
        got = f(x)
    torch.testing.assert_close(got.cpu(), ref, rtol=RTOL, atol=ATOL)
    n = deferred.stats()["flushes"] - flushes
    if mode == "defer":
        assert n == 1
    else:
        assert n > 3  # op by op


def test_empty_and_non_contiguous_inputs() -> None:
    x = torch.randn(8, 6).t()  # a real, non-contiguous input
    e = torch.randn(0, 6)
    with ember.eager():
        y = x * 3.0 + 1.0
        z = e * 2.0
    torch.testing.assert_close(y.cpu(), x * 3.0 + 1.0)
    assert z.cpu().shape == (0, 6)


def test_sync_points_give_real_values(capsys: pytest.CaptureFixture[str]) -> None:
    x = torch.tensor([[1.0, -2.0], [3.0, 0.5]])
    with ember.eager():
        y = x * 2.0 + 1.0
        flushes = deferred.stats()["flushes"]
        print(y)  # printing is a sync point
        assert deferred.stats()["flushes"] == flushes + 1
        assert y.numpy().tolist() == [[3.0, -3.0], [7.0, 2.0]]
        assert y.tolist() == [[3.0, -3.0], [7.0, 2.0]]
        assert (y.sum() * 1.0).item() == 9.0
        assert bool((y > 0).all()) is False
        assert type(y.cpu()) is torch.Tensor
    assert "7." in capsys.readouterr().out
    z = y + 1.0  # a deferred result used after the block runs with torch eager
    assert type(z) is torch.Tensor and z.tolist() == [[4.0, -2.0], [8.0, 3.0]]


def test_deferred_tensors_save_and_copy_as_values() -> None:
    import copy
    import io

    x = torch.randn(3, 4)
    with ember.eager():
        y = x * 2 + 1
        buf = io.BytesIO()
        torch.save({"y": y, "z": y.t()}, buf)
        c = copy.deepcopy(y)
    buf.seek(0)
    loaded = torch.load(buf)
    assert type(loaded["y"]) is torch.Tensor and type(c) is torch.Tensor
    torch.testing.assert_close(loaded["y"], x * 2 + 1)
    torch.testing.assert_close(loaded["z"], (x * 2 + 1).t())
    torch.testing.assert_close(c, x * 2 + 1)


def test_no_compiler_falls_back_to_the_python_recorder(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    # Without a C++ compiler (and no native recorder built) defer mode records in Python, with a
    # warning that says why; results are the same.
    from ember.deferred import native

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "_ops", None)
    monkeypatch.setattr(native, "_failure", None)
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    monkeypatch.delenv("CXX", raising=False)
    x = torch.randn(4, 4)
    with pytest.warns(UserWarning, match="(?s)needs a C\\+\\+ compiler.*Python recorder"):
        e = ember.eager()
    with e:
        y = (x * 2).relu()
    torch.testing.assert_close(y.cpu(), (x * 2).relu())
    with pytest.warns(UserWarning):
        ember.eager()  # the failure is remembered, not rebuilt


def test_deferred_tensors_on_another_thread_are_an_error() -> None:
    import threading

    x = torch.randn(4, 4)
    errors = []
    with ember.eager():
        y = x * 2

        def read():
            try:
                (y + 1).sum()
            except RuntimeError as e:
                errors.append(str(e))

        t = threading.Thread(target=read)
        t.start()
        t.join()
    assert errors and "another thread" in errors[0], errors
    torch.testing.assert_close(y, x * 2)


def test_unlowered_ops_are_remembered() -> None:
    # The region with an op Ember cannot lower runs with torch eager once; later that op alone
    # runs eagerly and the rest of each region compiles (one warning in all).
    torch.manual_seed(0)
    x = torch.randn(6, 5)
    before = deferred.stats()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ember.eager():
            got = [(torch.mode(x.abs() * (i + 7) + 1.0, 0).values + 1.0).cpu() for i in range(3)]
    after = deferred.stats()
    for i, g in enumerate(got):
        torch.testing.assert_close(g, torch.mode(x.abs() * (i + 7) + 1.0, 0).values + 1.0)
    assert len([w for w in caught if "aten.mode" in str(w.message)]) <= 1
    ran = after["eager_ops"].get("aten.mode.default", 0) - before["eager_ops"].get("aten.mode.default", 0)
    assert ran >= 2, (before["eager_ops"], after["eager_ops"])


def test_written_tensors_take_over_memory_only_when_unshared() -> None:
    # At a flush a written tensor takes over its result's memory when nothing else sees it; a live
    # result of the same value, or an alias of the target, keeps memory of its own.
    x = torch.randn(4, 4)
    p, q, r = torch.zeros(4, 4), torch.zeros(4, 4), torch.zeros(4, 4)
    alias = p.detach()
    with ember.eager():
        y = x * 2
        q.copy_(y)  # `y` stays live
        p.add_(x)  # through memory `alias` shares
        r.add_(x).mul_(3)  # nothing else sees r's result
    y.add_(1)
    torch.testing.assert_close(q, x * 2, rtol=0, atol=0)
    torch.testing.assert_close(y, x * 2 + 1, rtol=0, atol=0)
    torch.testing.assert_close(alias, x, rtol=0, atol=0)
    torch.testing.assert_close(r, x * 3, rtol=0, atol=0)
    r.sub_(1)
    torch.testing.assert_close(r, x * 3 - 1, rtol=0, atol=0)
