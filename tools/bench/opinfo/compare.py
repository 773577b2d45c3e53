"""Comparing a stage's outputs with torch eager's, by dtype tolerance."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .export import _to_numpy

if TYPE_CHECKING:
    from .stages import Context

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
    r"randperm|rrelu_with_noise_functional|uniform)\.")
# OpInfos with outputs defined only up to sign: output index -> the axis along which each
# vector lies. A real symmetric matrix's eigenvectors (distinct eigenvalues) are unique up to
# sign, and LAPACK's sign is a side effect of its algorithm (torch documents that backends
# differ); each vector of Ember's is negated where that matches eager's, then compared as usual.
SIGN_FREE: dict[str, dict[int, int]] = {"linalg.eigh": {1: -2}}


def align_signs(op: str | None, got: list[Any], want: Sequence[Any]) -> list[Any]:
    """`got` with each sign-free vector (SIGN_FREE) negated where that brings it closer to eager's."""
    import numpy as np

    for i, axis in SIGN_FREE.get(op or "", {}).items():
        if i < len(got) and i < len(want) and got[i].shape == want[i].shape and got[i].dtype.kind == "f":
            dot = (got[i].astype(np.float64) * want[i].astype(np.float64)).sum(axis=axis, keepdims=True)
            got[i] = np.where(dot < 0, -got[i], got[i])
    return got


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


def compare_outputs(npz: Path, got_npz: Path, values: bool = True, op: str | None = None
                    ) -> tuple[str | None, dict[str, Any]]:
    """compare_lists of got_npz's out0.. against npz's out0.. (the eager outputs), sign-free
    outputs of `op` aligned first."""
    want = read_outputs(npz)
    return compare_lists(align_signs(op, list(read_outputs(got_npz)), want), want, values)


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
