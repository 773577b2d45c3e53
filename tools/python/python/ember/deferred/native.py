"""The native recorder (``native.cpp``): built once per torch version and source with the system's
C++ compiler against the installed torch's headers, loaded as a torch op library, and handed the
``_ember`` extension's function table. ``ember.eager()`` records through it in defer mode."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import torch

from .state import EagerError

_SRC = Path(__file__).with_name("native.cpp")
_ops = None


def _flags() -> list[str]:
    from torch.utils.cpp_extension import include_paths, library_paths

    lib = library_paths()[0]
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return (
        ["-O2", "-shared", "-fPIC", "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-fvisibility=hidden"]
        + [f"-I{p}" for p in include_paths()]
        + [f"-I{sysconfig.get_paths()['include']}"]
        + [f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}"]
    )


def library() -> Path:
    """The built library, compiling it on first use (about 20 s) into Ember's cache directory."""
    flags = _flags()
    key = hashlib.sha256("\0".join([_SRC.read_text(), torch.__version__, *flags, sysconfig.get_platform()]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("EMBER_CACHE_DIR") or Path.home() / ".cache" / "ember") / "native"
    out = cache / f"eager-{key}.so"
    if out.exists():
        return out
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        raise EagerError("ember.eager: the native recorder needs a C++ compiler to be built (set CXX, or install g++)")
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build when several processes start at once
        if not out.exists():
            tmp = out.with_suffix(f".{os.getpid()}.tmp")
            r = subprocess.run([cxx, str(_SRC), "-o", str(tmp), *flags], capture_output=True, text=True)
            if r.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise EagerError(f"ember.eager: building the native recorder failed ({cxx}):\n{r.stderr[-4000:]}")
            os.replace(tmp, out)
    return out


_lib = None


def _register_decompositions(ops) -> None:
    """torch's decompositions (and Ember's) of the ops Ember does not compile, as their kernels
    for deferred tensors: the ops they call are recorded. Python runs once per such op."""
    global _lib
    from .. import decompositions
    from .state import _native

    from .fast_decomps import _FAST

    known = _native().eager_op_known
    _lib = torch.library.Library("aten", "IMPL")
    # The recorder's own (fast, in the CPU kernel's evaluation order) first, where they apply.
    for target, fast in _FAST.items():
        ns, name, overload = target.split(".")
        func = getattr(getattr(torch.ops.aten, name), overload)
        if ops.handles(target) or getattr(fast, "__name__", "") == "run":  # `_or_kernel`: the table's below
            continue
        if torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
            continue
        _lib.impl(func, _fast_kernel(func, fast), "Lazy")
    for func, fn in decompositions.table("cpu").items():
        name = func._schema.name
        if not name.startswith("aten::") or name.startswith("aten::_foreach_"):
            continue
        overload = func._overloadname
        target = f"aten.{name[6:]}.{overload}"
        qual = name if overload == "default" else f"{name}.{overload}"
        if known(target) or ops.handles(target):
            continue
        if torch._C._dispatch_has_kernel_for_dispatch_key(qual, "CompositeImplicitAutograd") or torch._C._dispatch_has_kernel_for_dispatch_key(qual, "Lazy"):
            continue
        _lib.impl(func, fn, "Lazy")


def _fast_kernel(func, fast):
    def kernel(*args, **kwargs):
        out = fast(_call, *args, **kwargs)
        if out is NotImplemented:
            # A form the decomposition leaves to torch: run it eagerly on real values.
            ops().flush(func.name())
            with paused():
                return func(*args, **kwargs)
        return out

    return kernel


@contextlib.contextmanager
def paused():
    """Recording off for the enclosed code (reading real memory, building a cached constant that
    a region would otherwise compute only in a loop's first iteration), back on after."""
    o = _ops if _ops is not None and _ops.recording() else None
    if o is not None:
        o.leave()
    try:
        yield
    finally:
        if o is not None:
            o.enter(-1, False)


def _call(func, *args, **kwargs):
    return func(*args, **kwargs)


_failure: EagerError | None = None


def ops():
    """`torch.ops.ember_native`, loaded and initialized (a failed build is not retried)."""
    global _ops, _failure
    if _failure is not None:
        raise _failure
    if _ops is None:
        from .._source import _EMBER_DIR, _TORCH_DIR
        from .state import _native

        try:
            path = library()
        except EagerError as e:
            _failure = e
            raise
        torch.ops.load_library(str(path))
        o = torch.ops.ember_native
        o.init(_native().eager_native_api(), [_TORCH_DIR, _EMBER_DIR])
        _register_decompositions(o)
        _ops = o
    return _ops


if __name__ == "__main__":
    # `python -m ember.deferred.native`: builds the library ahead of use (`make setup` runs it).
    print(library())
    sys.exit(0)
