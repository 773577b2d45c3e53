"""``torch.compile(model, backend="ember")``: compile graphs with Ember's CPU target.

Dynamo hands the graph to AOT Autograd, which decomposes it to core ATen (the op set of
``torch.export`` after ``run_decompositions()``) and passes parameters as plain inputs. Each
forward graph is re-traced with ``torch.export`` (public API, same serialized schema the
frontend reads), compiled by the Rust compiler and run by the CPU runtime, reading the input
tensors in place. Compiled graphs are cached on disk (``~/.cache/ember/graphs`` or
``$EMBER_CACHE_DIR``), keyed by the graph's code, input shapes and dtypes, Ember's version and
the CPU, so a second process reuses them without compiling.

Ops Ember cannot compile are partitioned out and run with torch eager, after one warning that
lists them with their source lines; the rest of the graph still runs on Ember. Graphs Ember cannot
take at all (a non-CPU device, autograd) run with torch eager after a warning; the user's program
never fails because of Ember. Graphs are compiled once per shape signature (Dynamo guards re-enter here).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
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

    def __init__(self, reason: str, exported: str | None = None) -> None:
        super().__init__(reason)
        #: A .pt2 of the graph when it was exported before failing (to ask which ops are missing).
        self.exported = exported


def _export(gm: torch.fx.GraphModule, example_inputs: list[Any], d: str) -> str:
    """Re-traces an AOT graph with torch.export into `d`/graph.pt2."""
    path = os.path.join(d, "graph.pt2")
    inputs = tuple(_concrete(x) for x in example_inputs)
    try:
        with torch.no_grad():
            ep = torch.export.export(gm, inputs)
            try:
                ep = ep.run_decompositions()
            except Exception:  # noqa: BLE001 - AOT graphs are core ATen already; some pieces of a
                pass  # partitioned graph trip torch's re-decomposition, and need none.
        torch.export.save(ep, path)
    except Exception as exc:  # noqa: BLE001 - any export failure means "run eagerly"
        raise Unsupported(f"torch.export could not re-trace the graph: {str(exc).splitlines()[0]}") from exc
    return path


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
        keep = False
        try:
            path = _export(gm, example_inputs, d)
            try:
                native.compile(path, "cpu", os.path.join(d, "cpu"))
            except ValueError as exc:
                keep = True  # the caller asks which ops are missing, then deletes it
                raise Unsupported(str(exc), path) from exc
            try:
                os.rename(d, final)
            except OSError:
                pass  # another process won the race; its entry is equivalent
        finally:
            if os.path.isdir(d) and not keep:
                shutil.rmtree(d, ignore_errors=True)
        self.program = native.Program(os.path.join(final, "cpu"))
        stats["compiled"] += 1

    def __call__(self, *args: Any) -> tuple[torch.Tensor, ...]:
        keep = [a.detach().contiguous() for a in args]
        raw = [(t.data_ptr(), t.numel() * t.element_size(), list(t.shape), _DTYPES[t.dtype]) for t in keep]
        outs = self.program.run_raw(raw)
        return tuple(torch.frombuffer(bytearray(b), dtype=_TORCH[dt]).reshape(shape) if b else torch.empty(shape, dtype=_TORCH[dt]) for b, shape, dt in outs)


_UNSUPPORTED_OP = re.compile(r"op `torch\.(aten\.[\w.]+)`")


def _target_name(node: torch.fx.Node) -> str:
    """`aten.sort.default` -> `aten.sort`, the spelling Ember's messages use."""
    name = str(node.target)
    return name[: -len(".default")] if name.endswith(".default") else name


def _user_line(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    user = [f for f in frames if "/torch/" not in f[0]] or frames
    return f"{user[-1][0]}:{user[-1][1]}" if user else "unknown line"


class _Partition(torch.nn.Module):
    """A supported piece of a partitioned graph: compiled by Ember on first call, run eagerly (with
    a warning) if Ember still cannot compile it."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__()
        self.gm = gm
        self.compiled: _Compiled | None = None
        self.eager = False
        # A fused submodule returns a bare value for one output, a tuple otherwise.
        out = next(n for n in gm.graph.nodes if n.op == "output")
        self.single = not isinstance(out.args[0], (tuple, list))

    def forward(self, *args: Any) -> Any:
        if self.compiled is None and not self.eager:
            try:
                self.compiled = _Compiled(self.gm, list(args))
            except Unsupported as exc:
                if exc.exported is not None:
                    shutil.rmtree(os.path.dirname(exc.exported), ignore_errors=True)
                self.eager = True
                stats["fallbacks"] += 1
                warnings.warn(f"ember: part of a graph runs with torch eager: {exc}", stacklevel=2)
        if self.eager:
            return self.gm(*args)
        outs = self.compiled(*args)
        return outs[0] if self.single else outs


def _partition(gm: torch.fx.GraphModule, unsupported: set[str]) -> torch.fx.GraphModule:
    """Splits `gm` into Ember-compiled pieces and eager nodes (the ops in `unsupported`)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupport

    class Support(OperatorSupport):
        def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
            return node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) and _target_name(node) not in unsupported

    p = CapabilityBasedPartitioner(gm, Support(), allows_single_node_partition=True)
    fused = p.fuse_partitions(p.propose_partitions())
    for name, child in list(fused.named_children()):
        if isinstance(child, torch.fx.GraphModule):
            # The pieces carry AOT's functional fake tensors as metadata; torch.export would pick
            # them up outside their mode, so each piece is re-traced from plain example inputs.
            for n in child.graph.nodes:
                n.meta = {k: v for k, v in n.meta.items() if k not in ("val", "tensor_meta", "example_value")}
            setattr(fused, name, _Partition(child))
    return fused


def _forward_compiler(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    from torch._functorch.aot_autograd import make_boxed_func

    try:
        if torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs):
            raise Unsupported("training graphs (autograd) are not compiled by Ember yet")
        compiled = _Compiled(gm, example_inputs)
    except Unsupported as exc:
        # Ops Ember has no lowering for run with torch eager; the rest of the graph still compiles.
        unsupported: set[str] = set()
        if exc.exported is not None:
            from . import _native

            try:
                unsupported = set(_native().unlowered_ops(exc.exported))
            except ValueError:
                unsupported = set()
            finally:
                shutil.rmtree(os.path.dirname(exc.exported), ignore_errors=True)
        if m := _UNSUPPORTED_OP.search(str(exc)):
            unsupported.add(m.group(1))
        if not unsupported:
            stats["fallbacks"] += 1
            warnings.warn(f"ember: this graph runs with torch eager: {exc}", stacklevel=2)
            return make_boxed_func(gm.forward)
        eager_nodes = [n for n in gm.graph.nodes if n.op == "call_function" and _target_name(n) in unsupported]
        lines = sorted({f"{_target_name(n)} ({_user_line(n)})" for n in eager_nodes})
        stats["fallbacks"] += 1
        warnings.warn("ember: these ops have no Ember lowering and run with torch eager: " + "; ".join(lines), stacklevel=2)
        return make_boxed_func(_partition(gm, unsupported).forward)

    def run(*args: Any) -> tuple[torch.Tensor, ...]:
        return compiled(*args)

    return make_boxed_func(run)


def ember_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """The backend Dynamo calls; registered as ``ember`` through the ``torch_dynamo_backends`` entry point."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_forward_compiler, decompositions=core_aten_decompositions())(gm, example_inputs, **kwargs)
