"""The check stages (import, cpu, tpu), each one `ember` or XLA run of a sample."""

from __future__ import annotations

import json
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .classify import reclassify_decomposition_mismatch, reclassify_precision, reclassify_tie_order
from .common import first_line
from .compare import align_signs, compare_lists, compare_outputs, npz_arrays, read_outputs, values_not_comparable


@dataclass
class StageResult:
    ok: bool
    error: str | None = None  # the first meaningful line
    detail: str = ""          # full message (stderr), for the report
    seconds: float = 0.0
    kind: str | None = None   # the failure's class within the stage (cpu: compile | run | wrong result)
    info: dict[str, Any] | None = None  # JSON-able extras: wrong-result metrics, notes on a pass


@dataclass
class Context:
    ember: Path
    cache: Path
    workdir: Path


class Stage:
    """One step of the per-sample pipeline. Subclass, set name, register in STAGES."""

    name = "?"

    def run(self, sample: dict[str, Any], ctx: Context) -> StageResult:  # pragma: no cover
        raise NotImplementedError


def _ember_error(stderr: str) -> tuple[str, str]:
    """(one informative line, whole message) of an ember failure on stderr.

    ember prints ``error: `X.pt2`: node `n` (from f.py:1): MESSAGE`` (an imported graph
    that does not verify leads with its first disagreement). A panic's ``thread '...' panicked at ...:`` line is
    followed by its message, which is what is kept.
    """
    text = stderr.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return "(no message)", ""
    err = [i for i, l in enumerate(lines) if l.startswith("error")]
    panic = [i for i, l in enumerate(lines) if " panicked at " in l]
    if panic and not err:
        i = panic[0]
        msg = lines[i + 1].strip() if i + 1 < len(lines) else lines[i]
        return f"panic: {msg}", text
    head = lines[err[0] if err else 0].removeprefix("error: ")
    head = re.sub(r"^`[^`]*\.(pt2|npz)`:\s*", "", head)
    return head, text


def _signal_name(rc: int) -> str:
    import signal

    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def run_ember(ctx: Context, argv: list[str], timeout: float) -> tuple[str | None, str, float]:
    """Run ``ember ARGV``: (None on success, else its error line; stderr; seconds).

    Exit code 2 is a diagnosed error (bad input or unsupported feature) and its message
    is the line; any other failure (a panic, a signal, a timeout) is a crash and says so.
    """
    t0 = time.monotonic()
    try:
        p = subprocess.run([str(ctx.ember), *argv], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timeout: ember {argv[0]} ran over {timeout:.0f}s", "", timeout
    dt = time.monotonic() - t0
    if p.returncode == 0:
        return None, p.stderr, dt
    head, text = _ember_error(p.stderr)
    if p.returncode < 0:
        head = f"crash ({_signal_name(p.returncode)}): {head}"
    elif p.returncode != 2:
        head = f"exit code {p.returncode}: {head}"  # a crash, not a diagnosed error
    return head, text, dt


class ImportStage(Stage):
    """`ember import X.pt2`: the torch.export frontend plus the IR verifier."""

    name = "import"

    def run(self, sample: dict[str, Any], ctx: Context) -> StageResult:
        pt2 = ctx.cache / f"{sample['key']}.pt2"
        out = ctx.workdir / f"{sample['key']}.mlir"
        err, text, dt = run_ember(ctx, ["import", str(pt2), "-o", str(out)], 120)
        if err is None:
            return StageResult(True, seconds=dt)
        return StageResult(False, err, text, dt)


class CpuStage(Stage):
    """`ember compile X.pt2 --target cpu`, `ember run` on arg0.. of X.npz, compare with out0..

    Failures are classified (StageResult.kind) as ``compile`` (no CPU lowering, a
    rejected dtype, a crash), ``run`` (the runtime refused the inputs or crashed) or
    ``wrong result`` (outputs differ from eager beyond TOLERANCES; info holds the max
    abs/rel error and the worst element; ``triage`` turns it into ``decomposition
    mismatch`` when torch's decomposed graph differs from eager the same way). The
    artifact directory WORKDIR/<key>.cpu is deleted when the sample passes and kept
    (with got.npz) when it fails.
    """

    name = "cpu"
    compile_timeout = 300.0
    run_timeout = 120.0

    def run(self, sample: dict[str, Any], ctx: Context) -> StageResult:
        import shutil

        key = sample["key"]
        pt2, npz = ctx.cache / f"{key}.pt2", ctx.cache / f"{key}.npz"
        art = ctx.workdir / f"{key}.cpu"
        shutil.rmtree(art, ignore_errors=True)
        err, text, t_compile = run_ember(ctx, ["compile", str(pt2), "--target", "cpu", "-o", str(art)],
                                         self.compile_timeout)
        if err is not None:
            return StageResult(False, f"compile: {err}", text, t_compile, kind="compile")
        got = art / "got.npz"
        err, text, t_run = run_ember(ctx, ["run", str(art), "--inputs", str(npz), "--outputs", str(got)],
                                     self.run_timeout)
        dt = t_compile + t_run
        if err is not None:
            return StageResult(False, f"run: {err}", text, dt, kind="run")
        why_not = values_not_comparable(sample)
        try:
            err, info = compare_outputs(npz, got, values=why_not is None, op=sample.get("op"))
        except Exception as exc:  # noqa: BLE001 - e.g. an unreadable got.npz
            return StageResult(False, f"run: cannot read the outputs: {type(exc).__name__}: {exc}",
                               "", dt, kind="run")
        if err is not None:
            return StageResult(False, f"wrong result: {err}", err, dt, kind="wrong result", info=info)
        shutil.rmtree(art, ignore_errors=True)
        if why_not:
            info = {"note": f"values not compared: {why_not}"}
        return StageResult(True, seconds=dt, info=info or None)

    @staticmethod
    def triage(sample: dict[str, Any], ctx: Context) -> None:
        """Reclassify a wrong result that torch's decomposed graph reproduces, or (bfloat16,
        float16) where Ember is nearer the float64 value than eager (needs torch)."""
        got = ctx.workdir / f"{sample['key']}.cpu" / "got.npz"
        reclassify_decomposition_mismatch(sample, ctx)
        if sample["check"]["kind"] == "wrong result":
            reclassify_tie_order(sample, got, ctx.cache)
        if sample["check"]["kind"] == "wrong result" and sample.get("dtype") in ("bfloat16", "float16"):
            reclassify_precision(sample, got, ctx.cache)


class TpuStage(Stage):
    """`ember compile X.pt2 --target tpu`, then the StableHLO on XLA (jaxlib's PJRT CPU client,
    in this process through `ember.xla`) on arg0.. of X.npz, compared with out0.. like the cpu
    stage (same TOLERANCES). Failures are ``compile`` (no ten lowering, no StableHLO mapping,
    padding refused), ``run`` (XLA refused the module or the inputs) or ``wrong result``. The
    artifact directory WORKDIR/<key>.tpu is kept when the sample fails."""

    name = "tpu"
    compile_timeout = 300.0

    def __init__(self) -> None:
        from ember import xla

        xla._client()  # import jax and start the backend once, before the worker threads race to

    def run(self, sample: dict[str, Any], ctx: Context) -> StageResult:
        import shutil

        import numpy as np
        from ember import xla
        from ember.export import savable

        key = sample["key"]
        pt2, npz = ctx.cache / f"{key}.pt2", ctx.cache / f"{key}.npz"
        art = ctx.workdir / f"{key}.tpu"
        shutil.rmtree(art, ignore_errors=True)
        err, text, t_compile = run_ember(ctx, ["compile", str(pt2), "--target", "tpu", "-o", str(art)],
                                         self.compile_timeout)
        if err is not None:
            return StageResult(False, f"compile: {err}", text, t_compile, kind="compile")
        t0 = time.monotonic()
        try:
            inputs = npz_arrays(npz, "arg")
            outs = xla.run_artifact(art, inputs)
            # In-place updates of inputs (functionalized mutations) are extra results; the
            # references are torch's user outputs.
            names = xla.output_array_names(json.loads((art / "manifest.json").read_text())["outputs"])
            outs = [o for n, o in zip(names, outs) if n.startswith("out")]
            got = list(outs)
        except Exception as exc:  # noqa: BLE001 - XLA's errors are many types
            dt = t_compile + time.monotonic() - t0
            return StageResult(False, f"run: {type(exc).__name__}: {first_line(str(exc))}"[:500], str(exc)[:4000],
                               dt, kind="run")
        dt = t_compile + time.monotonic() - t0
        why_not = values_not_comparable(sample)
        want = read_outputs(npz)
        err, info = compare_lists(align_signs(sample.get("op"), list(got), want), want, values=why_not is None)
        if err is not None:
            np.savez(art / "got.npz", **{f"out{i}": savable(g) for i, g in enumerate(got)})
            return StageResult(False, f"wrong result: {err}", err, dt, kind="wrong result", info=info)
        shutil.rmtree(art, ignore_errors=True)
        if why_not:
            info = {"note": f"values not compared: {why_not}"}
        return StageResult(True, seconds=dt, info=info or None)

    @staticmethod
    def triage(sample: dict[str, Any], ctx: Context) -> None:
        """Like CpuStage.triage, on the outputs XLA gave."""
        got = ctx.workdir / f"{sample['key']}.tpu" / "got.npz"
        reclassify_decomposition_mismatch(sample, ctx, got)
        if sample["check"]["kind"] == "wrong result":
            reclassify_tie_order(sample, got, ctx.cache)
        if sample["check"]["kind"] == "wrong result" and sample.get("dtype") in ("bfloat16", "float16"):
            reclassify_precision(sample, got, ctx.cache)


STAGES: dict[str, type[Stage]] = {"import": ImportStage, "cpu": CpuStage, "tpu": TpuStage}


def run_sample(sample: dict[str, Any], stages: list[Stage], ctx: Context) -> dict[str, Any]:
    """Run the stages in order up to the first failure.

    ``passed``: names of the stages passed; ``stage``/``kind``/``error``: the failure.
    """
    res: dict[str, Any] = {"ok": True, "stage": None, "kind": None, "error": None, "detail": "",
                           "info": None, "passed": [], "seconds": 0.0}
    for st in stages:
        try:
            r = st.run(sample, ctx)
        except Exception as exc:  # noqa: BLE001 - a harness bug must not stop the run
            r = StageResult(False, f"harness: {type(exc).__name__}: {first_line(str(exc))}")
        res["seconds"] = round(res["seconds"] + r.seconds, 3)
        if not r.ok:
            res.update(ok=False, stage=st.name, kind=r.kind, error=r.error, detail=r.detail[:4000],
                       info=r.info)
            break
        res["passed"].append(st.name)
        if r.info:
            res["info"] = r.info
    return res
