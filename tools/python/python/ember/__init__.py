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


_blas_checked = False


def _native() -> Any:
    global _blas_checked
    try:
        from . import _ember
    except ImportError as exc:  # pragma: no cover - depends on the build state
        raise ImportError(f"{_BUILD_HINT} ({exc})") from exc
    if not _blas_checked:
        _blas_checked = True
        _use_torch_threads(_ember)
        _find_onednn()
    return _ember


def _find_onednn() -> None:
    """The CPU runtime's bf16 GEMMs run on oneDNN (the `onednn-cpu-gomp` wheel puts
    `libdnnl.so.3` in this environment's `lib/`); `$EMBER_ONEDNN` overrides the path."""
    import os
    import sys

    path = os.path.join(sys.prefix, "lib", "libdnnl.so.3")
    if os.path.exists(path):
        os.environ.setdefault("EMBER_ONEDNN", path)


def _use_torch_threads(ext: Any) -> None:
    """Inside a PyTorch process the CPU runtime uses torch's own threads and BLAS, both found in
    the ``libtorch_cpu`` torch loaded:

    - its OpenMP runtime (``GOMP_parallel``; libgomp in torch's wheels): Ember's kernels split
      over the team torch's ops and Inductor's kernels run on, so ``torch.set_num_threads`` sets
      Ember's thread count too, and no second pool competes with torch's spinning threads.
      ``EMBER_HOST_OPENMP=0`` keeps rayon's pool (the CLI always uses it);
    - its BLAS (MKL on x86) for GEMMs, rather than the bundled ``gemm`` crate.
      ``EMBER_HOST_BLAS=0`` keeps the ``gemm`` crate (the CLI always uses it)."""
    import os
    import sys

    torch = sys.modules.get("torch")
    if torch is None:
        return
    import ctypes

    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    try:
        # RTLD_NOLOAD: the copy torch already loaded, never a second one.
        h = ctypes.CDLL(lib, mode=os.RTLD_NOLOAD)
    except OSError:
        return  # another build of torch: rayon's pool and the gemm crate stay

    def addresses(*names: str) -> list[int] | None:
        # dlsym on torch's handle searches its dependencies too: the OpenMP runtime it links.
        try:
            return [ctypes.cast(getattr(h, f), ctypes.c_void_p).value for f in names]
        except AttributeError:
            return None

    if os.environ.get("EMBER_HOST_OPENMP", "1") != "0":
        omp = addresses("GOMP_parallel", "omp_get_max_threads", "omp_in_parallel")
        if omp is not None:  # None: torch's native thread pool (no OpenMP): rayon's stays
            ext.set_host_openmp(*omp)
    if os.environ.get("EMBER_HOST_BLAS", "1") != "0":
        blas = addresses("sgemm_", "dgemm_")
        if blas is not None:  # None: no MKL symbols: the gemm crate stays
            local = addresses("MKL_Set_Num_Threads_Local")
            ext.set_host_blas(*blas, local[0] if local else 0)


def __getattr__(name: str) -> Any:
    if name == "eager":  # DeferAndFuse eager mode (ember/deferred/)
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


# With torch loaded, `import ember` makes "ember" a torch device (`model.to("ember")`); the
# XLA runner (`python -m ember.xla`) runs without torch and skips it.
if "torch" in __import__("sys").modules:
    from . import device as _device  # noqa: F401  (registers on import)
