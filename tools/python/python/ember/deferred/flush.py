"""When the queue is cut into a region (the flush policy: sync points, the repeated-subsequence
heuristic, the queue cap) and what a flush writes back: live wrappers, views, pending writes."""

from __future__ import annotations


import torch
from torch.utils._python_dispatch import _disable_current_modes

from .._source import user_frame
from .ops import _Op
from .state import EagerError, _counters
from .tensor import _storage_key
from .views import _chain, _dense

_QUEUE_CAP = 4096
#: Shorter repeats are layers of one model (two equal Linear+ReLU), not loop iterations.
_MIN_PERIOD = 8


class _Flush:
    """The recorder's flush policy and flush (a mixin of `_Recorder`)."""

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
        if self.log:
            self.log_at = (reason, user_frame())
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
                if r.stride() != st and r.numel() > 1 and _dense(w.shape, st) and r.is_cpu:
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
        if self.dev_vids:
            self.dev_vids &= keep_vids
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


def _assign(t: torch.Tensor, value: torch.Tensor, may_share: bool) -> None:
    """Writes a region's result into the real tensor an in-place op targeted. When nothing else
    shares its memory, the tensor takes over the result's memory instead of copying it."""
    if not (t.is_cpu and value.is_cpu):
        # The ember device's arrays are immutable: its copy shares them.
        from .. import device

        device._copy(value, t)
        return
    st = t.untyped_storage()
    # 2 = `t` itself plus the `st` handle taken just above.
    if may_share and t.storage_offset() == 0 and t.is_contiguous() and st.nbytes() == value.nbytes and torch._C._storage_Use_Count(st._cdata) == 2:
        t.set_(value)
    else:
        t.copy_(value)
