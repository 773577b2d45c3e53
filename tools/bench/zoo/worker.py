"""The export worker: the process that builds and exports models (`zoo.py --_worker`,
export_one, eval_float64, worker_main) and ExportWorker, its handle in the main process."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from opinfo.stages import _signal_name

from .common import MARK, SCRIPT, THREADS, _exc_line
from .models import BuildError, _params, build_hf, build_tv


# Its source text is part of every export key (run.build_recipe).
def export_one(spec: dict[str, Any], pt2: Path, npz: Path) -> dict[str, Any]:
    """Build, check eager, export: the worker's answer for one model."""
    import torch

    from ember.export import export_model, seed_everything

    t0 = time.monotonic()
    seed_everything(0)
    try:
        module, inputs = (build_hf if spec["source"] == "transformers" else build_tv)(spec)
        with torch.no_grad():  # a failing eager call means the inputs do not suit the model
            module(*inputs)
    except BuildError as exc:
        return dict(status="build error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - any failure to build is a skip with its reason
        return dict(status="build error", error=_exc_line(exc))
    params = _params(module)
    try:
        res = export_model(lambda: (module, inputs), pt2, npz, seed=0)
    except Exception as exc:  # noqa: BLE001
        return dict(status="export error", error=_exc_line(exc), params=params,
                    seconds=time.monotonic() - t0)
    ep = torch.export.load(str(pt2))
    ops = Counter(str(n.target) for n in ep.graph.nodes if n.op == "call_function")
    return dict(status="exported", params=params, n_ops=sum(ops.values()), op_kinds=len(ops),
                export_diff=res.max_abs_diff, inputs=res.num_inputs, outputs=res.num_outputs,
                seconds=time.monotonic() - t0)


def eval_float64(spec: dict[str, Any], npz: Path, out: Path) -> dict[str, Any]:
    """The model in float64 on the .npz's inputs (floats widened), outputs written to OUT as
    out0..: a reference nearer the exact values than eager float32, to tell for a wrong
    result whether Ember or eager is farther from them."""
    import torch
    from torch.utils import _pytree as pytree

    from ember.export import seed_everything, write_npz

    from opinfo.compare import npz_arrays, to_torch

    seed_everything(0)
    module, _ = (build_hf if spec["source"] == "transformers" else build_tv)(spec)
    module = module.double()
    args = [to_torch(a) for a in npz_arrays(npz, "arg")]
    args = [a.double() if a.is_floating_point() else a for a in args]
    if spec["family"] == "tv detection":  # its inputs are a list of images (flattened in the .npz)
        args = [args]
    class Widen(torch.overrides.TorchFunctionMode):
        """Every float32 operand widened: a model that makes float32 values of its own
        (RAFT's `coords_grid(...).float()`) would otherwise mix them with float64 ones."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            def wide(t):
                return t.double() if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t

            args, kwargs = pytree.tree_map(wide, (args, kwargs or {}))
            return func(*args, **kwargs)

    with torch.no_grad(), Widen():
        got = module(*args)
    leaves = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    write_npz(out, {f"out{i}": t.detach().numpy() for i, t in enumerate(leaves)})
    return dict(status="ok", outputs=len(leaves))


def worker_main() -> int:
    """The export worker: one JSON request per stdin line, one MARK-prefixed answer per line.
    One process exports many models, so torch and transformers are imported once."""
    import torch

    torch.set_num_threads(THREADS)
    import warnings

    warnings.filterwarnings("ignore")
    out = sys.stdout
    sys.stdout = sys.stderr  # whatever a model prints must not be taken for an answer
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req.get("op") == "float64":
                ans = eval_float64(req["spec"], Path(req["npz"]), Path(req["out"]))
            else:
                ans = export_one(req["spec"], Path(req["pt2"]), Path(req["npz"]))
        except Exception as exc:  # noqa: BLE001
            failed = "error" if req.get("op") == "float64" else "export error"
            ans = dict(status=failed, error=_exc_line(exc), detail=traceback.format_exc()[-2000:])
        out.write(MARK + json.dumps(ans) + "\n")
        out.flush()
        import gc

        gc.collect()
    return 0


class ExportWorker:
    """A persistent `zoo.py --_worker` process, restarted after a crash or a timeout."""

    def __init__(self, log_path: Path, env: dict[str, str]) -> None:
        self.log_path, self.env, self.proc = log_path, env, None

    def _start(self) -> None:
        self.log = open(self.log_path, "a")  # noqa: SIM115 - kept open with the process
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT), "--_worker"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, env=self.env, start_new_session=True)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None
            self.log.close()

    def export(self, spec: dict[str, Any], pt2: Path, npz: Path, timeout: float) -> dict[str, Any]:
        return self.request(dict(spec=spec, pt2=str(pt2), npz=str(npz)), timeout)

    def float64(self, spec: dict[str, Any], npz: Path, out: Path, timeout: float) -> dict[str, Any]:
        return self.request(dict(op="float64", spec=spec, npz=str(npz), out=str(out)), timeout)

    def request(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.stop()
            self._start()
        self.log.write(f"--- {req.get('op', 'export')} {req['spec']['name']}\n")
        self.log.flush()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return dict(status="export error", kind="timeout", error=f"timeout: export ran over {timeout:.0f}s")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:  # the worker died (a segfault in torch, the OOM killer)
                rc = self.proc.wait()
                self.stop()
                why = _signal_name(rc) if rc < 0 else f"exit code {rc}"
                return dict(status="export error", kind="crash", error=f"the export worker died ({why})")
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])
