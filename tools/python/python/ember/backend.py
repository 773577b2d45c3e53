"""``torch.compile(model, backend="ember")``: compile graphs with Ember, for the CPU target (the
default) or, with ``options={"target": "tpu" | "trainium"}``, for an XLA target run by PJRT.

Dynamo hands the graph to AOT Autograd, which decomposes it to core ATen (the op set of
``torch.export`` after ``run_decompositions()``, with Ember's corrections: ``decompositions.py``)
and passes parameters as plain inputs. Inference graphs, and both graphs of a training step
(the forward with the tensors it saves, the backward with ``None`` for inputs without a
gradient), are compiled the same way: the values the graph computes are written in
``torch.export``'s serialized schema (the one the frontend reads) by torch's serializer, compiled by the Rust
compiler and run by the CPU runtime, reading the input tensors in place and writing into tensors
allocated here. What the graph returns without computing (an input, a view of an input or of a
computed value, ``None``) is rebuilt from those with torch's own view ops, so every output has
the shape, strides, storage offset and aliasing AOT declared for it. Compiled graphs are cached on
disk (``~/.cache/ember/graphs`` or ``$EMBER_CACHE_DIR``), keyed by the graph's code, input shapes
and dtypes, Ember's version and the CPU, so a second process reuses them without compiling.

Ops Ember cannot compile are partitioned out and run with torch eager, after one warning that
lists them with their source lines; the rest of the graph still runs on Ember. Graphs with symbolic
sizes (Dynamo marks a dim dynamic once it has seen two sizes of it) are compiled once with those
dims symbolic, for every size Dynamo's guards allow, on the CPU target. Graphs Ember cannot take
at all (a non-CPU device, symbolic sizes on tpu/trainium) run with torch eager after a warning;
the user's program never fails because of Ember. On the tpu and trainium targets the graph's values are
compiled to the target's artifact (StableHLO; for trainium its portable HLO, the module
neuronx-cc gets, converted back to StableHLO) and run by ``ember.xla`` on the PJRT client that
``$EMBER_XLA_PLATFORM`` names (``cpu``, jax's CPU client, by default; a TPU host's ``tpu`` client
is untested here); inputs and outputs cross as host copies. Random ops draw from a counter-based generator keyed by a
seed input (``rng.py``). ``options={"check": True}`` (or ``EMBER_CHECK=1``) also runs
every compiled graph with torch eager and raises ``CheckError`` at the first output that differs.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import dataclasses
import functools
import hashlib
import json
import math
import operator
import os
import platform
import re
import shutil
import tempfile
import threading
import time
import warnings
import weakref
from typing import Any, Callable, Sequence

import sympy
import torch

from . import device, dtypes
from ._source import traced_line

_DTYPES = dtypes.by_torch()
_DTYPES_BY_NAME = {v: k for k, v in _DTYPES.items()}

#: Graphs compiled in this process and loaded from the on-disk cache (`backward`: how many of
#: either were backward graphs), fallbacks taken, the seconds Ember spent on the graphs AOT
#: Autograd handed it (`compile_seconds`: partitioning, export, compiling or loading, or
#: waiting for worker threads to; Dynamo's
#: tracing and AOT's are torch's), the inputs that compiled graphs update in their own memory
#: (`in_place`: an optimizer step's parameters and state, without AOT's copies), the pieces of
#: partitioned graphs compiled ahead of their first call (`ahead`) and those compiled again
#: because their inputs came in other layouts (`ahead_missed`), and for the tpu/trainium targets the bytes moved
#: between host and device and the seconds from PJRT's execute to ready results (for tests,
#: benchmarks and curious users; graphs whose results all stay on the ember device are not waited
#: for, so not timed, unless `EMBER_XLA_SYNC=1`).
stats: dict[str, Any] = {"compiled": 0, "cache_hits": 0, "backward": 0, "fallbacks": 0, "targets": {}, "in_place": 0,
                         "to_device_bytes": 0, "from_device_bytes": 0, "xla_seconds": 0.0,
                         "compile_seconds": 0.0, "ahead": 0, "ahead_missed": 0}

#: Pieces compile on worker threads (`_workers`), which count into `stats` too.
_STATS_LOCK = threading.Lock()


def _count(key: str, n: int = 1, target: str | None = None) -> None:
    with _STATS_LOCK:
        if target is None:
            stats[key] += n
        else:
            stats[key][target] = stats[key].get(target, 0) + n


_timing_depth = 0


@contextlib.contextmanager
def _compile_timer() -> Any:
    """Adds the time inside to `stats["compile_seconds"]` (the outermost timer only: a partitioned
    graph's pieces compile on their first call, which may run inside another compile)."""
    global _timing_depth
    _timing_depth += 1
    t0 = time.perf_counter()
    try:
        yield
    finally:
        _timing_depth -= 1
        if _timing_depth == 0:
            stats["compile_seconds"] += time.perf_counter() - t0


#: Targets reachable from torch.compile: the CPU runtime, or XLA through PJRT (`ember.xla`).
_TARGETS = ("cpu", "tpu", "trainium")

#: `options=` keys of `torch.compile(..., backend="ember", options=...)`.
_OPTIONS = {
    "check": "also run every graph with torch eager and raise ember.backend.CheckError where they differ (default: $EMBER_CHECK)",
    "target": "the target to compile for: 'cpu' (default), 'tpu' (StableHLO run by PJRT) or 'trainium' (its portable HLO run by PJRT; $EMBER_XLA_PLATFORM picks the PJRT client, cpu by default)",
    "mesh": "tpu: run every graph SPMD over a device mesh, {'dp': 2, 'tp': 4} or 'dp=2,tp=4' (axis sizes in device order; as `ember compile --mesh`): one module per graph, its collectives inside it",
    "shard": "with mesh: the sharding rules, 'dp,tp,fsdp' or a list, each optionally '=AXIS' (as `ember compile --shard`; the graph's parameters are sharded as parameters)",
}


@dataclasses.dataclass(frozen=True)
class _Target:
    """What graphs compile for: the target, and on tpu a mesh and sharding rules."""

    name: str = "cpu"
    #: `ember compile --mesh` (`dp=2,tp=4`) and `--shard` (`dp,tp,fsdp`).
    mesh: str | None = None
    shard: str | None = None
    #: The graph's inputs that are parameters (or views of them), by placeholder name: AOT
    #: passes them as inputs, and the sharding rules must know them (`--param-inputs`).
    params: frozenset[str] = frozenset()
    #: Several processes share the mesh (torchrun): each reads every output from its own
    #: devices, so outputs are whole on every device (`--replicate-outputs`).
    replicate: bool = False

    def options(self, inputs: Sequence[str]) -> list[tuple[str, str]]:
        """`ember compile`'s target options for a graph with these inputs."""
        if self.mesh is None:
            return []
        opts = [("mesh", self.mesh)] + ([("shard", self.shard)] if self.shard else [])
        params = [n for n in inputs if n in self.params]
        opts += [("param-inputs", ",".join(params))] if params else []
        return opts + ([("replicate-outputs", "")] if self.replicate else [])

#: Error a checked output may have, by dtype: |ember - eager| <= rtol·|eager| + atol·√n (norms
#: over its n elements). The absolute part covers values that are rounding noise around zero (a
#: convolution's bias gradient under BatchNorm is 0 in exact arithmetic).
_CHECK_TOLERANCE = {torch.float64: (1e-9, 1e-7), torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-3), torch.bfloat16: (2e-2, 1e-2)}


class Unsupported(Exception):
    """Ember cannot run this graph; torch eager will."""

    def __init__(self, reason: str, exported: str | None = None) -> None:
        super().__init__(reason)
        #: A .pt2 of the graph when it was exported before failing (to ask which ops are missing).
        self.exported = exported


class CheckError(AssertionError):
    """In check mode, an output of a compiled graph differs from torch eager's."""


def _export(gm: torch.fx.GraphModule, d: str, ranges: dict[Any, tuple[int, int]] | None = None, updates: dict[int, str] | None = None) -> str:
    """Writes `gm` to `d`/graph.json in torch.export's schema, which the frontend reads: torch's
    own graph serializer on AOT's graph as it is (core ATen, functional, a fake value on every
    node; sizes in Dynamo's symbols). Re-tracing it with torch.export first, on real zero inputs,
    and packing a `.pt2` took 4.2 s of GPT-2 small's first call; this takes 0.2-0.3 s.
    `ranges` narrows symbols' ranges (a padded bucket's sizes); `updates` marks outputs (by
    position) that are the new value of an input (by name), which the cpu target may compute in
    that input's memory."""
    from torch._export.serde import schema
    from torch._export.serde import serialize as serde
    from torch.export import graph_signature as gs
    from torch.utils._sympy.value_ranges import ValueRanges

    path = os.path.join(d, "graph.json")
    g = gm.graph
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    outs = next(n for n in g.nodes if n.op == "output").args[0]
    try:
        sig = gs.ExportGraphSignature(
            input_specs=[gs.InputSpec(gs.InputKind.USER_INPUT, gs.TensorArgument(p.name), None) for p in placeholders],
            output_specs=[gs.OutputSpec(gs.OutputKind.USER_INPUT_MUTATION, gs.TensorArgument(o.name), updates[k]) if k in (updates or {})
                          else gs.OutputSpec(gs.OutputKind.USER_OUTPUT, gs.TensorArgument(o.name), None) for k, o in enumerate(outs)],
        )
        # The frontend reads a node's value and source line; the rest of AOT's metadata (module
        # stacks holding classes, which the serializer refuses) stays out of the file.
        metas = {n: n.meta for n in g.nodes}
        for n, meta in metas.items():
            n.meta = {k: meta[k] for k in ("val", "stack_trace") if k in meta}
        try:
            graph = serde.GraphModuleSerializer(sig, []).serialize(gm)
        finally:
            for n, meta in metas.items():
                n.meta = meta
        sizes = []
        for n in g.nodes:
            v = n.meta.get("val")
            for t in v if isinstance(v, (tuple, list)) else [v]:
                if isinstance(t, torch.Tensor):
                    sizes += [s for s in (*t.shape, *t.stride()) if _symbolic(s)]
                elif _symbolic(t):
                    sizes.append(t)
        symbols = {s for size in sizes for s in size.node.expr.free_symbols}
        env = sizes[0].node.shape_env if sizes else None
        program = schema.ExportedProgram(
            graph_module=graph,
            opset_version={"aten": torch._C._get_max_operator_version()},
            range_constraints=serde.serialize_range_constraints(
                {s: ValueRanges(*ranges[s]) if ranges and s in ranges else env.var_to_range[s] for s in sorted(symbols, key=str)}
            ),
            schema_version=schema.SchemaVersion(*serde.SCHEMA_VERSION),
            torch_version=torch.__version__,
        )
        text = serde._to_json_bytes(program)
    except Exception as exc:  # noqa: BLE001 - any serialization failure means "run eagerly"
        raise Unsupported(f"the graph could not be serialized: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from exc
    with open(path, "wb") as f:
        f.write(text)
    return path


def _cache_root() -> str:
    base = os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember", "graphs")
    os.makedirs(base, exist_ok=True)
    return base


def _remove_stale_tmp(root: str) -> None:
    """Removes the `.tmp-PID-*` entries of writers that are gone (a SIGKILL runs no `finally`)."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        pid = name[len(".tmp-") :].split("-")[0] if name.startswith(".tmp-") else ""
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


@functools.cache
def _build_id(path: str) -> str:
    """The native extension's build, as its file's size and modification time: a rebuilt
    compiler (same version, different code generation) must not load an older build's artifacts."""
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}"


def _graph_key(gm: torch.fx.GraphModule, example_inputs: list[Any], native: Any, target: str, options: list[tuple[str, str]]) -> str:
    """Content address of a compiled graph: its code, input shapes/dtypes, the target and its
    options, Ember's version and build, the CPU."""
    h = hashlib.sha256()
    h.update(repr((target, options)).encode())
    # The code and each value's layout: what `print_readable(include_stride=True,
    # include_device=True)` shows, without generating annotated code (0.2 s per GPT-2 graph).
    h.update(gm.code.encode())
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        for x in v if isinstance(v, (tuple, list)) else [v]:
            h.update(repr((str(x.dtype), tuple(map(str, x.shape)), tuple(map(str, x.stride())), str(x.device))
                          if isinstance(x, torch.Tensor) else str(x)).encode())
    for x in example_inputs:
        h.update(repr((tuple(str(_size(s)) for s in x.shape), str(x.dtype))).encode())
    h.update(native.version().encode())
    h.update(_build_id(native.__file__).encode())
    h.update(platform.machine().encode())
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            h.update(next((ln for ln in f if ln.startswith("flags")), "").encode())
    except OSError:
        pass
    return h.hexdigest()[:32]


def _symbolic(s: Any) -> bool:
    return isinstance(s, torch.SymInt) and not s.node.expr.is_number


def _size(s: Any) -> Any:
    """A size or stride as an int, or as its sympy expression when symbolic (read without
    `int()`, which would add a guard and specialize the graph to this size)."""
    if isinstance(s, torch.SymInt):
        e = s.node.expr
        return int(e) if e.is_number else e
    return int(s)


def _view_chain(node: torch.fx.Node) -> tuple[torch.fx.Node, list[torch.fx.Node]]:
    """The node `node` is a view of (through view ops and the getitems of multi-output views)
    and the view nodes from it to `node`, outermost last. A view of a complex value is not one:
    Ember's outputs are real, so it is computed (a `view_as_real` of a complex product)."""

    def complex_operand(n: torch.fx.Node) -> bool:
        v = n.args[0].meta.get("val") if n.args and isinstance(n.args[0], torch.fx.Node) else None
        return isinstance(v, torch.Tensor) and v.is_complex()

    chain = []
    while node.op == "call_function" and not complex_operand(node):
        if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) and getattr(node.args[0].target, "is_view", False):
            chain.append(node)
            node = node.args[0]
        if isinstance(node.target, torch._ops.OpOverload) and node.target.is_view and isinstance(node.args[0], torch.fx.Node):
            chain.append(node)
            node = node.args[0]
        else:
            break
    return node, chain[::-1]


#: Views that only regroup a dense tensor's dims (a batch norm's per-channel mean saved for the
#: backward as `unsqueeze`s to [1, C, 1, 1]).
_RESHAPES = {
    torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default, torch.ops.aten.reshape.default,
    torch.ops.aten.unsqueeze.default, torch.ops.aten.squeeze.dim, torch.ops.aten.squeeze.dims, torch.ops.aten.squeeze.default,
}  # fmt: skip


def _dense(node: torch.fx.Node) -> bool:
    """Whether the graph declares `node` contiguous, with static sizes."""
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) and all(isinstance(s, int) for s in (*val.shape, *val.stride())) and val.is_contiguous()


def _layout(node: torch.fx.Node) -> tuple[tuple[Any, ...], tuple[Any, ...], torch.dtype] | None:
    """The shape, strides and dtype the graph declares for `node`: ints, or sympy expressions
    in the graph's size symbols."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return None
    return tuple(_size(s) for s in val.shape), tuple(_size(s) for s in val.stride()), val.dtype


def _dense_permutation(x: Any) -> list[int] | None:
    """The dim order that makes `x` contiguous, when `x` is a non-contiguous permutation of a
    dense tensor (None otherwise)."""
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or any(map(_symbolic, (*x.shape, *x.stride()))) or x.is_contiguous():
        return None
    perm = sorted(range(x.dim()), key=lambda d: (-x.stride(d), d))
    return perm if x.permute(perm).is_contiguous() else None


_assert_size_stride = torch._C._dynamo.guards.assert_size_stride


def _same_order(shape: tuple[int, ...], strides: tuple[int, ...], dense: tuple[int, ...]) -> bool:
    """Whether `strides` address the elements of `shape` as the dense `strides` do (a dim of
    size 1 takes any stride)."""
    return 0 in shape or all(s == d for n, s, d in zip(shape, strides, dense) if n > 1)


def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


@dataclasses.dataclass
class _SizeOutput:
    """A graph output that is a size, not a tensor."""

    node: torch.fx.Node


def _size_node(g: torch.fx.Graph, expr: Any, symbol: Callable[[Any], Any], name: str) -> Any:
    """Nodes of `g` computing the size `expr` (an int or a sympy expression of sizes: sums,
    products, floor divisions), with `symbol(s)` the node of symbol `s`'s value."""
    from torch.utils._sympy.functions import FloorDiv

    if isinstance(expr, int) or expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return symbol(expr)
    def call(op: Callable[..., Any], args: tuple[Any, ...]) -> torch.fx.Node:
        node = g.call_function(op, args)
        vals = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in args]
        if all(v is not None for v in vals):
            node.meta["val"] = op(*vals)  # the serializer writes a size node's expression
        return node

    if isinstance(expr, (sympy.Add, sympy.Mul)):
        op = operator.add if isinstance(expr, sympy.Add) else operator.mul
        args = [_size_node(g, a, symbol, name) for a in expr.args]
        out = args[0]
        for a in args[1:]:
            out = call(op, (out, a))
        return out
    if isinstance(expr, FloorDiv):
        return call(operator.floordiv, tuple(_size_node(g, a, symbol, name) for a in expr.args))
    raise Unsupported(f"the size `{name}` = {expr} is not a sum, product or floor division of input sizes")


def _append_placeholder(g: torch.fx.Graph, name: str) -> torch.fx.Node:
    """A new last input of `g`. After the last placeholder, not before the first other node:
    an input's permute (`_Split`) may sit between two placeholders, and a placeholder put there
    would take the next input's position (a transformers Falcon's backward read a constant
    where its saved weight goes)."""
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    with g.inserting_after(placeholders[-1]) if placeholders else g.inserting_before(next(iter(g.nodes))):
        return g.placeholder(name)


class _Split:
    """A graph (rewritten in place) split into the values Ember computes (`core`, whose outputs
    are `roots`) and an `epilogue` that rebuilds the graph's outputs from the inputs and those
    values with torch's view ops: outputs that are inputs, views of them or of computed values,
    and `None`s come out exactly as AOT declared them (strides, offsets, aliasing), not as copies."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> None:
        g = gm.graph
        # An input laid out as a permutation of a dense tensor (a saved transposed weight) is
        # read as that dense tensor, and the graph permutes it back: Ember folds the permute
        # into the GEMM or kernel that reads it, where a contiguous copy would cost a pass
        # (64 MB per 4096² weight per step).
        example_inputs = list(example_inputs)
        self.input_perms: list[list[int] | None] = []
        for i, p in enumerate(n for n in g.nodes if n.op == "placeholder"):
            perm = _dense_permutation(example_inputs[i]) if i < len(example_inputs) else None
            self.input_perms.append(perm)
            if perm is None:
                continue
            example_inputs[i] = example_inputs[i].permute(perm)
            with g.inserting_after(p):
                back = g.call_function(torch.ops.aten.permute.default, (p, [perm.index(d) for d in range(len(perm))]))
            p.replace_all_uses_with(back, delete_user_cb=lambda u: u is not back)
            back.meta = dict(p.meta)
            p.meta = {"val": example_inputs[i]} if "val" in p.meta else {}
        # Tensors held by the module (a `torch.tensor([])` in the user's code) become inputs: the
        # graph file carries no tensors.
        self.constants: list[torch.Tensor] = []
        for n in list(g.nodes):
            if n.op == "get_attr":
                value = operator.attrgetter(n.target)(gm)
                if not isinstance(value, torch.Tensor):
                    raise Unsupported(f"the graph holds a {type(value).__name__} (`{n.target}`)")
                p = _append_placeholder(g, f"ember_constant_{len(self.constants)}")
                p.meta = dict(n.meta)
                n.replace_all_uses_with(p)
                g.erase_node(n)
                self.constants.append(value)
        inputs = example_inputs + self.constants
        #: Where each size symbol's value is found at call time: (input position, dim), dim None
        #: for a SymInt input. A tensor's dim is preferred: the compiled values read only tensors.
        self.symbols: dict[Any, tuple[int, int | None]] = {}
        sizes = [(i, d, sz) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) for d, sz in enumerate(x.shape)]
        sizes += [(i, None, x) for i, x in enumerate(inputs) if isinstance(x, torch.SymInt)]
        for i, d, sz in sizes:
            if _symbolic(sz) and sz.node.expr.is_Symbol:
                self.symbols.setdefault(sz.node.expr, (i, d))
        #: SymInt inputs whose symbol no tensor input has as a dim (a backward that expands a
        #: scalar gradient to `[s0, ...]`): each is passed as an empty tensor of shape [s, 0]
        #: as well, whose dim the compiled values read (positions in the inputs).
        self.size_inputs: list[int] = []
        fake_mode = torch._guards.detect_fake_mode(inputs)
        for sym, (i, d) in list(self.symbols.items()):
            if d is None and fake_mode is not None:
                with fake_mode:
                    carrier = torch.empty((inputs[i], 0))
                p = _append_placeholder(g, f"ember_size_{len(self.size_inputs)}")
                p.meta["val"] = carrier
                self.size_inputs.append(i)
                self.symbols[sym] = (len(inputs), 0)
                inputs.append(carrier)
        out_node = next(n for n in g.nodes if n.op == "output")
        outs = out_node.args[0]
        self.single = not isinstance(outs, (tuple, list))
        outs = [outs] if self.single else list(outs)
        epi = torch.fx.Graph()
        env = {p: epi.placeholder(p.name) for p in g.nodes if p.op == "placeholder"}
        roots: list[torch.fx.Node] = []
        chains: list[tuple[torch.fx.Node, list[torch.fx.Node]] | None] = []
        for o in outs:
            if o is None:
                chains.append(None)
                continue
            if not isinstance(o, torch.fx.Node):
                raise Unsupported(f"a graph output is a {type(o).__name__}, not a tensor")
            if isinstance(o.meta.get("val"), (int, torch.SymInt)):
                # A size the forward saves for the backward (`4*s0`): computed by the epilogue
                # from the inputs' sizes.
                chains.append(_SizeOutput(o))
                continue
            root, chain = _view_chain(o)
            # A reshape of a value nothing else reads is computed in its output shape: the view
            # costs nothing inside the compiled values, and no epilogue then runs per call (a
            # language model's logits `view` of its last matmul).
            while chain and root.op != "placeholder" and len(root.users) == 1 and chain[0].target in _RESHAPES and _dense(chain[0]):
                root, chain = chain[0], chain[1:]
            if root.op != "placeholder" and root not in roots:
                roots.append(root)
            chains.append((root, chain))
        #: (shape, strides, dtype) of each computed value, as the graph declares it (sizes in
        #: the graph's symbols where they are symbolic: see `layouts`).
        self.roots = []
        #: Whether each computed value is an ember-device tensor (kept on the device).
        self.on_device: list[bool] = []
        back: dict[torch.fx.Node, list[int]] = {}
        #: Each output as the computed value it is (an index into `roots`; None for a None), when
        #: every output is one: a static graph's runner then hands them out in their declared
        #: layouts (`declared`) without running the epilogue. None when some output is a view,
        #: an input or a size.
        index = {r: k for k, r in enumerate(roots)}
        self.direct: list[int | None] | None = [None if c is None else index[c[0]] for c in chains] \
            if all(c is None or (isinstance(c, tuple) and not c[1] and c[0] in index) for c in chains) else None
        self.declared = [_layout(r) for r in roots]
        #: Whether each computed value is computed in another memory order than its shape's.
        self.permuted: list[bool] = []
        for k, r in enumerate(roots):
            # A value declared as a permutation of a dense tensor (channels-last activations
            # between convolutions) is computed in that memory order, the permute folded into
            # the kernel that writes it, and the epilogue's permute back is a view: no copy.
            perm = _dense_permutation(r.meta.get("val"))
            env[r] = epi.placeholder(f"root_{r.name}")
            if perm is not None:
                with g.inserting_after(r):
                    roots[k] = g.call_function(torch.ops.aten.permute.default, (r, perm))
                roots[k].meta["val"] = r.meta["val"].permute(perm)
                back[r] = [perm.index(d) for d in range(len(perm))]
            self.permuted.append(perm is not None)
            layout = _layout(roots[k])
            if layout is None:
                raise Unsupported(f"the value `{r.name}` is not a tensor")
            self.roots.append(layout)
            self.on_device.append(roots[k].meta["val"].device.type == device.NAME)
        for r, inverse in back.items():
            env[r] = epi.call_function(torch.ops.aten.permute.default, (env[r], inverse))
        results = []
        placeholders = [n for n in g.nodes if n.op == "placeholder"]

        def symbol(sym: Any) -> Any:
            if sym not in self.symbols:
                raise Unsupported(f"the size {sym} is not the size of an input")
            i, d = self.symbols[sym]
            return env[placeholders[i]] if d is None else epi.call_function(torch.ops.aten.sym_size.int, (env[placeholders[i]], d))

        def size_arg(n: torch.fx.Node) -> Any:
            """A view's size argument (`view(x, [4*s0, 64])`), computed from the inputs' sizes."""
            if not isinstance(n.meta.get("val"), (int, torch.SymInt)):
                raise KeyError(n)
            env[n] = _size_node(epi, _size(n.meta["val"]), symbol, n.name)
            return env[n]

        for c in chains:
            if c is None:
                results.append(None)
                continue
            if isinstance(c, _SizeOutput):
                results.append(_size_node(epi, _size(c.node.meta["val"]), symbol, c.node.name))
                continue
            for v in c[1]:
                if v not in env:
                    try:
                        env[v] = epi.node_copy(v, lambda n: env[n] if n in env else size_arg(n))
                    except KeyError as exc:
                        raise Unsupported(f"the view `{v.name}` reads a value that is not a graph input or output") from exc
            results.append(env[c[1][-1]] if c[1] else env[c[0]])
        epi.output(results[0] if self.single else tuple(results))
        #: The outputs are the computed values themselves, in order and in their computed layouts:
        #: no epilogue to run, whatever the sizes.
        self.identity = not self.single and self.direct == list(range(len(roots))) and not any(self.permuted)
        self.epilogue = torch.fx.GraphModule(torch.nn.Module(), epi)
        placeholders = [n for n in g.nodes if n.op == "placeholder"]
        self.symbolic = any(not isinstance(v, int) for shape, strides, _ in self.roots for v in (*shape, *strides))
        self._sizes: dict[tuple[int, ...], list[tuple[tuple[int, ...], tuple[int, ...]]]] = {}
        #: The inputs the compiled values read: the tensors (a SymInt input is read as the dim of
        #: a tensor input that has that size: the compiled values read only tensors).
        self.core_inputs = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
        self.core = None
        if roots:
            out_node.args = (tuple(roots),)
            g.eliminate_dead_code()
            body = next(n for n in g.nodes if n.op != "placeholder")
            for i, p in enumerate(placeholders):
                if isinstance(inputs[i], torch.Tensor):
                    continue
                if p.users:
                    def dim_of(sym: Any, name: str = p.name, value: Any = inputs[i]) -> Any:
                        where = self.symbols.get(sym)
                        if where is None or where[1] is None:
                            raise Unsupported(f"the graph input `{name}` ({value}) is not computed from the sizes of tensor inputs")
                        node = g.call_function(torch.ops.aten.sym_size.int, (placeholders[where[0]], where[1]))
                        node.meta["val"] = inputs[where[0]].shape[where[1]]
                        return node

                    with g.inserting_before(body):
                        size = _size_node(g, _size(inputs[i]), dim_of, p.name)
                    if isinstance(size, torch.fx.Node):
                        size.meta["val"] = inputs[i]
                    p.replace_all_uses_with(size)
                g.erase_node(p)
            gm.recompile()
            self.core = gm
        self.example_inputs = [inputs[i] for i in self.core_inputs]

    def layouts(self, args: list[Any]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Each computed value's (shape, strides) at these inputs' sizes."""
        if not self.symbolic:
            return [(shape, strides) for shape, strides, _ in self.roots]
        key = tuple(int(args[i] if d is None else args[i].shape[d]) for i, d in self.symbols.values())
        if key not in self._sizes:
            import sympy

            values = {s: sympy.Integer(v) for s, v in zip(self.symbols, key)}
            ev = lambda e: e if isinstance(e, int) else int(e.xreplace(values))  # noqa: E731
            self._sizes[key] = [(tuple(map(ev, shape)), tuple(map(ev, strides))) for shape, strides, _ in self.roots]
        return self._sizes[key]


class _Compiled:
    """A graph compiled by Ember (its computed values) plus the epilogue that returns its outputs."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], *, backward: bool = False, target: _Target = _Target(),
                 updates: dict[int, int] | None = None) -> None:
        """`updates`: the graph's outputs (by position) that are the new values of its inputs (by
        position), which AOT copies into them after the call (an optimizer's parameters and
        state)."""
        from . import _native

        native = _native()
        self.where = target
        self.target = target.name
        self.kind = "backward" if backward else "forward"
        for x in example_inputs:
            if isinstance(x, (int, torch.SymInt)) and not isinstance(x, bool):
                continue
            if not isinstance(x, torch.Tensor):
                raise Unsupported(f"a graph input is a {type(x).__name__}, not a tensor")
            if x.device.type != "cpu" and (x.device.type != device.NAME or target.name == "cpu"):
                raise Unsupported(f"a graph input is on {x.device}; the {target.name} target takes "
                                  f"{'CPU tensors' if target.name == 'cpu' else 'CPU or ember-device tensors'}")
            if x.dtype not in _DTYPES:
                raise Unsupported(f"a graph input has dtype {x.dtype}")
        self.split = _Split(gm, example_inputs)
        #: Computed values the compiler may write over the input they update (by their positions
        #: among the computed values and the compiled inputs), and those it does (`in_place`).
        self.updates = self._updates(updates or {})
        self.in_place: dict[int, int] = {}
        self.program = None
        self._fixed: Any = None
        if self.split.core is not None:
            if self.target != "cpu" and (self.split.symbols or self.split.symbolic):
                self.program = _Buckets(self, native)
            else:
                self.program = self._load(native, self.split.core, self.split.example_inputs)
            if backward:
                _count("backward")
            self._fixed = self._fixed_layouts()
            if self._fixed is not None:
                self._run_fixed = self._fixed_runner()
        # Per-call overhead is most of a small graph's time: a call whose outputs are the computed
        # values goes straight to the addresses path.
        self._direct = self._fixed is not None and self.split.direct is not None

    def _updates(self, updates: dict[int, int]) -> dict[int, int]:
        """Of AOT's input updates, those whose output is a computed value returned as is, once,
        in the input's dtype and dense layout, over an input read as it is: the compiled program
        may then compute it in the input's memory (`plan::in_place` decides)."""
        split, found = self.split, {}
        if split.direct is None or self.target != "cpu":
            return found
        for k, i in updates.items():
            r = split.direct[k] if k < len(split.direct) else None
            if r is None or split.direct.count(r) != 1 or split.permuted[r] or i not in split.core_inputs:
                continue
            if i >= len(split.input_perms) or split.input_perms[i] is not None:
                continue
            c = split.core_inputs.index(i)
            x = split.example_inputs[c]
            shape, strides, dtype = split.declared[r]
            if (tuple(x.shape), x.dtype) == (shape, dtype) and tuple(strides) == _contiguous_strides(shape) == tuple(x.stride()):
                found[r] = c
        return found

    def _fixed_layouts(self) -> Any:
        """For a graph without symbolic sizes whose inputs are what the program declares: each
        input's (position, shape, strides, dtype, permutation) and each output's (shape, strides,
        dtype), so that a call passes only addresses, and the outputs to lay out anew.

        A direct graph (`_Split.direct`) is called with its own arguments and returns its
        outputs: an input it reads as a dense permutation is checked in the caller's layout,
        and a value computed in another memory order is handed out in its declared layout,
        which is the same memory. Otherwise the runner takes the permuted arguments and
        returns the computed values, for the epilogue."""
        split = self.split
        if self.target != "cpu" or split.symbols or split.symbolic or not self.program.fixed:
            return None
        declared = [(dtype, [int(d) for d in dims]) for _, dtype, dims in self.program.inputs()]
        got = [(_DTYPES.get(x.dtype), list(x.shape)) for x in split.example_inputs]
        if declared != got:
            return None
        direct = split.direct is not None
        ins = []
        for i, x in zip(split.core_inputs, split.example_inputs):
            shape = tuple(x.shape)
            strides = _contiguous_strides(shape)
            perm = split.input_perms[i] if direct and i < len(split.input_perms) else None
            if perm is not None:
                inverse = [perm.index(d) for d in range(len(perm))]
                shape, strides = tuple(shape[d] for d in inverse), tuple(strides[d] for d in inverse)
            ins.append((i, shape, strides, x.dtype, perm))
        outs, restride = [], []
        for j, ((shape, strides, dtype), (out_shape, out_strides, _)) in enumerate(zip(split.roots, split.declared)):
            dense = _contiguous_strides(shape)
            want = (out_shape, out_strides) if direct else (shape, strides)
            if (direct and split.permuted[j]) or _same_order(*want, dense):
                outs.append((*want, dtype))
            else:
                # Declared with gaps or overlaps: computed dense, then copied into that layout.
                outs.append((shape, dense, dtype))
                restride.append((j, *want))
        return ins, outs, restride

    def _load(self, native: Any, core: torch.fx.GraphModule, example_inputs: list[Any], ranges: dict[Any, tuple[int, int]] | None = None) -> Any:
        # The on-disk cache makes a second process start without compiling. Entries appear by an
        # atomic directory rename, so concurrent processes never see a half-written one.
        options = self.where.options([n.name for n in core.graph.nodes if n.op == "placeholder"])
        key = options + sorted((str(k), v) for k, v in (ranges or {}).items()) + sorted(self.updates.items())
        final = os.path.join(_cache_root(), _graph_key(core, example_inputs, native, self.target, key))
        art = os.path.join(final, self.target)
        program = None
        if os.path.exists(os.path.join(art, "manifest.json")):
            try:
                program = self._program(native, art)
                _count("cache_hits")
            except Exception as exc:  # noqa: BLE001 - only a damaged entry is retried
                if "the artifact is damaged" not in str(exc):
                    raise
                # Changed on disk after it was written (the loaders check every file's
                # checksum): moved aside in one rename, so no process loads it again, then
                # compiled afresh like a miss.
                dead = tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-", dir=_cache_root())
                try:
                    os.rename(final, os.path.join(dead, "entry"))
                except OSError:
                    pass  # another process moved it first
                shutil.rmtree(dead, ignore_errors=True)
        if program is None:
            _remove_stale_tmp(_cache_root())
            d = tempfile.mkdtemp(prefix=f".tmp-{os.getpid()}-", dir=_cache_root())
            keep = False
            try:
                names = [n.name for n in core.graph.nodes if n.op == "placeholder"]
                path = _export(core, d, ranges, {r: names[c] for r, c in self.updates.items()})
                try:
                    native.compile(path, self.target, os.path.join(d, self.target), options)
                except ValueError as exc:
                    keep = True  # the caller asks which ops are missing, then deletes it
                    # The message names the node and the user's line; the file it names is gone
                    # by the time the user reads it.
                    raise Unsupported(str(exc).replace(f"`{path}`: ", "").replace(f"{path}: ", ""), path) from exc
                try:
                    os.rename(d, final)
                except OSError:
                    pass  # another process won the race; its entry is equivalent
            finally:
                if os.path.isdir(d) and not keep:
                    shutil.rmtree(d, ignore_errors=True)
            _count("compiled")
            program = self._program(native, art)
        _count("targets", target=self.target)
        with open(os.path.join(art, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        outputs = manifest["outputs"]
        if manifest.get("in_place"):
            out_of = {o["buf"]: j for j, o in reversed(list(enumerate(outputs)))}
            in_of = {x["buf"]: c for c, x in enumerate(manifest["inputs"])}
            self.in_place = {out_of[o]: in_of[x] for o, x in manifest["in_place"]}
        if any(self.updates.get(j) != c for j, c in self.in_place.items()):
            raise Unsupported(f"the compiled graph updates inputs {self.in_place}, the graph asked for {self.updates}")
        # Outputs are allocated here from the graph's shapes: they must be the program's (the
        # runtime also refuses a buffer of the wrong size). A symbolic dim must be symbolic
        # on both sides.
        got = [(o["dtype"], [int(s) if s.isdigit() else "sym" for s in o["dims"]]) for o in outputs]
        want = [(_DTYPES.get(dtype), [d if isinstance(d, int) else "sym" for d in shape]) for shape, _, dtype in self.split.roots]
        if got != want:
            raise Unsupported(f"the compiled graph returns {got}, the graph declares {want}")
        return program

    def _program(self, native: Any, art: str) -> Any:
        return native.Program(art) if self.target == "cpu" else _XlaProgram(art)

    def run_core(self, args: list[torch.Tensor]) -> list[torch.Tensor]:
        """The computed values, laid out as the graph declares them."""
        if self._fixed is not None:
            return self._run_fixed(args)
        layouts = self.split.layouts(args)
        keep = [args[i].detach().contiguous() for i in self.split.core_inputs]
        if self.target == "cpu":
            raw = [(t.data_ptr(), t.numel() * t.element_size(), list(t.shape), _DTYPES[t.dtype]) for t in keep]
            outs = [torch.empty(shape, dtype=dtype, device="cpu") for (shape, _), (_, _, dtype) in zip(layouts, self.split.roots)]
            self.program.run_into(raw, [(t.data_ptr(), t.numel() * t.element_size()) for t in outs])
        else:
            outs = self.program.run(keep, self.split.on_device)
        for i, (shape, strides) in enumerate(layouts):
            # An ember tensor is contiguous: its strides are not kept on the device.
            if strides != _contiguous_strides(shape) and outs[i].numel() > 1 and not self.split.on_device[i]:
                outs[i] = torch.empty_strided(shape, strides, dtype=outs[i].dtype, device=outs[i].device).copy_(outs[i])
        return outs

    def __call__(self, *args: Any) -> Any:
        if self._direct:
            return self._run_fixed(args)
        args = [a.permute(p) if p is not None else a for a, p in zip(args, self.split.input_perms)] + self.split.constants
        if self.split.size_inputs:
            args += [torch.empty((args[i], 0), device="cpu") for i in self.split.size_inputs]
        roots = self.run_core(args) if self.program is not None else []
        if self.split.identity:
            return tuple(roots)
        # The epilogue's generated function itself (not Module.__call__), without autograd: its
        # views rebuild outputs AOT accounts for.
        grad = torch.is_grad_enabled()
        torch._C._set_grad_enabled(False)
        try:
            return self.split.epilogue.forward(*args, *roots)
        finally:
            torch._C._set_grad_enabled(grad)

    def _fixed_runner(self) -> Callable[[Sequence[Any]], Any]:
        """The call of a graph without symbolic sizes (`_fixed_layouts`), on the argument list:
        the shapes were checked against the program once, so a call checks each input's dtype,
        shape and strides (one C call each, as Inductor's wrapper does) and passes addresses.
        Per-call overhead is most of a small graph's time (a convolution net's pieces between
        its convolutions), so the function is generated for this graph, one statement per input
        and output (no loops, constants bound by name), as Inductor's wrappers are; an input
        laid out otherwise takes `slow`. A direct graph's runner returns its outputs and is its
        boxed function (`_compile_graph`); another's returns the computed values."""
        ins, outs, restride = self._fixed
        from . import _native

        split = self.split
        direct = split.direct is not None
        run_ptrs = self.program.run_ptrs
        # Output memory kept for the next call (tools/python/src/buffers.rs says why).
        slots = [_native().OutputSlot(shape, strides, *dtypes.dlpack(_DTYPES[dtype]), torch._C._from_dlpack) for shape, strides, dtype in outs]
        n_args = len(split.input_perms)

        # An output computed in its input's memory (`in_place`) is that input, as it was passed
        # (or the contiguous copy `slow` made of it, which AOT then copies back).
        # (`run_core`, with symbolic sizes, leaves the inputs alone: the runtime copies them.)
        donors = [self.in_place[j] for j in range(len(outs)) if j in self.in_place]
        _count("in_place", len(donors))

        def slow(args: Sequence[Any]) -> Any:
            ptrs, keep, ts = [], [], []
            for (i, _, _, dtype, perm), x in zip(ins, split.example_inputs):
                t = args[i] if i < len(args) else split.constants[i - n_args]
                if perm is not None:
                    t = t.permute(perm)
                shape = tuple(x.shape)
                if tuple(t.shape) != shape or t.dtype != dtype:
                    raise RuntimeError(f"Ember: graph input {i} is {tuple(t.shape)} {t.dtype}, compiled for {shape} {dtype}")
                if not t.is_contiguous():
                    t = t.contiguous()
                    keep.append(t)
                ptrs.append(t.data_ptr())
                ts.append(t)
            return tail(ptrs, [ts[c] for c in donors])

        def relayout(x: torch.Tensor, shape: tuple[int, ...], strides: tuple[int, ...]) -> torch.Tensor:
            return torch.empty_strided(shape, strides, dtype=x.dtype, device=x.device).copy_(x)

        env: dict[str, Any] = {"slow": slow, "relayout": relayout, "run_ptrs": run_ptrs, "check": _assert_size_stride}
        tail_src = ["def tail(ptrs, donated, " + "".join(f"slot{j}=slot{j}, " for j in range(len(slots))) + "relayout=relayout, run_ptrs=run_ptrs):"]
        for j, slot in enumerate(slots):
            env[f"slot{j}"] = slot
            if j in self.in_place:
                tail_src.append(f"    o{j} = donated[{donors.index(self.in_place[j])}]")
            else:
                tail_src.append(f"    o{j} = slot{j}()")
        tail_src.append(f"    run_ptrs(ptrs, [{', '.join(f'o{j}.data_ptr()' for j in range(len(outs)))}])")
        for j, shape, strides in restride:
            tail_src.append(f"    o{j} = relayout(o{j}, {shape!r}, {strides!r})")
        if not direct:
            tail_src.append(f"    return [{', '.join(f'o{j}' for j in range(len(outs)))}]")
        elif split.single:
            tail_src.append(f"    return o{split.direct[0]}")
        else:
            tail_src.append(f"    return [{', '.join('None' if j is None else f'o{j}' for j in split.direct)}]")
        run = ["def run(args):", "    try:"]
        for k, (i, shape, strides, dtype, _) in enumerate(ins):
            env[f"s{k}"], env[f"t{k}"], env[f"d{k}"] = shape, strides, dtype
            if i < n_args or not direct:
                run.append(f"        x{k} = args[{i}]")
            else:
                env[f"x{k}"] = split.constants[i - n_args]
            run += [f"        if x{k}.dtype is not d{k}: raise AssertionError", f"        check(x{k}, s{k}, t{k})"]
        run += ["        pass", "    except AssertionError:", "        return slow(args)",
                f"    return tail([{', '.join(f'x{k}.data_ptr()' for k in range(len(ins)))}], [{', '.join(f'x{c}' for c in donors)}])"]
        # Every name a body reads becomes a default argument: a local read, not a dict lookup.
        exec(compile("\n".join(tail_src), "<ember runner>", "exec"), env)  # noqa: S102 - generated above
        tail = env["tail"]
        run[0] = "def run(args, " + ", ".join(f"{k}={k}" for k in env if k != "__builtins__") + "):"
        exec(compile("\n".join(run), "<ember runner>", "exec"), env)  # noqa: S102 - generated above
        fn = env["run"]
        fn._boxed_call = True  # type: ignore[attr-defined]  # AOT's calling convention: one list
        return fn


class _Buckets:
    """A graph with symbolic sizes on tpu or trainium, which need static shapes: one artifact per
    padded bucket, compiled the first time a size lands in it. A symbol's buckets are the powers of
    two (a size n runs in the bucket of sizes (P/2, P], P the power of two ≥ n, with its inputs
    padded to P and its outputs sliced back), so sizes up to P compile log2(P) times, and each
    compile says which bucket it is for (TPU users' most common complaint is silent recompiles).
    The first bucket, for the sizes AOT traced with, is compiled with the graph, so what Ember
    cannot compile falls back the usual way."""

    def __init__(self, compiled: "_Compiled", native: Any) -> None:
        self.compiled, self.native = compiled, native
        split = compiled.split
        #: Where each symbol's size is read in the compiled values' inputs.
        self.where = {sym: (split.core_inputs.index(i), d) for sym, (i, d) in split.symbols.items() if d is not None}
        if not self.where:
            raise Unsupported("the graph's symbolic sizes are not sizes of its tensor inputs")
        env = next(s.node.shape_env for x in split.example_inputs for s in x.shape if _symbolic(s))
        self.ranges = {sym: env.var_to_range[sym] for sym in self.where}
        self.programs: dict[tuple[tuple[str, int], ...], Any] = {}
        values = getattr(env, "backed_var_to_val", None) or env.var_to_val
        self.program({sym: int(values[sym]) for sym in self.where}, warn=False)

    def bucket(self, sizes: dict[Any, int]) -> dict[Any, tuple[int, int]]:
        out = {}
        for sym, n in sizes.items():
            top = 1 << max(0, n - 1).bit_length()
            upper = self.ranges[sym].upper  # torch's int_oo (not a sympy Integer) when unbounded
            hi = min(top, int(upper)) if isinstance(upper, sympy.Integer) else top
            # (P/2, P]: sizes of other buckets are not in it. The range only has to hold the true
            # size; it may start below Dynamo's (which is 2 for a dynamic dim).
            lo = top // 2 + 1 if top >= 4 else 1
            out[sym] = (min(lo, hi), hi)
        return out

    def program(self, sizes: dict[Any, int], warn: bool = True) -> Any:
        ranges = self.bucket(sizes)
        key = tuple(sorted((str(k), v[1]) for k, v in ranges.items()))
        program = self.programs.get(key)
        if program is None:
            c = self.compiled
            if warn:
                what = ", ".join(f"{sizes[s]} (dim {d} of input {c.split.core_inputs[i]}) runs padded to {ranges[s][1]}"
                                 for s, (i, d) in sorted(self.where.items(), key=lambda p: str(p[0])))
                warnings.warn(f"ember: {_a(c.kind)} graph compiles again for the {c.target} target, for a new padded bucket: size {what}; "
                              f"the sizes {', '.join(f'{lo}..{hi}' for lo, hi in ranges.values())} now run without compiling", stacklevel=3)
            program = self.programs[key] = c._load(self.native, c.split.core, c.split.example_inputs, ranges)
        return program

    def run(self, inputs: list[torch.Tensor], on_device: list[bool]) -> list[torch.Tensor]:
        sizes = {sym: int(inputs[i].shape[d]) for sym, (i, d) in self.where.items()}
        return self.program(sizes).run(inputs, on_device)


#: `EMBER_XLA_SYNC=1`: wait for every graph's results, timing them (`stats["xla_seconds"]`).
_SYNC = os.environ.get("EMBER_XLA_SYNC", "0") not in ("", "0")


class _XlaProgram:
    """A tpu or trainium artifact run by PJRT (`ember.xla`: jax's CPU client here, the TPU client
    where one is present; Neuron hardware is not reachable from here, so a trainium artifact runs
    its portable HLO).

    Inputs stay on the device between calls: an input that is the same memory at the same
    version as the last call's (parameters, buffers, anything not written since) is not uploaded
    again. The check is torch's version counter, which every in-place op and `copy_` bumps (on
    the tensor and all its views); memory written behind torch's back (through `.numpy()`) is
    not seen. A cached tensor is held, so its memory cannot be reused by another tensor at the
    same address. Outputs come back to the host each call."""

    def __init__(self, directory: str, donate: dict[int, int] | None = None) -> None:
        """`donate`: input position -> output position whose result may take that input's device
        buffer (`ember.eager`'s in-place writes; not for narrowed, padded or sharded artifacts)."""
        from . import xla

        self.artifact = xla.Artifact(directory)
        buckets = self.artifact.buckets
        #: A padded artifact's largest bucket (`module`, which `compile` compiles): every size it
        #: takes runs padded to it (`_Buckets` compiles one artifact per bucket).
        self.bucket: dict[str, int] | None = buckets[-1]["symbols"] if buckets else None
        ins = self.artifact.manifest["inputs"]
        narrowed = self.artifact.narrowed
        self.donate = {i: j for i, j in (donate or {}).items()
                       if f"arg{ins[i]['arg']}" not in narrowed and f"out{j}" not in narrowed}
        if self.donate and not buckets and not self.artifact.mesh:
            self.artifact.text = xla.donating(self.artifact.text, {ins[i]["arg"]: j for i, j in self.donate.items()})
        else:
            self.donate = {}
        self.exe = self.artifact.compile()
        self.args = [None if a is None else self.exe.put(a, slot) for slot, a in enumerate(self.artifact.args)]
        stats["to_device_bytes"] += sum(a.nbytes for a in self.artifact.args if a is not None)
        #: input position -> (tensor, its version, the device array)
        self.resident: dict[int, tuple[torch.Tensor, int, Any]] = {}
        #: input position -> (argument slot, shape, dtype) of the inputs a device array of the
        #: same shape and dtype is passed to as it is (static shape, not narrowed): checked here
        #: once, so a call compares two attributes per input.
        self.as_is = {}
        if self.bucket is None:
            for i, spec in enumerate(self.artifact.manifest["inputs"]):
                if f"arg{spec['arg']}" not in self.artifact.narrowed:
                    slot, shape, dtype = self.artifact.input_type(i)
                    self.as_is[i] = (slot, shape, dtype)

    def run(self, inputs: list[torch.Tensor], on_device: list[bool]) -> list[torch.Tensor]:
        """The outputs for `inputs`: ember-device tensors where `on_device` says, else host ones."""
        from .export import tensor_to_numpy

        args = list(self.args)
        env = None
        if self.bucket is not None:
            env = self.artifact.symbols(inputs)
            specs = self.artifact.manifest["inputs"]
            for slot, a in self.artifact.size_args(env):
                args[slot] = self.exe.put(a, slot)
        for i, t in enumerate(inputs):
            if device.is_ember(t):
                a = device.array(t)
                want = self.as_is.get(i)
                if want is None or a.shape != want[1] or a.dtype != want[2]:
                    # padded, narrowed, or wrong (the error says how)
                    slot, a = self.artifact.bind_device_input(i, a, self.bucket if env is not None else None)
                else:
                    slot = want[0]
                args[slot] = self.exe.place(a, slot)
                continue
            if env is not None and not all(d.isdigit() for d in specs[i]["dims"]):
                # Padded at the end of every symbolic dim to the bucket's size.
                slot, a = self.artifact.bind_input(i, tensor_to_numpy(t), self.bucket)
                args[slot] = self.exe.put(a, slot)
                stats["to_device_bytes"] += a.nbytes
                continue
            held = self.resident.get(i)
            if held is not None and _same_memory(held[0], t) and held[1] == t._version:
                slot = self.artifact.manifest["inputs"][i]["arg"]
                args[slot] = held[2]
                continue
            copy = _device_copy(t, self.artifact.input_type(i))
            if copy is not None:
                slot, dev = copy
                args[slot] = self.exe.place(dev, slot)
            else:
                slot, a = self.artifact.bind_input(i, tensor_to_numpy(t))
                args[slot] = self.exe.put(a, slot)
                stats["to_device_bytes"] += a.nbytes
            self.resident[i] = (t, t._version, args[slot])
        t0 = time.perf_counter()
        ready = self.exe.run(args)
        if all(on_device) and not _SYNC:
            # Device results are not waited for: the host goes on (Dynamo, AOT, the autograd
            # engine, the next graph's dispatch) while the device computes, until something
            # reads a value on the host.
            return self._outputs(ready, on_device, env)
        for o in ready:
            o.block_until_ready()
        stats["xla_seconds"] += time.perf_counter() - t0
        if any(on_device):
            return self._outputs(ready, on_device, env)
        outs = [self.exe.to_host(o) for o in ready]
        stats["from_device_bytes"] += sum(o.nbytes for o in outs)
        if env is not None:
            outs = self.artifact.unpad(outs, env)
            ready = [None] * len(ready)  # a padded result is not the output: nothing to keep
        host = [_from_numpy(o) for o in self.artifact.widen(outs)]
        for j, (t, dev) in enumerate(zip(host, ready)):
            if dev is not None and f"out{j}" not in self.artifact.narrowed:
                _keep_device_copy(t, dev)
        return host


    def _outputs(self, ready: list[Any], on_device: list[bool], env: dict[str, int] | None) -> list[torch.Tensor]:
        """Results as ember tensors (sliced and widened on the device) where `on_device` says, the
        others downloaded."""
        if env is not None:
            ready = self.artifact.unpad(ready, env)
        with self.exe.jax.enable_x64(True):
            ready = self.artifact.widen(ready)
        specs = self.artifact.manifest["outputs"]
        outs = []
        for o, keep, spec in zip(ready, on_device, specs):
            if keep:
                outs.append(device.wrap(o, _DTYPES_BY_NAME[spec["dtype"]]))
                continue
            host = self.exe.to_host(o)
            stats["from_device_bytes"] += host.nbytes
            outs.append(_from_numpy(host))
        return outs


#: Host tensors this process downloaded from the device, by address: (the tensor, weakly; its
#: version then; the device array it came from). A forward's saved activations read by the
#: backward graph are not uploaded again while unchanged.
_DEVICE_COPIES: dict[int, tuple[Any, int, Any]] = {}


def _keep_device_copy(t: torch.Tensor, dev: Any) -> None:
    import weakref

    key = t.data_ptr()
    if key == 0:
        return
    ref = weakref.ref(t, lambda r, key=key: _DEVICE_COPIES.pop(key, None) if _DEVICE_COPIES.get(key, (None,))[0] is r else None)
    _DEVICE_COPIES[key] = (ref, t._version, dev)


def _device_copy(t: torch.Tensor, want: tuple[int, tuple[int, ...], Any]) -> tuple[int, Any] | None:
    """(argument slot, device array) when `t` is an unchanged download of one of the
    `(slot, shape, dtype)` the input takes on the device, else None."""
    held = _DEVICE_COPIES.get(t.data_ptr())
    if held is None:
        return None
    ref, version, dev = held
    src = ref()
    slot, shape, dtype = want
    if src is None or t._version != version or dev.dtype != dtype or not _same_memory(src, t) and not (
        # A contiguous view of the whole download (a reshape AOT or the epilogue made) is the
        # device array reshaped, on the device.
        t.is_contiguous() and t.dtype == src.dtype and t.numel() == src.numel() and math.prod(shape) == src.numel()
    ):
        return None
    return slot, dev if tuple(dev.shape) == shape else dev.reshape(shape)


def _same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether `b` reads exactly the elements `a` does (a cached tensor's `detach()` alias)."""
    return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


def _from_numpy(a: Any) -> torch.Tensor:
    import numpy as np

    a = np.array(a)  # writable and owned: PJRT's buffers are neither
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


class _Checked:
    """Check mode: runs the compiled graph and torch eager on the same inputs, raises at the
    first output that differs beyond its dtype's tolerance."""

    def __init__(self, compiled: Callable[..., Any], gm: torch.fx.GraphModule, kind: str) -> None:
        self.compiled, self.reference, self.kind = compiled, _eager(gm), kind
        out = next(n for n in gm.graph.nodes if n.op == "output").args[0]
        self.nodes = list(out) if isinstance(out, (tuple, list)) else [out]

    def __call__(self, *args: Any) -> Any:
        with torch.no_grad():
            want = self.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
        got = self.compiled(*args)
        wants = want if isinstance(want, (tuple, list)) else [want]
        gots = got if isinstance(got, (tuple, list)) else [got]
        for i, (w, g) in enumerate(zip(wants, gots)):
            problem = _difference(w, g)
            if problem:
                node = self.nodes[i] if i < len(self.nodes) else None
                where = f"node `{node.name}` ({_user_line(node)})" if isinstance(node, torch.fx.Node) else "no node"
                raise CheckError(f"ember check: output {i} of {_a(self.kind)} graph, {where}, differs from torch eager: {problem}")
        return got


def _difference(want: Any, got: Any) -> str | None:
    """Why `got` is not `want` (None when it is, within the dtype's tolerance)."""
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if (want is None) == (got is None) else f"{type(got).__name__} where torch eager gives {type(want).__name__}"
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{tuple(got.shape)} {got.dtype} where torch eager gives {tuple(want.shape)} {want.dtype}"
    if got.stride() != want.stride() and want.numel() > 1:
        return f"strides {got.stride()} where torch eager gives {want.stride()}"
    if not want.is_floating_point():
        return None if torch.equal(got, want) else f"{int((got != want).sum())} of {want.numel()} elements differ"
    w, g = want.double(), got.double()
    if not torch.equal(torch.isnan(w), torch.isnan(g)):
        return "NaNs in other places"
    inf = torch.isinf(w)
    if not torch.equal(w[inf], g[inf]):
        return "infinities in other places"
    finite = torch.isfinite(w)
    w, g = w[finite], g[finite]
    err, norm = float((w - g).norm()), float(w.norm())
    rtol, atol = _CHECK_TOLERANCE.get(want.dtype, (1e-4, 1e-5))
    if err <= rtol * norm + atol * w.numel() ** 0.5:
        return None
    return f"relative error {err / max(norm, 1e-30):.2e} (tolerance {rtol:.0e}, atol {atol:.0e}), max |ember - eager| = {float((w - g).abs().max()):.3g}"


#: Ops that run with torch's own CPU kernels inside a compiled graph, as Inductor's extern
#: kernels do (the pieces between them are compiled by Ember, like GEMMs on torch's BLAS):
#: oneDNN's direct convolutions beat Ember's im2col + GEMM lowering several times over in
#: training (a ResNet-style step took 610 ms against eager's 169; one im2col of a strided
#: convolution's input gradient alone, 151 MB, 84 ms). The CLI's CPU target keeps its own.
_EXTERN = {"aten.convolution", "aten.convolution_backward"}

#: The op an import error names: `torch.aten.sort` (no lowering) or `torch.ops.NS.X.default`
#: (not in Ember's torch dialect: an aten op, or a custom op of the user's), in `_target_name`'s
#: spelling.
_UNSUPPORTED_OP = re.compile(r"op `torch\.(?:ops\.)?(\w+\.[\w.]+?)(?:\.default)?`")


def _target_name(node: torch.fx.Node) -> str:
    """`aten.sort.default` -> `aten.sort`, the spelling Ember's messages use."""
    name = str(node.target)
    return name[: -len(".default")] if name.endswith(".default") else name


def _user_line(node: torch.fx.Node) -> str:
    return traced_line(node.meta.get("stack_trace") or "")


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    return torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))


class _Partition(torch.nn.Module):
    """A supported piece of a partitioned graph: compiled by Ember on a worker thread from the
    layouts its inputs are expected to have (`ahead`), or else on first call; run eagerly (with a
    warning) if Ember still cannot compile it."""

    def __init__(self, gm: torch.fx.GraphModule, backward: bool, target: _Target, graph: torch.fx.GraphModule, name: str) -> None:
        super().__init__()
        self.gm = gm
        self.backward = backward
        self.target = target
        self.compiled: _Compiled | None = None
        self.eager = False
        self.graph_ref = weakref.ref(graph)
        self.name = name
        #: The compile started by `ahead`, the input layouts it assumed and the process it runs in.
        self.pending: tuple[concurrent.futures.Future, list[Any], int] | None = None
        #: Float inputs passed as 0-d float64 tensors (`_floats_as_tensors`).
        self.floats: list[int] = []

    def ahead(self, layouts: list[Any]) -> None:
        """Starts compiling this piece on a worker thread for inputs of these `_layout_of`s: its
        first call takes the result if its inputs are laid out so."""
        if self.target.name != "cpu" or self.pending is not None or self.compiled is not None or self.eager:
            return
        if (examples := _fake_inputs(layouts)) is None:
            return
        gm, backward, target = _copy(self.gm), self.backward, self.target
        self.pending = (_workers().submit(lambda: _Compiled(gm, examples, backward=backward, target=target)), layouts, os.getpid())

    def _take_pending(self, args: tuple[Any, ...]) -> "_Compiled | None":
        """The compile `ahead` started, if these inputs are laid out as it assumed."""
        if self.pending is None:
            return None
        future, assumed, pid = self.pending
        self.pending = None
        if pid != os.getpid():
            return None  # started before a fork: the threads that would finish it are the parent's
        if [_layout_of(a) for a in args] != assumed:
            _count("ahead_missed")
            future.cancel()
            future.add_done_callback(_drop_export)
            return None
        compiled = future.result()
        _count("ahead")
        return compiled

    def forward(self, *args: Any) -> Any:
        if self.compiled is None and not self.eager:
            with _compile_timer():
                self.compile(list(args), self._take_pending)
        if self.eager:
            return self.eager_run(*args)
        if self.floats:
            args = tuple(torch.tensor(a, dtype=torch.float64, device="cpu") if i in self.floats else a for i, a in enumerate(args))
        return self.compiled(*args)

    def compile(self, examples: list[Any], pending: Callable[[Any], "_Compiled | None"] = lambda _: None) -> None:
        """Compiles the piece for inputs like `examples` (the first call's, or symbolic values),
        taking `pending`'s compile for them if it has one; or makes it run eagerly."""
        try:
            self.compiled = pending(examples)
            if self.compiled is None:
                # _Split rewrites the graph it is given; the eager fallback keeps the original.
                gm, examples = _copy(self.gm), list(examples)
                self.floats = _floats_as_tensors(gm, examples)
                self.compiled = _Compiled(gm, _fake_inputs([_layout_of(a) for a in examples]) or examples, backward=self.backward, target=self.target)
            graph = self.graph_ref()
            if self.compiled._direct and graph is not None and not self.floats:
                # The partitioned graph's code calls `self.<name>(...)`: an attribute of the
                # instance is found before the module (no Module.__call__ per piece and call).
                run = self.compiled._run_fixed
                graph.__dict__[self.name] = lambda *args: run(args)
        except Unsupported as exc:
            self.eager = True
            _count("fallbacks")
            unsupported = _unlowered(exc)
            if unsupported:
                # The piece's other ops still compile, in pieces of their own around these
                # (a Swin's backward: its `as_strided_scatter`s, not the whole backward).
                warnings.warn(f"ember: part of a graph runs with torch eager: {exc}; the rest of it still compiles", stacklevel=3)
                n_out = len(_output_values(self.gm.graph)[1])
                self.eager_run = _partition(_copy(self.gm), unsupported, self.backward, self.target, n_out)
            else:
                warnings.warn(f"ember: part of a graph runs with torch eager: {exc}", stacklevel=3)
                self.eager_run = _eager(self.gm)


_WORKERS: concurrent.futures.ThreadPoolExecutor | None = None


def _workers() -> concurrent.futures.ThreadPoolExecutor:
    """The threads that compile a partitioned graph's pieces ahead of their first calls: the
    native compiler releases the GIL, so pieces compile side by side and beside the Python that
    runs the graph. At most 8: each compile holds its own LLVM contexts and runs up to
    `MAX_MODULES` codegen threads of its own."""
    global _WORKERS
    if _WORKERS is None:
        _WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=min(os.cpu_count() or 1, 8), thread_name_prefix="ember-compile")
        # At exit, compiles not started yet are dropped, not run (a first call interrupted by an
        # error or Ctrl-C left the rest queued): threading's exit hooks run before the pool's
        # join of its threads, where `atexit` would run after it.
        threading._register_atexit(lambda: _WORKERS is not None and _WORKERS.shutdown(wait=False, cancel_futures=True))
    return _WORKERS


def _forget_workers() -> None:
    """In a forked child: the pool's threads are the parent's; a new pool starts when needed."""
    global _WORKERS
    _WORKERS = None


os.register_at_fork(after_in_child=_forget_workers)


def _layout_of(x: Any) -> Any:
    """What a compiled piece assumes of an input: a tensor's layout and dtype, an int's value."""
    if isinstance(x, torch.Tensor):
        return (x.device.type, tuple(x.shape), tuple(x.stride()), x.dtype)
    return x


def _fake_inputs(layouts: list[Any]) -> list[Any] | None:
    """Example inputs of these `_layout_of`s for `_Compiled` (None unless all are CPU tensors or
    ints): fake, since a compiled graph keeps its examples (their layouts), which should hold no
    memory (a first call's real activations did). A fake mode of their own: its caches are not
    for two threads at once."""
    from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

    if not all(isinstance(x, tuple) and x[0] == "cpu" and not any(map(_symbolic, (*x[1], *x[2]))) or (isinstance(x, int) and not isinstance(x, bool))
               for x in layouts):
        return None
    with unset_fake_temporarily(), FakeTensorMode():
        return [torch.empty_strided(x[1], x[2], dtype=x[3], device="cpu") if isinstance(x, tuple) else x for x in layouts]


def _floats_as_tensors(gm: torch.fx.GraphModule, examples: list[Any]) -> list[int]:
    """The float inputs of a piece (a batch norm's `1 / (n - 1)` at a symbolic batch) that it
    reads only where an op takes a tensor, beside floating tensors of rank > 0: made 0-d float64
    tensor inputs (in `gm` and `examples`), which promote there as the Python number does and
    hold its value exactly; Ember compiles tensors and ints only. Their positions."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]

    def reads_as_tensor(user: torch.fx.Node, p: torch.fx.Node) -> bool:
        if user.op != "call_function" or not isinstance(user.target, torch._ops.OpOverload):
            return False
        schema = user.target._schema.arguments
        given = [(schema[k], a) for k, a in enumerate(user.args) if k < len(schema)]
        given += [(next((x for x in schema if x.name == k), None), a) for k, a in user.kwargs.items()]
        if any(a is p and (arg is None or not isinstance(arg.type, torch.TensorType)) for arg, a in given):
            return False
        others = [a.meta.get("val") for _, a in given if isinstance(a, torch.fx.Node) and a is not p]
        return bool(others) and all(isinstance(v, torch.Tensor) and v.is_floating_point() and v.dim() > 0 for v in others)

    found = []
    mode = torch._guards.detect_fake_mode([v for v in examples if isinstance(v, torch.Tensor)])
    for i, (p, x) in enumerate(zip(placeholders, examples)):
        if isinstance(x, (float, torch.SymFloat)) and p.users and all(reads_as_tensor(u, p) for u in p.users):
            with mode if mode is not None else contextlib.nullcontext():
                examples[i] = torch.zeros((), dtype=torch.float64, device="cpu")
            p.meta["val"] = examples[i]
            found.append(i)
    if found:
        gm.recompile()
    return found


def _drop_export(future: concurrent.futures.Future) -> None:
    """Removes the graph file an unused compile left for `_unlowered` to read."""
    exc = None if future.cancelled() else future.exception()
    if isinstance(exc, Unsupported) and exc.exported is not None:
        shutil.rmtree(os.path.dirname(exc.exported), ignore_errors=True)


_UNKNOWN = object()


def _compile_ahead(fused: torch.fx.GraphModule, args: Sequence[Any]) -> None:
    """At a partitioned graph's first call, starts compiling its pieces (`_Partition.ahead`) for
    the input layouts they will get: propagated from `args` through the eager ops run on fake
    tensors, and through the pieces as they declare their outputs (AOT's declared layouts are
    not what they get: a channels-last graph's convolutions return NHWC). A value the fake
    kernels cannot tell leaves the pieces that read it to compile at their first call."""
    from torch._subclasses.fake_tensor import FakeTensorMode, unset_fake_temporarily

    env: dict[torch.fx.Node, Any] = {}
    inputs = iter(args)
    mode = FakeTensorMode()

    def fake(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            static = x.device.type in ("cpu", "meta") and not _symbolic_value(x)
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu") if static else _UNKNOWN
        return x

    starts: list[tuple[_Partition, list[Any]]] = []
    with unset_fake_temporarily(), mode:
        for n in fused.graph.nodes:
            if n.op == "placeholder":
                env[n] = fake(next(inputs, _UNKNOWN))
                continue
            if n.op == "output":
                break
            a, kw = torch.fx.node.map_arg((n.args, n.kwargs), lambda x: env[x])
            if any(v is _UNKNOWN for v in torch.utils._pytree.tree_leaves((a, kw))):
                env[n] = _UNKNOWN
                continue
            if n.op == "call_module":
                piece = getattr(fused, n.target)
                if isinstance(piece, _Partition):
                    starts.append((piece, [_layout_of(x) for x in a]))
                    _, values, single = _output_values(piece.gm.graph)
                    outs = [fake(v.meta.get("val", _UNKNOWN)) if isinstance(v, torch.fx.Node) else v for v in values]
                    env[n] = outs[0] if single else tuple(outs)
                else:
                    env[n] = _UNKNOWN
                continue
            try:
                env[n] = getattr(a[0], n.target)(*a[1:], **kw) if n.op == "call_method" else n.target(*a, **kw)
            except Exception:  # noqa: BLE001 - an op without a fake kernel: its readers compile at first call
                env[n] = _UNKNOWN
    for piece, layouts in starts:
        piece.ahead(layouts)


def _unlowered(exc: Unsupported) -> set[str]:
    """The ops (`aten.name`) that Ember has no lowering for, which made `exc`; removes the graph
    file it names."""
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
    return unsupported


def _symbolic_value(v: Any) -> bool:
    """Whether a node's value has a symbolic size, stride or int."""
    if isinstance(v, torch.Tensor):
        return any(map(_symbolic, (*v.shape, *v.stride())))
    if isinstance(v, (tuple, list)):
        return any(map(_symbolic_value, v))
    return _symbolic(v)


def _meta_value(v: Any) -> Any:
    """A static node value (not `_symbolic_value`: `int()` of a symbolic size would specialize it,
    a guard on its value) with its tensors as meta tensors of the same layout."""
    if isinstance(v, torch.Tensor):
        return torch.empty_strided(tuple(int(s) for s in v.shape), tuple(int(s) for s in v.stride()), dtype=v.dtype, device="meta")
    if isinstance(v, (tuple, list)):
        return type(v)(_meta_value(x) for x in v)
    return v


def _partition(gm: torch.fx.GraphModule, unsupported: set[str], backward: bool, target: _Target, user_outputs: int = 0) -> torch.fx.GraphModule:
    """Splits `gm` into Ember-compiled pieces and eager nodes (the ops in `unsupported`); its
    first `user_outputs` outputs are what the user's code sees."""
    from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

    def supported(node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node.target is operator.getitem:
            # With its producer: a getitem outside every piece would cut a multi-output op
            # (batch norm) off from the ops that read it (its ReLU) into pieces of their own.
            return isinstance(node.args[0], torch.fx.Node) and supported(node.args[0])
        return isinstance(node.target, torch._ops.OpOverload) and _target_name(node) not in unsupported

    fused = fuse_by_partitions(gm, _stages(gm.graph, supported))
    with torch._subclasses.fake_tensor.unset_fake_temporarily():
        _pieces(fused, user_outputs, backward, target)
    _eager_inputs_as_declared(fused)
    return fused


def _stages(g: torch.fx.Graph, supported: Callable[[torch.fx.Node], bool]) -> list[dict[torch.fx.Node, None]]:
    """The pieces of a partitioned graph: its supported nodes grouped by stage, a node's stage
    being the number of unsupported nodes on the longest path to it from the inputs. No path
    between two nodes of a stage passes an unsupported node (it would raise the later one's
    stage) or a node of another stage (stages only grow along a path), so each piece is one
    call, and the pieces and unsupported nodes form a DAG. A node runs in the last stage its
    users allow (with the values it is computed for, not passed on from the first piece), a
    getitem with its producer. Linear in the graph, where torch's CapabilityBasedPartitioner
    checks for cycles per merge (4.3 of 6.9 s for MobileNetV3's two training graphs)."""
    nodes = list(g.nodes)
    earliest: dict[torch.fx.Node, int] = {}
    for n in nodes:
        earliest[n] = max((earliest[i] + (i.op == "call_function" and not supported(i)) for i in n.all_input_nodes), default=0)
    stage: dict[torch.fx.Node, int] = {}
    for n in reversed(nodes):
        if not supported(n):
            continue
        if n.target is operator.getitem:
            continue  # placed with its producer
        bounds = []
        for u in n.users:
            readers = u.users if u.target is operator.getitem and u.op == "call_function" else [u]
            for r in readers:
                if r.op == "output":
                    continue
                bounds.append(stage[r] if supported(r) else earliest[r])
        stage[n] = min(bounds, default=earliest[n])
    for n in nodes:
        if supported(n) and n.target is operator.getitem:
            stage[n] = stage[n.args[0]]
    pieces: dict[int, dict[torch.fx.Node, None]] = {}
    for n in nodes:
        if n in stage:
            pieces.setdefault(stage[n], {})[n] = None
    return [pieces[k] for k in sorted(pieces)]


def _pieces(fused: torch.fx.GraphModule, user_outputs: int, backward: bool, target: _Target) -> None:
    """Makes the fused graph's submodules `_Partition`s, their outputs laid out for the target."""
    channels_last = _channels_last(fused, user_outputs, backward) if target.name == "cpu" else {}
    for name, child in list(fused.named_children()):
        if isinstance(child, torch.fx.GraphModule):
            if name in channels_last:
                _outputs_channels_last(child, channels_last[name])
            piece = _Partition(child, backward, target, fused, name)
            setattr(fused, name, piece)
            if any(_symbolic_value(n.meta.get("val")) for n in child.graph.nodes):
                # Compiled now, for every size, from AOT's symbolic values: a guard its compile
                # adds on a size is one of Dynamo's (at its first call it would be lost, and the
                # piece wrong for other sizes).
                with torch._subclasses.fake_tensor.unset_fake_temporarily():
                    piece.compile([n.meta.get("val") for n in child.graph.nodes if n.op == "placeholder"])
                continue
            # A static piece compiles for its first call's layouts (`_compile_ahead`): the
            # serializer reads meta tensors of the layouts, not AOT's fake tensors.
            for n in child.graph.nodes:
                val = n.meta.get("val")
                n.meta = {k: v for k, v in n.meta.items() if k not in ("val", "tensor_meta", "example_value")}
                n.meta["val"] = _meta_value(val)


#: The extern convolutions' activation arguments (input; output gradient and input of the
#: backward), by position.
_CONV_ACTIVATIONS = {torch.ops.aten.convolution.default: (0,), torch.ops.aten.convolution_backward.default: (0, 1)}


def _output_values(g: torch.fx.Graph) -> tuple[torch.fx.Node, list[Any], bool]:
    """A graph's output node, its values as a list, and whether it returns one value bare."""
    out = next(n for n in g.nodes if n.op == "output")
    single = not isinstance(out.args[0], (tuple, list))
    return out, [out.args[0]] if single else list(out.args[0]), single


def _as_declared(x: torch.Tensor, strides: tuple[int, ...]) -> torch.Tensor:
    """`x` laid out with `strides` (the strides of its dims of size 1 aside): a user-visible
    output of a channels-last graph, or what torch eager reads where the graph declared it so."""
    if all(a == b or n == 1 for a, b, n in zip(x.stride(), strides, x.shape)):
        return x
    return torch.empty_strided(x.shape, strides, dtype=x.dtype, device=x.device).copy_(x)


def _declared_strides(node: Any) -> tuple[int, ...] | None:
    """The strides the graph declares for `node`'s tensor, when they are static."""
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or any(map(_symbolic, (*val.shape, *val.stride()))):
        return None
    return tuple(int(s) for s in val.stride())


def _eager(gm: torch.fx.GraphModule) -> Callable[..., Any]:
    """`gm` run with torch eager, its inputs laid out as it declares them. A channels-last
    forward hands its saved activations to the backward in NHWC (`_channels_last`), which
    Ember's pieces read in any layout but torch eager's `view`s do not (a transformers Swin's
    backward, run eagerly for its `as_strided_scatter`, failed); an `as_strided` would read the
    wrong elements."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    want = [(i, st) for i, p in enumerate(placeholders) if (st := _declared_strides(p)) is not None]

    def run(*args: Any) -> Any:
        args = list(args)
        for i, strides in want:
            if i < len(args) and isinstance(args[i], torch.Tensor):
                args[i] = _as_declared(args[i], strides)
        return gm(*args)

    return run


def _eager_inputs_as_declared(fused: torch.fx.GraphModule) -> None:
    """The eager ops of a partitioned graph (not the convolutions, which take any layout) read
    graph inputs and pieces' values laid out as the graph declares them (see `_eager`)."""
    g = fused.graph
    converted: dict[torch.fx.Node, torch.fx.Node] = {}
    for n in list(g.nodes):
        if n.op != "call_function" or n.target in (operator.getitem, _as_declared) or _target_name(n) in _EXTERN:
            continue
        for x in n.all_input_nodes:
            made_by_ember = x.op == "call_module" or (x.op == "call_function" and x.target is operator.getitem and x.args[0].op == "call_module")
            if not (x.op == "placeholder" or made_by_ember) or (strides := _declared_strides(x)) is None:
                continue
            if x not in converted:
                with g.inserting_after(x):
                    converted[x] = g.call_function(_as_declared, (x, strides))
                converted[x].meta = dict(x.meta)
            n.replace_input_with(x, converted[x])
    fused.recompile()


def _channels_last(fused: torch.fx.GraphModule, user_outputs: int, backward: bool) -> dict[str, set[int | None]]:
    """Lays out the activations of a partitioned graph's 2-d convolutions channels-last, as
    Inductor does on the CPU: oneDNN's convolutions and their backward run faster on NHWC
    (ResNet-style training step, torch eager: 138 -> 113 ms), and an NHWC input makes them return
    NHWC. Returns, per piece, the outputs it writes NHWC (`_outputs_channels_last`): those that
    feed a convolution, and its other 4-d outputs (a forward's activations saved for the
    backward, values passed to a later piece: a residual, a squeeze-excitation's input), which
    were declared NCHW and each cost a transposing pass and strided reads where it was read.
    Any other activation a convolution reads (a graph input) is converted in place in the
    graph, a no-op when it already is NHWC (a saved activation). Pieces read NHWC inputs as
    they are (`_Split`'s permuted inputs). The first `user_outputs` outputs (what the user's
    code sees) and a backward's outputs (the gradients of the user's tensors) keep the layouts
    AOT declared."""
    pieces: dict[str, set[int | None]] = {}
    converted = False
    g = fused.graph

    def static_4d(x: Any) -> bool:
        val = x.meta.get("val") if isinstance(x, torch.fx.Node) else None
        return isinstance(val, torch.Tensor) and val.dim() == 4 and not any(map(_symbolic, val.shape))

    def nhwc_piece_output(x: torch.fx.Node) -> bool:
        """Marks `x` to be written NHWC when a piece computes it; False when no piece does."""
        if x.op == "call_module":
            piece, index = x.target, None
        elif x.op == "call_function" and x.target is operator.getitem and x.args[0].op == "call_module":
            piece, index = x.args[0].target, x.args[1]
        else:
            return False
        if static_4d(x) and not x.meta["val"].is_contiguous(memory_format=torch.channels_last):
            pieces.setdefault(piece, set()).add(index)
        return True

    for node in list(g.nodes):
        for i in _CONV_ACTIVATIONS.get(node.target, ()) if node.op == "call_function" else ():
            x = node.args[i]
            if static_4d(x) and not nhwc_piece_output(x):
                with g.inserting_before(node):
                    cl = g.call_method("contiguous", (x,), {"memory_format": torch.channels_last})
                node.replace_input_with(x, cl)
                converted = True
    if pieces or converted:
        out, values, single = _output_values(g)
        saved = set() if backward else set(values[user_outputs:])
        for v in list(g.nodes):
            if v in saved or any(u is not out for u in v.users):
                nhwc_piece_output(v)
        for k, v in enumerate(values[:user_outputs]):
            val = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
            if isinstance(val, torch.Tensor) and val.dim() == 4 and not any(map(_symbolic, (*val.shape, *val.stride()))):
                with g.inserting_before(out):
                    values[k] = g.call_function(_as_declared, (v, tuple(int(d) for d in val.stride())))
        out.args = (values[0] if single else tuple(values),)
    fused.recompile()
    return pieces


def _outputs_channels_last(piece: torch.fx.GraphModule, which: set[int | None]) -> None:
    """Makes the piece's outputs at positions `which` (None: its only output) NHWC: a clone to
    channels-last, which `_Split` computes in that memory order."""
    g = piece.graph
    out, values, single = _output_values(g)
    for i in which:
        k = 0 if i is None else i
        v = values[k]
        val = v.meta.get("val")
        with g.inserting_before(out):
            cl = g.call_function(torch.ops.aten.clone.default, (v,), {"memory_format": torch.channels_last})
        cl.meta["val"] = val.clone(memory_format=torch.channels_last) if isinstance(val, torch.Tensor) else val
        values[k] = cl
    out.args = (values[0] if single else tuple(values),)
    piece.recompile()


def _user_outputs(gm: torch.fx.GraphModule, kind: str) -> int:
    """How many of an AOT graph's outputs the user's code sees: all of an inference graph's, a
    forward's mutated inputs and outputs (before its saved tensors), none of a backward's (its
    gradients go to autograd, which takes any layout)."""
    if kind == "backward":
        return 0
    total = len(_output_values(gm.graph)[1])
    if kind == "inference":
        return total
    from torch._guards import TracingContext

    ctx = TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None)
    return total if meta is None else min(total, meta.num_forward_returns + len(getattr(meta, "tokens", ()) or ()))


def _tensorified_floats_as_aten(gm: torch.fx.GraphModule) -> None:
    """Where a graph with dynamic shapes reads a Python float (an optimizer's learning rate once
    its step is compiled again for other shapes), AOT Autograd passes it as a 0-d float64 tensor
    and converts it with `prims.convert_element_type` after the decompositions ran: the same
    conversion as core ATen's `_to_copy`."""
    convert = torch.ops.prims.convert_element_type.default
    found = False
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is convert:
            n.target, n.args, n.kwargs = torch.ops.aten._to_copy.default, (n.args[0],), {"dtype": n.args[1]}
            found = True
    if found:
        gm.recompile()


def _compile_graph(gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str, check: bool, target: _Target = _Target(),
                   updates: dict[int, int] | None = None) -> Callable[..., Any]:
    """Ember's compiled form of an AOT graph (`kind`: inference, forward or backward), or, for what
    Ember cannot compile, torch eager after one warning. `updates`: `_Compiled`'s."""
    from torch._functorch.aot_autograd import make_boxed_func

    from . import rng

    if rng.functional(gm):
        example_inputs = [*example_inputs, torch.zeros((), dtype=torch.int64, device="cpu")]
        return _Seeded(_compile_graph(gm, example_inputs, kind, check, target, updates))
    if (real := _RealBoundary.of(gm, example_inputs)) is not None:
        real.boxed = _compile_graph(real.gm, real.example_inputs, kind, check, target)
        return real
    original = _copy(gm)
    backward = kind == "backward"
    extern = {_target_name(n) for n in gm.graph.nodes if n.op == "call_function" and _target_name(n) in _EXTERN} if target.name == "cpu" else set()
    if extern:
        run: Callable[..., Any] = _partition(gm, extern, backward, target, _user_outputs(gm, kind))
    else:
        try:
            run = _Compiled(gm, example_inputs, backward=backward, target=target, updates=updates)
        except Unsupported as exc:
            # Ops Ember has no lowering for run with torch eager; the rest of the graph still compiles.
            unsupported = _unlowered(exc)
            if not unsupported:
                _count("fallbacks")
                warnings.warn(f"ember: this {kind} graph runs with torch eager: {exc}", stacklevel=2)
                return make_boxed_func(_eager(original))
            eager_nodes = [n for n in original.graph.nodes if n.op == "call_function" and _target_name(n) in unsupported]
            lines = sorted({f"{_target_name(n)} ({_user_line(n)})" for n in eager_nodes})
            _count("fallbacks")
            warnings.warn(f"ember: these ops of {_a(kind)} graph have no Ember lowering and run with torch eager: " + "; ".join(lines), stacklevel=2)
            run = _partition(_copy(original), unsupported, backward, target, _user_outputs(original, kind))
    if check:
        return make_boxed_func(_Checked(run, original, kind))
    if isinstance(run, _Compiled) and run._direct and not run.split.single:
        return run._run_fixed
    if isinstance(run, torch.fx.GraphModule):
        # Boxed: the graph clears AOT's argument list and drops each value after its last use, so
        # a backward frees the saved activations as it goes (as Inductor's and aot_eager's do);
        # held to the end, they raised the ResNet step's heap peak from 65 to 83 MB.
        from torch.fx.graph import _BoxedCodeGen

        run.graph.set_codegen(_BoxedCodeGen())
        run.recompile()
        forward, first = run.forward, [True]

        def run_partitioned(args: list[Any]) -> Any:
            if first:
                first.clear()
                with _compile_timer():
                    _compile_ahead(run, args)
            return forward(args)

        return _boxed(run_partitioned)
    return make_boxed_func(run)


def _boxed(f: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any]:
    """`f`, marked as taking AOT's argument list (which it clears)."""

    def run(args: list[Any]) -> Any:
        return f(args)

    run._boxed_call = True  # type: ignore[attr-defined]
    return run


class _RealBoundary:
    """A graph with complex inputs or outputs (a complex64 RoPE buffer, TorchTitan's `freqs_cis`)
    compiled with them as `torch.view_as_real` pairs, zero-copy both ways: the graph reads each
    back with `view_as_complex` and returns `view_as_real`, which Ember's import rewrites into
    real ops (compiler/src/frontend/complex.rs)."""

    def __init__(self, gm: torch.fx.GraphModule, example_inputs: list[Any], inputs: list[int], outputs: list[int]) -> None:
        self.gm, self.example_inputs, self.inputs, self.outputs = gm, example_inputs, inputs, outputs
        self.boxed: Callable[[list[Any]], Any] | None = None
        self._boxed_call = True  # AOT's calling convention (an instance attribute survives its functools.wraps)

    @staticmethod
    def of(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> "_RealBoundary | None":
        aten = torch.ops.aten
        _, outs, _ = _output_values(gm.graph)
        cin = [i for i, x in enumerate(example_inputs) if isinstance(x, torch.Tensor) and x.is_complex()]
        cout = [i for i, o in enumerate(outs) if isinstance(o, torch.fx.Node) and isinstance(v := o.meta.get("val"), torch.Tensor) and v.is_complex()]
        if not cin and not cout:
            return None
        gm = _copy(gm)
        g = gm.graph
        placeholders = [n for n in g.nodes if n.op == "placeholder"]
        for i in cin:
            p = placeholders[i]
            val = p.meta.get("val")
            with g.inserting_after(placeholders[-1]):
                c = g.call_function(aten.view_as_complex.default, (p,))
            p.replace_all_uses_with(c, delete_user_cb=lambda n: n is not c)
            c.meta = {**p.meta}
            if isinstance(val, torch.Tensor):
                p.meta["val"] = torch.view_as_real(val)
        output, outs, single = _output_values(g)
        for j in cout:
            with g.inserting_before(output):
                r = g.call_function(aten.view_as_real.default, (outs[j],))
            r.meta = {**outs[j].meta, "val": torch.view_as_real(outs[j].meta["val"])}
            outs[j] = r
        output.args = (outs[0] if single else type(output.args[0])(outs),)
        gm.recompile()
        example_inputs = [torch.view_as_real(x) if i in cin else x for i, x in enumerate(example_inputs)]
        return _RealBoundary(gm, example_inputs, cin, cout)

    def __call__(self, args: list[Any]) -> Any:
        for i in self.inputs:
            # A lazily conjugated input (`z.conj()`) is materialized: its memory is not its value.
            args[i] = torch.view_as_real(args[i].resolve_conj())
        out = self.boxed(args)
        if self.outputs:
            out = list(out)
            for j in self.outputs:
                out[j] = torch.view_as_complex(out[j])
        return out


def _param_inputs(gm: torch.fx.GraphModule, kind: str, saved: set[str]) -> frozenset[str]:
    """The inputs of an AOT graph that are parameters or buffers (Dynamo's static inputs), or,
    in a backward graph, that the forward saved from them (a parameter, its transpose). A
    forward records its saved ones in `saved`."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if kind == "backward":
        return frozenset(p.name for p in placeholders if p.name in saved)
    from torch._guards import TracingContext

    meta = getattr(TracingContext.try_get(), "fw_metadata", None)
    static = set(getattr(meta, "static_input_indices", None) or ())
    params = {p for i, p in enumerate(placeholders) if i in static}
    _, outs, _ = _output_values(gm.graph)
    saved.update(o.name for o in outs if isinstance(o, torch.fx.Node) and _view_chain(o)[0] in params)
    return frozenset(p.name for p in params)


class _Seeded:
    """A graph whose random ops read a seed as their last input (`rng.functional`): each call
    draws a fresh one from torch's generator."""

    def __init__(self, boxed: Callable[[list[Any]], Any]) -> None:
        self.boxed = boxed
        self._boxed_call = True  # as `_RealBoundary`'s

    def __call__(self, args: list[Any]) -> Any:
        from . import rng

        args.append(rng.seed())
        return self.boxed(args)


def _options(options: dict | None) -> dict:
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        known = "; ".join(f"{k}: {v}" for k, v in _OPTIONS.items())
        raise ValueError(f"ember: unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} (known: {known})")
    target = options.get("target", "cpu")
    if target not in _TARGETS:
        raise ValueError(f"ember: unknown target {target!r} (known: {', '.join(_TARGETS)})")
    check = options.get("check", os.environ.get("EMBER_CHECK", "0") not in ("", "0"))
    if not isinstance(check, bool):
        raise ValueError(f"ember: option 'check' must be True or False, got {check!r}")
    mesh, shard = options.get("mesh"), options.get("shard")
    if isinstance(mesh, dict):
        mesh = ",".join(f"{k}={v}" for k, v in mesh.items())
    if isinstance(shard, (list, tuple)):
        shard = ",".join(shard)
    for name, value in (("mesh", mesh), ("shard", shard)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"ember: option {name!r} must be a string or {'a dict' if name == 'mesh' else 'a list'}, got {value!r}")
    where = _Target(target, mesh, shard)
    if mesh is not None or shard is not None:
        from . import _native, xla

        # The CLI's own checks and messages (`--mesh`, `--shard`), before any graph is compiled:
        # a graph that fails to compile falls back to eager, which must not hide a typo here.
        given = [(k, v) for k, v in (("mesh", mesh), ("shard", shard)) if v is not None]
        try:
            _native().check_options(target, given)
        except ValueError as exc:
            raise ValueError(f"ember: {exc}".replace("--mesh", "option 'mesh'").replace("--shard", "option 'shard'")) from None
        # The devices exist before the first graph runs (on jax's CPU client, only if nothing
        # in this process has started it yet).
        xla._ensure_devices(math.prod(int(part.split("=")[1]) for part in mesh.split(",")), None)
        where = dataclasses.replace(where, replicate=xla.processes() > 1)
    return {"check": check, "target": where}


def _input_updates(g: torch.fx.GraphModule, inputs: list[Any]) -> dict[int, int]:
    """The outputs of an inference graph (by position) that are its inputs' new values (by
    position): AOT returns each updated input's value first, in input order, and copies it into
    the input after the call (an optimizer step's parameters and state). Only plain data updates
    of inputs that the graph takes as they are (no synthetic bases, no effect tokens)."""
    from torch._guards import TracingContext

    meta = getattr(TracingContext.try_get(), "fw_metadata", None)
    if meta is None or getattr(meta, "tokens", None) or len(meta.input_info) != len(inputs):
        return {}
    outs = next(n for n in g.graph.nodes if n.op == "output").args[0]
    found = {}
    for k, i in enumerate(meta.mutated_inp_runtime_indices):
        info, x = meta.input_info[i], inputs[i]
        out = outs[k] if isinstance(outs, (tuple, list)) and k < len(outs) else None
        value = out.meta.get("val") if isinstance(out, torch.fx.Node) else None
        if not info.mutates_data or info.mutates_metadata or info.mutates_storage_metadata:
            continue
        if isinstance(x, torch.Tensor) and isinstance(value, torch.Tensor) and (value.shape, value.dtype) == (x.shape, x.dtype):
            found[k] = i
    return found


def ember_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], options: dict | None = None, **kwargs: Any) -> Callable[..., Any]:
    """The backend Dynamo calls; registered as ``ember`` through the ``torch_dynamo_backends`` entry point."""
    from torch._dynamo.backends.common import aot_autograd

    from . import decompositions

    opts = _options(options)
    if any(device.is_ember(x) for x in example_inputs):
        # The tensors' device picks the target unless the options name one.
        if "target" not in (options or {}):
            opts["target"] = dataclasses.replace(opts["target"], name="tpu")
        elif opts["target"].name == "cpu":
            raise ValueError("ember: the graph's inputs are ember-device tensors, which the cpu target does not take: "
                             "use options={'target': 'tpu'} or 'trainium', or move the model and inputs to the CPU")
    #: Forward outputs that are parameters or views of them: the backward's inputs of those names.
    saved_params: set[str] = set()
    #: The graph's inputs (Dynamo's order) that it writes, from AOT's analysis.
    written: set[int] = set()

    def compiler(kind: str) -> Callable[..., Any]:
        def compile_one(g: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
            if kind != "backward":
                from torch._guards import TracingContext

                meta = getattr(TracingContext.try_get(), "fw_metadata", None)
                written.update(i for i, info in enumerate(getattr(meta, "input_info", ())) if info.mutates_data or info.mutates_metadata)
            _tensorified_floats_as_aten(g)
            target = opts["target"]
            if target.mesh is not None:
                target = dataclasses.replace(target, params=_param_inputs(g, kind, saved_params))
            updates = _input_updates(g, inputs) if kind == "inference" else None
            with _compile_timer():
                return _compile_graph(g, inputs, kind, opts["check"], target, updates)

        return compile_one

    import torch._functorch.config as functorch_config
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    # Without the partitioner's CSE of the joint graph, which imports Inductor's pattern matcher:
    # 0.9 s of a process's first compile (the MLP training case's first step: 2.1-2.7 -> 1.4-2.0
    # s). Ember's pipeline runs its own CSE, and the training cases' saved tensors are the same.
    with functorch_config.patch(cse=False):
        compiled = aot_autograd(
            fw_compiler=compiler("forward"),
            bw_compiler=compiler("backward"),
            inference_compiler=compiler("inference"),
            decompositions=decompositions.table(opts["target"].name),
            partition_fn=min_cut_rematerialization_partition,
        )(gm, example_inputs, **kwargs)
    if not written or not any(device.is_ember(x) for x in example_inputs):
        return compiled
    # AOT's input analysis covers the module's own parameters and buffers first, then the inputs.
    first = len(dict(gm.named_parameters(remove_duplicate=False))) + len(dict(gm.named_buffers(remove_duplicate=False)))

    @functools.wraps(compiled)
    def refusing_hidden_aliases(*args: Any) -> Any:
        # AOT finds inputs that alias by their torch storages, but ember tensors made by
        # `device`'s views have storages of their own: writing one input while another reads
        # the same device memory would be compiled as if they did not alias.
        groups: dict[int, dict[int, int]] = {}
        for i, a in enumerate(args):
            if device.is_ember(a):
                groups.setdefault(id(device._owner(a)), {}).setdefault(a.untyped_storage()._cdata, i)
        for same in groups.values():
            hit = [i for i in same.values() if i + first in written]
            if len(same) > 1 and hit:
                others = [i for i in same.values() if i != hit[0]]
                raise RuntimeError(f"ember: input {hit[0]} of this compiled function is written and input {others[0]} reads the same "
                                   "ember-device memory through a view torch.compile cannot see; pass the view's base instead, or a .clone()")
        return compiled(*args)

    return refusing_hidden_aliases
