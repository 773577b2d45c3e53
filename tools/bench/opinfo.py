#!/usr/bin/env python3
"""Op-level harness for Ember, driven by PyTorch's OpInfo database.

Two commands, run one after the other::

    python tools/bench/opinfo.py export [--subset] [--ops a,b] [--limit-ops N] [--dtype D[,D]]
                                        [--max-samples-per-op K] [--cache DIR] [--jobs J]
    python tools/bench/opinfo.py check  [--subset] [--ops a,b] [--stages import,cpu] [--dtype D[,D]]
                                        [--max-samples-per-op K] [--ember PATH] [--cache DIR]
                                        [--report FILE.md] [--json FILE] [--jobs J]
                                        [--write-expected [FILE]]

``export`` walks ``torch.testing._internal.common_methods_invocations.op_db``. For
every OpInfo it seeds torch with 0, draws up to K samples from
``op.sample_inputs("cpu", torch.float32)`` and wraps each sample in an ``nn.Module``
whose ``forward`` takes the sample's tensors (every tensor leaf of ``sample.input``,
``sample.args`` and ``sample.kwargs``) as inputs and closes over everything else,
calling ``op.op``. The module is exported with
``torch.export.export(...).run_decompositions()`` (core ATen) and saved to a
content-addressed cache::

    DIR/<key>.pt2    torch.export.save of the decomposed program
    DIR/<key>.npz    arg0.. (the inputs) and out0.. (eager outputs, tensor leaves only)
    DIR/<key>.json   the sample's index entry (also written for failed exports)
    DIR/index.json   every entry: op, variant_test_name, sample_index, key, status
                     (exported | export_failed), error, aten_targets, sample, ...

``key`` is the sha256 of (op name, variant, sample index, sample dtype, shapes/dtypes/non-tensor
args, torch version, harness version); a sample whose ``<key>.json`` exists is
not exported again (use ``--force`` to redo it).

``--dtype bfloat16`` / ``float16`` (or a list, run one after the other) draws the samples with
``op.sample_inputs("cpu", torch.bfloat16)`` instead, for every OpInfo that lists the dtype in
``supported_dtypes("cpu")`` (the others are recorded as unsupported, not resampled in another
dtype). Each dtype has its own index (``index_bfloat16.json``, ``index_float16.json``; float32
keeps ``index.json``) and report (``opinfo_cpu_bf16.md``, ``opinfo_tpu_f16.md``, ...); bfloat16
arrays are stored as ml_dtypes' ``<V2`` (float32 runs keep storing a bfloat16 output widened,
as their cached samples do). Narrow outputs are compared with torch.testing's defaults for the
dtype, and a wrong result is measured against a float64 evaluation of the same sample
(``exact_reference``): when Ember is the nearer of the two, it is reported as eager's
rounding (kind ``precision``), not as a wrong result.

``check`` runs the *stages* in order on every exported sample of the index (a sample
passes when every selected stage passes; the first failing stage's error is what the
report groups by) and writes a markdown report, by default
``tools/bench/results/opinfo_<last stage>.md`` (``..._subset.md`` with ``--subset``,
none with ``--ops``), ending its output with the line
``N passed, M failed``. The stages (``--stages``, default ``import,cpu``):

``import``  ``ember import X.pt2``: the torch.export frontend plus the IR verifier.
``tpu``     ``ember compile X.pt2 --target tpu``, the StableHLO run on XLA (jaxlib's CPU
            client, in-process through ``ember.xla``) on ``arg*``, compared like ``cpu``.
``cpu``     ``ember compile X.pt2 --target cpu``, ``ember run`` on ``arg*`` of the .npz,
            and a comparison of its outputs with ``out*`` (``compare_outputs``, with the
            dtype-aware ``TOLERANCES``). Failures are classified as ``compile``, ``run``
            or ``wrong result`` (with max abs/rel error). The report also lists the
            *claimed ops* (``claimed_targets``): core ATen targets every relevant sample
            containing them passes.

A stage is a class with a ``name`` and a ``run(sample, ctx) -> StageResult`` method
registered in ``STAGES``. ``--write-expected`` records every sample's pass/fail in
``tools/bench/opinfo_subset_expected.json`` (with ``--subset``), which
``tools/python/tests/test_opinfo_subset.py`` compares against.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as _dt
import hashlib
import io
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python" / "python"))
from ember.export import write_npz  # noqa: E402  (byte-reproducible, atomic)

PROG = "python tools/bench/opinfo.py"
HARNESS_VERSION = 1  # bump to invalidate every cached sample
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache/ember/opinfo"))
DEFAULT_REPORT_DIR = REPO / "tools" / "bench" / "results"  # opinfo_<last stage>.md
DEFAULT_EXPECTED = REPO / "tools" / "bench" / "opinfo_subset_expected.json"
DEFAULT_STAGES = "import,cpu"
DEFAULT_EMBER = REPO / "target" / "debug" / "ember"

# A CI-size run: common OpInfos (by OpInfo name; every variant of a name is taken).
SUBSET = [
    "add", "mul", "sub", "div", "exp", "log", "tanh", "sigmoid", "nn.functional.relu",
    "softmax", "log_softmax", "sum", "mean", "amax", "matmul", "mm", "bmm", "addmm",
    "cat", "stack", "transpose", "permute", "reshape", "view", "where",
    "nn.functional.layer_norm", "nn.functional.gelu", "nn.functional.embedding",
    "index_select", "gather",
]

# --dtype choices; float32 is the default run, the others sample every OpInfo that supports them.
DTYPES = ["float32", "bfloat16", "float16"]
# Report-name suffixes: opinfo_cpu.md, opinfo_cpu_bf16.md, ...
DTYPE_SUFFIX = {"float32": "", "bfloat16": "_bf16", "float16": "_f16"}

# float32 first; an OpInfo that does not support it on cpu (integer/bool-only ops)
# is sampled with the first of these it supports.
FALLBACK_DTYPES = ["float32", "int64", "int32", "bool", "complex64"]


# ----------------------------------------------------------------------------
# shared helpers


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def first_line(text: str) -> str:
    for line in str(text).strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=True) + "\n").encode())


def op_id(name: str, variant: str) -> str:
    """`name` or `name.variant`: how ops are named on the command line and in reports."""
    return f"{name}.{variant}" if variant else name


def index_path(cache: Path, dtype: str = "float32") -> Path:
    """One index per --dtype (index.json for float32, as before dtypes were selectable): the
    sample files themselves share the cache, their keys include the dtype."""
    return cache / ("index.json" if dtype == "float32" else f"index_{dtype}.json")


def load_index(cache: Path, dtype: str = "float32") -> list[dict[str, Any]]:
    path = index_path(cache, dtype)
    if not path.exists():
        return []
    return json.loads(path.read_text())["entries"]


def save_index(cache: Path, entries: list[dict[str, Any]], torch_version: str, dtype: str = "float32",
               skipped: list[str] | None = None, max_samples: int | None = None) -> None:
    entries = sorted(entries, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"]))
    meta: dict[str, Any] = {
        "harness_version": HARNESS_VERSION,
        "torch_version": torch_version,
        "dtype": dtype,
        "entries": entries,
    }
    if skipped is not None:
        meta["unsupported_opinfos"] = sorted(skipped)
    if max_samples is not None:
        meta["max_samples_per_op"] = max_samples
    write_json(index_path(cache, dtype), meta)


def select_names(args: argparse.Namespace) -> set[str] | None:
    """OpInfo names / name.variant ids chosen by --subset and --ops (None: all)."""
    chosen: set[str] | None = None
    if args.subset:
        chosen = set(SUBSET)
    if args.ops:
        ops = {o.strip() for o in args.ops.split(",") if o.strip()}
        chosen = ops if chosen is None else chosen | ops
    return chosen


def matches(chosen: set[str] | None, name: str, variant: str) -> bool:
    return chosen is None or name in chosen or op_id(name, variant) in chosen


# ----------------------------------------------------------------------------
# export


def _describe(x: Any) -> str:
    """Shapes/dtypes of tensors, repr of everything else (part of the cache key)."""
    import torch

    if isinstance(x, torch.Tensor):
        dt = str(x.dtype).removeprefix("torch.")
        shape = "x".join(str(d) for d in x.shape)
        if x.layout != torch.strided:
            extra = f" {str(x.layout).removeprefix('torch.')}"
        else:
            extra = "" if x.is_contiguous() else " noncontig"
        return f"T[{shape}]{dt}{extra}"
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_describe(v) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner}{',' if len(x) == 1 else ''})"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k}={_describe(v)}" for k, v in x.items()) + "}"
    r = repr(x)
    # Callables and other objects with addresses would make keys unstable.
    return re.sub(r" at 0x[0-9a-f]+", "", r)


def describe_sample(sample: Any) -> str:
    parts = [_describe(sample.input)]
    parts += [_describe(a) for a in sample.args]
    parts += [f"{k}={_describe(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)


def sample_key(name: str, variant: str, index: int, dtype: str, desc: str, torch_version: str) -> str:
    blob = json.dumps([HARNESS_VERSION, name, variant, index, dtype, desc, torch_version])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _target_name(t: Any) -> str:
    import torch

    if isinstance(t, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(t)  # aten.add.Tensor
    mod = getattr(t, "__module__", None) or ""
    nm = getattr(t, "__name__", None) or getattr(t, "name", None) or str(t)
    if callable(nm):
        nm = nm()
    return f"{mod}.{nm}" if mod else str(nm)


def _to_numpy(t: Any, narrow_bf16: bool = True) -> Any:
    import torch

    t = t.detach().cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype == torch.bfloat16:
        if not narrow_bf16:
            # float32 runs keep their cached samples' convention: a bfloat16 output (of a
            # cast) stored widened; the comparison widens Ember's alike.
            return t.float().contiguous().numpy()
        import ml_dtypes  # numpy has no bfloat16; write_npz stores it as `<V2`

        return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.contiguous().numpy()


def _short_error(stage: str, exc: BaseException) -> str:
    return f"{stage}: {type(exc).__name__}: {first_line(str(exc))}"[:500]


def _make_module(op: Any, sample: Any) -> tuple[Any, tuple[Any, ...]]:
    """An nn.Module taking the sample's tensors as inputs and closing over the rest."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    tensor_pos = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    fn = op.op

    class OpSample(torch.nn.Module):
        def forward(self, *tensors: Any) -> Any:
            filled = list(leaves)
            for pos, t in zip(tensor_pos, tensors):
                filled[pos] = t
            inp, a, kw = pytree.tree_unflatten(filled, spec)
            return fn(inp, *a, **kw)

    return OpSample().eval(), tuple(leaves[i] for i in tensor_pos)


def export_sample(op: Any, sample: Any, entry: dict[str, Any], cache: Path) -> None:
    """Export one sample into the cache; fills entry's status/error/aten_targets."""
    import torch
    from torch.utils import _pytree as pytree

    t0 = time.monotonic()
    key = entry["key"]
    try:
        mod, inputs = _make_module(op, sample)
        entry["num_inputs"] = len(inputs)
        try:
            with torch.no_grad():
                ref = mod(*[t.clone() for t in inputs])
        except Exception as exc:
            raise _Stage("eager", exc) from exc
        out_leaves = [x for x in pytree.tree_leaves(ref) if isinstance(x, torch.Tensor)]
        try:
            ep = torch.export.export(mod, inputs).run_decompositions()
        except Exception as exc:
            raise _Stage("export", exc) from exc
        targets = set()
        for node in ep.graph.nodes:
            node.meta.pop("from_node", None)  # run-dependent object ids
            if node.op == "call_function":
                targets.add(_target_name(node.target))
        entry["aten_targets"] = sorted(targets)
        try:
            pt2_buf = io.BytesIO()
            torch.export.save(ep, pt2_buf)
            keep = entry["dtype"] in ("bfloat16", "float16")  # see _to_numpy
            arrays = {f"arg{i}": _to_numpy(t, keep) for i, t in enumerate(inputs)}
            arrays.update({f"out{i}": _to_numpy(t, keep) for i, t in enumerate(out_leaves)})
        except Exception as exc:
            raise _Stage("save", exc) from exc
        write_atomic(cache / f"{key}.pt2", pt2_buf.getvalue())
        write_npz(cache / f"{key}.npz", arrays)
        entry["num_outputs"] = len(out_leaves)
        entry["status"] = "exported"
        entry["error"] = None
    except _Stage as st:
        entry["status"] = "export_failed"
        entry["error"] = _short_error(st.stage, st.exc)
    except BaseException as exc:  # noqa: BLE001 - one bad sample must not stop the run
        if isinstance(exc, KeyboardInterrupt):
            raise
        entry["status"] = "export_failed"
        entry["error"] = _short_error("harness", exc)
    entry["export_seconds"] = round(time.monotonic() - t0, 3)


class _Stage(Exception):
    def __init__(self, stage: str, exc: BaseException):
        super().__init__(stage)
        self.stage, self.exc = stage, exc


def _pick_dtype(op: Any, requested: str = "float32") -> Any:
    """The dtype op's samples are drawn in: the requested one, or for float32 runs, the
    first of FALLBACK_DTYPES the op supports (None: a narrow dtype the op does not support)."""
    import torch

    if requested != "float32":
        return getattr(torch, requested) if supports(op, requested) else None
    try:
        supported = op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        return torch.float32
    for name in FALLBACK_DTYPES:
        dt = getattr(torch, name)
        if dt in supported:
            return dt
    return torch.float32


def supports(op: Any, dtype: str) -> bool:
    import torch

    try:
        return getattr(torch, dtype) in op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        return False


_OP_DB: list[Any] | None = None


def _op_db() -> list[Any]:
    global _OP_DB
    if _OP_DB is None:
        from torch.testing._internal.common_methods_invocations import op_db

        _OP_DB = list(op_db)
    return _OP_DB


def _worker_init() -> None:
    import torch
    import warnings

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    _op_db()


def export_op(db_index: int, cache_s: str, max_samples: int, force: bool, requested: str = "float32") -> dict[str, Any]:
    """Export up to max_samples samples of op_db[db_index]. Runs in a worker process."""
    import torch

    cache = Path(cache_s)
    op = _op_db()[db_index]
    t0 = time.monotonic()
    tv = torch.__version__
    entries: list[dict[str, Any]] = []
    note = None
    dtype = _pick_dtype(op, requested)
    dt_name = str(dtype).removeprefix("torch.")
    torch.manual_seed(0)
    try:
        samples = iter(op.sample_inputs("cpu", dtype))
        for index in range(max_samples):
            try:
                sample = next(samples)
            except StopIteration:
                break
            desc = describe_sample(sample)
            key = sample_key(op.name, op.variant_test_name, index, dt_name, desc, tv)
            meta = cache / f"{key}.json"
            if not force and meta.exists():
                cached = json.loads(meta.read_text())
                if cached["status"] != "exported" or (cache / f"{key}.pt2").exists():
                    cached["cached"] = True
                    entries.append(cached)
                    continue
            entry = {
                "op": op.name, "variant_test_name": op.variant_test_name,
                "sample_index": index, "key": key, "dtype": dt_name, "sample": desc[:400],
                "status": "export_failed", "error": None, "aten_targets": [],
            }
            export_sample(op, sample, entry, cache)
            write_json(meta, entry)
            entries.append(entry)
    except Exception as exc:  # noqa: BLE001 - sample_inputs itself failed
        note = _short_error("sample_inputs", exc)
    return {"db_index": db_index, "entries": entries, "note": note,
            "seconds": time.monotonic() - t0}


def cmd_export(args: argparse.Namespace) -> int:
    import torch

    cache = Path(args.cache).expanduser()
    cache.mkdir(parents=True, exist_ok=True)
    chosen = select_names(args)
    db = _op_db()
    todo = [i for i, op in enumerate(db) if matches(chosen, op.name, op.variant_test_name)]
    if chosen:
        known = {op.name for op in db} | {op_id(op.name, op.variant_test_name) for op in db}
        for name in sorted(chosen - known):
            log(f"warning: no OpInfo named {name!r}")
    dtype = args.dtype
    skipped: list[str] | None = None
    if dtype != "float32":
        # A narrow-dtype run covers the OpInfos that declare the dtype on cpu; the others
        # (integer-only ops, ...) are the float32 run's, not re-sampled in another dtype.
        skipped = [op_id(db[i].name, db[i].variant_test_name) for i in todo if not supports(db[i], dtype)]
        todo = [i for i in todo if supports(db[i], dtype)]
    if args.limit_ops is not None:
        todo = todo[: args.limit_ops]
    log(f"exporting {len(todo)} OpInfo(s) in {dtype}, up to {args.max_samples_per_op} samples each, "
        f"into {cache} with {args.jobs} job(s)"
        + (f"; {len(skipped)} selected OpInfo(s) do not support {dtype} on cpu" if skipped else ""))

    index = {(e["op"], e["variant_test_name"], e["sample_index"]): e for e in load_index(cache, dtype)}
    t0 = time.monotonic()
    done = 0
    totals = Counter()

    def absorb(res: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        op = db[res["db_index"]]
        # Forget this op's old entries (e.g. samples past a smaller --max-samples-per-op).
        for k in [k for k in index if k[0] == op.name and k[1] == op.variant_test_name]:
            del index[k]
        c = Counter()
        if res["note"]:
            # sample_inputs raised or the worker died: one pseudo-sample (index -1) says so.
            res["entries"].append({
                "op": op.name, "variant_test_name": op.variant_test_name, "sample_index": -1,
                "key": None, "dtype": None, "sample": "(no sample)", "status": "export_failed",
                "error": res["note"], "aten_targets": [],
            })
        for e in res["entries"]:
            index[(e["op"], e["variant_test_name"], e["sample_index"])] = e
            c[e["status"]] += 1
            c["cached"] += bool(e.pop("cached", False))
        totals.update(c)
        extra = f"  [{res['note']}]" if res["note"] else ""
        fail = next((e["error"] for e in res["entries"] if e["status"] != "exported"), None)
        if fail:
            extra += f"  first failure: {fail[:120]}"
        log(f"[{done}/{len(todo)}] {op_id(op.name, op.variant_test_name)}: "
            f"{c['exported']} exported, {c['export_failed']} failed, {c['cached']} cached "
            f"({res['seconds']:.1f}s){extra}")
        if done % 10 == 0:
            save_index(cache, list(index.values()), torch.__version__, dtype, skipped, args.max_samples_per_op)

    call = (str(cache), args.max_samples_per_op, args.force, dtype)
    if args.jobs <= 1:
        _worker_init()
        for i in todo:
            absorb(export_op(i, *call))
    else:
        run_pool(todo, call, args.jobs, absorb, db)

    save_index(cache, list(index.values()), torch.__version__, dtype, skipped, args.max_samples_per_op)
    log(f"export done in {time.monotonic() - t0:.0f}s: {totals['exported']} exported, "
        f"{totals['export_failed']} export_failed ({totals['cached']} from cache); "
        f"index: {index_path(cache, dtype)}")
    return 0


def run_pool(todo: list[int], call: tuple, jobs: int, absorb: Callable[[dict], None], db: list[Any],
             fn: Callable[..., dict[str, Any]] = export_op) -> None:
    """Run export_op over todo in worker processes; a crashed worker costs one op, not the run."""
    ctx = mp.get_context("spawn")
    pending = list(todo)
    retry: list[int] = []
    while pending or retry:
        # After a crash, the ops that were in flight are retried one at a time so the
        # op that kills its worker is found and recorded.
        solo = bool(retry)
        batch = retry[:1] if solo else pending
        with cf.ProcessPoolExecutor(1 if solo else jobs, mp_context=ctx, initializer=_worker_init) as pool:
            in_flight: dict[cf.Future, int] = {}
            queue = list(batch)
            try:
                while queue or in_flight:
                    while queue and len(in_flight) < (1 if solo else jobs) * 2:
                        i = queue.pop(0)
                        in_flight[pool.submit(fn, i, *call)] = i
                    finished, _ = cf.wait(in_flight, return_when=cf.FIRST_COMPLETED)
                    for fut in finished:
                        res = fut.result()  # raises BrokenProcessPool if the worker died
                        del in_flight[fut]
                        absorb(res)
            except cf.process.BrokenProcessPool:
                lost = list(in_flight.values())
                if solo:
                    op = db[lost[0]] if lost else db[batch[0]]
                    log(f"worker crashed on {op_id(op.name, op.variant_test_name)}")
                    absorb({"db_index": batch[0], "entries": [], "seconds": 0.0,
                            "note": "worker process crashed while exporting this op"})
                    retry = retry[1:]
                    continue
                retry.extend(lost)
                pending = queue
                continue
        if solo:
            retry = retry[1:]
        else:
            pending = []


# ----------------------------------------------------------------------------
# check: stages


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


# ----------------------------------------------------------------------------
# check: the cpu stage and its comparison

# (rtol, atol) by output dtype, checked as |got - want| <= atol + rtol * |want|
# elementwise, like torch.testing.assert_close. These are assert_close's defaults
# except float32 (and complex64), where torch uses rtol 1.3e-6 (~11 ulp) and we use
# 1e-4 (~840 ulp): Ember fuses elementwise chains into single kernels (values stay in
# registers, LLVM may contract a*b+c into FMAs), sums and GEMMs accumulate in a
# different (blocked, vectorized) order than ATen, and exp/tanh/erf/sigmoid are inline
# polynomial approximations (a few ulp each, compounded through softmax, gelu, ...),
# so correct results can differ from eager by more than torch's ~11 ulp: the OpInfo sweep
# measures relative errors up to ~1e-4 on gelu/layer_norm and more near zero (where atol
# takes over). Real lowering bugs (wrong formula, axis, broadcast or index) show up as
# errors of 1e-2 and more, far above 1e-4. Integer and bool outputs must match exactly; NaN must be at the same
# positions; infinities must match in sign; shapes and dtypes must match.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1e-4, 1e-5),
    "complex64": (1e-4, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
}

# Graphs whose eager outputs are random draws: only the outputs' count, shapes and
# dtypes are compared (the sample passes as "values not compared").
RANDOM_TARGET = re.compile(
    r"^aten\.(bernoulli|cauchy|exponential|geometric|log_normal|multinomial|native_dropout|"
    r"normal|normal_functional|poisson|rand|rand_like|randint|randint_like|randn|randn_like|"
    r"randperm|uniform)\.")
# OpInfos whose eager outputs are uninitialized memory.
UNINITIALIZED_OPINFOS = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                         "new_empty_strided"}


def values_not_comparable(sample: dict[str, Any]) -> str | None:
    """Why the sample's output values are not comparable with eager (None: they are)."""
    rnd = sorted(t for t in sample.get("aten_targets", []) if RANDOM_TARGET.match(t))
    if rnd:
        return f"random op ({', '.join(rnd)})"
    if sample.get("op") in UNINITIALIZED_OPINFOS:
        return "uninitialized memory"
    return None


def _fmt(x: Any) -> str:
    return f"{x:.6g}" if isinstance(x, float) else str(x)


# torch.testing.assert_close's float32 default, to count how many passes need the looser rtol.
TORCH_DEFAULT_FLOAT32 = (1.3e-6, 1e-5)


def compare_array(got: Any, want: Any, name: str) -> tuple[str | None, dict[str, Any]]:
    """(None, metrics) when got matches want within TOLERANCES, else (why not, metrics).

    For float outputs the metrics always include max_abs/max_rel (over finite elements;
    max_rel over nonzero expected values) and, for float32, ``strict_ok``: whether the
    output would also pass torch's default float32 tolerances.
    """
    import numpy as np

    if got.dtype.name == "bfloat16" and want.dtype.name == "float32":
        # A float32 run's sample stores eager bfloat16 outputs widened (see _to_numpy).
        got = got.astype(np.float32)
    info: dict[str, Any] = {"output": name, "shape": list(want.shape), "dtype": str(want.dtype)}
    if got.dtype != want.dtype:
        return f"{name}: dtype {got.dtype}, expected {want.dtype}", info
    if got.shape != want.shape:
        return f"{name}: shape {list(got.shape)}, expected {list(want.shape)}", info
    if want.size == 0:
        return None, info
    kind = "f" if want.dtype.name == "bfloat16" else want.dtype.kind  # ml_dtypes' kind is V
    if kind in "biu":
        bad = got != want
        if not bad.any():
            return None, info
        diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        info.update(mismatched=int(bad.sum()), size=int(want.size), max_abs=float(diff.max()),
                    max_rel=None, worst_index=list(idx), got=_py(got[idx]), want=_py(want[idx]),
                    rtol=0.0, atol=0.0)
        return (f"{name} {list(want.shape)} {want.dtype}: {info['mismatched']}/{want.size} elements "
                f"differ (exact compare), e.g. at {list(idx)}: got {_py(got[idx])}, "
                f"expected {_py(want[idx])}"), info
    if kind not in "fc":
        return f"{name}: cannot compare dtype {want.dtype}", info
    rtol, atol = TOLERANCES.get(want.dtype.name, (1e-4, 1e-5))
    wide = np.complex128 if kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        close = np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        finite = np.isfinite(g) & np.isfinite(w)
        diff = np.where(finite, np.abs(g - w), 0.0)
        tiny = float(_finfo(want.dtype).tiny) if kind == "f" else 0.0
        nz = finite & (np.abs(w) > tiny)  # relative error of denormals is noise
        info["max_abs"] = float(diff.max()) if finite.any() else None
        info["max_rel"] = float((diff[nz] / np.abs(w[nz])).max()) if nz.any() else None
        if want.dtype.name == "float32":
            info["strict_ok"] = bool(np.isclose(g, w, rtol=TORCH_DEFAULT_FLOAT32[0],
                                                atol=TORCH_DEFAULT_FLOAT32[1], equal_nan=True).all())
        if close.all():
            return None, info
        nan_g, nan_w = np.isnan(g), np.isnan(w)
        bad = ~close
        finite_bad = bad & finite
        if finite_bad.any():
            excess = np.where(finite_bad, diff - (atol + rtol * np.abs(w)), -np.inf)
            idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), w.shape))
        else:
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
    nan_bad = int((nan_g != nan_w).sum())
    inf_bad = int((bad & ~finite & ~nan_g & ~nan_w).sum())
    info.update(mismatched=int(bad.sum()), size=int(w.size), nan_mismatch=nan_bad,
                inf_mismatch=inf_bad, worst_index=list(idx), got=_py(got[idx]),
                want=_py(want[idx]), rtol=rtol, atol=atol)
    parts = [f"{name} {list(want.shape)} {want.dtype}: {info['mismatched']}/{w.size} elements "
             f"differ (rtol {rtol:g}, atol {atol:g})"]
    if finite_bad.any():
        parts.append(f"max abs err {info['max_abs']:.3g}")
        if info["max_rel"] is not None:
            parts.append(f"max rel err {info['max_rel']:.3g}")
    if nan_bad:
        parts.append(f"NaN positions differ at {nan_bad} element(s)")
    if inf_bad:
        parts.append(f"infinities differ at {inf_bad} element(s)")
    parts.append(f"worst at {list(idx)}: got {_fmt(info['got'])}, expected {_fmt(info['want'])}")
    return "; ".join(parts), info


def _finfo(dt: Any) -> Any:
    if dt.name == "bfloat16":
        import ml_dtypes

        return ml_dtypes.finfo(dt)
    import numpy as np

    return np.finfo(dt)


def as_bf16(a: Any) -> Any:
    """An array read from an .npz: a 2-byte void is bfloat16's bit pattern (ml_dtypes'
    convention, which Ember's .npz writer and write_npz follow)."""
    import numpy as np

    if a.dtype.type is np.void and a.dtype.names is None and a.dtype.itemsize == 2:
        import ml_dtypes

        return a.view(ml_dtypes.bfloat16)
    return a


def npz_arrays(npz: Path, prefix: str) -> list[Any]:
    """prefix0, prefix1, ... of an .npz, in order, bfloat16 as ml_dtypes'."""
    import numpy as np

    with np.load(npz) as z:
        return [as_bf16(z[f"{prefix}{i}"]) for i in range(sum(k.startswith(prefix) for k in z.files))]


def to_torch(a: Any) -> Any:
    import torch

    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view("int16").copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _py(x: Any) -> Any:
    """A numpy scalar as a JSON-able Python value (NaN/inf as strings)."""
    import math

    v = x.item() if hasattr(x, "item") else x
    if isinstance(v, complex):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


def read_outputs(npz: Path) -> list[Any]:
    """out0, out1, ... of an .npz, in order."""
    return npz_arrays(npz, "out")


def compare_lists(got: Sequence[Any], want: Sequence[Any], values: bool = True
                  ) -> tuple[str | None, dict[str, Any]]:
    """(None, info) when the outputs got match want, else (why not, info of the first mismatch).

    With values=False only the number, shapes and dtypes of the outputs are compared. On
    a match, info aggregates the float metrics: max_abs, max_rel, strict_ok.
    """
    if len(want) != len(got):
        return f"{len(got)} outputs, expected {len(want)}", {}
    agg: dict[str, Any] = {}
    for i, (w, g) in enumerate(zip(want, got)):
        if not values:
            if g.dtype != w.dtype:
                return f"out{i}: dtype {g.dtype}, expected {w.dtype}", {}
            if g.shape != w.shape:
                return f"out{i}: shape {list(g.shape)}, expected {list(w.shape)}", {}
            continue
        err, info = compare_array(g, w, f"out{i}")
        if err:
            return err, info
        for k in ("max_abs", "max_rel"):
            if info.get(k) is not None:
                agg[k] = max(agg.get(k, 0.0), info[k])
        if "strict_ok" in info:
            agg["strict_ok"] = agg.get("strict_ok", True) and info["strict_ok"]
    return None, agg


def compare_outputs(npz: Path, got_npz: Path, values: bool = True) -> tuple[str | None, dict[str, Any]]:
    """compare_lists of got_npz's out0.. against npz's out0.. (the eager outputs)."""
    return compare_lists(read_outputs(got_npz), read_outputs(npz), values)


def decomposition_mismatch(sample: dict[str, Any], ctx: Context, got_npz: Path | None = None) -> str | None:
    """For a wrong result: does torch's own decomposed graph disagree with eager the same way?

    Runs the saved (decomposed) program with torch on the sample's inputs. If its outputs
    differ from eager but Ember's match them, the decomposition changed the op's results
    (e.g. a different auxiliary output) and Ember is not at fault: returns the difference
    from eager. Else (or without torch) None.
    """
    try:
        import numpy as np
        import torch
        from torch.utils import _pytree as pytree

        key = sample["key"]
        args = [to_torch(a) for a in npz_arrays(ctx.cache / f"{key}.npz", "arg")]
        ep = torch.export.load(str(ctx.cache / f"{key}.pt2"))
        with torch.no_grad():
            out = ep.module()(*args)
        keep = sample.get("dtype") in ("bfloat16", "float16")
        mine = [_to_numpy(t, keep) for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        vs_eager, _ = compare_lists(mine, read_outputs(ctx.cache / f"{key}.npz"))
        if vs_eager is None:
            return None
        got_npz = got_npz or ctx.workdir / f"{key}.cpu" / "got.npz"
        ember_vs_mine, _ = compare_lists(read_outputs(got_npz), mine)
        return vs_eager if ember_vs_mine is None else None
    except Exception:  # noqa: BLE001 - triage is best effort
        return None


def _find_sample(entry: dict[str, Any]) -> tuple[Any, Any] | None:
    """(OpInfo, SampleInput) an index entry was exported from, drawn again as export_op drew
    it (seed 0, same dtype); None when the redrawn sample's key differs."""
    import torch

    ops = [op for op in _op_db() if op.name == entry["op"] and op.variant_test_name == entry["variant_test_name"]]
    if not ops:
        return None
    op = ops[0]
    torch.manual_seed(0)
    for index, sample in enumerate(op.sample_inputs("cpu", getattr(torch, entry["dtype"]))):
        if index == entry["sample_index"]:
            key = sample_key(op.name, op.variant_test_name, index, entry["dtype"], describe_sample(sample),
                             torch.__version__)
            return (op, sample) if key == entry["key"] else None
    return None


def exact_reference(sample: dict[str, Any], got: Sequence[Any], cache: Path) -> dict[str, Any] | None:
    """For a wrong result of a bfloat16/float16 sample: which of Ember and eager is nearer the
    exact value? The op is run again in float64 (every input of the sample's dtype widened,
    everything else as exported) and both outputs are measured against that.

    Returns, for the first output whose Ember and eager values differ beyond the tolerances:
    "ember"/"eager", the max abs errors from the float64 value over the elements where they
    differ; "nearer", at how many of those "differing" elements Ember is at least as near;
    "ember_ok", whether all of Ember's output is within the dtype's tolerances of the float64
    value. None when the float64 evaluation is not possible.
    """
    import numpy as np
    import torch
    from torch.utils import _pytree as pytree

    try:
        found = _find_sample(sample)
        if found is None:
            return None
        op, smp = found
        narrow = getattr(torch, sample["dtype"])
        mod, _ = _make_module(op, smp)
        npz = cache / f"{sample['key']}.npz"
        args = [to_torch(a) for a in npz_arrays(npz, "arg")]
        wide = [a.double() if a.dtype == narrow else a for a in args]
        with torch.no_grad():
            out = mod(*wide)
        ref = [t.detach().double().numpy() if t.is_floating_point() else t.detach().numpy()
               for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        want = read_outputs(npz)
        if len(ref) != len(want) or len(got) != len(want):
            return None
        for i, (g, w, r) in enumerate(zip(got, want, ref)):
            if compare_array(g, w, f"out{i}")[0] is None:
                continue
            if r.shape != w.shape:
                return None
            rtol, atol = TOLERANCES.get(w.dtype.name, (0.0, 0.0))
            r64 = r.astype(np.float64)
            g64, w64 = g.astype(np.float64), w.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                # Only where Ember and eager disagree: elsewhere both carry the same output
                # rounding, which would dominate a max over the whole tensor.
                bad = ~np.isclose(g64, w64, rtol=rtol, atol=atol, equal_nan=True)
                fin = bad & np.isfinite(r64) & np.isfinite(g64) & np.isfinite(w64)
                dg, dw = np.abs(g64 - r64), np.abs(w64 - r64)
                eg = float(dg[fin].max()) if fin.any() else 0.0
                ew = float(dw[fin].max()) if fin.any() else 0.0
                nearer = int((dg[fin] <= dw[fin]).sum())
                ok = bool(np.isclose(g64, r64, rtol=rtol, atol=atol, equal_nan=True).all())
            return {"output": f"out{i}", "ember": eg, "eager": ew, "ember_ok": ok,
                    "nearer": nearer, "differing": int(bad.sum()), "finite": bool(fin.sum() == bad.sum())}
        return None
    except Exception:  # noqa: BLE001 - triage is best effort
        return None


def reclassify_precision(sample: dict[str, Any], got_npz: Path, cache: Path) -> None:
    """A narrow-dtype wrong result where Ember is within the dtype's tolerances of the float64
    value, or at least as near it as eager at every element where the two differ, is eager's
    rounding, not an Ember bug."""
    try:
        got = read_outputs(got_npz)
    except Exception:  # noqa: BLE001
        return
    ref = exact_reference(sample, got, cache)
    c = sample["check"]
    if ref is None:
        return
    c["info"] = {**(c.get("info") or {}), "exact": ref}
    if ref["ember_ok"] or (ref["finite"] and ref["nearer"] == ref["differing"]):
        c["kind"] = "precision"
        c["error"] = (f"precision: Ember's {ref['output']} is {'within tolerance of' if ref['ember_ok'] else 'nearer'} "
                      f"the float64 value (at the elements that differ from eager, max abs err "
                      f"{ref['ember']:.3g}; eager's {ref['eager']:.3g}); " + c["error"].removeprefix("wrong result: "))


def reclassify_tie_order(sample: dict[str, Any], got_npz: Path, cache: Path) -> None:
    """A wrong index output of sort/argsort/topk whose indices pick exactly the values eager's
    pick, along some dim of the first input, is a different order of equal values (torch's
    sort is not stable unless asked; Ember's is), not a wrong result."""
    import numpy as np

    if not any(t.endswith(("sort.default", "sort.stable", "topk.default")) for t in sample.get("aten_targets") or []):
        return
    try:
        got, want = read_outputs(got_npz), read_outputs(cache / f"{sample['key']}.npz")
        x = np.asarray(npz_arrays(cache / f"{sample['key']}.npz", "arg")[0])
    except Exception:  # noqa: BLE001 - triage is best effort
        return
    bad = [(g, w) for g, w in zip(got, want) if compare_array(g, w, "")[0] is not None]
    if not bad or len(got) != len(want):
        return

    def same_values(g: Any, w: Any) -> bool:
        if g.dtype.kind not in "iu" or g.shape != w.shape or g.ndim != x.ndim:
            return False
        for d in range(x.ndim):
            if all(g.shape[j] == x.shape[j] for j in range(x.ndim) if j != d) and g.min() >= 0 and g.max() < x.shape[d]:
                pick = lambda i: np.take_along_axis(x, i, d).astype(np.float64)  # noqa: E731
                if np.array_equal(pick(g), pick(w), equal_nan=True):
                    return True
        return False

    if all(same_values(g, w) for g, w in bad):
        c = sample["check"]
        c["kind"] = "tie order"
        c["error"] = "tie order: the index output picks the same values as eager's (equal values in another order); " + c["error"].removeprefix("wrong result: ")


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
            err, info = compare_outputs(npz, got, values=why_not is None)
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


def reclassify_decomposition_mismatch(sample: dict[str, Any], ctx: Context, got: Path | None = None) -> None:
    """A wrong result that torch's decomposed graph reproduces is a decomposition mismatch."""
    diff = decomposition_mismatch(sample, ctx, got)
    if diff is not None:
        c = sample["check"]
        c["kind"] = "decomposition mismatch"
        c["error"] = ("decomposition mismatch: torch's decomposed graph differs from eager "
                      f"({diff}) and Ember matches the decomposed graph")


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
        err, info = compare_lists(got, read_outputs(npz), values=why_not is None)
        if err is not None:
            np.savez(art / "got.npz", **{f"out{i}": xla.savable(g) for i, g in enumerate(got)})
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


# ----------------------------------------------------------------------------
# check: failure reasons


def _abstract_type(m: re.Match) -> str:
    """tensor<2x?x3xf32> -> tensor<…xf32>: the dtype stays, the shape goes."""
    body = m.group(1)
    dtype = body.rsplit("x", 1)[-1] if "x" in body else body
    return f"tensor<…x{dtype}>" if "x" in body else f"tensor<{dtype}>"


def failure_reason(error: str) -> str:
    """Group key of an error line: locations and concrete values stripped, op names kept."""
    msg = error
    msg = re.sub(r"^`[^`]*\.pt2`:\s*", "", msg)
    # node locations: "node `x` (from f.py:1): ", "`torch.aten.x` at node `n` (from f.py:1): "
    msg = re.sub(r"\s*at node `[^`]*`( \(from [^)]*\))?", "", msg)
    msg = re.sub(r"node `[^`]*`( \(from [^)]*\))?:\s*", "", msg)
    msg = re.sub(r"\(from [^)]*\):\s*", "", msg)
    m = re.search(r"unknown op `([^`]*)`", msg)
    if m:
        return f"unknown op `{m.group(1)}`"
    # names of graph inputs/outputs vary per sample; dtype codes are kept
    msg = re.sub(r"\b(input|output|weight) `[^`]*`", r"\1 `…`", msg)
    msg = re.sub(r"dtype code (\d+)", r"dtype code #\1", msg)
    msg = re.sub(r'`\{"(as_\w+)".*?\}`', r"`{\1: …}`", msg)
    msg = re.sub(r"tensor<([^>]*)>", _abstract_type, msg)
    msg = re.sub(r"%[A-Za-z0-9_#]+", "%…", msg)
    msg = re.sub(r"(?<![A-Za-z_.\d#])-?\d+(\.\d+)?(e-?\d+)?(?![A-Za-z_\d])", "N", msg)
    msg = re.sub(r"\[(N, )*N\]", "[…]", msg)
    return msg[:220]


# ----------------------------------------------------------------------------
# check: command


def ember_known_ops(ember: Path) -> set[str] | None:
    try:
        p = subprocess.run([str(ember), "ops", "--dialect", "torch"], capture_output=True, text=True, timeout=60)
    except Exception:  # noqa: BLE001
        return None
    if p.returncode != 0:
        return None
    return {l.strip() for l in p.stdout.splitlines() if l and not l[0].isspace()}


def ember_name(target: str) -> str | None:
    """aten.add.Tensor -> torch.aten.add.Tensor, aten.sum.default -> torch.aten.sum."""
    if not target.startswith(("aten.", "prims.", "quantized_decomposed.")):
        return None
    return "torch." + target.removesuffix(".default")


def md_escape(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def code(s: Any, limit: int = 0) -> str:
    """A markdown code span that may itself contain backticks."""
    s = " ".join(str(s).split())
    if limit and len(s) > limit:
        s = s[: limit - 1] + "…"
    return "`` " + s.replace("|", "\\|") + " ``" if s else ""


def drop_locations(error: str) -> str:
    """An error line without its node/source locations (values kept)."""
    msg = re.sub(r"\s*at node `[^`]*`( \(from [^)]*\))?", "", error)
    msg = re.sub(r"node `[^`]*`( \(from [^)]*\))?:\s*", "", msg)
    return re.sub(r"\(from [^)]*\):\s*", "", msg)


def home_path(p: Any) -> str:
    s, home = str(p), os.path.expanduser("~")
    return "~" + s[len(home):] if s.startswith(home + os.sep) else s


def sample_id(e: dict[str, Any]) -> str:
    """`op.variant#i`: a sample's name in reports and in the expectations file."""
    return f"{op_id(e['op'], e['variant_test_name'])}#{e['sample_index']}"


def reason_key(e: dict[str, Any]) -> str:
    """Group key of a failed sample: stage, then the error with values stripped.

    Wrong results are grouped by the graph's ATen targets (a wrong result is a bug in
    the lowering of one of them), everything else by failure_reason of the error line.
    """
    c = e["check"]
    if c.get("kind") in ("wrong result", "precision"):
        targets = ", ".join(e.get("aten_targets") or []) or "(no targets)"
        if len(targets) > 200:
            targets = targets[:199] + "…"
        return f"{c['stage']}: {c['kind']}: graph of {targets}"
    return f"{c['stage']}: " + failure_reason(c["error"] or "")


_NO_LOWERING = re.compile(r"op `([^`]+)`.*has no CPU lowering yet")


def unlowered_op(e: dict[str, Any]) -> str | None:
    """The op a cpu-stage `has no CPU lowering yet` failure names, else None."""
    c = e.get("check") or {}
    if c.get("stage") != "cpu" or c.get("kind") != "compile":
        return None
    m = _NO_LOWERING.search(c.get("error") or "")
    return m.group(1) if m else None


def claimed_targets(exported: list[dict[str, Any]], known: set[str] | None, unlowered: set[str]
                    ) -> tuple[list[str], dict[str, Counter], int]:
    """Core ATen targets every relevant sample containing them passes.

    The relevant samples are the exported ones whose graph contains only supported
    targets (each has a definition in `ember ops --dialect torch` and no sample failed
    with `has no CPU lowering yet` naming it) and whose values are compared (no random
    or uninitialized outputs) and not a decomposition mismatch (torch's decomposed graph
    itself differs from eager there). Returns (claimed, per-target counts over those samples,
    number of those samples).
    """
    def supported(t: str) -> bool:
        en = ember_name(t)
        return en is not None and (known is None or en in known) and en not in unlowered

    relevant = [e for e in exported if e["aten_targets"] and not values_not_comparable(e)
                and e["check"].get("kind") != "decomposition mismatch"
                and all(supported(t) for t in e["aten_targets"])]
    stat: dict[str, Counter] = defaultdict(Counter)
    for e in relevant:
        for t in e["aten_targets"]:
            stat[t]["samples"] += 1
            stat[t]["passed" if e["check"]["ok"] else "failed"] += 1
    claimed = sorted(t for t, c in stat.items() if t.startswith("aten.") and c["failed"] == 0)
    return claimed, stat, len(relevant)


def expected_map(entries: list[dict[str, Any]]) -> dict[str, str]:
    """sample id -> `pass` | `fail: REASON` | `not exported: REASON` (the expectations file)."""
    out: dict[str, str] = {}
    for e in entries:
        if e["sample_index"] < 0 or e["status"] != "exported":
            out[sample_id(e)] = "not exported: " + failure_reason(e["error"] or "")
        elif e["check"]["ok"]:
            out[sample_id(e)] = "pass"
        else:
            out[sample_id(e)] = "fail: " + reason_key(e)
    return out


def cmd_check(args: argparse.Namespace) -> int:
    import threading

    cache = Path(args.cache).expanduser()
    ember = Path(args.ember)
    if not ember.exists():
        log(f"error: no ember binary at {ember} (cargo build -p ember-tools, or --ember PATH)")
        return 2
    entries = load_index(cache, args.dtype)
    if not entries:
        dt = "" if args.dtype == "float32" else f" --dtype {args.dtype}"
        log(f"error: {index_path(cache, args.dtype)} is missing or empty; run `{PROG} export{dt}` first")
        return 2
    index_meta = json.loads(index_path(cache, args.dtype).read_text())
    chosen = select_names(args)
    entries = [e for e in entries if matches(chosen, e["op"], e["variant_test_name"])]
    if args.max_samples_per_op is not None:
        entries = [e for e in entries if e["sample_index"] < args.max_samples_per_op]
    exported = [e for e in entries if e["status"] == "exported"]
    stage_names = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stage_names if s not in STAGES]
    if unknown or not stage_names:
        log(f"error: unknown stage(s) {', '.join(unknown)}; known: {', '.join(STAGES)}")
        return 2
    if args.write_expected and Path(args.write_expected).resolve() == DEFAULT_EXPECTED.resolve() and (
            not args.subset or args.ops or args.max_samples_per_op is not None or args.dtype != "float32"):
        log(f"error: {DEFAULT_EXPECTED.name} records the float32 --subset run: use --subset without "
            "--ops/--max-samples-per-op/--dtype, or --write-expected FILE")
        return 2
    stages = [STAGES[s]() for s in stage_names]
    workdir = Path(args.workdir).expanduser() if args.workdir else cache / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(ember=ember, cache=cache, workdir=workdir)

    t0 = time.monotonic()
    log(f"checking {len(exported)} exported sample(s) with stages {','.join(stage_names)} "
        f"({ember}, {args.jobs} job(s))")
    lock = threading.Lock()
    progress = Counter()

    def one(e: dict[str, Any]) -> dict[str, Any]:
        r = run_sample(e, stages, ctx)
        with lock:
            progress["done"] += 1
            progress["ok"] += r["ok"]
            if progress["done"] % 250 == 0:
                log(f"  {progress['done']}/{len(exported)} checked, {progress['ok']} passed "
                    f"({time.monotonic() - t0:.0f}s)")
        return r

    with cf.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(one, exported))
    for e, r in zip(exported, results):
        e["check"] = r
    wrong = [e for e in exported if e["check"]["kind"] == "wrong result"]
    if wrong:
        log(f"triage of {len(wrong)} wrong result(s): running their decomposed graphs in torch")
        for e in wrong:
            STAGES[e["check"]["stage"]].triage(e, ctx)  # type: ignore[attr-defined]
    seconds = time.monotonic() - t0

    # per op
    per_op: dict[str, dict[str, Any]] = {}
    for e in entries:
        oid = op_id(e["op"], e["variant_test_name"])
        row = per_op.setdefault(oid, {"samples": 0, "export_failed": 0, "passed": 0, "failed": 0,
                                      "stages": Counter(), "first_error": None,
                                      "first_export_error": None})
        row["samples"] += 1
        if e["status"] != "exported":
            row["export_failed"] += 1
            row["first_export_error"] = row["first_export_error"] or e["error"]
            continue
        row["stages"].update(e["check"]["passed"])
        if e["check"]["ok"]:
            row["passed"] += 1
        else:
            row["failed"] += 1
            row["first_error"] = row["first_error"] or e["check"]["error"]

    # per ATen target
    known = ember_known_ops(ember)
    per_target: dict[str, Counter] = defaultdict(Counter)
    for e in exported:
        for t in e["aten_targets"]:
            per_target[t]["samples"] += 1
            per_target[t]["passed" if e["check"]["ok"] else "failed"] += 1
            c = e["check"]
            if "cpu" in c["passed"] or (c["stage"] == "cpu" and c["kind"] != "compile"):
                per_target[t]["compiled"] += 1

    # failure reasons
    reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in exported:
        if not e["check"]["ok"]:
            reasons[reason_key(e)].append(e)
    export_reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        if e["status"] != "exported":
            export_reasons[failure_reason(e["error"] or "")].append(e)
    unlowered: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in exported:
        op = unlowered_op(e)
        if op:
            unlowered[op].append(e)
    claimed, claim_stat, n_relevant = claimed_targets(exported, known, set(unlowered))

    n_pass = sum(r["ok"] for r in results)
    n_fail = len(results) - n_pass

    # console table
    width = max([len(k) for k in per_op] + [10])
    cols = "".join(f"  {s:>6}" for s in stage_names)
    print(f"{'OpInfo':<{width}}  samples{cols}  failed  export_failed  first error")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"] or "")[:110]
        vals = "".join(f"  {r['stages'][s]:>6}" for s in stage_names)
        print(f"{oid:<{width}}  {r['samples']:>7}{vals}  {r['failed']:>6}  "
              f"{r['export_failed']:>13}  {err}")
    print()
    print("per stage (exported samples reaching it: passed/failed):")
    reached = len(exported)
    for s in stage_names:
        failed_here = sum(1 for e in exported if e["check"]["stage"] == s)
        kinds = Counter(e["check"]["kind"] for e in exported if e["check"]["stage"] == s and e["check"]["kind"])
        extra = f"  ({', '.join(f'{n} {k}' for k, n in kinds.most_common())})" if kinds else ""
        print(f"  {s}: {reached - failed_here} passed, {failed_here} failed{extra}")
        reached -= failed_here
    print()
    print("top failure reasons:")
    for reason, es in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:15]:
        print(f"  {len(es):>5}  {reason[:150]}  [{es[0]['key']}]")
    print(f"claimed core ATen targets: {len(claimed)} (of {len(claim_stat)} in {n_relevant} samples "
          "with only supported targets)")
    print(f"checked in {seconds:.1f}s; {len(entries) - len(exported)} sample(s) were not exported")
    print(f"{n_pass} passed, {n_fail} failed")

    report = args.report
    if report is None and not args.ops:  # --ops: a look at a few ops, no report by default
        suffix = DTYPE_SUFFIX[args.dtype] + ("_subset" if args.subset else "")
        report = str(DEFAULT_REPORT_DIR / f"opinfo_{stage_names[-1]}{suffix}.md")
    if report:
        text = render_report(
            entries=entries, exported=exported, per_op=per_op, per_target=per_target,
            reasons=reasons, export_reasons=export_reasons, known=known, n_pass=n_pass,
            n_fail=n_fail, seconds=seconds, stage_names=stage_names, ember=ember,
            torch_version=index_meta.get("torch_version", "?"), args=args,
            unlowered=unlowered, claimed=claimed, claim_stat=claim_stat, n_relevant=n_relevant,
            unsupported=index_meta.get("unsupported_opinfos"),
            max_export=index_meta.get("max_samples_per_op"),
        )
        write_atomic(Path(report), text.encode())
        log(f"wrote {report}")
    if args.json:
        write_json(Path(args.json), {"passed": n_pass, "failed": n_fail, "stages": stage_names,
                                     "claimed": claimed, "samples": [
            {"id": sample_id(e), **{k: e.get(k) for k in (
                "op", "variant_test_name", "sample_index", "key", "sample", "status", "error",
                "aten_targets", "check")}} for e in entries]})
    if args.write_expected:
        path = Path(args.write_expected)
        write_json(path, {
            "about": (f"Per-sample results of `{PROG} check{' --subset' if args.subset else ''} "
                      f"--stages {','.join(stage_names)}`; tools/python/tests/test_opinfo_subset.py "
                      "fails when a sample listed as `pass` no longer passes. Regenerate with "
                      f"`{PROG} check --subset --write-expected`."),
            "torch_version": index_meta.get("torch_version", "?"),
            "stages": stage_names,
            "passed": n_pass,
            "failed": n_fail,
            "samples": expected_map(entries),
        })
        log(f"wrote {path}")
    return 0


def _repro(stage: str, key: str, cache: Any) -> str:
    c = home_path(cache)
    if stage == "cpu":
        return (f"ember compile {c}/{key}.pt2 --target cpu -o /tmp/{key[:8]} && "
                f"ember run /tmp/{key[:8]} --inputs {c}/{key}.npz --outputs /tmp/{key[:8]}/got.npz")
    if stage == "tpu":
        return (f"ember compile {c}/{key}.pt2 --target tpu -o /tmp/{key[:8]} && "
                f"ember run /tmp/{key[:8]} --inputs {c}/{key}.npz --outputs /tmp/{key[:8]}/got.npz")
    return f"ember import {c}/{key}.pt2"


def _ops_list(es: list[dict[str, Any]], n: int = 6) -> str:
    ops = sorted({op_id(e["op"], e["variant_test_name"]) for e in es})
    return ", ".join(ops[:n]) + (f", … (+{len(ops) - n})" if len(ops) > n else "")


def render_report(*, entries, exported, per_op, per_target, reasons, export_reasons, known,
                  n_pass, n_fail, seconds, stage_names, ember, torch_version, args,
                  unlowered, claimed, claim_stat, n_relevant, unsupported=None, max_export=None) -> str:
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    scope = "the --subset OpInfos" if args.subset else ("--ops " + args.ops if args.ops else "all cached OpInfos")
    cpu = "cpu" in stage_names
    out: list[str] = []
    w = out.append
    dtype = getattr(args, "dtype", "float32")
    w(f"# Ember OpInfo harness: {' + '.join(stage_names)}" + ("" if dtype == "float32" else f", {dtype}"))
    w("")
    w(f"- date: {now}")
    w(f"- torch: {torch_version}")
    try:
        built = _dt.datetime.fromtimestamp(ember.stat().st_mtime).astimezone().strftime("%Y-%m-%d %H:%M")
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        built, rev = "?", ""
    w(f"- ember: `{home_path(ember)}` (built {built}; repo HEAD at check time {rev or '?'})")
    cap = (f"; capped at the first {args.max_samples_per_op} samples per OpInfo "
           "(--max-samples-per-op)" if args.max_samples_per_op is not None else "")
    w(f"- scope: {scope}; {len(per_op)} OpInfos, {len(entries)} samples "
      f"({len(exported)} exported, {len(entries) - len(exported)} failed to export){cap}")
    if dtype != "float32":
        w(f"- dtype: samples drawn in **{dtype}** (`op.sample_inputs(\"cpu\", torch.{dtype})`); "
          f"{len(unsupported or [])} OpInfos that do not list {dtype} in `supported_dtypes(\"cpu\")` "
          f"are not sampled; up to {max_export or '?'} samples per OpInfo were exported")
    w(f"- **{n_pass} passed, {n_fail} failed** (exported samples; "
      f"{100.0 * n_pass / max(1, n_pass + n_fail):.1f}% pass), checked in {seconds:.1f}s "
      f"with {args.jobs} job(s)")
    reached = len(exported)
    for s in stage_names:
        here = [e for e in exported if e["check"]["stage"] == s]
        kinds = Counter(e["check"]["kind"] for e in here if e["check"]["kind"])
        extra = f": {', '.join(f'{n} {k}' for k, n in kinds.most_common())}" if kinds else ""
        note = ""
        if s == "cpu":
            nc = sum(1 for e in exported if e["check"]["ok"] and (e["check"].get("info") or {}).get("note"))
            note = f" ({nc} of them with values not compared, see below)" if nc else ""
        w(f"- stage `{s}`: {reached - len(here)} passed{note}, {len(here)} failed{extra}")
        reached -= len(here)
    if cpu:
        w(f"- claimed core ATen targets: **{len(claimed)}** (see below)")
    w("")
    sub = " --subset" if args.subset else ""
    dt_opt = "" if dtype == "float32" else f" --dtype {dtype}"
    ex_cap = f" --max-samples-per-op {max_export}" if max_export and max_export != 8 else ""
    w(f"Regenerate: `{PROG} export{sub}{dt_opt}{ex_cap} --jobs {args.jobs}` then "
      f"`{PROG} check{sub}{dt_opt} --stages {','.join(stage_names)} --jobs {args.jobs}"
      f"{f' --max-samples-per-op {args.max_samples_per_op}' if args.max_samples_per_op is not None else ''}`. "
      f"A sample is one `op.sample_inputs(\"cpu\", {dtype})` entry exported with "
      "`torch.export.export(...).run_decompositions()`; its files are "
      f"`{home_path(args.cache)}/<key>.pt2|.npz|.json` (`.npz`: inputs `arg0..`, eager outputs `out0..`).")
    w("")
    if cpu:
        w("The `cpu` stage runs `ember compile KEY.pt2 --target cpu -o DIR`, "
          "`ember run DIR --inputs KEY.npz --outputs got.npz` and compares `got.npz` with the "
          "eager outputs: same number of outputs, same shapes and dtypes, integer and bool "
          "outputs exactly equal, NaNs at the same positions, infinities equal, and floats "
          "within `|got - want| <= atol + rtol * |want|` (torch.testing.assert_close's rule) "
          "with these tolerances:")
        w("")
        w("| dtype | rtol | atol |")
        w("|---|---|---|")
        for dt, (rt, at) in TOLERANCES.items():
            w(f"| {dt} | {rt:g} | {at:g} |")
        w("")
        w("They are assert_close's defaults except float32/complex64, where torch uses "
          "rtol 1.3e-6 (about 11 ulp). Ember fuses elementwise chains into single kernels "
          "(intermediates stay in registers, LLVM may contract into FMAs), accumulates sums "
          "and GEMMs in a blocked, vectorized order, and evaluates exp/tanh/erf/sigmoid with "
          "inline polynomial approximations, so correct float32 results can differ from eager "
          "by more than torch's ~11 ulp, up to ~1e-4 relative (gelu, layer_norm; more near "
          "zero, where atol takes over); rtol 1e-4 absorbs that while lowering bugs (wrong "
          "formula, axis, broadcast or index) show up as errors of 1e-2 and more. Failures are "
          "classified as `compile` (e.g. `has no CPU lowering yet`, grouped by the op it "
          "names), `run` and `wrong result` (max abs/rel error reported); a wrong result "
          "that torch's own decomposed graph reproduces (run with `torch.export.load(...).module()`) "
          "is a `decomposition mismatch` instead, not an Ember bug.")
        w("")
        f32 = [e for e in exported if e["check"]["ok"] and "strict_ok" in (e["check"].get("info") or {})]
        if f32:
            rel = sorted(((e["check"]["info"].get("max_rel") or 0.0, e) for e in f32),
                         key=lambda re_: -re_[0])
            n_strict = sum(1 for e in f32 if not e["check"]["info"]["strict_ok"])
            above = [(r, e) for r, e in rel if r > TORCH_DEFAULT_FLOAT32[0]]
            above4 = [(r, e) for r, e in rel if r > 1e-4]
            w(f"Measured on this run: of the {len(f32)} passing samples with float32 outputs, "
              f"{n_strict} would fail torch's default float32 tolerances (rtol "
              f"{TORCH_DEFAULT_FLOAT32[0]:g}, atol {TORCH_DEFAULT_FLOAT32[1]:g}); OpInfo values "
              f"are O(1), so atol dominates. {len(above)} have a max relative error above "
              f"{TORCH_DEFAULT_FLOAT32[0]:g} and {len(above4)} above 1e-4 (all on small "
              "values, within atol); the largest: " + ", ".join(
                  f"{md_escape(sample_id(e))} {r:.2g}" for r, e in rel[:8]) + ".")
            w("")

    if cpu:
        w("## Claimed ops")
        w("")
        w(f"Core ATen targets (`aten.*`) for which every exported sample containing them "
          f"passes, counting only the {n_relevant} samples whose graph contains only "
          "supported targets (defined in `ember ops --dialect torch` and not named by a "
          "`has no CPU lowering yet` error) and whose outputs are compared by value. "
          f"**{len(claimed)} targets** (samples in parentheses):")
        w("")
        w(", ".join(f"`{t}` ({claim_stat[t]['samples']})" for t in claimed) or "None.")
        w("")
        near = sorted(((t, c) for t, c in claim_stat.items() if t.startswith("aten.") and c["failed"]),
                      key=lambda tc: (-tc[1]["passed"], tc[0]))
        if near:
            w("Supported targets not claimed (some sample containing them fails): " +
              ", ".join(f"`{t}` ({c['passed']}/{c['samples']})" for t, c in near) + ".")
            w("")

    w("## Top failure reasons")
    w("")
    w("Failures grouped by stage and error message with locations and concrete "
      "shapes/values stripped; wrong results are grouped by the ATen targets of the graph. "
      "`unknown op` means Ember's torch dialect has no definition; verifier messages point "
      "at a wrong result-type/shape rule.")
    w("")
    w("| # | samples | OpInfos | reason | example (OpInfo #sample: inputs) | key |")
    w("|---|---|---|---|---|---|")
    ranked = sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for n, (reason, es) in enumerate(ranked, 1):
        ex = es[0]
        w(f"| {n} | {len(es)} | {md_escape(_ops_list(es))} | {code(reason, 300)} | "
          f"{md_escape(op_id(ex['op'], ex['variant_test_name']))} #{ex['sample_index']}: "
          f"{code(ex.get('sample', ''), 160)} | `{ex['key']}` |")
    w("")
    if ranked:
        w("<details><summary>The example of each reason: full error line and the commands "
          "that reproduce it</summary>")
        w("")
        for n, (reason, es) in enumerate(ranked, 1):
            ex = es[0]
            w(f"{n}. {code(drop_locations(ex['check']['error'] or ''), 600)} — "
              f"{code(_repro(ex['check']['stage'], ex['key'], args.cache))}")
        w("")
        w("</details>")
        w("")

    wrong = [e for e in exported if e["check"].get("kind") == "wrong result"]
    target = "cpu" if cpu else "tpu"
    if cpu or "tpu" in stage_names:
        w("## Wrong results")
        w("")
        w("Samples that compile and run but whose outputs differ from eager beyond the "
          "tolerances: bugs in Ember's lowering or code generation. `max abs`/`max rel` are "
          "over all finite elements of the first differing output; `worst` is the element "
          "furthest outside the tolerance. Reproduce with "
          f"`ember compile {home_path(args.cache)}/KEY.pt2 --target {target} -o OUT && ember run OUT "
          f"--inputs {home_path(args.cache)}/KEY.npz --outputs got.npz` and compare `got.npz` "
          "with `out0..` of `KEY.npz` (the inputs are its `arg0..`).")
        w("")
        if wrong:
            w("| OpInfo #sample | inputs | ATen targets | output | mismatched | max abs | max rel | worst: got vs expected | key |")
            w("|---|---|---|---|---|---|---|---|---|")
            for e in sorted(wrong, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                i = e["check"].get("info") or {}
                if "mismatched" in i:
                    outp = f"{i['output']} {i['dtype']}[{'x'.join(map(str, i['shape']))}]"
                    mm = f"{i['mismatched']}/{i['size']}" + (f" ({i['nan_mismatch']} NaN)" if i.get("nan_mismatch") else "")
                    ma = "" if i.get("max_abs") is None else f"{i['max_abs']:.3g}"
                    mr = "" if i.get("max_rel") is None else f"{i['max_rel']:.3g}"
                    worst = f"{i['worst_index']}: {_fmt(i['got'])} vs {_fmt(i['want'])}"
                else:  # count/shape/dtype mismatch
                    outp, mm, ma, mr = "", code(e["check"]["error"].removeprefix("wrong result: "), 120), "", ""
                    worst = ""
                x = i.get("exact")
                if x:
                    worst += f"; vs float64 ({x['output']}): Ember {x['ember']:.3g}, eager {x['eager']:.3g}"
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                  f"{md_escape(', '.join(t.removeprefix('aten.') for t in e['aten_targets']))} | "
                  f"{md_escape(outp)} | {mm} | {ma} | {mr} | {md_escape(worst)} | `{e['key']}` |")
        else:
            w("None.")
        w("")
        dm = [e for e in exported if e["check"].get("kind") == "decomposition mismatch"]
        if dm:
            w("### Decomposition mismatches")
            w("")
            w("Ember's outputs differ from eager, but torch's own decomposed graph (the .pt2) "
              "gives the same outputs as Ember: the core-ATen decomposition changes what the "
              "op returns. Counted as failures, left out of the claims.")
            w("")
            w("| OpInfo #sample | inputs | decomposed graph vs eager | key |")
            w("|---|---|---|---|")
            for e in sorted(dm, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                diff = re.sub(r"^.*differs from eager \((.*)\) and Ember matches.*$", r"\1",
                              e["check"]["error"])
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                  f"{code(diff, 160)} | `{e['key']}` |")
            w("")
        ties = [e for e in exported if e["check"].get("kind") == "tie order"]
        if ties:
            w("### Equal values in another order (sort, argsort, topk)")
            w("")
            w("Index outputs that differ from eager's but pick exactly the same values along the "
              "sorted dim: torch's sort is not stable unless asked, Ember's is. Counted as "
              "failures, left out of the claims.")
            w("")
            w("| OpInfo #sample | inputs | output error | key |")
            w("|---|---|---|---|")
            for e in sorted(ties, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | {code(e['check']['error'], 160)} | `{e['key']}` |")
            w("")
        pr = [e for e in exported if e["check"].get("kind") == "precision"]
        if dtype != "float32":
            w("### Eager's rounding (Ember nearer the exact value)")
            w("")
            w(f"Wrong results re-evaluated in float64: the OpInfo's sample is drawn again, its {dtype} "
              "inputs widened to float64 and the op run in eager; a sample is listed here (not "
              "under wrong results) when Ember's output is within the tolerances of that value, or "
              "at least as near it as eager at every element where Ember and eager differ (the "
              "errors below are over those elements). The difference from eager is then "
              "eager rounding intermediates to the narrow dtype (or accumulating differently), "
              "not an Ember bug. Counted as failures, left out of the claims. Wrong results "
              "above carry the same measurement where it could be made.")
            w("")
            if pr:
                w("| OpInfo #sample | inputs | ATen targets | output | Ember vs float64 (max abs) | eager vs float64 (max abs) | Ember within tolerance of float64 | key |")
                w("|---|---|---|---|---|---|---|---|")
                for e in sorted(pr, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"])):
                    x = e["check"]["info"]["exact"]
                    w(f"| {md_escape(sample_id(e))} | {code(e.get('sample', ''), 120)} | "
                      f"{md_escape(', '.join(t.removeprefix('aten.') for t in e['aten_targets']))} | "
                      f"{x['output']} | {x['ember']:.3g} | {x['eager']:.3g} | {'yes' if x['ember_ok'] else 'no'} | `{e['key']}` |")
            else:
                w("None.")
            w("")

    if cpu:
        w("## Ops without a CPU lowering")
        w("")
        w("Ops named by `has no CPU lowering yet` at the compile step (each blocks every graph "
          "that contains it; a graph stops at its first such op).")
        w("")
        if unlowered:
            w("| op | samples | OpInfos |")
            w("|---|---|---|")
            for op, es in sorted(unlowered.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                w(f"| `{op}` | {len(es)} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    if known is not None:
        missing = sorted(t for t in per_target if ember_name(t) and ember_name(t) not in known)
        w("## ATen targets Ember lacks")
        w("")
        w("Targets that occur in exported graphs but have no definition in "
          "`ember ops --dialect torch` (each blocks every graph that contains it).")
        w("")
        if missing:
            w("| target | samples | OpInfos |")
            w("|---|---|---|")
            for t in missing:
                es = [e for e in exported if t in e["aten_targets"]]
                w(f"| `{t}` | {per_target[t]['samples']} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    w("## Per OpInfo")
    w("")
    w("Columns per stage: exported samples that passed it (stages run in order, so each "
      "count includes only samples that passed the previous ones).")
    w("")
    w(f"| OpInfo | samples | export failed | {' | '.join(stage_names)} | failed | first failure |")
    w(f"|---|---|---|{'---|' * len(stage_names)}---|---|")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"]) if r["first_error"] else (
            f"(export) {r['first_export_error']}" if r["first_export_error"] else "")
        vals = " | ".join(str(r["stages"][s]) for s in stage_names)
        w(f"| {md_escape(oid)} | {r['samples']} | {r['export_failed']} | {vals} | "
          f"{r['failed']} | {code(err, 220)} |")
    w("")

    w("## ATen targets in exported graphs")
    w("")
    w("A target passes a sample when the graph containing it passed. "
      "`known`: has a definition in `ember ops --dialect torch`"
      + ("; `lowered`: `no` if named by `has no CPU lowering yet`, `yes` if some graph "
         "containing it compiled; `claimed`: see above." if cpu else "."))
    w("")
    if cpu:
        w("| target | known | lowered | samples | passed | failed | claimed |")
        w("|---|---|---|---|---|---|---|")
    else:
        w("| target | known | samples | passed | failed |")
        w("|---|---|---|---|---|")
    claimed_set = set(claimed)
    for t in sorted(per_target):
        c = per_target[t]
        en = ember_name(t)
        k = "?" if known is None or en is None else ("yes" if en in known else "**no**")
        if cpu:
            lo = "**no**" if en in unlowered else ("yes" if c["compiled"] else "?")
            w(f"| `{t}` | {k} | {lo} | {c['samples']} | {c['passed']} | {c['failed']} | "
              f"{'yes' if t in claimed_set else ''} |")
        else:
            w(f"| `{t}` | {k} | {c['samples']} | {c['passed']} | {c['failed']} |")
    w("")

    if cpu:
        nc = [e for e in exported if e["check"]["ok"] and (e["check"].get("info") or {}).get("note")]
        w("## Values not compared")
        w("")
        w("Samples whose eager outputs are random draws or uninitialized memory: they pass "
          "when the outputs' count, shapes and dtypes match, and are left out of the claims.")
        w("")
        if nc:
            by: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for e in nc:
                by[e["check"]["info"]["note"].removeprefix("values not compared: ")].append(e)
            w("| samples | why | OpInfos |")
            w("|---|---|---|")
            for why, es in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0])):
                w(f"| {len(es)} | {md_escape(why)} | {md_escape(_ops_list(es, 8))} |")
        else:
            w("None.")
        w("")

    w("## Export failures (torch side)")
    w("")
    w("Samples the harness could not export; not counted in the totals above.")
    w("")
    if export_reasons:
        w("| samples | reason | example |")
        w("|---|---|---|")
        for reason, es in sorted(export_reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:40]:
            ex = es[0]
            w(f"| {len(es)} | {code(reason, 180)} | {md_escape(op_id(ex['op'], ex['variant_test_name']))} #{ex['sample_index']} |")
        if len(export_reasons) > 40:
            w(f"| … | {len(export_reasons) - 40} more reasons | |")
    else:
        w("None.")
    w("")
    return "\n".join(out)


# ----------------------------------------------------------------------------
# CLI


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cache", default=str(DEFAULT_CACHE), metavar="DIR",
                        help=f"sample cache (default: {DEFAULT_CACHE})")
        sp.add_argument("--subset", action="store_true",
                        help=f"only the {len(SUBSET)} common OpInfos of the CI subset")
        sp.add_argument("--ops", metavar="a,b,c", help="only these OpInfos (name or name.variant)")
        sp.add_argument("--jobs", type=int, default=2, metavar="J", help="parallel workers (default: 2)")
        sp.add_argument("--dtype", default="float32", metavar="D[,D]",
                        help="sample dtype(s), of: " + ", ".join(DTYPES) + " (default: float32, "
                             "which falls back to an integer/bool/complex dtype for ops without "
                             "float32); a list runs one after the other, each with its own index "
                             "and report")

    ex = sub.add_parser("export", help="export OpInfo samples to .pt2/.npz in the cache")
    common(ex)
    ex.add_argument("--limit-ops", type=int, metavar="N", help="only the first N selected OpInfos")
    ex.add_argument("--max-samples-per-op", type=int, default=8, metavar="K", help="default: 8")
    ex.add_argument("--force", action="store_true", help="re-export cached samples")

    ck = sub.add_parser("check", help="run the stages on every exported sample, write a report")
    common(ck)
    ck.add_argument("--ember", default=str(DEFAULT_EMBER), metavar="PATH",
                    help="the ember binary (default: target/debug/ember)")
    ck.add_argument("--report", default=None, metavar="FILE.md",
                    help="markdown report (default: tools/bench/results/opinfo_<last stage>.md, "
                         "with --subset opinfo_<last stage>_subset.md, with --ops none; '' for none)")
    ck.add_argument("--stages", default=DEFAULT_STAGES,
                    help=f"comma-separated, in order, of: {', '.join(STAGES)} (default: {DEFAULT_STAGES})")
    ck.add_argument("--max-samples-per-op", type=int, metavar="K",
                    help="only check the first K samples of each OpInfo")
    ck.add_argument("--write-expected", nargs="?", const=str(DEFAULT_EXPECTED), metavar="FILE",
                    help="write each sample's pass/fail to FILE (default: "
                         "tools/bench/opinfo_subset_expected.json, which the CI test compares with)")
    ck.add_argument("--json", metavar="FILE", help="also write per-sample results as JSON")
    ck.add_argument("--workdir", metavar="DIR", help="stage outputs (default: DIR/work)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TMPDIR", "/tmp/ember-tmp")
    Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        log(f"error: unknown --dtype {', '.join(bad)}; known: {', '.join(DTYPES)}")
        return 2
    if len(dtypes) > 1 and args.cmd == "check" and (args.report or args.json or args.write_expected):
        log("error: --report/--json/--write-expected name one file: give one --dtype")
        return 2
    if args.cmd == "export":
        import warnings

        warnings.filterwarnings("ignore")
    rc = 0
    for d in dtypes:
        args.dtype = d
        rc = max(rc, cmd_export(args) if args.cmd == "export" else cmd_check(args))
    return rc


if __name__ == "__main__":
    sys.exit(main())
