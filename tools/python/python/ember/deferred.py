"""``with ember.eager():`` — DeferAndFuse eager mode on Ember's CPU target.

Ordinary PyTorch code (inference loops, training steps with backward and an optimizer) runs with
its ATen ops *recorded* instead of executed. A ``TorchDispatchMode`` sees every op; shapes and
dtypes are inferred at once on the meta device (cached per op signature), so a bad op raises at
the user's line. Results are ``DeferredTensor`` wrappers. At a flush, the queued ops become a
region that the Rust scheduler (``ember._ember.EagerPlans``, ``compiler/src/eager.rs``) compiles
once with the CPU target and replays from its plan cache; only values somebody still holds are
written out, straight into fresh torch tensors. Ops that repeat the last region op for op are
matched against it instead of recorded afresh (no meta inference, key or frame walk), and a region
that repeated it whole reruns its plan by handle; the first difference falls back to recording.

Flushes happen on sync points (``.item()``/``bool()``/``.tolist()``, ``.cpu()``/``.numpy()``,
printing, an op Ember cannot run), at the end of every ``optimizer.step()`` (the training-step
boundary; ``backward()`` itself does not flush), at a queue cap, when leaving the block, and by the
repeated-subsequence heuristic: once the queue holds the same op sequence twice in a row it is cut
after the first copy, and later queues are cut at that same point, so every loop iteration
replays one cached plan (and a loop-carried chain never grows beyond one iteration).

Python numbers that scale tensors (``lr``, ``1 - beta1``, ``alpha``) are passed as rank-0 input
buffers, so changing them does not recompile. In-place ops are recorded as their functional form;
an in-place op on a real tensor (a parameter in ``optimizer.step()``) becomes a pending write,
applied at the flush, and later reads see the pending value.

Modes: ``defer`` (default), ``strict`` (every op is its own region, compiled and run at once) and
``strict_blocking`` (``strict`` plus a NaN/Inf check after every op, raised at the op's line).
Ops Ember has no lowering or decomposition for run with torch eager, listed once in a warning.

Views of deferred tensors are recorded as values; an in-place write to a tensor that a live view
aliases (or to the view) first materializes them, the views as real views of their base, so the
write reaches every alias as in torch. Known limits: CPU tensors of the dtypes Ember models (others
run with torch eager).
"""

from __future__ import annotations

import gc
import math
import os
import sys
import tempfile
import warnings
import weakref
from typing import Any

import torch
import torch.optim.optimizer as _optim
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from . import decompositions
from .backend import _DTYPES

__all__ = ["eager", "EagerError", "DeferredTensor", "stats", "reset_stats"]

aten = torch.ops.aten

_TORCH_DIR = os.path.dirname(torch.__file__)
_EMBER_DIR = os.path.dirname(os.path.abspath(__file__))

_LIFT_DTYPES = (torch.float32, torch.float64)
#: Ops whose results depend on torch's RNG stream: always torch eager, so seeds reproduce.
_RANDOM = {
    "aten::rand", "aten::randn", "aten::randint", "aten::randperm", "aten::normal", "aten::normal_",
    "aten::uniform", "aten::uniform_", "aten::bernoulli", "aten::bernoulli_", "aten::native_dropout",
    "aten::multinomial", "aten::exponential_", "aten::random_", "aten::rand_like", "aten::randn_like",
    "aten::randint_like", "aten::cauchy_", "aten::geometric_", "aten::log_normal_",
}
#: Ops that only look at their inputs' metadata: run at once on placeholders.
_LIKE = {
    "aten::empty_like", "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::new_empty",
    "aten::new_empty_strided", "aten::new_zeros", "aten::new_ones", "aten::new_full",
}
_QUEUE_CAP = 4096
#: Shorter repeats are layers of one model (two equal Linear+ReLU), not loop iterations.
_MIN_PERIOD = 8
_DEBUG = bool(os.environ.get("EMBER_EAGER_DEBUG"))


class EagerError(RuntimeError):
    """An error in a deferred op, reported with the user's line that issued it."""


def _native():
    from . import _native as native

    return native()


_plans = None


def _plan_cache():
    global _plans
    if _plans is None:
        d = os.path.join(tempfile.gettempdir(), f"ember-eager-{os.getpid()}")
        os.makedirs(d, exist_ok=True)
        _plans = _native().EagerPlans(d)
    return _plans


#: ops_replayed: recorded ops that matched the last region's op at their place (`_replay`);
#: regions_replayed: regions run by the last region's plan handle, without conversion or key.
#: ops_aliased: `detach`/`alias` of a deferred value, answered with another wrapper of it (`_same_value`).
_counters = {"flushes": 0, "ops_recorded": 0, "ops_replayed": 0, "regions_replayed": 0, "ops_eager": 0, "ops_aliased": 0, "values_written": 0}


def stats() -> dict[str, Any]:
    """Plan-cache and recorder counters since the last ``reset_stats()``."""
    hits, misses, compile_s, run_s, plans = _plan_cache().stats()
    total = hits + misses
    return dict(
        _counters,
        hits=hits,
        misses=misses,
        hit_rate=(hits / total) if total else 1.0,
        compile_seconds=compile_s,
        run_seconds=run_s,
        plans=plans,
    )


def reset_stats(clear_plans: bool = False) -> None:
    """Zeroes the recorder counters; with ``clear_plans`` also forgets every compiled plan and
    zeroes the cache counters (otherwise compare two ``stats()`` snapshots)."""
    for k in _counters:
        _counters[k] = 0
    if clear_plans:
        _plan_cache().clear()


#: Whether a code object is torch's or ember's (skipped when looking for the user's line), by code.
_internal_code: dict = {}


def _user_line() -> tuple[str, int]:
    """The innermost frame outside torch and ember: the user's line that issued an op."""
    f = sys._getframe(2)
    while f is not None:
        c = f.f_code
        internal = _internal_code.get(c)
        if internal is None:
            fn = c.co_filename
            internal = _internal_code[c] = fn.startswith(_TORCH_DIR) or fn.startswith(_EMBER_DIR) or fn.startswith("<frozen")
        if not internal:
            return c.co_filename, f.f_lineno
        f = f.f_back
    return "<unknown>", 0


# ----------------------------------------------------------------------------- values


class DeferredTensor(torch.Tensor):
    """A tensor whose value is a pending op result (or, after a flush, a real CPU tensor)."""

    _vid: int
    _real: torch.Tensor | None
    _rec: "_Recorder"
    #: Weak references to every wrapper sharing this value's memory in torch's eyes (the base and
    #: its views); None until a view of it is taken.
    _alias: list | None
    #: ((parent wrapper, view op, other args, kwargs), result index): how to re-create this view
    #: from its parent's memory when it is materialized; the parent is held, as torch's ._base is.
    _view: tuple | None

    # Class-level defaults: a wrapper is created per recorded op, and most keep these.
    _real = None
    _alias = None
    _view = None
    #: Writes through views recorded into this root since it was created (`_write_through_views`).
    _writes = 0

    @staticmethod
    def __new__(cls, desc: tuple, vid: int, rec: "_Recorder", alias: list | None = None):
        r = torch.Tensor._make_wrapper_subclass(cls, desc[0], strides=desc[1], dtype=desc[2], device="cpu", requires_grad=False)
        r._vid = vid
        r._rec = rec
        if alias is not None:
            r._alias = alias
            alias.append(weakref.ref(r))
        return r

    def _materialize(self) -> torch.Tensor:
        # After a flush the value is real, but an in-place op since (autograd accumulating into
        # a gradient) may have left a pending write to that memory: it lands first.
        rec = self._rec
        if self._real is None or (rec.pending and _storage_key(self._real) in rec.pending):
            rec.flush("sync")
        assert self._real is not None, "flush left a live deferred tensor unmaterialized"
        return self._real

    # Sync points that bypass the dispatcher.
    def numpy(self, *a, **k):
        return self._materialize().numpy(*a, **k)

    def cpu(self, *a, **k):
        return self._materialize().cpu(*a, **k)

    def tolist(self):
        return self._materialize().tolist()

    def __array__(self, *a, **k):
        return self._materialize().__array__(*a, **k)

    def __repr__(self, *, tensor_contents=None):
        return repr(self._materialize())

    # Saving (torch.save, pickle) and deep copies take the value: a plain tensor.
    def __reduce_ex__(self, protocol):
        return self._materialize().__reduce_ex__(protocol)

    def __deepcopy__(self, memo):
        return self._materialize().__deepcopy__(memo)

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Outside ember.eager(): materialize and run with torch eager.
        def real(x):
            return x._materialize() if isinstance(x, DeferredTensor) else x

        args = torch.utils._pytree.tree_map(real, args)
        kwargs = torch.utils._pytree.tree_map(real, kwargs or {})
        with _disable_current_modes():
            return func(*args, **kwargs)


_new_wrapper = DeferredTensor.__new__  # without type.__call__'s __init__ round


class _Ref:
    """A tensor argument of a queued op: the value id it reads."""

    __slots__ = ("vid",)

    def __init__(self, vid: int) -> None:
        self.vid = vid


class _Op:
    __slots__ = ("func", "target", "pos", "kw", "spec", "ins", "outs", "descs", "native_outs", "hidden", "file", "line", "sig", "expect", "root", "base")


def _shift(x, d: int):
    if isinstance(x, _Ref):
        return _Ref(x.vid + d)
    if isinstance(x, list):
        return [_shift(y, d) for y in x]
    return x


def _expand(op: _Op) -> _Op:
    """Fills in a replayed op's arguments (`pos`, `kw`, `spec`), which `_replay` leaves out: they
    are its recorded op's (`root`), with every value id moved by the same distance."""
    if op.spec is None:
        r = op.root
        d = op.base - r.base
        op.pos = [_shift(x, d) for x in r.pos]
        op.kw = {k: _shift(x, d) for k, x in r.kw.items()}
        spec = []
        for a in r.spec:
            tag = a[1]
            if tag == "t":
                spec.append((a[0], "t", a[2] + d))
            elif tag in ("ts", "ots"):
                spec.append((a[0], tag, [None if x is None else x + d for x in a[2]]))
            else:
                spec.append(a)
        op.spec = spec
    return op


class _Schema:
    """Per-OpOverload facts, computed once."""

    __slots__ = ("func", "params", "target", "mutable", "writes", "view", "known", "functional", "decomp", "name", "returns_tensors", "returns_list", "route", "fast", "alpha", "same_value", "foreach", "meta_only")

    def __init__(self, func) -> None:
        self.func = func  # keeps the OpOverload alive: `_schemas` is keyed by its id
        s = func._schema
        self.name = s.name
        base = s.name.split("::", 1)[1]
        self.target = f"{func.namespace}.{base}.{func._overloadname}"
        self.params = []
        for a in s.arguments:
            t = str(a.type)
            kind = "tensor" if t in ("Tensor", "Optional[Tensor]") else "tensors" if t == "List[Tensor]" else "opt_tensors" if t == "List[Optional[Tensor]]" else "other"
            self.params.append((a.name, kind, a.kwarg_only))
        first = s.arguments[0] if s.arguments else None
        self.mutable = bool(first is not None and first.alias_info is not None and first.alias_info.is_write)
        #: (position, name) of every argument the op writes (in-place targets, `out=`).
        self.writes = tuple((i, a.name) for i, a in enumerate(s.arguments) if a.alias_info is not None and a.alias_info.is_write)
        self.view = bool(s.returns and s.returns[0].alias_info is not None and not self.mutable)
        self.returns_tensors = bool(s.returns) and all(str(r.type) in ("Tensor", "List[Tensor]") for r in s.returns)
        self.returns_list = len(s.returns) == 1 and str(s.returns[0].type) == "List[Tensor]"
        self.known = func.namespace == "aten" and _native().eager_op_known(self.target)
        #: In place on the tensor's metadata only (`t_`, `unsqueeze_`, `as_strided_`, `resize_`).
        self.meta_only = torch.Tag.inplace_view in func.tags
        self.functional = None
        if self.mutable and base.endswith("_") and not base.startswith("_"):
            pkt = getattr(aten, base[:-1], None)
            self.functional = getattr(pkt, func._overloadname, None) if pkt is not None else None
            if self.functional is None and pkt is not None:
                # Overload names differ (`transpose_.default`, `transpose.int`): match the types.
                types = [str(a.type) for a in s.arguments]
                for name in pkt.overloads():
                    f = getattr(pkt, name)
                    if [str(a.type) for a in f._schema.arguments] == types:
                        self.functional = f
                        break
        self.decomp = _decompositions().get(func)
        self.fast = _FAST.get(self.target)
        self.alpha = self.target in ("aten.add.Tensor", "aten.sub.Tensor")
        self.same_value = self.target in ("aten.detach.default", "aten.alias.default")
        self.foreach = decompositions.foreach_element(func) if func.namespace == "aten" and base.startswith("_foreach_") else None
        # How `__torch_dispatch__` starts on this op: 0 torch eager, 1 a `_LIKE` op, 2 the rest.
        self.route = 0 if func.namespace != "aten" or not self.returns_tensors or self.name in _RANDOM else 1 if self.name in _LIKE else 2


#: By id(OpOverload): its own `__hash__` is Python code (~1 µs a lookup); the schema holds the op.
_schemas: dict[int, _Schema] = {}
#: Ops the CPU target could not lower (learned from regions), and ops already warned about.
_unsupported: dict[str, str] = {}
_warned: set[str] = set()
_lowered: dict[str, bool] = {}
#: Result metas by op signature (op, argument metas, non-tensor arguments): a pure function of
#: the key, so shared by every `ember.eager()` block (a new block's first step infers none again).
_meta_cache: dict[Any, tuple] = {}
#: (trace, trace_plan) of the last `ember.eager()` block that ended cleanly in defer mode: a new
#: block starts by matching against it, so a loop that opens a block per epoch replays from its
#: first step (the match is exact, whatever block recorded the trace).
_last_trace: tuple | None = None
#: `_meta_cache` entry of an op signature that runs with torch eager (no meta result Ember models).
_EAGER = object()
_decomp_table: dict | None = None
#: Writes through views recorded into one root before the next one flushes instead: each copies
#: the root (a scatter), and a loop filling a tensor row by row would otherwise grow one region
#: without bound (512 rows: 2,500 ops, 21 s to compile, measured).
_MAX_VIEW_WRITES = 16
#: Real integer/bool tensors up to this many elements are computed with torch eager, not recorded.
_SMALL_INDEX = 1 << 16
#: Excluded to run an op on a wrapper itself (its metadata), past the recorder.
_PYTHON_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(torch._C.DispatchKey.PythonTLSSnapshot)


def _decompositions() -> dict:
    global _decomp_table
    if _decomp_table is None:
        _decomp_table = decompositions.core_aten()
    return _decomp_table


def _schema(func) -> _Schema:
    s = _schemas.get(id(func))
    if s is None:
        s = _schemas[id(func)] = _Schema(func)
    return s


def _dense(shape, strides) -> bool:
    """Whether `strides` lay `shape` out without gaps or overlaps (in some dim order)."""
    n = 1
    for st, size in sorted((st, sz) for sz, st in zip(shape, strides) if sz != 1):
        if st != n:
            return False
        n *= size
    return True


def _chain(w) -> list:
    """A deferred view, its base, its base's base, ... up to the root (no view recipe)."""
    out = [w]
    while w._view is not None:
        w = w._view[0][0]
        out.append(w)
    return out


def _slice_args(vargs) -> list:
    """`slice.Tensor`'s (dim, start, end, step), its defaults filled in."""
    return (list(vargs) + [0, None, None, 1][len(vargs):])[:4]


def _split_bounds(parent, vargs, vkw, idx) -> tuple:
    """(dim, start, end) of output `idx` of `split` (a size) or `split_with_sizes` over `parent`."""
    dim = (vargs[1] if len(vargs) > 1 else vkw.get("dim", 0)) % parent.dim()
    if isinstance(vargs[0], int):
        n = vargs[0]
        return dim, idx * n, min((idx + 1) * n, parent.shape[dim])
    start = sum(vargs[0][:idx])
    return dim, start, start + vargs[0][idx]


def _region(view) -> tuple | None:
    """(dim, start, end) of the part of its base a view recipe reads (a range along one dim), or
    None when it is not such a range; for disjointness."""
    (parent, func, vargs, vkw), idx = view
    if func in (aten.split.Tensor, aten.split_with_sizes.default):
        return _split_bounds(parent, vargs, vkw, idx)
    if func is aten.slice.Tensor:
        d, start, end, step = _slice_args(vargs)
        d %= parent.dim()
        size = parent.shape[d]
        a = 0 if start is None else start + size if start < 0 else start
        b = size if end is None else end + size if end < 0 else end
        return (d, min(max(a, 0), size), min(max(b, 0), size)) if step == 1 else None
    if func in (aten.select.int, aten.unbind.int):
        d = (vargs[0] if vargs else vkw.get("dim", 0)) % parent.dim()
        i = idx if func is aten.unbind.int else vargs[1]
        i %= parent.shape[d]
        return d, i, i + 1
    return None


def _same_view(a, b) -> bool:
    """Whether two view recipes are the same view of the same base (never compares tensors)."""
    (pa, fa, va, ka), ia = a
    (pb, fb, vb, kb), ib = b
    return pa is pb and fa is fb and va == vb and ka == kb and ia == ib


def _disjoint_views(a, b) -> bool:
    """Whether two view recipes of the same base read disjoint parts of it."""
    if a[0][0] is not b[0][0]:
        return False
    ra, rb = _region(a), _region(b)
    return ra is not None and rb is not None and ra[0] == rb[0] and (ra[2] <= rb[1] or rb[2] <= ra[1])


def _inv_slice(op, parent, val, vargs, vkw, idx):
    return op(aten.slice_scatter.default, parent, val, *_slice_args(vargs))


def _inv_select(op, parent, val, vargs, vkw, idx):
    return op(aten.select_scatter.default, parent, val, vargs[0], vargs[1])


def _inv_unbind(op, parent, val, vargs, vkw, idx):
    return op(aten.select_scatter.default, parent, val, vargs[0] if vargs else vkw.get("dim", 0), idx)


def _inv_split(op, parent, val, vargs, vkw, idx):
    dim, start, end = _split_bounds(parent, vargs, vkw, idx)
    return op(aten.slice_scatter.default, parent, val, dim, start, end, 1)


def _inv_reshape(op, parent, val, vargs, vkw, idx):
    return op(aten.reshape.default, val, list(parent.shape))


def _inv_permute(op, parent, val, vargs, vkw, idx):
    dims = [d % parent.dim() for d in vargs[0]]
    return op(aten.permute.default, val, [dims.index(i) for i in range(len(dims))])


def _inv_transpose(op, parent, val, vargs, vkw, idx):
    return op(aten.transpose.int, val, vargs[0], vargs[1])


def _inv_diagonal(op, parent, val, vargs, vkw, idx):
    return op(aten.diagonal_scatter.default, parent, val, *vargs)


#: View op → f(op, base, new view value, view args, view kwargs, output index): the base's new
#: value. A reshape (a copy when torch cannot view) is not one: writes through it flush.
_VIEW_INVERSE = {
    aten.slice.Tensor: _inv_slice,
    aten.select.int: _inv_select,
    aten.unbind.int: _inv_unbind,
    aten.split.Tensor: _inv_split,
    aten.split_with_sizes.default: _inv_split,
    aten.view.default: _inv_reshape,
    aten.unsqueeze.default: _inv_reshape,
    aten.squeeze.dim: _inv_reshape,
    aten.squeeze.dims: _inv_reshape,
    aten.squeeze.default: _inv_reshape,
    aten.alias.default: _inv_reshape,
    aten.permute.default: _inv_permute,
    aten.transpose.int: _inv_transpose,
    aten.diagonal.default: _inv_diagonal,
}


def _restrides_only(t: torch.Tensor, size, stride, storage_offset=None) -> bool:
    """Whether `t.as_strided_(size, stride, storage_offset)` keeps every element where it is."""
    if list(size) != list(t.shape) or storage_offset not in (None, t.storage_offset()):
        return False
    return all(a == b for a, b, n in zip(stride, t.stride(), size) if n != 1)


def _storage_key(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _geometry(t: torch.Tensor) -> tuple:
    return (t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)


# ----------------------------------------------------------------------------- recorder


class _Recorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in a Dynamo-disabling frame (several µs per
        # op); this mode never runs under torch.compile, so it needs none.
        return False

    def __init__(self, mode: str) -> None:
        super().__init__()
        if mode not in ("defer", "strict", "strict_blocking"):
            raise ValueError(f"ember.eager: unknown mode {mode!r} (use 'defer', 'strict' or 'strict_blocking')")
        self.mode = mode
        self.queue: list[_Op] = []
        self.next_vid = 0
        #: Real tensors the queue reads, by value id, and the value id of each by id().
        self.ext: dict[int, torch.Tensor] = {}
        self.ext_of: dict[int, int] = {}
        self.ext_storages: set[int] = set()
        self.ext_keep: list[torch.Tensor] = []
        #: Python numbers read as rank-0 region inputs, by value id: (value, dtype). Made into
        #: tensors only when a region runs (packed per dtype on a plan replay, `_run`).
        self.scalars: dict[int, tuple] = {}
        #: Pending in-place writes to real tensors: storage -> (tensor, geometry, value id).
        self.pending: dict[int, tuple[torch.Tensor, tuple, int]] = {}
        self.wrappers: list[weakref.ref] = []
        #: (shape, stride, dtype) of every value the queue or a live wrapper refers to.
        self.metas: dict[int, tuple] = {}
        self.meta_cache = _meta_cache
        self.unsupported = _unsupported
        self.warned = _warned
        # Repeated-subsequence heuristic.
        self.sigs: list[int] = []
        self.prefix = 0
        self.cuts: set[int] = set()
        self.candidates: list[int] = []
        self.cut = 0
        # Replay fast path: the ops of the last region, which the next ops are matched against
        # (`_replay`) instead of being recorded afresh. Value ids are compared relative to the
        # first id of their region (`qbase`); `qclean` says the queue's ids all count from it.
        self.trace: list[_Op] | None = None
        self.rpos = -1
        self.qbase = 0
        self.qclean = True
        #: How the trace ran: ((kept ops, outputs relative to its first id), inputs relative to it,
        #: plan handle). A region replayed op for op with the same kept ops and outputs runs that
        #: plan again without being converted and keyed.
        self.trace_plan: tuple | None = None
        self.last_run: tuple | None = None
        #: Recording a transpose that `_transposed_input` inserts before the op reading it.
        self.inserting = False

    # -- value helpers --------------------------------------------------------------------

    def _new_vid(self, meta: tuple) -> int:
        v = self.next_vid
        self.next_vid += 1
        self.metas[v] = meta
        return v

    def _input_vid(self, t: torch.Tensor) -> int:
        """The value id a real tensor reads as: a pending write to it, or a region input."""
        if self.pending:
            sk = _storage_key(t)
            p = self.pending.get(sk)
            if p is not None:
                # The write's own target keeps its geometry: an in-place op that could change it
                # is recorded in its functional form (same geometry) or runs with torch eager
                # after the pending write landed (`_realize`).
                if p[0] is t or _geometry(t) == p[1]:
                    return p[2]
                self.flush("aliased read")
        v = self.ext_of.get(id(t))
        if v is None and self.mode == "defer" and t.dim() == 2 and t.shape[0] > 1 and t.shape[1] > 1 and t.stride() == (1, t.shape[0]):
            v = self._transposed_input(t)
        if v is None:
            # The runtime reads dense inputs; `t` stays referenced (by ext_keep) so its id is stable.
            # The meta keeps t's strides: results take their layout from it as in torch eager.
            dense = t if t.is_contiguous() else t.contiguous()
            v = self._new_vid((tuple(t.shape), t.stride(), t.dtype))
            self.ext[v] = dense
            self.ext_of[id(t)] = v
            self.ext_keep.append(t)
            self.ext_storages.add(_storage_key(t))
        return v

    def _scalar_vid(self, x, dtype: torch.dtype) -> int:
        v = self._new_vid(((), (), dtype))
        self.scalars[v] = (x, dtype)
        return v

    def _lift_scalars(self) -> None:
        """Makes the pending Python-number inputs real rank-0 tensors in `ext`."""
        for v, (x, dtype) in self.scalars.items():
            self.ext[v] = torch.scalar_tensor(x, dtype=dtype)
        self.scalars = {}

    def _transposed_input(self, t: torch.Tensor) -> int | None:
        """A transposed real matrix (a Linear's `weight.t()`) read as its matrix plus a recorded
        transpose: the region's GEMMs read transposed operands in place, where a dense copy costs
        a pass over the weight per read. None when the transpose was not recorded."""
        self.inserting = True
        try:
            w = self._record(aten.transpose.int, _schema(aten.transpose.int), (t.t(), 0, 1), {})
        finally:
            self.inserting = False
        if type(w) is not DeferredTensor or w._real is not None:
            return None  # ran eagerly, or a flush (queue cap) materialized it
        self.ext_of[id(t)] = w._vid
        self.ext_keep.append(t)
        return w._vid

    def _vid_of(self, x: torch.Tensor) -> int:
        if isinstance(x, DeferredTensor):
            if x._real is not None:
                return self._input_vid(x._real)
            if x._rec is not self:
                return self._input_vid(x._materialize())
            return x._vid
        return self._input_vid(x)

    def _real(self, x):
        """A real tensor for x (flushing when it is pending); other values unchanged."""
        if isinstance(x, DeferredTensor):
            return x._materialize()
        if isinstance(x, torch.Tensor) and self.pending:
            p = self.pending.get(_storage_key(x))
            if p is not None:
                self.flush("read of a pending write")
        return x

    def _realize(self, args, kwargs):
        r = self._real
        nested = (list, tuple, dict)
        if not any(isinstance(a, nested) for a in args) and not any(isinstance(v, nested) for v in kwargs.values()):
            return tuple(r(a) for a in args), {k: r(v) for k, v in kwargs.items()}  # pytree costs ~10 µs
        tm = torch.utils._pytree.tree_map
        return tm(r, args), tm(r, kwargs)

    # -- dispatch ---------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.cut:
            # A cut decided at the previous op runs now, after Python dropped that statement's
            # temporaries, so they are not materialized.
            self._flush_cut()
        kwargs = kwargs or {}
        s = _schemas.get(id(func)) or _schema(func)
        if s.foreach is not None:
            return self._foreach(func, s, args, kwargs)
        if s.route != 2:
            return self._eager(func, s, args, kwargs) if s.route == 0 else self._like(func, args, kwargs)
        tensors = []
        lists = False
        for a in args:
            if isinstance(a, torch.Tensor):
                tensors.append(a)
            elif isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
                lists = True
        if kwargs:
            tensors += [a for a in kwargs.values() if isinstance(a, torch.Tensor)]
        if not tensors and not lists:
            return self._eager(func, s, args, kwargs, real=True)  # factories: cheap, and their values are real
        if not lists:
            for t in tensors:
                if type(t) is not torch.Tensor or (t.numel() > 1 and (t.is_floating_point() or t.is_complex() or t.numel() > _SMALL_INDEX)):
                    break
            else:
                # Bookkeeping on real scalars (an optimizer's step counter) and on small real
                # integer or bool tensors (token ids, attention masks): torch eager costs no more
                # than recording, and keeps `.item()`, `.all()` or `.tolist()` on the results,
                # which models branch on, from forcing a flush.
                if not (self.pending and any(_storage_key(t) in self.pending for t in tensors)):
                    return self._eager(func, s, args, kwargs, real=True)
        if s.view and not lists and all(type(t) is not DeferredTensor or t._real is not None for t in tensors):
            # A view of real memory is a real view (free, and writes through it reach the base);
            # a pending write to that memory lands first.
            if self.pending and any(_storage_key(t._real if type(t) is DeferredTensor else t) in self.pending for t in tensors):
                self.flush("view of a pending write")
            return self._eager(func, s, args, kwargs)
        if s.same_value and type(args[0]) is DeferredTensor and args[0]._real is None and args[0]._rec is self:
            return self._same_value(args[0])
        if s.mutable:
            return self._inplace(func, s, args, kwargs)
        return self._record(func, s, args, kwargs)

    def _foreach(self, func, s: _Schema, args, kwargs):
        """A `_foreach_*` op (an optimizer's multi-tensor step) as its per-tensor op on each
        element, each through this handler: one dispatcher round for the whole list."""
        outs = decompositions.foreach(func, lambda elem, *a, **k: self.__torch_dispatch__(elem, (), a, k), *args, **kwargs)
        if outs is NotImplemented:
            return self._eager(func, s, args, kwargs)
        return outs if s.returns_list else None

    def _same_value(self, x: DeferredTensor) -> DeferredTensor:
        """`detach`/`alias` of a deferred value (autograd detaches every gradient it stores):
        another wrapper of the same value, in its alias group, with its view recipe if it is a
        view, so both materialize onto the same memory. Nothing is recorded."""
        if x._alias is None:
            x._alias = [weakref.ref(x)]
        w = _new_wrapper(DeferredTensor, self.metas[x._vid], x._vid, self, x._alias)
        w._view = x._view
        self.wrappers.append(weakref.ref(w))
        _counters["ops_aliased"] += 1
        return w

    def _eager(self, func, s: _Schema, args, kwargs, real: bool = False):
        """Runs `func` with torch eager; `real`: the arguments are known to hold no deferred or
        pending tensor, so they need no realizing (its pytree walk costs more than a small op)."""
        if s.writes and self.queue:
            # A write to memory the queue reads, or that a pending write targets, waits for them.
            written = []
            for i, name in s.writes:
                t = args[i] if i < len(args) else kwargs.get(name)
                written.extend(t if isinstance(t, (list, tuple)) else (t,))  # foreach ops write lists
            for t in written:
                if type(t) is DeferredTensor:
                    t = t._real
                if type(t) is torch.Tensor:
                    sk = _storage_key(t)
                    if sk in self.ext_storages or sk in self.pending:
                        self.flush("eager write to a queued input or a pending target")
                        break
        rargs, rkwargs = (args, kwargs) if real else self._realize(args, kwargs)
        _counters["ops_eager"] += 1
        out = func(*rargs, **rkwargs)
        if s.mutable and args and isinstance(args[0], DeferredTensor):
            # In-place on a materialized wrapper: its real tensor was updated in place.
            return args[0]
        return out

    def _like(self, func, args, kwargs):
        def placeholder(x):
            if isinstance(x, DeferredTensor):
                return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype)
            return x

        _counters["ops_eager"] += 1
        nested = (list, tuple, dict)
        if not any(isinstance(a, nested) for a in args) and not any(isinstance(v, nested) for v in kwargs.values()):
            return func(*[placeholder(a) for a in args], **{k: placeholder(v) for k, v in kwargs.items()})  # pytree: ~10 µs
        tm = torch.utils._pytree.tree_map
        return func(*tm(placeholder, args), **tm(placeholder, kwargs))

    def _inplace(self, func, s: _Schema, args, kwargs):
        target = args[0]
        if s.meta_only:
            return self._inplace_view(func, s, args, kwargs)
        if s.functional is None:
            return self._eager(func, s, args, kwargs)
        fs = _schema(s.functional)
        alive = None
        if isinstance(target, DeferredTensor) and target._real is None and target._alias is not None:
            alive = [w for w in (r() for r in target._alias) if w is not None]
            if len(alive) < 2:
                alive = None
            elif not self._functionalizable(target, alive):
                # A write another live tensor must see (a view, its base) that cannot be recorded:
                # materialize them, the views as real views of their base, and write through
                # memory like torch does.
                self.flush("write through an alias")
                alive = None
        # The functional form takes the in-place op's path through dispatch (same arguments, and
        # it is neither in place nor a view), so it goes straight to recording.
        new = self._record(s.functional, fs, args, kwargs) if fs.known or fs.decomp or fs.fast else None
        if new is None:
            return self._eager(func, s, args, kwargs)
        if new.shape != target.shape or new.dtype != target.dtype:
            raise EagerError(f"in-place `{s.target}`: result {tuple(new.shape)} {new.dtype} does not fit into {tuple(target.shape)} {target.dtype}")
        if not isinstance(new, DeferredTensor) or new._real is not None:
            # The functional form ran eagerly: write its value the ordinary way.
            rnew = self._real(new)
            with torch.no_grad():
                self._real(target).copy_(rnew)
            return target
        if isinstance(target, DeferredTensor):
            if target._real is not None:
                self._set_pending(target._real, new._vid)
            elif alive is not None:
                # Checked before recording; a flush since would have materialized the target.
                self._write_through_views(target, alive, new)
            else:
                target._vid = new._vid
                target._alias = None
        else:
            self._set_pending(target, new._vid)
        return target

    # A write through a view, recorded (functionalization): the view's new value is scattered
    # into its base, up to the root, and every other live alias that overlaps the written part
    # is re-derived from its base's new value by its recorded view op.

    def _functionalizable(self, target: DeferredTensor, alive: list) -> bool:
        """Whether a write to `target` can be recorded for its live aliases `alive`: all deferred,
        target's views invertible (`_VIEW_INVERSE`), everyone's root the same value."""
        chain = _chain(target)
        root_vid = chain[-1]._vid
        if chain[-1]._writes >= _MAX_VIEW_WRITES or any(c._view[0][1] not in _VIEW_INVERSE for c in chain[:-1]):
            return False
        for w in alive:
            if type(w) is not DeferredTensor or w._real is not None or w._rec is not self or _chain(w)[-1]._vid != root_vid:
                return False
        return True

    def _write_through_views(self, target: DeferredTensor, alive: list, new: DeferredTensor) -> None:
        chain = _chain(target)
        chain[-1]._writes += 1
        vids = [new._vid]
        val = new
        for child in chain[:-1]:
            (parent, func, vargs, vkw), idx = child._view
            val = _VIEW_INVERSE[func](self._op, parent, val, vargs, vkw, idx)
            vids.append(val._vid)
        pos = {id(c): i for i, c in enumerate(chain)}
        for c, v in zip(chain, vids):
            self._repoint(c, v)
        rest = [w for w in alive if id(w) not in pos]
        for w in sorted(rest, key=lambda w: len(_chain(w))):  # bases before their views
            if w._view is None:
                self._repoint(w, vids[-1])  # another wrapper of the root's value (`_same_value`)
                continue
            wc = _chain(w)
            # The branch below the deepest ancestor shared with the target: a sibling of the
            # target's own branch there that reads a disjoint part keeps its value.
            j = next((k for k, c in enumerate(wc) if id(c) in pos or c._view is None), len(wc) - 1)
            i = pos.get(id(wc[j]), len(chain) - 1)
            if i > 0 and j > 0:
                mine, theirs = wc[j - 1]._view, chain[i - 1]._view
                if _same_view(mine, theirs):
                    if j == 1:
                        self._repoint(w, chain[i - 1]._vid)  # another wrapper of a written view
                        continue
                elif _disjoint_views(mine, theirs):
                    continue
            (parent, func, vargs, vkw), idx = w._view
            out = self._op(func, parent, *vargs, **vkw)
            self._repoint(w, (out if idx is None else out[idx])._vid)

    def _repoint(self, w: DeferredTensor, vid: int) -> None:
        """`w` now holds value `vid`, laid out as `w` is (its strides are torch's)."""
        w._vid = vid
        self.metas[vid] = (tuple(w.shape), w.stride(), w.dtype)

    def _inplace_view(self, func, s: _Schema, args, kwargs):
        """An in-place op on a tensor's metadata (`t_`, `unsqueeze_`, `as_strided_`, `resize_`,
        ATen's `inplace_view` tag). The wrapper's own sizes and strides change as torch changes
        them: the op runs on it below the Python key (the wrapper's storage is a meta one). Its
        value is the view op's result when the wrapper is a deferred value with no other live
        alias and the view op is recorded; otherwise it is materialized and the op also runs on
        its real tensor."""
        target = args[0]
        if type(target) is not DeferredTensor:
            return self._eager(func, s, args, kwargs)
        new = None
        restride = target._real is None and s.target == "aten.as_strided_.default" and _restrides_only(target, *args[1:], **kwargs)
        if restride:
            new = target  # the strides of size-1 dims (adaptive pooling's channels-last `out`)
        elif target._real is None and target._view is None and s.functional is not None and _schema(s.functional).view:
            others = target._alias is not None and any(r() is not None and r() is not target for r in target._alias)
            if not others:
                new = self._record(s.functional, _schema(s.functional), args, kwargs)
                if type(new) is not DeferredTensor or new._real is not None:
                    new = None  # ran with torch eager, which materialized the target
        if new is not None:
            target._vid = new._vid
        else:
            target._materialize()
            self._eager(func, s, args, kwargs)
        with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):
            func(target, *args[1:], **kwargs)
        if restride:
            self._repoint(target, target._vid)
        return target

    def _set_pending(self, t: torch.Tensor, vid: int) -> None:
        sk = _storage_key(t)
        p = self.pending.get(sk)
        if p is not None and p[0] is t:
            self.pending[sk] = (t, p[1], vid)  # the same target again: same geometry (`_input_vid`)
            return
        g = _geometry(t)
        if p is not None and p[1] != g:
            self.flush("partial in-place write")
        self.pending[sk] = (t, g, vid)

    # -- recording -------------------------------------------------------------------------

    def _record(self, func, s: _Schema, args, kwargs):
        if s.fast is not None:
            out = s.fast(self._op, *args, **kwargs)
            if out is not NotImplemented:
                return out
        if not s.known or s.target in self.unsupported:
            if s.decomp is not None:
                with self:
                    return s.decomp(*args, **kwargs)
            if s.name == "aten::to":
                return self._to(args, kwargs)
            if s.name == "aten::contiguous":
                # Deferred values have no layout of their own: a contiguous copy is a clone.
                c = aten.clone.default
                return self._record(c, _schema(c), (args[0],), {"memory_format": torch.contiguous_format})
            self._note_unsupported(s.target)
            return self._eager(func, s, args, kwargs)
        # alpha scales a tensor: record it as mul by a rank-0 buffer so its value is not compiled in.
        if s.alpha:
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            if alpha != 1:
                other = self._record(aten.mul.Tensor, _schema(aten.mul.Tensor), (args[1], alpha), {})
                return self._record(func, s, (args[0], other), {})
        if self.rpos >= 0:
            op = self._replay(func, args, kwargs)
            if op is not None:
                return self._enqueue(op, s, func, args, kwargs)
            self.rpos = -1  # a mismatch: the rest of this region is recorded afresh
        file, line = _user_line()
        op = _Op()
        op.func, op.target, op.file, op.line = func, s.target, file, line
        pos: list = []
        kw: dict = {}
        spec: list = []
        ins: list[int] = []
        key: list = [func]
        # How `_replay` recognizes this op: each argument's source, and tensors as value ids
        # relative to the region's first id (with the metas of region inputs).
        expect: list = []
        base = self.qbase
        float_dtype = None
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, torch.Tensor) and a.dtype in _LIFT_DTYPES:
                float_dtype = a.dtype
                break
        for i, (name, kind, kwonly) in enumerate(s.params):
            if i < len(args):
                v = args[i]
                src = i
            elif name in kwargs:
                v = kwargs[name]
                src = name
            else:
                continue
            dest_kw = kwonly or i >= len(args)
            lifted = None
            if kind == "tensor" and isinstance(v, (int, float)) and not isinstance(v, bool) and float_dtype is not None:
                lifted = type(v)  # a Python number scaling a tensor: a rank-0 input
            if lifted is not None or isinstance(v, torch.Tensor):
                if lifted is not None:
                    vid = self._scalar_vid(v, float_dtype)
                elif v.dtype not in _DTYPES or v.device.type != "cpu":
                    return self._eager(func, s, args, kwargs)  # complex, half precision, devices: torch
                else:
                    vid = self._vid_of(v)
                ins.append(vid)
                spec.append((name, "t", vid))
                key.append((name, self.metas[vid]))
                val = _Ref(vid)
                if lifted is not None:
                    expect.append((src, name, dest_kw, "l", (lifted, vid - base)))
                else:
                    expect.append((src, name, dest_kw, "t", (vid - base, self.metas[vid] if vid in self.ext else None)))
            elif kind in ("tensors", "opt_tensors") and isinstance(v, (list, tuple)):
                vids = [None if t is None else self._vid_of(t) for t in v]
                ins.extend(x for x in vids if x is not None)
                spec.append((name, "ts" if kind == "tensors" else "ots", vids))
                key.append((name, tuple(None if x is None else self.metas[x] for x in vids)))
                val = [None if x is None else _Ref(x) for x in vids]
                expect.append((src, name, dest_kw, spec[-1][1], (type(v), tuple(None if x is None else (x - base, self.metas[x] if x in self.ext else None) for x in vids))))
            else:
                tagged = _tag(v)
                if tagged is not None:
                    spec.append((name, tagged[0], tagged[1]))
                key.append((name, _hashable(v)))
                val = v
                expect.append((src, name, dest_kw, "o", (_replay_key(v), v)))
            if dest_kw:
                kw[name] = val
            else:
                pos.append(val)
        if any(v < base for v in ins):
            self.qclean = False  # reads a value of an earlier region (a flush inside this op)
        key_t = tuple(key)
        cached = self.meta_cache.get(key_t)
        if cached is None:
            try:
                inferred = self._infer(func, s, pos, kw)
            except NotImplementedError:
                # Result shapes that depend on values (nonzero, boolean-mask indexing) have no
                # meta kernel: such ops run with torch eager, on real values.
                inferred = None
            if inferred is None:  # that, or a result dtype Ember does not model
                self.meta_cache[key_t] = _EAGER
                return self._eager(func, s, args, kwargs)
            descs, hidden = inferred
            cached = self.meta_cache[key_t] = (descs, [(list(d[0]), _DTYPES[d[2]]) for d in descs], hidden)
        elif cached is _EAGER:
            return self._eager(func, s, args, kwargs)
        op.pos, op.kw, op.spec, op.ins = pos, kw, spec, ins
        op.root, op.base = op, base
        op.descs, op.native_outs, op.hidden = cached
        op.outs = [self._new_vid(d) for d in op.descs]
        if not self._lowers(op):
            return self._record(func, s, args, kwargs)  # now decomposed or run eagerly
        op.sig = hash(key_t)
        op.expect = (len(args), tuple(kwargs), float_dtype, tuple(expect), self.inserting)
        return self._enqueue(op, s, func, args, kwargs)

    def _replay(self, func, args, kwargs) -> _Op | None:
        """The op as the next op of the last region, when it is that op again: same op, same
        non-tensor arguments, tensors at the same relative value ids (region inputs with the same
        metas). Its result metas, key signature and lowering status are the last region's, so
        none is recomputed, nor the user's line; None on any difference (the caller records it
        afresh)."""
        j = self.rpos
        trace = self.trace
        if not self.inserting:
            # Inserted transposes are replayed from inside the argument matching below, in order.
            while j < len(trace) and trace[j].expect[4]:
                j += 1
            if j == len(trace):
                return None
        tr = trace[j]
        if tr.func is not func:
            return None
        nargs, kwkeys, float_dtype, entries, _ = tr.expect
        if nargs != len(args) or (kwkeys != tuple(kwargs) if kwargs else kwkeys):
            return None
        flushes = _counters["flushes"]
        base = self.qbase
        ins: list[int] = []
        metas = self.metas
        for src, name, dest_kw, kind, x in entries:
            v = args[src] if type(src) is int else kwargs[src]
            if kind == "t":
                if type(v) is DeferredTensor and v._real is None and v._rec is self:
                    vid = v._vid
                    if vid - base != x[0]:
                        return None
                elif isinstance(v, torch.Tensor) and v.is_cpu and v.dtype in _DTYPES:
                    # (Reading it may flush, which replaces `metas`: a stale lookup misses.)
                    vid = self._input_vid(v) if type(v) is torch.Tensor else self._vid_of(v)
                    if vid - base != x[0] or (x[1] is not None and metas.get(vid) != x[1]):
                        return None
                else:
                    return None
                ins.append(vid)
            elif kind == "o":
                k = x[0]
                if (type(v) is not k if type(k) is type else _replay_key(v) != k) or v != x[1]:
                    return None
            elif kind == "l":
                if type(v) is not x[0]:
                    return None
                vid = self.next_vid  # `_scalar_vid`, inlined
                if vid - base != x[1]:
                    return None
                self.next_vid = vid + 1
                metas[vid] = ((), (), float_dtype)
                self.scalars[vid] = (v, float_dtype)
                ins.append(vid)
            else:  # "ts" / "ots"
                if type(v) is not x[0] or len(v) != len(x[1]):
                    return None
                for t, e in zip(v, x[1]):
                    if t is None or e is None:
                        if t is not e:
                            return None
                        continue
                    if not (isinstance(t, torch.Tensor) and t.is_cpu and t.dtype in _DTYPES):
                        return None
                    vid = self._vid_of(t)
                    if vid - base != e[0] or (e[1] is not None and metas.get(vid) != e[1]):
                        return None
                    ins.append(vid)
        if _counters["flushes"] != flushes:
            return None  # reading an argument flushed (an aliased read): the ids moved
        if self.rpos != j:
            return None  # an inserted transpose did not replay in its place
        op = _Op()
        # The line of the op at this place in the last region: finding the user's frame costs
        # about a quarter of recording (measured), and no error is raised here (a mismatching
        # op is recorded afresh, with its own line). Its arguments are the recorded op's, moved
        # to this region's value ids (`_expand`), filled in only if a slow path needs them.
        descs = tr.descs
        op.func, op.target, op.file, op.line = func, tr.target, tr.file, tr.line
        op.pos = op.kw = op.spec = None
        op.ins, op.root, op.base = ins, tr.root, base
        op.descs, op.native_outs, op.hidden, op.sig, op.expect = descs, tr.native_outs, tr.hidden, tr.sig, tr.expect
        n = self.next_vid
        op.outs = outs = list(range(n, n + len(descs)))
        self.next_vid = n + len(descs)
        for v, d in zip(outs, descs):
            metas[v] = d
        _counters["ops_replayed"] += 1
        self.rpos = j + 1
        if self.rpos == len(self.trace):
            self.rpos = -1
        return op

    def _enqueue(self, op: _Op, s: _Schema, func, args, kwargs):
        """Queues a recorded op and returns its result wrappers."""
        self.queue.append(op)
        _counters["ops_recorded"] += 1
        alias = view_of = None
        if s.view and args and isinstance(args[0], DeferredTensor) and args[0]._real is None:
            if args[0]._alias is None:
                args[0]._alias = [weakref.ref(args[0])]
            alias = args[0]._alias
            rest = list(args[1:]) + list(kwargs.values())
            if not any(isinstance(a, torch.Tensor) for a in rest):
                view_of = (args[0], func, tuple(args[1:]), dict(kwargs))
        outs = []
        wrappers = self.wrappers
        for v, d in zip(op.outs, op.descs):
            w = _new_wrapper(DeferredTensor, d, v, self, alias)
            wrappers.append(weakref.ref(w))
            outs.append(w)
        if op.hidden is not None:
            outs = [None if h else w for w, h in zip(outs, op.hidden)]
        if view_of is not None:
            for i, w in enumerate(outs):
                w._view = (view_of, i if len(outs) > 1 else None)
        self._after_record(op)
        if s.returns_list:
            return outs
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _op(self, func, *args, **kwargs):
        """Records one op from inside the recorder (a decomposition), skipping the dispatcher."""
        return self._record(func, _schema(func), args, kwargs)

    def _to(self, args, kwargs):
        """`Tensor.to(dtype)`: the tensor itself when nothing changes, else `_to_copy`."""
        x = args[0]
        dtype = kwargs.get("dtype")
        for a in args[1:]:
            if isinstance(a, torch.dtype):
                dtype = a
        if dtype is None or dtype == x.dtype:
            if not kwargs.get("copy", False):
                return x
        return self._record(aten._to_copy.default, _schema(aten._to_copy.default), (x,), {"dtype": dtype or x.dtype})

    def _infer(self, func, s: _Schema, pos, kw):
        """Result metas from torch's meta kernels (a bad op raises here, at the user's line), and
        which results the op leaves out (None: all present). An `output_mask` that drops results
        (a backward op's unneeded gradients) hides them: the region gets their metas as if they
        were computed, nobody can read them, and flushes drop them."""

        def meta(x):
            if isinstance(x, _Ref):
                shape, stride, dtype = self.metas[x.vid]
                return torch.empty_strided(shape, stride, dtype=dtype, device="meta")
            if isinstance(x, list):
                return [meta(y) for y in x]
            return x

        def run(pos, kw):
            with _disable_current_modes():
                out = func(*[meta(p) for p in pos], **{k: meta(v) for k, v in kw.items()})
            return out if isinstance(out, (tuple, list)) else (out,)

        outs = run(pos, kw)
        hidden = None
        if any(o is None for o in outs):
            names = [p[0] for p in s.params]
            if "output_mask" not in names:
                return None
            hidden = tuple(o is None for o in outs)
            full = [True] * len(outs)
            if "output_mask" in kw:
                outs = run(pos, dict(kw, output_mask=full))
            else:
                i = names.index("output_mask")
                outs = run([full if j == i else p for j, p in enumerate(pos)], kw)
        if any(o.dtype not in _DTYPES for o in outs):
            return None
        return tuple((tuple(o.shape), o.stride(), o.dtype) for o in outs), hidden

    def _note_unsupported(self, target: str) -> None:
        if target not in self.warned:
            self.warned.add(target)
            file, line = _user_line()
            _warn(target, file, line)

    def _after_record(self, op: _Op) -> None:
        if self.mode != "defer":
            self.flush("strict")
            return
        self.sigs.append(op.sig)
        self.prefix = hash((self.prefix, op.sig))
        n = len(self.sigs)
        if self.prefix in self.cuts:
            self.cut = n
            return
        if n > _MIN_PERIOD and op.sig == self.sigs[0]:
            self.candidates.append(n - 1)
        if self.candidates:
            for p in self.candidates:
                if n == 2 * p:
                    if self.sigs[:p] == self.sigs[p:]:
                        h = 0
                        for sg in self.sigs[:p]:
                            h = hash((h, sg))
                        self.cuts.add(h)
                        self.cut = p
                        return
            self.candidates = [p for p in self.candidates if 2 * p > n]
        if n >= _QUEUE_CAP:
            # At the next op, not inside the one recording now (a decomposition, or a write
            # through views re-deriving aliases, is halfway through).
            self.cut = n

    # -- flushing ---------------------------------------------------------------------------

    def flush(self, reason: str = "sync", upto: int | None = None) -> None:
        if _DEBUG and self.queue:
            file, line = _user_line()
            print(f"ember.eager flush ({reason}) of {len(self.queue) if upto is None else upto} ops at {file}:{line}", file=sys.stderr)
        if not self.queue:
            self._reset_heuristic([])
            return
        with _disable_current_modes(), torch.no_grad():
            self._flush(upto)

    def _flush_cut(self) -> None:
        upto, self.cut = self.cut, 0
        self.flush("repeat", upto=upto if upto < len(self.queue) else None)
        if self.queue and self.prefix in self.cuts:  # the rest is the next iteration, complete
            self.flush("repeat")

    def _reset_heuristic(self, rest: list[_Op]) -> None:
        self.cut = 0
        self.sigs = []
        self.prefix = 0
        self.candidates = []
        for op in rest:
            self.sigs.append(op.sig)
            self.prefix = hash((self.prefix, op.sig))

    def _flush(self, upto: int | None) -> None:
        queue = self.queue if upto is None else self.queue[:upto]
        rest = [] if upto is None else self.queue[upto:]
        produced = {v for op in queue for v in op.outs}
        # Values somebody still needs: live wrappers, pending writes, later queued ops.
        live_wrappers = []
        views = []
        need: dict[int, None] = {}
        for r in self.wrappers:
            w = r()
            if w is not None and w._real is None and w._vid in produced:
                if w._view is not None:
                    views.append(w)  # re-created from its parent below, not written by the region
                else:
                    live_wrappers.append(w)
                    need[w._vid] = None
        for sk, (t, g, v) in self.pending.items():
            if v in produced:
                need[v] = None
        for op in rest:
            for v in op.ins:
                if v in produced:
                    need[v] = None
        # Dead ops (results nobody holds) are dropped.
        keep = [False] * len(queue)
        want = set(need)
        for i in range(len(queue) - 1, -1, -1):
            op = queue[i]
            for v in op.outs:
                if v in want:
                    keep[i] = True
                    want.update(op.ins)
                    break
        ops = [op for i, op in enumerate(queue) if keep[i]]
        outputs = list(need)
        shape = None
        if self.qclean and not rest:
            shape = (tuple(keep), tuple(v - self.qbase for v in outputs))
        plan = None
        if shape is not None and self.trace_plan is not None and self.trace_plan[0] == shape and len(queue) == len(self.trace):
            if all(a.expect is b.expect for a, b in zip(queue, self.trace)):
                plan = self.trace_plan
        self.last_run = None
        results = self._run(ops, outputs, plan)
        _counters["values_written"] += len(results)
        seen = set()
        for w in live_wrappers:
            r = results[w._vid]
            if w._vid not in seen:
                st = w.stride()
                if r.stride() != st and r.numel() > 1 and _dense(w.shape, st):
                    # Regions write results dense; torch's layout (the meta kernel's strides,
                    # which the wrapper shows: channels-last, an elementwise op's on transposed
                    # inputs) is what views and stride-reading code of the user expect.
                    r = results[w._vid] = torch.empty_strided(w.shape, st, dtype=r.dtype).copy_(r)
            # Wrappers of one value (`_same_value`) get tensors of their own over one memory.
            w._real = r if w._vid not in seen else r.detach()
            seen.add(w._vid)
        for w in sorted(views, key=lambda w: len(_chain(w))):  # parents before their views
            (parent, func, vargs, vkw), i = w._view
            if parent._real is None:
                raise EagerError(f"ember.eager internal error: the base of a view ({func}) was not materialized with it")
            out = func(parent._real, *vargs, **vkw)
            w._real = out if i is None else out[i]
        # Later ops read flushed values as region inputs. The region's other inputs are let go
        # first: a parameter read through a view kept here would otherwise look shared to
        # `_assign` and be copied into instead of taking over its result's memory.
        if rest:
            self._lift_scalars()  # inputs of the rest's ops
        else:
            self.scalars = {}
        old_ext = self.ext
        self.ext, self.ext_of, self.ext_storages, self.ext_keep = {}, {}, set(), []
        for op in rest:
            for v in op.ins:
                if v in results:
                    t = results[v]
                elif v in old_ext:
                    t = old_ext[v]
                else:
                    continue
                if v not in self.ext:
                    self.ext[v] = t
                    self.ext_of[id(t)] = v
                    self.ext_keep.append(t)
                    self.ext_storages.add(_storage_key(t))
        del old_ext
        # A result that a wrapper or a later op also reads is copied, never shared with the
        # tensor the write targets (a later in-place write there must not reach them).
        shared = {w._vid for w in live_wrappers} | {v for op in rest for v in op.ins}
        for sk in list(self.pending):
            t, g, v = self.pending[sk]
            if v in results:
                _assign(t, results[v], may_share=v not in shared)
                del self.pending[sk]
        self.queue = rest
        self.wrappers = [r for r in self.wrappers if r() is not None and r()._real is None]
        keep_vids = set(self.ext) | {v for op in rest for v in op.outs} | {p[2] for p in self.pending.values()}
        keep_vids |= {r()._vid for r in self.wrappers if r() is not None}
        self.metas = {v: m for v, m in self.metas.items() if v in keep_vids}
        _counters["flushes"] += 1
        self._reset_heuristic(rest)
        # The region just flushed is what the next one is matched against, when it was recorded
        # whole (not the tail of a cut queue) in defer mode.
        if rest:
            self.trace, self.rpos, self.qclean, self.trace_plan = None, -1, False, None
        else:
            self.trace = queue if self.qclean and self.mode == "defer" else None
            self.trace_plan = (shape, *self.last_run) if self.trace and shape is not None and self.last_run else None
            self.rpos = 0 if self.trace else -1
            self.qclean = True
            self.qbase = self.next_vid

    def _native(self, ops: list[_Op]):
        """The scheduler's plain-data form of `ops`: value ids made region-relative (inputs first)."""
        rel: dict[int, int] = {}
        inputs: list[int] = []
        produced = {v for op in ops for v in op.outs}
        for op in ops:
            for v in op.ins:
                if v not in produced and v not in rel:
                    rel[v] = len(inputs)
                    inputs.append(v)
        for op in ops:
            for v in op.outs:
                rel[v] = len(rel)
        native_ops = []
        for op in ops:
            _expand(op)
            args = []
            for a in op.spec:
                tag = a[1]
                if tag == "t":
                    args.append((a[0], "t", rel[a[2]]))
                elif tag == "ts":
                    args.append((a[0], "ts", [rel[x] for x in a[2]]))
                elif tag == "ots":
                    args.append((a[0], "ots", [None if x is None else rel[x] for x in a[2]]))
                else:
                    args.append(a)
            native_ops.append((op.target, args, op.native_outs, op.file, op.line))
        return native_ops, inputs, rel

    def _lowers(self, op: _Op) -> bool:
        """Whether the CPU target lowers `op`'s kind (asked once per op kind, import + lowering only)."""
        ok = _lowered.get(op.target)
        if ok is None:
            native_ops, inputs, _ = self._native([op])
            in_meta = [(list(self.metas[v][0]), _DTYPES[self.metas[v][2]]) for v in inputs]
            try:
                ok = not _plan_cache().unlowered(native_ops, in_meta)
            except ValueError:
                ok = False
            _lowered[op.target] = ok
            if not ok:
                self.unsupported[op.target] = f"{op.file}:{op.line}"
        return ok

    def _run(self, ops: list[_Op], outputs: list[int], plan: tuple | None = None) -> dict[int, torch.Tensor]:
        """Runs `ops` as one region; returns the values of `outputs`. `plan`: the trace's plan
        (`trace_plan`), when `ops` are the trace's ops again."""
        if not ops:
            return {}
        ext, scalars = self.ext, self.scalars
        if plan is not None and all(self.qbase + d in ext or self.qbase + d in scalars for d in plan[1]):
            _, in_rel, handle = plan
            # Python-number inputs packed into one buffer per dtype, read in place.
            packed: dict[int, tuple] = {}
            bufs = []
            by_dtype: dict = {}
            for v, (x, dtype) in scalars.items():
                by_dtype.setdefault(dtype, []).append((v, x))
            for dtype, items in by_dtype.items():
                buf = torch.tensor([x for _, x in items], dtype=dtype)
                bufs.append(buf)
                p, es = buf.data_ptr(), buf.element_size()
                for i, (v, _) in enumerate(items):
                    packed[v] = (p + i * es, es)
            in_ptrs = []
            for d in in_rel:
                t = ext.get(self.qbase + d)
                in_ptrs.append(packed[self.qbase + d] if t is None else (t.data_ptr(), t.numel() * t.element_size()))
            out_tensors = [torch.empty(self.metas[v][0], dtype=self.metas[v][2]) for v in outputs]
            try:
                ran = _plan_cache().run_plan(handle, in_ptrs, [t.data_ptr() for t in out_tensors])
            except ValueError as exc:
                raise EagerError(f"ember.eager: a deferred region failed: {exc}") from None
            if ran:
                _counters["regions_replayed"] += 1
                self.last_run = plan[1:]
                return dict(zip(outputs, out_tensors))
        self._lift_scalars()
        native_ops, inputs, rel = self._native(ops)
        in_tensors = [self.ext[v] for v in inputs]
        in_meta = [(list(t.shape), _DTYPES[t.dtype]) for t in in_tensors]
        in_ptrs = [(t.data_ptr(), t.numel() * t.element_size()) for t in in_tensors]
        out_tensors = [torch.empty(self.metas[v][0], dtype=self.metas[v][2]) for v in outputs]
        out_ptrs = [t.data_ptr() for t in out_tensors]
        try:
            hit, missing, handle = _plan_cache().run(native_ops, in_meta, [rel[v] for v in outputs], in_ptrs, out_ptrs)
        except ValueError as exc:
            raise EagerError(f"ember.eager: a deferred region failed: {exc}") from None
        if missing:
            if _DEBUG:
                print(f"ember.eager: region of {len(ops)} ops has no lowering for {missing}; running it with torch eager", file=sys.stderr)
            # Learned once: later records decompose these ops, or run them with torch eager.
            for op in ops:
                t = op.target.removesuffix(".default")
                if t in missing and op.target not in self.unsupported:
                    self.unsupported[op.target] = f"{op.file}:{op.line}"
                    if _schema(op.func).decomp is None:
                        self._warn_unsupported(op)
            return self._interpret(ops, outputs)
        self.last_run = (tuple(v - self.qbase for v in inputs), handle)
        if self.mode == "strict_blocking":
            for v, t in zip(outputs, out_tensors):
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    op = next(o for o in ops if v in o.outs)
                    raise EagerError(f"{op.file}:{op.line}: `{op.target}` produced NaN or Inf (ember.eager strict_blocking)")
        return dict(zip(outputs, out_tensors))

    def _warn_unsupported(self, op: _Op) -> None:
        if op.target not in self.warned:
            self.warned.add(op.target)
            _warn(op.target, op.file, op.line)

    def _interpret(self, ops: list[_Op], outputs: list[int]) -> dict[int, torch.Tensor]:
        """Runs a region op by op with torch eager (a region holding an op Ember cannot compile)."""
        env: dict[int, torch.Tensor] = dict(self.ext)

        def sub(x):
            if isinstance(x, _Ref):
                return env[x.vid]
            if isinstance(x, list):
                return [sub(y) for y in x]
            return x

        for op in ops:
            _expand(op)
            out = op.func(*[sub(p) for p in op.pos], **{k: sub(v) for k, v in op.kw.items()})
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for v, t in zip(op.outs, outs):
                env[v] = t
        return {v: env[v].contiguous() for v in outputs}

# Decompositions of the ops a training step spends most recording time in (torch's reference
# decompositions cost ~1 ms each in Python wrappers). Each follows its ATen CPU kernel's formula
# and evaluation order, so results match torch eager; `op(func, *args)` records one ATen op.


def _lerp(op, x, end, weight):
    d = op(aten.sub.Tensor, end, x)
    if abs(weight) < 0.5:
        return op(aten.add.Tensor, x, op(aten.mul.Tensor, d, weight))
    return op(aten.sub.Tensor, end, op(aten.mul.Tensor, d, 1 - weight))


def _addcmul(op, x, t1, t2, value=1):
    m = op(aten.mul.Tensor, t1, value) if value != 1 else t1
    return op(aten.add.Tensor, x, op(aten.mul.Tensor, m, t2))


def _addcdiv(op, x, t1, t2, value=1):
    m = op(aten.mul.Tensor, t1, value) if value != 1 else t1
    return op(aten.add.Tensor, x, op(aten.div.Tensor, m, t2))


def _mse_loss(op, a, b, reduction=1):
    d = op(aten.sub.Tensor, a, b)
    sq = op(aten.mul.Tensor, d, d)
    return op(aten.mean.default, sq) if reduction == 1 else op(aten.sum.default, sq) if reduction == 2 else sq


def _mse_loss_backward(op, grad, a, b, reduction):
    norm = 2.0 / a.numel() if reduction == 1 else 2.0
    return op(aten.mul.Tensor, op(aten.mul.Tensor, op(aten.sub.Tensor, a, b), norm), grad)


def _threshold_backward(op, grad, x, threshold):
    zero = torch.zeros((), dtype=grad.dtype)
    return op(aten.where.self, op(aten.le.Scalar, x, threshold), zero, grad)


def _flatten(op, x, start_dim=0, end_dim=-1):
    n = x.dim()
    if n == 0:
        return op(aten.reshape.default, x, [1])
    s, e = start_dim % n, end_dim % n
    if s == e:
        return x  # torch returns the tensor itself
    return op(aten.reshape.default, x, list(x.shape[:s]) + [math.prod(x.shape[s : e + 1])] + list(x.shape[e + 1 :]))


def _max_all(op, x):
    return op(aten.amax.default, x, list(range(x.dim())), False)


def _min_all(op, x):
    return op(aten.amin.default, x, list(range(x.dim())), False)


def _conj_physical(op, x):
    return NotImplemented if x.is_complex() else op(aten.clone.default, x)


def _native_batch_norm(op, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """`native_batch_norm` (what BatchNorm modules dispatch to) as its functional forms: training
    with running stats updates them through pending in-place copies, as the kernel writes them
    in place."""
    if not training:
        if running_mean is None or running_var is None:
            return NotImplemented  # torch raises its own error
        return _batch_norm_eval(op, x, weight, bias, running_mean, running_var, momentum, eps)
    if running_mean is None or running_var is None:
        return op(aten._native_batch_norm_legit.no_stats, x, weight, bias, True, momentum, eps)
    out, mean, rstd, new_mean, new_var = op(aten._native_batch_norm_legit_functional.default, x, weight, bias, running_mean, running_var, True, momentum, eps)
    rec = op.__self__  # `op` is the recorder's bound `_op`: the in-place copies go through its handler
    rec.__torch_dispatch__(aten.copy_.default, (), (running_mean, new_mean), {})
    rec.__torch_dispatch__(aten.copy_.default, (), (running_var, new_var), {})
    return out, mean, rstd


def _batch_norm_eval(op, x, weight, bias, running_mean, running_var, momentum, eps):
    """Inference BatchNorm as torch's CPU kernel computes it: alpha = weight * rsqrt(var + eps),
    beta = bias - mean * alpha, out = x * alpha + beta per channel (dim 1). Its statistics results
    are empty, as the CPU kernel's; the meta kernel's are `[C]`, so the op itself is not recorded
    (Ember's dialect types them as the CPU kernel does)."""
    if x.dim() < 2 or x.dtype not in (torch.float32, torch.float64) or running_mean.dtype != x.dtype or running_var.dtype != x.dtype:
        return NotImplemented
    shape = [x.shape[1]] + [1] * (x.dim() - 2)
    alpha = op(aten.rsqrt.default, op(aten.add.Scalar, running_var, eps))
    if weight is not None:
        alpha = op(aten.mul.Tensor, alpha, weight)
    beta = op(aten.mul.Tensor, running_mean, alpha)
    beta = op(aten.neg.default, beta) if bias is None else op(aten.sub.Tensor, bias, beta)
    out = op(aten.add.Tensor, op(aten.mul.Tensor, x, op(aten.view.default, alpha, shape)), op(aten.view.default, beta, shape))
    return out, torch.empty(0, dtype=x.dtype), torch.empty(0, dtype=x.dtype)


def _native_batch_norm_backward(op, grad, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask):
    """Training-mode BatchNorm gradients as torch's CPU kernel computes them, from the saved batch
    mean and inverse std (torch's decomposition also reads the running statistics, which have
    a pending write after the forward and would force a flush): with xc = x - mean, per channel
    total = Σ grad and dotp = Σ xc·grad, grad_input = (grad - total/n - xc·dotp·invstd²/n)·invstd·w,
    grad_weight = dotp·invstd, grad_bias = total. Eval mode: the running statistics in their
    place, and grad_input = grad·invstd·w (the statistics are constants)."""
    if x.dim() < 2:
        return NotImplemented
    if train:
        mean, invstd = save_mean, save_invstd
    elif running_mean is None or running_var is None:
        return NotImplemented
    else:
        mean, invstd = running_mean, op(aten.rsqrt.default, op(aten.add.Scalar, running_var, eps))
    c = x.shape[1]
    n = x.numel() // c
    dims = [0] + list(range(2, x.dim()))
    shape = [1, c] + [1] * (x.dim() - 2)
    xc = op(aten.sub.Tensor, x, op(aten.reshape.default, mean, shape))
    total = op(aten.sum.dim_IntList, grad, dims, False)
    dotp = op(aten.sum.dim_IntList, op(aten.mul.Tensor, xc, grad), dims, False)
    gi = gw = gb = None
    if output_mask[0]:
        centered = grad
        if train:
            k = op(aten.div.Tensor, op(aten.mul.Tensor, dotp, op(aten.mul.Tensor, invstd, invstd)), float(n))
            centered = op(aten.sub.Tensor, grad, op(aten.reshape.default, op(aten.div.Tensor, total, float(n)), shape))
            centered = op(aten.sub.Tensor, centered, op(aten.mul.Tensor, xc, op(aten.reshape.default, k, shape)))
        scale = invstd if weight is None else op(aten.mul.Tensor, invstd, weight)
        gi = op(aten.mul.Tensor, centered, op(aten.reshape.default, scale, shape))
    if output_mask[1]:
        gw = op(aten.mul.Tensor, dotp, invstd)
    if output_mask[2]:
        gb = total
    return gi, gw, gb


def _tensor_split(op, x, sections_or_indices, dim=0):
    """`tensor_split` into sections (the first `size % n` one longer) or at indices: slices."""
    size = x.shape[dim]
    if isinstance(sections_or_indices, int):
        n = sections_or_indices
        if n <= 0:
            return NotImplemented  # torch raises its own error
        q, r = divmod(size, n)
        bounds = [i * q + min(i, r) for i in range(n + 1)]
    else:
        bounds = [0] + [min(max(i + size if i < 0 else i, 0), size) for i in sections_or_indices] + [size]
    return [op(aten.slice.Tensor, x, dim, a, max(a, b), 1) for a, b in zip(bounds, bounds[1:])]


def _weight_norm_backward(op, grad_w, v, g, norms, dim):
    """Gradients of w = g·v/‖v‖ (norms over every dim but `dim`, kept): with
    grad_g = Σ grad_w·v / ‖v‖, grad_v = g/‖v‖ · (grad_w - v·grad_g/‖v‖)."""
    if v.dtype not in (torch.float32, torch.float64) or norms.dtype != v.dtype:
        return NotImplemented
    dims = [d for d in range(v.dim()) if d != dim % v.dim()]
    gg = op(aten.div.Tensor, op(aten.sum.dim_IntList, op(aten.mul.Tensor, grad_w, v), dims, True), norms)
    inner = op(aten.sub.Tensor, grad_w, op(aten.mul.Tensor, v, op(aten.div.Tensor, gg, norms)))
    return op(aten.mul.Tensor, op(aten.div.Tensor, g, norms), inner), gg


def _t(op, x):
    return op(aten.transpose.int, x, 0, 1) if x.dim() == 2 else op(aten.alias.default, x)


def _or_kernel(decomp, func):
    """`decomp`, or the op's own kernel (with torch eager) for the forms it leaves."""

    def run(op, *args, **kwargs):
        out = decomp(op, *args, **kwargs)
        return op.__self__._eager(func, _schema(func), args, kwargs) if out is NotImplemented else out

    return run


_FAST = {
    "aten._scaled_dot_product_flash_attention_for_cpu.default": _or_kernel(decompositions.sdpa_cpu, aten._scaled_dot_product_flash_attention_for_cpu.default),
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": _or_kernel(decompositions.sdpa_cpu_backward, aten._scaled_dot_product_flash_attention_for_cpu_backward.default),
    "aten.lerp.Scalar": _lerp,
    "aten.addcmul.default": _addcmul,
    "aten.addcdiv.default": _addcdiv,
    "aten.mse_loss.default": _mse_loss,
    "aten.mse_loss_backward.default": _mse_loss_backward,
    "aten.threshold_backward.default": _threshold_backward,
    "aten.t.default": _t,
    "aten.flatten.using_ints": _flatten,
    "aten.conj_physical.default": _conj_physical,
    "aten.max.default": _max_all,
    "aten.min.default": _min_all,
    "aten.native_batch_norm.default": _native_batch_norm,
    "aten.native_batch_norm_backward.default": _native_batch_norm_backward,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm_eval,
    "aten.convolution_backward.default": decompositions.convolution_backward,
    "aten.zero.default": lambda op, x: op(aten.fill.Scalar, x, 0),
    "aten.tensor_split.sections": _tensor_split,
    "aten.tensor_split.indices": _tensor_split,
    "aten._weight_norm_interface_backward.default": _weight_norm_backward,
    "aten.max_pool2d_with_indices_backward.default": decompositions.max_pool_backward(2),
    "aten.max_pool3d_with_indices_backward.default": decompositions.max_pool_backward(3),
}


def _warn(target: str, file: str, line: int) -> None:
    """The one warning per op Ember cannot run, shown at the user's line that first issued it."""
    msg = f"ember.eager: `{target}` has no Ember CPU lowering; it runs with torch eager (first at {file}:{line})"
    warnings.warn_explicit(msg, UserWarning, file, line, module="ember.eager")


def _assign(t: torch.Tensor, value: torch.Tensor, may_share: bool) -> None:
    """Writes a region's result into the real tensor an in-place op targeted. When nothing else
    shares its memory, the tensor takes over the result's memory instead of copying it."""
    st = t.untyped_storage()
    # 2 = `t` itself plus the `st` handle taken just above.
    if may_share and t.storage_offset() == 0 and t.is_contiguous() and st.nbytes() == value.nbytes and torch._C._storage_Use_Count(st._cdata) == 2:
        t.set_(value)
    else:
        t.copy_(value)


def _tag(v):
    """The scheduler's (tag, value) for a non-tensor argument, or None to leave it out."""
    if v is None:
        return ("n", None)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, float):
        return ("f", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, torch.dtype):
        return ("dt", _DTYPES[v]) if v in _DTYPES else None
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, bool) for x in v) and v:
            return ("bs", list(v))
        if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return ("is", [int(x) for x in v])
        if all(isinstance(x, (int, float)) for x in v):
            return ("fs", [float(x) for x in v])
    return None  # device, layout, memory_format: placement only


def _replay_key(v):
    """What `==` leaves out when `_replay` compares non-tensor arguments: 1, 1.0 and True differ
    in the compiled code, and so do 0.0 and -0.0."""
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_replay_key(x) for x in v))
    if type(v) is float and v == 0.0:
        return (float, math.copysign(1.0, v))
    return type(v)


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, float) and v != v:
        return "nan"
    return v


class eager:
    """``with ember.eager(mode="defer"):`` runs the block's PyTorch ops deferred and fused.

    ``mode``: ``"defer"`` (record, fuse, compile once, replay), ``"strict"`` (op by op through
    Ember) or ``"strict_blocking"`` (op by op, synchronized, NaN/Inf checked after every op).
    """

    def __init__(self, mode: str = "defer") -> None:
        self._rec = _Recorder(mode)

    def __enter__(self) -> "eager":
        # Recording allocates a few Python objects per op that live until the flush, so they
        # reach the oldest generation and trigger full collections over the whole heap (~150 ms
        # each with torch loaded). Objects alive at entry are moved out of the cycle collector's
        # way for the block (gc.freeze) and handed back at exit.
        self._froze = gc.get_freeze_count() == 0
        if self._froze:
            gc.freeze()
        rec = self._rec
        if rec.mode == "defer" and rec.trace is None and not rec.queue and _last_trace is not None:
            rec.trace, rec.trace_plan = _last_trace
            rec.rpos, rec.qbase, rec.qclean = 0, rec.next_vid, True
        rec.__enter__()
        # With oneDNN on, an LSTM runs as one `mkldnn_rnn_layer` op (and its backward reads that
        # op's opaque workspace), which Ember cannot record; without it ATen runs its composite
        # LSTM (linear, sigmoid, tanh, in-place ops on gate chunks), which it records. Recorded
        # convolutions and matmuls never reach oneDNN's backend choice, so nothing else changes.
        self._mkldnn = torch._C._get_mkldnn_enabled()
        torch._C._set_mkldnn_enabled(False)
        # The end of an optimizer step is an iteration boundary: flush there, so every training
        # step is one region and replays one plan.
        self._hook = _optim.register_optimizer_step_post_hook(lambda *a: self._rec.flush("optimizer step"))
        return self

    def __exit__(self, *exc) -> None:
        # Leaving the block is a sync point. After an exception the ops recorded before it still
        # run (as they would have in torch eager); the exception raised is the user's.
        global _last_trace
        try:
            if exc[0] is None:
                self._rec.flush("exit")
                if self._rec.trace is not None:
                    _last_trace = (self._rec.trace, self._rec.trace_plan)
            else:
                try:
                    self._rec.flush("exit")
                except Exception:  # noqa: BLE001 - the original exception is the one to report
                    self._rec.queue, self._rec.pending, self._rec.scalars = [], {}, {}
                    self._rec.trace, self._rec.rpos, self._rec.qclean = None, -1, False
        finally:
            self._hook.remove()
            torch._C._set_mkldnn_enabled(self._mkldnn)
            self._rec.__exit__(*exc)
            if self._froze:
                gc.unfreeze()

    def flush(self) -> None:
        """Runs every deferred op now (a sync point)."""
        self._rec.flush("user")
