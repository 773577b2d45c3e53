"""Matching the next op against the last region's op at its place, instead of recording it afresh."""

from __future__ import annotations

import torch

from ..dtypes import by_torch
from .ops import _Op, _replay_key
from .state import _counters
from .tensor import DeferredTensor

_DTYPES = by_torch()


class _Replay:
    """The recorder's replay fast path (a mixin of `_Recorder`)."""

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
                elif isinstance(v, torch.Tensor) and (v.is_cpu or self.xla and v.device.type == "ember") and v.dtype in _DTYPES:
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
                    if not (isinstance(t, torch.Tensor) and (t.is_cpu or self.xla and t.device.type == "ember") and t.dtype in _DTYPES):
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
        op.ins, op.root, op.base, op.kwdev = ins, tr.root, base, tr.kwdev
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
