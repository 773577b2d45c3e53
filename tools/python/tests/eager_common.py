"""Helpers shared by the ``ember.eager()`` tests (test_eager*.py)."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import ember

RTOL, ATOL = 1e-4, 1e-5


@pytest.fixture
def python_recorder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defer mode on the Python recorder (its replay fast path and flush policy), which records
    when the native one cannot be built."""
    monkeypatch.setenv("EMBER_EAGER_RECORDER", "python")


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)
    )


def train(model: torch.nn.Module, opt: torch.optim.Optimizer, steps: int, ctx) -> list[torch.Tensor]:
    torch.manual_seed(1)
    data = [(torch.randn(16, 32), torch.randn(16, 8)) for _ in range(steps)]
    losses = []
    with ctx():
        for x, y in data:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    return [l.clone() for l in losses]


class TorchEager:
    """A context that changes nothing: the torch eager side of a comparison."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def train_steps(ctx, opt, loss_fn, steps: int, after_backward=None, after_step=None):
    """`steps` training steps under `ctx`; returns the losses and the warnings raised (caught,
    so the one-time "runs with torch eager" notes do not reach the test output)."""
    losses = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ctx():
            for _ in range(steps):
                opt.zero_grad()
                loss = loss_fn()
                loss.backward()
                if after_backward is not None:
                    after_backward()
                opt.step()
                if after_step is not None:
                    after_step()
                losses.append(loss.detach())
    return [l.cpu() for l in losses], caught


def check_masked_gradients(run, mask, want, atol) -> None:
    """`run()` (a backward op) under ember.eager() with nothing left to torch eager returns
    exactly the gradients `mask` asks for, close to `want`."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left to torch eager
        with ember.eager():
            got = [None if t is None else t.cpu() for t in run()]
    for m, a, e in zip(mask, got, want):
        assert (a is None) == (not m)
        if a is not None:
            torch.testing.assert_close(a, e, rtol=1e-4, atol=atol)
