"""Views of deferred values: how each view op reads its base, and writes through views recorded
as functional ops (functionalization), so every alias sees a write as in torch."""

from __future__ import annotations

import torch

from .schema import _Schema, _schema
from .tensor import DeferredTensor

aten = torch.ops.aten

#: Writes through views recorded into one root before the next one flushes instead: each copies
#: the root (a scatter), and a loop filling a tensor row by row would otherwise grow one region
#: without bound (512 rows: 2,500 ops, 21 s to compile, measured).
_MAX_VIEW_WRITES = 16
#: Excluded to run an op on a wrapper itself (its metadata), past the recorder.
_PYTHON_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.Python) | torch._C.DispatchKeySet(torch._C.DispatchKey.PythonTLSSnapshot)


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


class _Views:
    """The recorder's in-place ops on views and on metadata (a mixin of `_Recorder`)."""

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
