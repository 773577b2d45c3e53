#!/usr/bin/env python3
"""Op-level harness for Ember, driven by PyTorch's OpInfo database.

Two commands, run one after the other::

    python tools/bench/opinfo.py export [--subset] [--ops a,b] [--limit-ops N]
                                        [--max-samples-per-op K] [--cache DIR] [--jobs J]
    python tools/bench/opinfo.py check  [--subset] [--ops a,b] [--ember PATH]
                                        [--cache DIR] [--report FILE.md] [--jobs J]

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

``key`` is the sha256 of (op name, variant, sample index, shapes/dtypes/non-tensor
args, torch version, harness version); a sample whose ``<key>.json`` exists is
not exported again (use ``--force`` to redo it).

``check`` runs the *stages* on every exported sample of the index and writes a
markdown report (default ``tools/bench/results/opinfo_import.md``), ending its
output with the line ``N passed, M failed``. Today the only stage is ``import``
(``ember import X.pt2``). Code generation will add stages: a stage is a class with
a ``name`` and a ``run(sample, ctx) -> StageResult`` method registered in
``STAGES``; a sample passes when every selected stage passes, and the first
failing stage's error is what the report groups by. A later "compile", "run"
(``ember run`` on ``arg*`` of the .npz) and "compare" (against ``out*``, e.g.
with ``compare_outputs`` below) stage plug in there and are selected with
``--stages import,compile,run,compare``.
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
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

PROG = "python tools/bench/opinfo.py"
HARNESS_VERSION = 1  # bump to invalidate every cached sample
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = Path(os.path.expanduser("~/.cache/ember/opinfo"))
DEFAULT_REPORT = REPO / "tools" / "bench" / "results" / "opinfo_import.md"
DEFAULT_EMBER = REPO / "target" / "debug" / "ember"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)

# A CI-size run: common OpInfos (by OpInfo name; every variant of a name is taken).
SUBSET = [
    "add", "mul", "sub", "div", "exp", "log", "tanh", "sigmoid", "nn.functional.relu",
    "softmax", "log_softmax", "sum", "mean", "amax", "matmul", "mm", "bmm", "addmm",
    "cat", "stack", "transpose", "permute", "reshape", "view", "where",
    "nn.functional.layer_norm", "nn.functional.gelu", "nn.functional.embedding",
    "index_select", "gather",
]

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


def load_index(cache: Path) -> list[dict[str, Any]]:
    path = cache / "index.json"
    if not path.exists():
        return []
    return json.loads(path.read_text())["entries"]


def save_index(cache: Path, entries: list[dict[str, Any]], torch_version: str) -> None:
    entries = sorted(entries, key=lambda e: (e["op"], e["variant_test_name"], e["sample_index"]))
    write_json(cache / "index.json", {
        "harness_version": HARNESS_VERSION,
        "torch_version": torch_version,
        "entries": entries,
    })


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


def _to_numpy(t: Any) -> Any:
    import torch

    t = t.detach().cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype == torch.bfloat16:
        t = t.float()  # numpy has no bfloat16
    return t.contiguous().numpy()


def write_npz(path: Path, arrays: dict[str, Any]) -> None:
    """Like numpy.savez, but byte-reproducible (fixed member timestamps)."""
    import numpy as np

    buf_zip = io.BytesIO()
    with zipfile.ZipFile(buf_zip, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_EPOCH)
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())
    write_atomic(path, buf_zip.getvalue())


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
            arrays = {f"arg{i}": _to_numpy(t) for i, t in enumerate(inputs)}
            arrays.update({f"out{i}": _to_numpy(t) for i, t in enumerate(out_leaves)})
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


def _pick_dtype(op: Any) -> Any:
    import torch

    try:
        supported = op.supported_dtypes("cpu")
    except Exception:  # noqa: BLE001
        return torch.float32
    for name in FALLBACK_DTYPES:
        dt = getattr(torch, name)
        if dt in supported:
            return dt
    return torch.float32


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


def export_op(db_index: int, cache_s: str, max_samples: int, force: bool) -> dict[str, Any]:
    """Export up to max_samples samples of op_db[db_index]. Runs in a worker process."""
    import torch

    cache = Path(cache_s)
    op = _op_db()[db_index]
    t0 = time.monotonic()
    tv = torch.__version__
    entries: list[dict[str, Any]] = []
    note = None
    dtype = _pick_dtype(op)
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
    if args.limit_ops is not None:
        todo = todo[: args.limit_ops]
    log(f"exporting {len(todo)} OpInfo(s), up to {args.max_samples_per_op} samples each, "
        f"into {cache} with {args.jobs} job(s)")

    index = {(e["op"], e["variant_test_name"], e["sample_index"]): e for e in load_index(cache)}
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
            save_index(cache, list(index.values()), torch.__version__)

    call = (str(cache), args.max_samples_per_op, args.force)
    if args.jobs <= 1:
        _worker_init()
        for i in todo:
            absorb(export_op(i, *call))
    else:
        run_pool(todo, call, args.jobs, absorb, db)

    save_index(cache, list(index.values()), torch.__version__)
    log(f"export done in {time.monotonic() - t0:.0f}s: {totals['exported']} exported, "
        f"{totals['export_failed']} export_failed ({totals['cached']} from cache); "
        f"index: {cache / 'index.json'}")
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

    ember prints ``error: `X.pt2`: node `n` (from f.py:1): MESSAGE``; when the imported
    graph does not verify, the verifier's lines follow on the next lines, and the first
    one (``  `torch.aten.x` at node `n` (from ...): result 0: expected ..., found ...``)
    is appended to the head line.
    """
    text = stderr.strip()
    lines = [l for l in text.splitlines() if l.strip()]
    if not lines:
        return "(no message)", ""
    head = lines[0].removeprefix("error: ")
    head = re.sub(r"^`[^`]*\.pt2`:\s*", "", head)
    if "does not verify" in head and len(lines) > 1:
        head = "the imported graph does not verify: " + lines[1].strip()
    return head, text


class ImportStage(Stage):
    """`ember import X.pt2`: the torch.export frontend plus the IR verifier."""

    name = "import"

    def run(self, sample: dict[str, Any], ctx: Context) -> StageResult:
        pt2 = ctx.cache / f"{sample['key']}.pt2"
        out = ctx.workdir / f"{sample['key']}.mlir"
        t0 = time.monotonic()
        try:
            p = subprocess.run([str(ctx.ember), "import", str(pt2), "-o", str(out)],
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return StageResult(False, "timeout: ember import ran over 120s", "", 120.0)
        dt = time.monotonic() - t0
        if p.returncode == 0:
            return StageResult(True, seconds=dt)
        head, text = _ember_error(p.stderr)
        if p.returncode != 2:
            head = f"exit code {p.returncode}: {head}"  # a crash, not a diagnosed error
        return StageResult(False, head, text, dt)


# compile/run/compare come with code generation; register them here.
STAGES: dict[str, type[Stage]] = {"import": ImportStage}


def compare_outputs(npz: Path, got: Sequence[Any], rtol: float = 1.3e-6, atol: float = 1e-5) -> str | None:
    """For a future compare stage: None when got matches out0.. of npz, else why not."""
    import numpy as np

    with np.load(npz) as z:
        want = [z[f"out{i}"] for i in range(sum(k.startswith("out") for k in z.files))]
    if len(want) != len(got):
        return f"{len(got)} outputs, expected {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        g = np.asarray(g)
        if w.shape != g.shape:
            return f"out{i}: shape {g.shape}, expected {w.shape}"
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return f"out{i}: max |diff| {float(np.max(np.abs(g.astype(np.float64) - w))):.3g}"
    return None


def run_sample(sample: dict[str, Any], stages: list[Stage], ctx: Context) -> dict[str, Any]:
    res: dict[str, Any] = {"ok": True, "stage": None, "error": None, "detail": ""}
    for st in stages:
        r = st.run(sample, ctx)
        if not r.ok:
            res.update(ok=False, stage=st.name, error=r.error, detail=r.detail)
            break
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


def cmd_check(args: argparse.Namespace) -> int:
    cache = Path(args.cache).expanduser()
    ember = Path(args.ember)
    if not ember.exists():
        log(f"error: no ember binary at {ember} (cargo build -p ember-tools, or --ember PATH)")
        return 2
    entries = load_index(cache)
    if not entries:
        log(f"error: {cache / 'index.json'} is missing or empty; run `{PROG} export` first")
        return 2
    index_meta = json.loads((cache / "index.json").read_text())
    chosen = select_names(args)
    entries = [e for e in entries if matches(chosen, e["op"], e["variant_test_name"])]
    exported = [e for e in entries if e["status"] == "exported"]
    stage_names = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stage_names if s not in STAGES]
    if unknown:
        log(f"error: unknown stage(s) {', '.join(unknown)}; known: {', '.join(STAGES)}")
        return 2
    stages = [STAGES[s]() for s in stage_names]
    workdir = Path(args.workdir).expanduser() if args.workdir else cache / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    ctx = Context(ember=ember, cache=cache, workdir=workdir)

    t0 = time.monotonic()
    log(f"checking {len(exported)} exported sample(s) with stages {','.join(stage_names)} "
        f"({ember}, {args.jobs} job(s))")
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda e: run_sample(e, stages, ctx), exported))
    for e, r in zip(exported, results):
        e["check"] = r
    seconds = time.monotonic() - t0

    # per op
    per_op: dict[str, dict[str, Any]] = {}
    for e in entries:
        oid = op_id(e["op"], e["variant_test_name"])
        row = per_op.setdefault(oid, {"samples": 0, "export_failed": 0, "passed": 0, "failed": 0,
                                      "first_error": None, "first_export_error": None})
        row["samples"] += 1
        if e["status"] != "exported":
            row["export_failed"] += 1
            row["first_export_error"] = row["first_export_error"] or e["error"]
        elif e["check"]["ok"]:
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

    # failure reasons
    reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in exported:
        if not e["check"]["ok"]:
            reasons[f"{e['check']['stage']}: " + failure_reason(e["check"]["error"] or "")].append(e)
    export_reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in entries:
        if e["status"] != "exported":
            export_reasons[failure_reason(e["error"] or "")].append(e)

    n_pass = sum(r["ok"] for r in results)
    n_fail = len(results) - n_pass

    # console table
    width = max([len(k) for k in per_op] + [10])
    print(f"{'OpInfo':<{width}}  samples  passed  failed  export_failed  first error")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"] or "")[:110]
        print(f"{oid:<{width}}  {r['samples']:>7}  {r['passed']:>6}  {r['failed']:>6}  "
              f"{r['export_failed']:>13}  {err}")
    print()
    print("top failure reasons:")
    for reason, es in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:15]:
        print(f"  {len(es):>5}  {reason[:150]}")
    print(f"checked in {seconds:.1f}s; {len(entries) - len(exported)} sample(s) were not exported")
    print(f"{n_pass} passed, {n_fail} failed")

    if args.report:
        report = render_report(
            entries=entries, exported=exported, per_op=per_op, per_target=per_target,
            reasons=reasons, export_reasons=export_reasons, known=known, n_pass=n_pass,
            n_fail=n_fail, seconds=seconds, stage_names=stage_names, ember=ember,
            torch_version=index_meta.get("torch_version", "?"), args=args,
        )
        path = Path(args.report)
        write_atomic(path, report.encode())
        log(f"wrote {path}")
    if args.json:
        write_json(Path(args.json), {"passed": n_pass, "failed": n_fail, "samples": [
            {k: e.get(k) for k in ("op", "variant_test_name", "sample_index", "key", "sample",
                                   "status", "error", "aten_targets", "check")} for e in entries]})
    return 0


def render_report(*, entries, exported, per_op, per_target, reasons, export_reasons, known,
                  n_pass, n_fail, seconds, stage_names, ember, torch_version, args) -> str:
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    scope = "the --subset OpInfos" if args.subset else ("--ops " + args.ops if args.ops else "all cached OpInfos")
    out: list[str] = []
    w = out.append
    w(f"# Ember OpInfo harness: {' + '.join(stage_names)}")
    w("")
    w(f"- date: {now}")
    w(f"- torch: {torch_version}")
    try:
        built = _dt.datetime.fromtimestamp(ember.stat().st_mtime).astimezone().strftime("%Y-%m-%d %H:%M")
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
    except Exception:  # noqa: BLE001
        built, rev = "?", ""
    w(f"- ember: `{home_path(ember)}` (built {built}; repo HEAD {rev or '?'})")
    w(f"- scope: {scope}; {len(per_op)} OpInfos, {len(entries)} samples "
      f"({len(exported)} exported, {len(entries) - len(exported)} failed to export)")
    w(f"- **{n_pass} passed, {n_fail} failed** (exported samples; "
      f"{100.0 * n_pass / max(1, n_pass + n_fail):.1f}% pass), checked in {seconds:.1f}s")
    w("")
    w(f"Regenerate: `{PROG} export{' --subset' if args.subset else ''}` then "
      f"`{PROG} check{' --subset' if args.subset else ''}`. A sample is one "
      "`op.sample_inputs(\"cpu\", float32)` entry exported with "
      "`torch.export.export(...).run_decompositions()`; its files are "
      f"`{home_path(args.cache)}/<key>.pt2|.npz|.json`.")
    w("")

    w("## Top failure reasons")
    w("")
    w("Failures grouped by error message with locations and concrete shapes/values stripped. "
      "`unknown op` means Ember's torch dialect has no definition; verifier messages point "
      "at a wrong result-type/shape rule.")
    w("")
    w("| # | samples | OpInfos | reason | example (OpInfo #sample: inputs) | key |")
    w("|---|---|---|---|---|---|")
    ranked = sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for n, (reason, es) in enumerate(ranked, 1):
        ops = sorted({op_id(e["op"], e["variant_test_name"]) for e in es})
        ex = es[0]
        ops_s = ", ".join(ops[:6]) + (f", … (+{len(ops) - 6})" if len(ops) > 6 else "")
        w(f"| {n} | {len(es)} | {md_escape(ops_s)} | {code(reason)} | "
          f"{md_escape(op_id(ex['op'], ex['variant_test_name']))} #{ex['sample_index']}: "
          f"{code(ex.get('sample', ''), 160)} | `{ex['key']}` |")
    w("")
    if ranked:
        w("<details><summary>The example of each reason: full error, reproduce with "
          f"<code>ember import {home_path(args.cache)}/KEY.pt2</code></summary>")
        w("")
        for n, (reason, es) in enumerate(ranked, 1):
            w(f"{n}. {code(es[0]['check']['error'], 600)}")
        w("")
        w("</details>")
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
                ops = sorted({op_id(e["op"], e["variant_test_name"]) for e in exported if t in e["aten_targets"]})
                ops_s = ", ".join(ops[:8]) + (f", … (+{len(ops) - 8})" if len(ops) > 8 else "")
                w(f"| `{t}` | {per_target[t]['samples']} | {md_escape(ops_s)} |")
        else:
            w("None.")
        w("")

    w("## Per OpInfo")
    w("")
    w("| OpInfo | samples | passed | failed | export failed | first failure |")
    w("|---|---|---|---|---|---|")
    for oid in sorted(per_op):
        r = per_op[oid]
        err = drop_locations(r["first_error"]) if r["first_error"] else (
            f"(export) {r['first_export_error']}" if r["first_export_error"] else "")
        w(f"| {md_escape(oid)} | {r['samples']} | {r['passed']} | {r['failed']} | "
          f"{r['export_failed']} | {code(err, 220)} |")
    w("")

    w("## ATen targets in exported graphs")
    w("")
    w("A target passes a sample when the graph containing it passed. "
      "`known`: has a definition in `ember ops --dialect torch`.")
    w("")
    w("| target | known | samples | passed | failed |")
    w("|---|---|---|---|---|")
    for t in sorted(per_target):
        c = per_target[t]
        en = ember_name(t)
        k = "?" if known is None or en is None else ("yes" if en in known else "**no**")
        w(f"| `{t}` | {k} | {c['samples']} | {c['passed']} | {c['failed']} |")
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

    ex = sub.add_parser("export", help="export OpInfo samples to .pt2/.npz in the cache")
    common(ex)
    ex.add_argument("--limit-ops", type=int, metavar="N", help="only the first N selected OpInfos")
    ex.add_argument("--max-samples-per-op", type=int, default=8, metavar="K", help="default: 8")
    ex.add_argument("--force", action="store_true", help="re-export cached samples")

    ck = sub.add_parser("check", help="run the stages on every exported sample, write a report")
    common(ck)
    ck.add_argument("--ember", default=str(DEFAULT_EMBER), metavar="PATH",
                    help="the ember binary (default: target/debug/ember)")
    ck.add_argument("--report", default=str(DEFAULT_REPORT), metavar="FILE.md",
                    help="markdown report (default: tools/bench/results/opinfo_import.md; '' for none)")
    ck.add_argument("--stages", default="import", help=f"comma-separated, of: {', '.join(STAGES)}")
    ck.add_argument("--json", metavar="FILE", help="also write per-sample results as JSON")
    ck.add_argument("--workdir", metavar="DIR", help="stage outputs (default: DIR/work)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TMPDIR", "/tmp/ember-tmp")
    Path(os.environ["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    if args.cmd == "export":
        import warnings

        warnings.filterwarnings("ignore")
        return cmd_export(args)
    return cmd_check(args)


if __name__ == "__main__":
    sys.exit(main())
