"""`export`: draw OpInfo samples, export each as a .pt2 with its inputs and eager outputs."""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import hashlib
import io
import json
import multiprocessing as mp
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from .common import FALLBACK_DTYPES, HARNESS_VERSION, first_line, index_path, load_index, log, matches, op_id, save_index, select_names, write_atomic, write_json, write_npz


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
