"""Ember: a graph compiler for PyTorch graphs.

The pure-Python parts of this package (``ember.export``, ``ember.models``) work
without the native extension, so ``python -m ember.export`` can be used from a
source checkout before anything is built.  Names that live in the native
extension ``ember._ember`` (such as :func:`version`) are imported lazily, on
first use; if the extension has not been built, that raises an ``ImportError``
explaining how to build it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["version", "import_model", "compile", "Program", "eager"]

# Attributes re-exported from the native extension module `ember._ember`.
_NATIVE_ATTRS = frozenset({"version", "import_model", "compile", "Program"})

_BUILD_HINT = (
    "the Ember native extension (ember._ember) is not built or not importable; "
    "run `make setup` from the repository root (or `maturin develop` in tools/python) "
    "to build and install it"
)


def _native() -> Any:
    try:
        from . import _ember
    except ImportError as exc:  # pragma: no cover - depends on the build state
        raise ImportError(f"{_BUILD_HINT} ({exc})") from exc
    return _ember


def __getattr__(name: str) -> Any:
    if name == "eager":  # DeferAndFuse eager mode (ember/deferred.py)
        from .deferred import eager

        globals()["eager"] = eager
        return eager
    if name in _NATIVE_ATTRS:
        value = getattr(_native(), name)
        globals()[name] = value  # cache: later lookups skip __getattr__
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _NATIVE_ATTRS)
