"""How the tests compare an output with torch eager's, by dtype.

float32/float64: elementwise `|got - want| <= atol + rtol·|want|`. float16 and bfloat16:
torch.testing's rtol for the dtype times the output's largest magnitude: two evaluations that
round each layer differently (eager rounds every op's output, a fused kernel keeps f32 inside
it) differ by about an ulp of the layer's scale, also at the elements near 0. The same rule
as `close` in tools/tests/cpu.rs.
"""

from __future__ import annotations

import numpy as np

#: torch.testing.assert_close's default rtol by dtype (atol 1e-5 for all of them).
NARROW_RTOL = {"bfloat16": 1.6e-2, "float16": 1e-3}


def narrow_atol(dtype: str, scale: float, atol: float = 1e-5) -> float:
    """The absolute tolerance of the narrow-dtype rule: atol plus the dtype's rtol times the
    output's largest magnitude (`dtype` as numpy/torch name it: "bfloat16", "torch.float16")."""
    return atol + NARROW_RTOL[str(dtype).removeprefix("torch.")] * scale


def assert_close_torch(got, want, err_msg: str = "") -> None:  # noqa: ANN001 - torch tensors
    """`assert_close`'s rule on torch tensors (bfloat16 included, which numpy lacks)."""
    import torch

    if want.dtype in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(got.double(), want.double(), rtol=0, atol=narrow_atol(str(want.dtype), float(want.abs().max())), msg=err_msg or None)
    else:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=err_msg or None)


def as_typed(a: np.ndarray, like: np.ndarray | None = None) -> np.ndarray:
    """A `.npz` void array (how bfloat16 and float8 are saved) as its ml_dtypes type."""
    a = np.asarray(a)
    if a.dtype.type is np.void and a.dtype.names is None:
        import ml_dtypes

        if like is not None and like.dtype.type is not np.void:
            return a.view(like.dtype)
        return a.view({2: ml_dtypes.bfloat16}[a.dtype.itemsize])
    return a


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-4, atol: float = 1e-5, err_msg: str = "") -> None:
    want = as_typed(want, got if np.asarray(got).dtype.type is not np.void else None)
    got = as_typed(got, want)
    assert got.dtype == want.dtype and got.shape == want.shape, f"{err_msg}: {got.dtype}{got.shape} vs {want.dtype}{want.shape}"
    if want.dtype.name in NARROW_RTOL:
        g, w = got.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        scale = float(np.abs(w[finite]).max()) if finite.any() else 0.0
        np.testing.assert_allclose(g, w, rtol=0, atol=narrow_atol(want.dtype.name, scale, atol), equal_nan=True, err_msg=err_msg)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=err_msg)
