"""Per-op overhead of ember.eager() in steady state, on the training step of bench_eager.py.

Times one MLP training step (3 Linear layers of 256, batch 64, MSE, AdamW) in torch eager, under
a bare TorchDispatchMode that only runs each op (the floor of any per-op Python recorder), and
under ember.eager() after its plan is cached (replaying); rounds interleaved, medians printed.
"ember python" is the Ember step minus the plan's own run time (EagerPlans run seconds); the
per-op figures divide the excess over torch eager by the ops per step. Each figure is given as
wall time and as this process's CPU time (`time.process_time`), which a loaded machine (other
processes on the same cores) inflates much less.

    T=2 RAYON_NUM_THREADS=2 python tools/bench/eager_overhead.py

A/B in one process: EMBER_AB_DEFERRED=<another tree>/tools/python/python/ember/deferred (the
package; a tree from before the split names its deferred.py) also times that recorder (as
"ember A"), loaded into this tree's `ember` package (same extension), in the same interleaved
rounds. EMBER_PY_DIR=<tree>/tools/python/python imports that tree's package.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.environ.get("EMBER_PY_DIR") or str(Path(__file__).resolve().parents[1] / "python" / "python"))
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


class _Log(TorchDispatchMode):
    """Runs each op and logs what it returned: (shape, stride, dtype) per tensor, or the value."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list = []

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (tuple, list)) else (out,)
        mutable = bool(func._schema.arguments) and func._schema.arguments[0].alias_info is not None and func._schema.arguments[0].alias_info.is_write
        if mutable:
            self.log.append(("self", None))
        elif all(isinstance(o, torch.Tensor) for o in outs):
            self.log.append(("tensors", ([(tuple(o.shape), o.stride(), o.dtype) for o in outs], isinstance(out, (tuple, list)))))
        else:
            self.log.append(("value", out))
        return out


class _Shell(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise AssertionError("unreachable under Floor")


class Floor(TorchDispatchMode):
    """The floor of any recorder that intercepts every op: the dispatch into Python and one
    result wrapper per tensor result (as `_make_wrapper_subclass`, shapes known in advance), no
    bookkeeping and no computation at all (results are shells; in-place ops return their target).
    A step under it costs user Python + autograd + dispatch + wrappers."""

    def __init__(self, log: list) -> None:
        super().__init__()
        self.log = log
        self.i = 0

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kind, x = self.log[self.i]
        self.i += 1
        if kind == "self":
            return args[0]
        if kind == "value":
            return x
        descs, is_seq = x
        outs = [torch.Tensor._make_wrapper_subclass(_Shell, d[0], strides=d[1], dtype=d[2], device="cpu", requires_grad=False) for d in descs]
        return outs if is_seq else outs[0]


def floor_step_log() -> list:
    """What one training step's ops return, logged on copies (the model and optimizer state are
    restored after, so the other variants see the same model)."""
    import copy

    saved = (copy.deepcopy(model.state_dict()), copy.deepcopy(opt.state_dict()))
    step()  # the optimizer's state exists from here on, as in steady state
    with _Log() as lg:
        step()
    model.load_state_dict(saved[0])
    opt.load_state_dict(saved[1])
    return lg.log


def per_step(n=20):
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        step()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


def _load_ab():
    path = os.environ.get("EMBER_AB_DEFERRED")
    if not path:
        return None
    if os.path.isdir(path):
        spec = importlib.util.spec_from_file_location("ember._deferred_ab", os.path.join(path, "__init__.py"), submodule_search_locations=[path])
    else:
        spec = importlib.util.spec_from_file_location("ember._deferred_ab", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    recorders = {"ember": deferred}
    ab = _load_ab()
    if ab is not None:
        recorders["ember A"] = ab
    res: dict[str, list[tuple[float, float]]] = {"eager": [], "bare": [], "floor": []}
    log = floor_step_log()
    for name in recorders:
        res[name] = []
        res[name + " python"] = []
    for mod in recorders.values():
        with mod.eager():
            for _ in range(3):
                step()
    ops = 0.0
    for _ in range(int(os.environ.get("ROUNDS", "7"))):
        res["eager"].append(per_step())
        with Bare():
            res["bare"].append(per_step())
        fl = Floor(log)
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(20):
            fl.i = 0
            with fl:
                step()
        res["floor"].append(((time.perf_counter() - t0) / 20, (time.process_time() - c0) / 20))
        for name, mod in recorders.items():
            with mod.eager():
                step()
                step()  # steady state: timed from the third step of the block
                s0 = mod.stats()
                t, c = per_step()
                s1 = mod.stats()
            run = (s1["run_seconds"] - s0["run_seconds"]) / 20
            res[name].append((t, c))
            res[name + " python"].append((t - run, c - run))
            ops = sum(s1.get(k, 0) - s0.get(k, 0) for k in ("ops_recorded", "ops_eager", "ops_aliased")) / 20
    for i, what in enumerate(("wall", "cpu")):
        med = {k: statistics.median(r[i] for r in v) * 1e3 for k, v in res.items()}
        print(f"[{what}] " + "  ".join(f"{k} {v:.2f} ms/step" for k, v in med.items()))
        per_op = "  ".join(f"{k} {(med[k + ' python'] - med['eager']) / ops * 1e3:.1f} us" for k in recorders)
        print(f"[{what}] ops/step {ops:.0f}; over torch eager per op: bare mode {(med['bare'] - med['eager']) / ops * 1e3:.1f} us  floor {(med['floor'] - med['eager']) / ops * 1e3:.1f} us  {per_op}")
    print(f"1-min load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
