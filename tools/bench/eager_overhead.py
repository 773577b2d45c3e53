"""Per-op overhead of ember.eager() in steady state, on the training step of bench_eager.py.

Times one MLP training step (3 Linear layers of 256, batch 64, MSE, AdamW) in torch eager, under
a bare TorchDispatchMode that only runs each op (the floor of any per-op Python recorder), and
under ember.eager() after its plan is cached (replaying); rounds interleaved, medians printed.
"ember python" is the Ember step minus the plan's own run time (EagerPlans run seconds); the
per-op figures divide the excess over torch eager by the ops per step.

    T=2 RAYON_NUM_THREADS=2 python tools/bench/eager_overhead.py

EMBER_PY_DIR=<another tree>/tools/python/python times that tree's `ember` package instead (an A/B
against another branch: alternate the two runs, each prints its own torch eager and bare figures).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.environ.get("EMBER_PY_DIR") or str(Path(__file__).resolve().parents[1] / "python" / "python"))
import ember  # noqa: E402
from ember import deferred  # noqa: E402

torch.set_num_threads(int(os.environ.get("T", "2")))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(64, 256), torch.randn(64, 256)


def step():
    opt.zero_grad()
    F.mse_loss(model(x), y).backward()
    opt.step()


class Bare(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def per_step(n=20):
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n


def main() -> None:
    res: dict[str, list[float]] = {"eager": [], "bare": [], "ember": [], "ember python": []}
    with ember.eager():
        for _ in range(3):
            step()
    ops = 0.0
    for _ in range(7):
        res["eager"].append(per_step())
        with Bare():
            res["bare"].append(per_step())
        with ember.eager():
            step()
            step()  # the first steps of a block are recorded afresh (nothing to replay yet)
            s0 = deferred.stats()
            t = per_step()
            s1 = deferred.stats()
        res["ember"].append(t)
        res["ember python"].append(t - (s1["run_seconds"] - s0["run_seconds"]) / 20)
        ops = (s1["ops_recorded"] - s0["ops_recorded"] + s1["ops_eager"] - s0["ops_eager"]) / 20
    med = {k: statistics.median(v) * 1e3 for k, v in res.items()}
    print("  ".join(f"{k} {v:.2f} ms/step" for k, v in med.items()))
    print(f"ops/step {ops:.0f}; over torch eager per op: bare mode {(med['bare'] - med['eager']) / ops * 1e3:.1f} us, ember python {(med['ember python'] - med['eager']) / ops * 1e3:.1f} us; 1-min load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
