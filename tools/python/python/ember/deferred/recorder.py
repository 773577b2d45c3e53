"""The ``TorchDispatchMode`` that records ATen ops into a queue instead of running them."""

from __future__ import annotations

import os
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

from .. import decompositions
from .._source import user_frame
from ..dtypes import by_torch
from .flush import _Flush
from .ops import _Op, _Ref, _hashable, _replay_key, _tag
from .region import _Region
from .replay import _Replay
from .schema import _Schema, _schema, _schemas
from .state import _EAGER, EagerError, _counters, _meta_cache, _unsupported, _warn, _warned
from .tensor import DeferredTensor, _geometry, _new_wrapper, _storage_key
from .views import _Views

_DTYPES = by_torch()

aten = torch.ops.aten

_LIFT_DTYPES = (torch.float32, torch.float64)
#: Real integer/bool tensors up to this many elements are computed with torch eager, not recorded.
_SMALL_INDEX = 1 << 16


class _Recorder(_Views, _Replay, _Flush, _Region, TorchDispatchMode):
    """Records the ops of an `ember.eager()` block; views, replay, flushing and running regions
    are its mixins (`views`, `replay`, `flush`, `region`)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in a Dynamo-disabling frame (several µs per
        # op); this mode never runs under torch.compile, so it needs none.
        return False

    def __init__(self, mode: str, target: str = "cpu") -> None:
        super().__init__()
        if mode not in ("defer", "strict", "strict_blocking"):
            raise ValueError(f"ember.eager: unknown mode {mode!r} (use 'defer', 'strict' or 'strict_blocking')")
        self.mode = mode
        #: Where regions compile and run: "cpu" (in this process, on host memory) or "tpu" (on
        #: PJRT), where ops on ember-device tensors are recorded too and their results stay there.
        self.target = target
        self.xla = target != "cpu"
        #: Value ids whose tensors live on the ember device (`xla` only): a region's result is
        #: there when the op that makes it reads one, or names that device.
        self.dev_vids: set[int] = set()
        #: The ember device (registered by `ember.eager` before a tpu block starts).
        self.device = torch.device("ember", 0) if self.xla else None
        #: `EMBER_EAGER_LOG=1`: each flush explained (`_Region._explain`), with the reason and
        #: the user's line of the flush being run (`log_at`).
        self.log = bool(os.environ.get("EMBER_EAGER_LOG"))
        self.log_at: tuple = ("sync", ("<unknown>", 0))
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
            # (An ember tensor's value is read in order from the device, whatever its strides.)
            v = self._new_vid((tuple(t.shape), t.stride(), t.dtype))
            if t.is_cpu:
                dense = t if t.is_contiguous() else t.contiguous()
            else:
                dense = t
                self.dev_vids.add(v)
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
                if type(t) is not torch.Tensor or (t.numel() > 1 and (t.is_floating_point() or t.is_complex() or t.numel() > _SMALL_INDEX)) or not t.is_cpu:
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
        w = _new_wrapper(DeferredTensor, self.metas[x._vid], x._vid, self, x._alias, x.device)
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
                return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
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
        file, line = user_frame()
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
        kwdev = None
        if "device" in kwargs and kwargs["device"] is not None:
            # A result placed by name (`x.to("ember")`, `zeros_like(x, device=...)`): recorded
            # where the region can put it, else run with torch eager.
            dt = torch.device(kwargs["device"]).type
            if dt == "cpu":
                kwdev = False
            elif dt == "ember" and self.xla:
                kwdev = True
            else:
                return self._eager(func, s, args, kwargs)
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
                elif v.dtype not in _DTYPES or not (v.is_cpu or self.xla and v.device.type == "ember"):
                    return self._eager(func, s, args, kwargs)  # complex, other devices: torch
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
        op.root, op.base, op.kwdev = op, base, kwdev
        op.descs, op.native_outs, op.hidden = cached
        op.outs = [self._new_vid(d) for d in op.descs]
        if not self._lowers(op):
            return self._record(func, s, args, kwargs)  # now decomposed or run eagerly
        op.sig = hash(key_t)
        op.expect = (len(args), tuple(kwargs), float_dtype, tuple(expect), self.inserting)
        return self._enqueue(op, s, func, args, kwargs)

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
        where = "cpu"
        if self.xla:
            dev = op.kwdev if op.kwdev is not None else any(v in self.dev_vids for v in op.ins)
            if dev:
                self.dev_vids.update(op.outs)
                where = self.device
        for v, d in zip(op.outs, op.descs):
            w = _new_wrapper(DeferredTensor, d, v, self, alias, where)
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
            file, line = user_frame()
            _warn(target, file, line)
