"""The run: compiling and running an export on the targets, the cache keys and the Run
(a model's export and targets, redone only when their keys changed)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from opinfo.compare import compare_lists, read_outputs
from opinfo.stages import _ember_error, _signal_name

from .common import (
    COMPILE_TIMEOUT,
    EXPORT_TIMEOUT,
    HARNESS_VERSION,
    PYPKG,
    RUN_TIMEOUT,
    THREADS,
    _exc_line,
    key_of,
    log,
    safe_name,
    sha256_file,
    sources_sha,
)
from .models import (
    AUDIO_SAMPLES,
    HF_SMALL,
    RAFT_FLOW_UPDATES,
    TEXT_LEN,
    TV_IMAGE,
    TV_INPUT,
    TV_KWARGS,
    FewFlowUpdates,
    _shrink_list,
    _wrap,
    build_hf,
    build_tv,
    hf_config,
)
from .worker import ExportWorker, export_one

# ---------------------------------------------------------------------------------------
# Compiling and running on the targets.

def run_ember(ember: str, argv: list[str], timeout: float, env: dict[str, str]) -> tuple[str | None, str | None, float]:
    """(None, None, seconds) on success, else (status, first useful error line, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([ember, *argv], capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "timeout", f"timeout: ember {argv[0]} ran over {timeout:.0f}s", timeout
    dt = time.monotonic() - t0
    if p.returncode == 0:
        return None, None, dt
    text = p.stderr + ("\n" + p.stdout if p.stdout.strip() else "")
    head = error_line(text)
    if p.returncode < 0:
        return "panic", f"{_signal_name(p.returncode)}: {head}", dt
    if " panicked at " in text:
        return "panic", head if head.startswith("panic") else f"panic: {head}", dt
    return ("compile error" if argv[0] == "compile" else "run error"), head, dt


def error_line(text: str) -> str:
    """The useful line of a failure: Ember's `error:` line (its second line when the first only
    says which step failed), a panic's message, or a Python traceback's last line (tpu and
    trainium run through `python -m ember.xla`)."""
    lines = [l.rstrip() for l in text.strip().splitlines() if l.strip()]
    if not lines:
        return "(no message)"
    if any(l.startswith("Traceback (most recent call last)") for l in lines):
        exc = [l.strip() for l in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b", l.strip())]
        if exc:
            return exc[-1][:300]
    head, _ = _ember_error(text)
    i = next((i for i, l in enumerate(lines) if l.startswith("error")), None)
    if i is not None and head.rstrip().endswith(":") and i + 1 < len(lines):
        head = head.rstrip() + " " + lines[i + 1].strip()
    return head[:300]


def run_target(ember: str, target: str, pt2: Path, npz: Path, work: Path, env: dict[str, str]) -> dict[str, Any]:
    art, got = work / f"art-{target}", work / f"got-{target}.npz"
    shutil.rmtree(art, ignore_errors=True)
    got.unlink(missing_ok=True)
    status, err, t_compile = run_ember(ember, ["compile", str(pt2), "--target", target, "-o", str(art)],
                                       COMPILE_TIMEOUT, env)
    res: dict[str, Any] = dict(compile_s=round(t_compile, 2))
    if status:
        return dict(res, status=status, error=err, step="compile")
    status, err, t_run = run_ember(ember, ["run", str(art), "--inputs", str(npz), "--outputs", str(got)],
                                   RUN_TIMEOUT, env)
    res["run_s"] = round(t_run, 2)
    if status:
        return dict(res, status=status, error=err, step="run")
    try:
        why, info = compare_lists(read_outputs(got), read_outputs(npz))
    except Exception as exc:  # noqa: BLE001 - an unreadable or incomplete got.npz
        return dict(res, status="run error", error=f"cannot read the outputs: {_exc_line(exc)}", step="run")
    res["max_abs"] = info.get("max_abs")
    res["max_rel"] = info.get("max_rel")
    if why is not None:
        return dict(res, status="wrong", error=why, step="compare")
    # Artifacts of failures stay for a look; a pass's are only disk.
    shutil.rmtree(art, ignore_errors=True)
    got.unlink(missing_ok=True)
    return dict(res, status="pass")


# ---------------------------------------------------------------------------------------
# The cache and the run.

def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "torchvision", "jax", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def build_recipe(source: str) -> str:
    """A fingerprint of how this script builds and exports a source's models (not of how it
    reports), so that an edit to the configs or the inputs redoes those exports and nothing
    else does."""
    import inspect

    if source == "transformers":
        fns = [_shrink_list, hf_config, _wrap, build_hf]
        consts = [HF_SMALL, TEXT_LEN, AUDIO_SAMPLES]
    else:
        fns = [FewFlowUpdates, build_tv]
        consts = [TV_IMAGE, TV_INPUT, TV_KWARGS, RAFT_FLOW_UPDATES]
    # MAX_PARAMS is left out: it decides which models are skipped, not how the others export.
    return key_of([inspect.getsource(f) for f in fns + [export_one]], repr(consts))


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cache = Path(args.cache).expanduser()
        (self.cache / "results").mkdir(parents=True, exist_ok=True)
        (self.cache / "work").mkdir(parents=True, exist_ok=True)
        self.versions = versions()
        self.ember = args.ember
        self.ember_sha = sha256_file(Path(shutil.which(self.ember) or self.ember))[:16]
        py_sources = {p.name: sha256_file(p)[:16] for p in sorted((PYPKG / "ember").glob("*.py"))}
        # The export depends on ember.export; tpu and trainium runs on ember.xla.
        self.export_salt = key_of(HARNESS_VERSION, self.versions, py_sources.get("export.py"),
                                  sources_sha() if args.strict_cache else None)
        self.target_salt = key_of(self.ember_sha, py_sources.get("xla.py"), py_sources.get("dtypes.py"))
        tmp = Path(os.environ.get("TMPDIR") or self.cache / "tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        pythonpath = os.pathsep.join([str(PYPKG), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=pythonpath, RAYON_NUM_THREADS=str(THREADS),
                        OMP_NUM_THREADS=str(THREADS), EMBER_PYTHON=os.environ.get("EMBER_PYTHON", sys.executable),
                        TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        # Once, from the code this process runs (getsource would read an edited file later).
        self.recipes = {src: build_recipe(src) for src in ("transformers", "torchvision")}
        self.local = threading.local()
        self.workers: list[ExportWorker] = []
        self.lock = threading.Lock()

    def result_path(self, name: str) -> Path:
        return self.cache / "results" / f"{safe_name(name)}.json"

    def load(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.result_path(name).read_text())
        except (OSError, ValueError):
            return None

    def save(self, res: dict[str, Any]) -> None:
        path = self.result_path(res["name"])
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)

    def worker(self) -> ExportWorker:
        w = getattr(self.local, "worker", None)
        if w is None:
            w = ExportWorker(self.cache / f"worker-{threading.get_ident()}.log", self.env)
            self.local.worker = w
            with self.lock:
                self.workers.append(w)
        return w

    def run_model(self, spec: dict[str, Any], force: bool) -> dict[str, Any]:
        args = self.args
        name = spec["name"]
        work = self.cache / "work" / safe_name(name)
        work.mkdir(parents=True, exist_ok=True)
        pt2, npz = work / "model.pt2", work / "model.npz"
        export_key = key_of(self.export_salt, spec, self.recipes[spec["source"]])
        old = self.load(name) or {}
        if old.get("export_key") != export_key:
            old = {}
        redo_export = (force or not old or not pt2.exists() and old["export"]["status"] == "exported"
                       or args.rerun_failed and old["export"]["status"] != "exported")
        if redo_export:
            (work / "ref64.npz").unlink(missing_ok=True)
            log(f"[{name}] export")
            exp = self.worker().export(spec, pt2, npz, EXPORT_TIMEOUT)
            res = dict(name=name, family=spec["family"], spec=spec, export_key=export_key, export=exp, targets={})
        else:
            res = dict(old, spec=spec, family=spec["family"])
        exp = res["export"]
        if exp["status"] != "exported":
            log(f"[{name}] {exp['status']}: {exp.get('error')}")
            res["targets"] = {}
            self.save(res)
            return res
        target_key = key_of(self.target_salt, export_key)
        for target in args.targets:
            prev = res["targets"].get(target)
            if (prev and prev.get("key") == target_key and not force and not redo_export
                    and not (args.rerun_failed and prev["status"] != "pass")):
                continue
            log(f"[{name}] {target}")
            r = run_target(self.ember, target, pt2, npz, work, self.env)
            r["key"] = target_key
            res["targets"][target] = r
            log(f"[{name}] {target}: {r['status']}" + (f": {r['error']}" if r.get("error") else ""))
            self.save(res)
        wrong = [t for t, r in res["targets"].items() if r["status"] == "wrong" and "rule" not in r.get("float64", {})]
        if wrong:
            self.triage(spec, res, work, wrong)
        self.save(res)
        return res

    def triage(self, spec: dict[str, Any], res: dict[str, Any], work: Path, wrong: list[str]) -> None:
        """For each wrong target, Ember's outputs and eager's against the model run in float64:
        the max abs errors, and Inductor's accuracy rule (torch._dynamo.utils.same with an fp64
        reference, as its model benchmarks judge compilers): every float output's RMSE from
        float64 within 2x eager's + 1e-5, every other output equal to eager's. Deep random-weight
        nets amplify float32 rounding past eager's tolerance; a miscompile fails the rule."""
        import numpy as np

        ref = work / "ref64.npz"
        if not ref.exists():
            log(f"[{spec['name']}] float64 reference")
            ans = self.worker().float64(spec, work / "model.npz", ref, EXPORT_TIMEOUT)
            if ans.get("status") != "ok":
                for t in wrong:
                    res["targets"][t]["float64"] = dict(error=ans.get("error"))
                return
        try:
            exact, eager = read_outputs(ref), read_outputs(work / "model.npz")
            for t in wrong:
                got = read_outputs(work / f"got-{t}.npz")
                errs: dict[str, Any] = dict(ember=0.0, eager=0.0, rmse=[])
                rule = len(got) == len(eager) == len(exact)
                for g, w, x in zip(got, eager, exact):
                    if w.dtype.kind != "f":
                        rule = rule and g.shape == w.shape and bool(np.array_equal(g, w))
                        continue
                    if g.shape != x.shape or w.shape != x.shape:
                        rule = False
                        continue
                    x = x.astype(np.float64)
                    g64, w64 = g.astype(np.float64), w.astype(np.float64)
                    with np.errstate(invalid="ignore"):
                        errs["ember"] = max(errs["ember"], float(np.nanmax(np.abs(g64 - x))))
                        errs["eager"] = max(errs["eager"], float(np.nanmax(np.abs(w64 - x))))
                    finite = np.isfinite(x)
                    # NaNs and infinities where float64 has them are compared exactly.
                    rule = rule and bool(np.array_equal(np.isnan(g64[~finite]), np.isnan(x[~finite])))
                    rule = rule and bool(np.array_equal(g64[np.isinf(x)], x[np.isinf(x)]))
                    rmse_g = float(np.sqrt(np.mean((g64[finite] - x[finite]) ** 2))) if finite.any() else 0.0
                    rmse_w = float(np.sqrt(np.mean((w64[finite] - x[finite]) ** 2))) if finite.any() else 0.0
                    errs["rmse"].append([rmse_g, rmse_w])
                    rule = rule and rmse_g <= 2.0 * rmse_w + 1e-5
                errs["rule"] = bool(rule)
                res["targets"][t]["float64"] = errs
        except Exception as exc:  # noqa: BLE001 - triage is best effort
            for t in wrong:
                res["targets"][t]["float64"] = dict(error=_exc_line(exc))

    def close(self) -> None:
        for w in self.workers:
            w.stop()


def interleaved(specs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run order: one model of each family in turn, so that a run stopped early has
    covered every family (the report's order does not depend on it)."""
    by_family: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in specs:
        by_family[s["family"]].append(s)
    queues = [by_family[f] for f in sorted(by_family)]
    out = []
    for i in range(max(map(len, queues), default=0)):
        out += [q[i] for q in queues if i < len(q)]
    return out
