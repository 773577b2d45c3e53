"""Ember's element types and their names in torch and numpy: the one table that the
torch.compile backend, ``ember.eager()``, the exporter, the XLA runner and the OpInfo harness
read. Importing it imports neither torch nor numpy (the XLA runner runs without torch)."""

from __future__ import annotations

from typing import Any

#: Ember's name (its IR's spelling) -> (the dtype's name in torch and in numpy, whether torch
#: tensors of it reach Ember's CPU runtime: torch.compile graph inputs and ``ember.eager()``
#: values; the others only appear in manifests the XLA runner reads).
TABLE: dict[str, tuple[str, bool]] = {
    "f32": ("float32", True),
    "f64": ("float64", True),
    "f16": ("float16", True),
    "bf16": ("bfloat16", True),
    "i64": ("int64", True),
    "i32": ("int32", True),
    "i16": ("int16", True),
    "i8": ("int8", True),
    "ui8": ("uint8", True),
    "i1": ("bool", True),
    "ui16": ("uint16", False),
    "ui32": ("uint32", False),
    "ui64": ("uint64", False),
    "f8E4M3FN": ("float8_e4m3fn", False),
    "f8E5M2": ("float8_e5m2", False),
}

#: Names numpy lacks; ml_dtypes has them, with the same bits as torch's.
ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")

#: torch's / numpy's name -> Ember's.
EMBER_NAME = {name: ember for ember, (name, _) in TABLE.items()}

_by_torch: dict[Any, str] | None = None


def by_torch() -> dict[Any, str]:
    """torch.dtype -> Ember's name, for the dtypes the CPU runtime exchanges with torch (one dict,
    shared by its readers)."""
    global _by_torch
    if _by_torch is None:
        import torch

        _by_torch = {getattr(torch, name): ember for ember, (name, runtime) in TABLE.items() if runtime}
    return _by_torch


def dlpack(name: str) -> tuple[int, int]:
    """DLPack's (type code, bits) for one of the CPU runtime's dtypes (`TABLE`'s names)."""
    if name == "i1":
        return 6, 8
    kind = name.rstrip("0123456789")
    return {"f": 2, "bf": 4, "i": 0, "ui": 1}[kind], int(name[len(kind) :])
