"""The wrapper a deferred op returns: a tensor with metadata only, whose value is a queued op's
result until a flush makes it real."""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import _disable_current_modes


class DeferredTensor(torch.Tensor):
    """A tensor whose value is a pending op result (or, after a flush, a real tensor: on the CPU,
    or on the ember device in a `target="tpu"` block)."""

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
    def __new__(cls, desc: tuple, vid: int, rec: "_Recorder", alias: list | None = None, device: str | torch.device = "cpu"):
        r = torch.Tensor._make_wrapper_subclass(cls, desc[0], strides=desc[1], dtype=desc[2], device=device, requires_grad=False)
        r._vid = vid
        r._rec = rec
        if alias is not None:
            r._alias = alias
            alias.append(weakref.ref(r))
        return r

    def _materialize(self, why: str = "sync") -> torch.Tensor:
        # After a flush the value is real, but an in-place op since (autograd accumulating into
        # a gradient) may have left a pending write to that memory: it lands first. `why`: the
        # flush's reason (the method reading the value, as the native recorder names it).
        rec = self._rec
        if self._real is None or (rec.pending and _storage_key(self._real) in rec.pending):
            rec.flush(why)
        assert self._real is not None, "flush left a live deferred tensor unmaterialized"
        return self._real

    # Sync points that bypass the dispatcher.
    def numpy(self, *a, **k):
        return self._materialize("numpy").numpy(*a, **k)

    def cpu(self, *a, **k):
        return self._materialize("cpu").cpu(*a, **k)

    def tolist(self):
        return self._materialize("tolist").tolist()

    def __array__(self, *a, **k):
        return self._materialize("__array__").__array__(*a, **k)

    def __repr__(self, *, tensor_contents=None):
        return repr(self._materialize("__repr__"))

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


def _storage_key(t: torch.Tensor) -> int:
    """What identifies `t`'s memory: its storage's address, or for an ember-device tensor (whose
    storage holds no memory) its root storage state, which views share as CPU views share memory."""
    p = t.untyped_storage().data_ptr()
    if p == 0 and t.device.type == "ember":
        from .. import device

        return id(device._owner(t))
    return p


def _geometry(t: torch.Tensor) -> tuple:
    return (t.storage_offset(), tuple(t.shape), t.stride(), t.dtype)


# ----------------------------------------------------------------------------- recorder
