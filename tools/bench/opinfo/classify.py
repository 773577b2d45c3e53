"""Why a sample failed: reclassifying wrong results (precision, tie order, decomposition) and grouping errors into reasons."""

from __future__ import annotations

import re
import subprocess
from collections import Counter, defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .common import op_id
from .compare import TOLERANCES, compare_array, decomposition_mismatch, npz_arrays, read_outputs, to_torch, values_not_comparable
from .export import _make_module, _op_db, describe_sample, sample_key

if TYPE_CHECKING:
    from .stages import Context


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


def torch_fp64_rule(got: Any, want: Any, ref: Any, rtol: float) -> tuple[bool, float, float]:
    """torch._dynamo.utils.same's float64-reference check for a float16/bfloat16 output (what
    Inductor's accuracy runs use): the compiled result's RMSE from the float64 value at most 3x
    eager's plus rtol/10. Returns (passes, Ember's RMSE, eager's RMSE); any non-finite value
    fails it."""
    import numpy as np

    g, w, r = (np.asarray(a, dtype=np.float64) for a in (got, want, ref))
    with np.errstate(invalid="ignore", over="ignore"):
        if not (np.isfinite(g).all() and np.isfinite(w).all() and np.isfinite(r).all()) or r.size == 0:
            return False, float("nan"), float("nan")
        rg, rw = float(np.sqrt(np.mean((g - r) ** 2))), float(np.sqrt(np.mean((w - r) ** 2)))
    return rg <= 3 * rw + rtol / 10, rg, rw


def exact_reference(sample: dict[str, Any], got: Sequence[Any], cache: Path) -> dict[str, Any] | None:
    """For a wrong result of a bfloat16/float16 sample: which of Ember and eager is nearer the
    exact value? The op is run again in float64 (every input of the sample's dtype widened,
    everything else as exported) and both outputs are measured against that.

    Returns, for the first output whose Ember and eager values differ beyond the tolerances:
    "ember"/"eager", the max abs errors from the float64 value over the elements where they
    differ; "nearer", at how many of those "differing" elements Ember is at least as near;
    "ember_ok", whether all of Ember's output is within the dtype's tolerances of the float64
    value; "rmse_ember"/"rmse_eager", root-mean-square errors from the float64 value over the
    whole output's finite elements, for `torch_rule`: torch._dynamo.utils.same's fp64-reference
    check for float16/bfloat16, which Inductor's accuracy runs use (Ember's RMSE at most 3x
    eager's plus a tenth of the dtype's rtol). None when the float64 evaluation is not possible.
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
            rule, rg, rw = torch_fp64_rule(g64, w64, r64, rtol)
            return {"output": f"out{i}", "ember": eg, "eager": ew, "ember_ok": ok,
                    "nearer": nearer, "differing": int(bad.sum()), "finite": bool(fin.sum() == bad.sum()),
                    "rmse_ember": rg, "rmse_eager": rw, "torch_rule": rule}
        return None
    except Exception:  # noqa: BLE001 - triage is best effort
        return None


def reclassify_precision(sample: dict[str, Any], got_npz: Path, cache: Path) -> None:
    """A narrow-dtype wrong result where Ember is within the dtype's tolerances of the float64
    value, or at least as near it as eager at every element where the two differ, is eager's
    rounding, not an Ember bug; so is one that passes torch's own compiled-vs-eager rule for
    the dtype (`exact_reference`'s `torch_rule`): a fused kernel that keeps f32 between ops
    (Ember's CPU kernels, XLA's) differs from eager's per-op rounding most where a sum cancels."""
    try:
        got = read_outputs(got_npz)
    except Exception:  # noqa: BLE001
        return
    ref = exact_reference(sample, got, cache)
    c = sample["check"]
    if ref is None:
        return
    c["info"] = {**(c.get("info") or {}), "exact": ref}
    nearer = ref["finite"] and ref["nearer"] == ref["differing"]
    if ref["ember_ok"] or nearer or ref["torch_rule"]:
        how = ("within tolerance of" if ref["ember_ok"] else "nearer" if nearer else
               f"within torch's fp64-reference rule (RMSE {ref['rmse_ember']:.3g} vs eager's {ref['rmse_eager']:.3g}) of")
        c["kind"] = "precision"
        c["error"] = (f"precision: Ember's {ref['output']} is {how} "
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


def reclassify_decomposition_mismatch(sample: dict[str, Any], ctx: Context, got: Path | None = None) -> None:
    """A wrong result that torch's decomposed graph reproduces is a decomposition mismatch."""
    diff = decomposition_mismatch(sample, ctx, got)
    if diff is not None:
        c = sample["check"]
        c["kind"] = "decomposition mismatch"
        c["error"] = ("decomposition mismatch: torch's decomposed graph differs from eager "
                      f"({diff}) and Ember matches the decomposed graph")


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
