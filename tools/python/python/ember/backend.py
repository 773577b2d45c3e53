"""``torch.compile(model, backend="ember")``: compile graphs with Ember's CPU target.

Dynamo hands the graph to AOT Autograd, which decomposes it to core ATen (the op set of
``torch.export`` after ``run_decompositions()``) and passes parameters as plain inputs. Each
forward graph is re-traced with ``torch.export`` (public API, same serialized schema the
frontend reads), compiled by the Rust compiler and run by the CPU runtime, reading the input
tensors in place. Compiled graphs are cached on disk (``~/.cache/ember/graphs`` or
``$EMBER_CACHE_DIR``), keyed by the graph's code, input shapes and dtypes, Ember's version and
the CPU, so a second process reuses them without compiling.

A graph Ember cannot compile (an op without a lowering, a non-CPU device, autograd) runs with
torch eager instead, after one warning naming the reason; the user's program never fails
because of Ember. Graphs are compiled once per shape signature (Dynamo guards re-enter here).
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import tempfile
import warnings
from typing import Any, Callable

import torch

_DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "i1",
}
_TORCH = {v: k for k, v in _DTYPES.items()}

#: Graphs compiled in this process, and fallbacks taken (for tests and curious users).
stats = {"compiled": 0, "cache_hits": 0, "fallbacks": 0}


class Unsupported(Exception):
    """Ember cannot run this graph; torch eager will."""


def _cache_root() -> str:
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember", "graphs")
    os.makedirs(base, exist_ok=True)
    return base


def _graph_key(gm: torch.fx.GraphModule, example_inputs: list[Any], native: Any) -> str:
    """Content address of a compiled graph: its code, input shapes/dtypes, Ember's version, the CPU."""
    h = hashlib.sha256()
    h.update(gm.print_readable(print_output=False, include_stride=True, include_device=True).encode())
    for x in example_inputs:
        h.update(repr((tuple(int(s) for s in x.shape), str(x.dtype))).encode())
    h.update(native.version().encode())
    h.update(platform.machine().encode())
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            h.update(next((ln for ln in f if ln.startswith("flags")), "").encode())
    except OSError:
        pass
    return h.hexdigest()[:32]


def _concrete(x: Any) -> Any:
    """A real tensor like the (possibly fake) example input, for re-tracing."""
    if isinstance(x, torch.Tensor):
        return torch.zeros(tuple(int(s) for s in x.shape), dtype=x.dtype)
    return x


class _Compiled:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        from . import _native

        native = _native()
        for x in example_inputs:
            if not isinstance(x, torch.Tensor):
                raise Unsupported(f"a graph input is a {type(x).__name__}, not a tensor")
            if x.device.type != "cpu":
                raise Unsupported(f"a graph input is on {x.device}; Ember's runtime target here is the CPU")
            if x.dtype not in _DTYPES:
                raise Unsupported(f"a graph input has dtype {x.dtype}")
        # The on-disk cache makes a second process start without compiling. Entries appear by an
        # atomic directory rename, so concurrent processes never see a half-written one.
        final = os.path.join(_cache_root(), _graph_key(gm, example_inputs, native))
        if os.path.exists(os.path.join(final, "cpu", "manifest.json")):
            self.program = native.Program(os.path.join(final, "cpu"))
            stats["cache_hits"] += 1
            return
        d = tempfile.mkdtemp(prefix=".tmp-", dir=_cache_root())
        try:
            path = os.path.join(d, "graph.pt2")
            inputs = tuple(_concrete(x) for x in example_inputs)
            try:
                with torch.no_grad():
                    ep = torch.export.export(gm, inputs).run_decompositions()
                torch.export.save(ep, path)
            except Exception as exc:  # noqa: BLE001 - any export failure means "run eagerly"
                raise Unsupported(f"torch.export could not re-trace the graph: {str(exc).splitlines()[0]}") from exc
            try:
                native.compile(path, "cpu", os.path.join(d, "cpu"))
            except ValueError as exc:
                raise Unsupported(str(exc)) from exc
            try:
                os.rename(d, final)
            except OSError:
                pass  # another process won the race; its entry is equivalent
        finally:
            if os.path.isdir(d):
                shutil.rmtree(d, ignore_errors=True)
        self.program = native.Program(os.path.join(final, "cpu"))
        stats["compiled"] += 1

    def __call__(self, *args: Any) -> tuple[torch.Tensor, ...]:
        keep = [a.detach().contiguous() for a in args]
        raw = [(t.data_ptr(), t.numel() * t.element_size(), list(t.shape), _DTYPES[t.dtype]) for t in keep]
        outs = self.program.run_raw(raw)
        return tuple(torch.frombuffer(bytearray(b), dtype=_TORCH[dt]).reshape(shape) if b else torch.empty(shape, dtype=_TORCH[dt]) for b, shape, dt in outs)


def _forward_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    from torch._functorch.aot_autograd import make_boxed_func

    try:
        if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
            raise Unsupported("training graphs (autograd) are not compiled by Ember yet")
        compiled = _Compiled(gm, example_inputs)
    except Unsupported as exc:
        stats["fallbacks"] += 1
        warnings.warn(f"ember: this graph runs with torch eager: {exc}", stacklevel=2)
        return make_boxed_func(gm.forward)

    def run(*args: Any) -> tuple[torch.Tensor, ...]:
        return compiled(*args)

    return make_boxed_func(run)


def ember_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """The backend Dynamo calls; registered as ``ember`` through the ``torch_dynamo_backends`` entry point."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_forward_compiler, decompositions=core_aten_decompositions())(gm, example_inputs, **kwargs)
