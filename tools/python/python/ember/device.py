"""The ``ember`` device: torch tensors whose values stay on the PJRT device (jax's CPU client
here; the TPU client where ``$EMBER_XLA_PLATFORM`` names one).

``model.to("ember")`` and ``x.to("ember")`` move a model and its inputs there (torch's
PrivateUse1 key, renamed). Graphs that ``torch.compile(backend="ember")`` compiles for the tpu or
trainium target read these tensors' device arrays as they are and return device arrays: weights,
optimizer state, the activations a forward saves for its backward and the gradients never cross
to the host. Only what the program reads on the host (``loss.item()``, ``t.cpu()``, printing)
is downloaded.

Values are kept per storage (torch preserves a storage's Python object, and its attributes, as
long as any tensor uses it): a storage created here holds either one device array (its elements
in order) or, for a view this module made, its root storage and the positions it reads there.
A tensor's value is its storage read with the tensor's sizes, strides and offset, so views torch
makes by sharing the storage (``detach``, ``alias``) alias as on any device, and views made here
(``view``, ``as_strided``, ``transpose``...) read and write through to their root.

Every op without a compiled graph runs eagerly on the host: its device inputs are downloaded,
torch's CPU kernel runs, its results and the inputs it wrote are uploaded again
(``stats["eager_ops"]`` counts them, and the bytes are counted with the compiled graphs'). That is
always right and slow, so train with the optimizer step compiled too.
"""

from __future__ import annotations

import functools
import math
from collections import OrderedDict
from typing import Any

import numpy as np
import torch

NAME = "ember"

#: Ops run eagerly on the host, and bytes moved host <-> device for them and for compiled graphs.
stats = {"eager_ops": 0, "to_device_bytes": 0, "from_device_bytes": 0}

_registered = False
#: The registrations (kept alive: a dropped Library object unregisters its kernels).
_libraries: list[Any] = []


def register() -> bool:
    """Makes ``"ember"`` a torch device (once per process), unless another backend already took
    PrivateUse1; returns whether the ember device is available."""
    global _registered
    if _registered:
        return True
    name = torch._C._get_privateuse1_backend_name()
    if name not in ("privateuseone", NAME):
        return False
    from torch.utils.backend_registration import _setup_privateuseone_for_python_backend

    _setup_privateuseone_for_python_backend(NAME, backend_module=_module(), device_guard=_guard())
    # A CPU tensor cannot take an ember tensor's data in place (`param.data = ...`), so without
    # this `model.to("ember")` would give each module its own new Parameter and untie shared
    # weights (a language model's embedding and output layer): swapping keeps the objects.
    torch.__future__.set_swap_module_params_on_conversion(True)
    # torch.save pickles a tensor that has a storage through the storage's bytes, which an ember
    # tensor's (empty) storage does not hold: it is saved as the host copy of its value, as
    # torch does for XLA's tensors, and loads back onto the device (or where map_location says).
    reduce = torch.Tensor._reduce_ex_internal

    def _reduce_ex_internal(self: torch.Tensor, proto: int) -> Any:
        if self.device.type != NAME:
            return reduce(self, proto)
        return (torch._utils._rebuild_device_tensor_from_cpu_tensor, (to_host(self), self.dtype, str(self.device), self.requires_grad))

    torch.Tensor._reduce_ex_internal = _reduce_ex_internal
    fallback = torch.library.Library("_", "IMPL")
    fallback.fallback(_fallback, "PrivateUse1")
    # Registered as kernels too: the boxed fallback asserts under a dispatch mode, where Dynamo
    # makes tensors on the device.
    kernels = torch.library.Library("aten", "IMPL")
    for op in (torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default, torch.ops.aten._copy_from.default):
        kernels.impl(op.__name__.removesuffix(".default"), functools.partial(_fallback, op), "PrivateUse1")
    _libraries.extend((fallback, kernels))
    _registered = True
    return True


def _module() -> Any:
    """`torch.ember`: torch's placeholder device module plus what torch's own code asks of the
    current accelerator, which the device is once registered, even in CPU-only programs
    (`torch.utils.checkpoint` recomputes under `torch.autocast("ember")`, which requires
    `get_amp_supported_dtype`). Random ops on the device draw from torch's CPU generator (eager
    ops run on the host; compiled graphs take their seed from it), whose state checkpointing
    saves already: the device has no generator state of its own."""
    import contextlib

    from torch.utils.backend_registration import _DummyBackendModule

    class _Module(_DummyBackendModule):
        def get_amp_supported_dtype(self) -> list[torch.dtype]:
            # Autocast has no policy for the device: `torch.autocast("ember", ...)` warns and
            # stays off rather than running unchanged while it claims to cast.
            return []

        def get_rng_state(self, device: Any = None) -> torch.Tensor:
            return torch.empty(0, dtype=torch.uint8)

        def set_rng_state(self, state: torch.Tensor, device: Any = None) -> None:
            pass

        def device(self, index: Any = None) -> Any:
            return contextlib.nullcontext()

    return _Module()


def _guard() -> Any:
    """One device, no streams. torch's default Python guard defines only `type_`, and creating a
    tensor on the device under a dispatch mode (Dynamo's fake tensors) asserts that the others
    exist."""

    def device(self: Any, *args: Any) -> torch.device:
        return torch.device(NAME, 0)

    def nothing(self: Any, *args: Any) -> None:
        return None

    methods: dict[str, Any] = {"type_": lambda self: torch._C._autograd.DeviceType.PrivateUse1,
                               "getDevice": device, "exchangeDevice": device, "deviceCount": lambda self: 1}
    for name in ("setDevice", "uncheckedSetDevice", "getStream", "getDefaultStream", "exchangeStream",
                 "synchronizeDevice", "synchronizeStream", "recordDataPtrOnStream"):
        methods[name] = nothing
    return type("_Guard", (torch._C._acc.DeviceGuard,), methods)()


def is_ember(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.device.type == NAME


class _Root:
    """A storage's elements as one device array (any shape: its elements in row-major order),
    or None until something is written."""

    __slots__ = ("array", "numel", "dtype")

    def __init__(self, array: Any, numel: int, dtype: torch.dtype) -> None:
        self.array, self.numel, self.dtype = array, numel, dtype


class _Derived:
    """A view's storage: positions (an int64 array, the view's elements in order) in a root.
    `key` names how the positions were made (the root's size and the view ops from it), so
    the same view made again (an epilogue's, every step) reuses them and their device copy."""

    __slots__ = ("root", "index", "key")

    def __init__(self, root: _Root, index: np.ndarray, key: Any) -> None:
        self.root, self.index, self.key = root, index, key


def _state(t: torch.Tensor) -> _Root | _Derived:
    s = t.untyped_storage()
    try:
        return s._ember
    except AttributeError:
        raise RuntimeError(f"ember: a {tuple(t.shape)} tensor on the ember device has no value (made outside ember.device)") from None


def _new(shape: Any, dtype: torch.dtype, state: _Root | _Derived) -> torch.Tensor:
    t = torch._C._acc.create_empty_tensor(list(shape), dtype)
    t.untyped_storage()._ember = state
    return t


def wrap(array: Any, dtype: torch.dtype) -> torch.Tensor:
    """A device array (jax) as an ember tensor of `dtype` (the array's own dtype may be an
    ml_dtypes type for bfloat16), without a copy."""
    shape = tuple(array.shape)
    return _new(shape, dtype, _Root(array, math.prod(shape), dtype))


def _jax() -> Any:
    from . import xla

    return xla._jax()


def _device() -> Any:
    from . import xla

    return xla._client().local_devices()[0]


def _np_dtype(dtype: torch.dtype) -> Any:
    from . import dtypes, xla

    return xla._np_dtype(dtypes.by_torch()[dtype])


def _whole(t: torch.Tensor) -> bool:
    """Whether `t` is all of its root storage, in order."""
    state = _state(t)
    return isinstance(state, _Root) and t.dtype == state.dtype and t.is_contiguous() and t.storage_offset() == 0 and t.numel() == state.numel


def _upload(a: np.ndarray) -> Any:
    jax = _jax()
    stats["to_device_bytes"] += a.nbytes
    with jax.enable_x64(True):
        return jax.device_put(np.asarray(a, order="C"), _device())  # (ascontiguousarray makes a 0-d array 1-d)


def _put(t: torch.Tensor) -> Any:
    """Host tensor `t`'s value as a new device array."""
    from .export import tensor_to_numpy

    return _upload(tensor_to_numpy(t.contiguous()))


def _host_flat(root: _Root) -> torch.Tensor:
    """The root's elements as a new host tensor (zeros if never written), in memory torch owns
    and may resize (an `out=` kernel does; numpy-backed storage cannot be)."""
    import warnings

    from .xla import Executable

    if root.array is None:
        return torch.zeros(root.numel, dtype=root.dtype)
    a = np.asarray(Executable.to_host(root.array)).reshape(-1)
    if a.dtype.type.__module__.startswith("ml_dtypes"):
        a = a.view(f"i{a.dtype.itemsize}" if a.dtype.itemsize > 1 else "u1")
    stats["from_device_bytes"] += a.nbytes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read-only: copied below, never written
        src = torch.from_numpy(a)
    return torch.empty(root.numel, dtype=root.dtype).copy_(src.view(root.dtype))


def array(t: torch.Tensor) -> Any:
    """The device array holding `t`'s value (in `t`'s shape): the root's own array when `t` reads
    all of it in order, else a new one, made on the host."""
    state = _state(t)
    if isinstance(state, _Root) and state.array is not None and _whole(t):
        a = state.array
        return a if tuple(a.shape) == tuple(t.shape) else a.reshape(tuple(t.shape))
    if isinstance(state, _Derived) and state.root.array is not None and t.dtype == state.root.dtype and t.is_contiguous() and t.storage_offset() == 0 and t.numel() == state.index.size:
        # Gathered on the device, with positions uploaded once per kind of view.
        with _jax().enable_x64(True):
            return _gather()(state.root.array, _device_index(state)).reshape(tuple(t.shape))
    return _put(to_host(t))


@functools.cache
def _gather() -> Any:
    jax = _jax()
    return jax.jit(lambda a, i: a.reshape(-1)[i])


@functools.lru_cache(maxsize=256)
def _filler(shape: tuple[int, ...], dtype: torch.dtype) -> Any:
    """A function making a device array of `shape` filled with a value (compiled once; jax's
    eager `full` lowers again at every call)."""
    jax = _jax()
    dt = _np_dtype(dtype)
    return jax.jit(lambda v: jax.numpy.full(shape, v, dtype=dt), device=_device())


def to_host(t: torch.Tensor) -> torch.Tensor:
    """`t`'s value as a new host tensor."""
    return _host_view(t, {})


def _memo_flat(t: torch.Tensor, memo: dict[int, tuple[_Root, torch.Tensor]]) -> tuple[_Root | _Derived, torch.Tensor]:
    """`t`'s storage state and the host copy of its root, made once per op (`memo`)."""
    state = _state(t)
    root = _owner(t)
    held = memo.get(id(root))
    if held is None:
        held = memo[id(root)] = (root, _host_flat(root))
    return state, held[1]


def _host_view(t: torch.Tensor, memo: dict[int, tuple[_Root, torch.Tensor]]) -> torch.Tensor:
    """`t` as a host tensor. Tensors sharing a root storage within one op share one host copy
    of it (`memo`, by root), so an op sees the aliasing it would see on any device."""
    state, flat = _memo_flat(t, memo)
    if isinstance(state, _Derived):
        # A copy: writes to it are put back into the root by `_set`.
        flat = flat[torch.from_numpy(state.index.reshape(-1))]
    # A dtype view (`view(torch.int32)`) reads the same bytes as its own type.
    return flat.view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset())


def _set(t: torch.Tensor, value: torch.Tensor, memo: dict[int, tuple[_Root, torch.Tensor]]) -> None:
    """Writes host `value` as `t`'s elements (into the host copy of `t`'s root in `memo`)."""
    state, flat = _memo_flat(t, memo)
    if isinstance(state, _Derived):
        pos = torch.from_numpy(state.index.reshape(-1))
        own = flat[pos]
        own.view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset()).copy_(value)
        flat[pos] = own
    else:
        flat.view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset()).copy_(value)


def _store(root: _Root, flat: torch.Tensor) -> None:
    root.array = _put(flat)


@functools.cache
def _is_view(op: Any) -> bool:
    rets = op._schema.returns
    return bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets)


#: Views by how they were made (`_Derived.key[0]`): [whether the op returns several, one
#: [positions, their device copy or None, whether they are all of the root in order] per view].
_VIEWS: OrderedDict[Any, list[Any]] = OrderedDict()
_VIEWS_KEPT = 4096


def _key(t: torch.Tensor, state: _Root | _Derived) -> Any:
    where = (tuple(t.shape), t.stride(), t.storage_offset())
    return ("root", state.numel, where) if isinstance(state, _Root) else (state.key, where)


def _view(op: Any, args: tuple, kwargs: dict) -> Any:
    """A view op: new tensors reading their elements from `args[0]`'s root."""
    base = args[0]
    state = _state(base)
    root = _owner(base)
    key = (_key(base, state), op, repr(args[1:]), repr(sorted(kwargs.items())))
    held = _VIEWS.get(key)
    if held is None:
        if base.dtype.itemsize != root.dtype.itemsize:
            raise NotImplementedError(f"ember device: {op} of a {base.dtype} view of {root.dtype} elements is not supported")
        meta = op(torch.empty_strided(base.shape, base.stride(), dtype=base.dtype, device="meta"), *args[1:], **kwargs)
        for m in meta if isinstance(meta, (list, tuple)) else [meta]:
            if m.dtype != base.dtype or m.is_conj() or m.is_neg():
                # Positions cannot say it: the view reinterprets the elements.
                raise NotImplementedError(f"ember device: the view {op} (to {m.dtype}{', conjugated' if m.is_conj() else ''}"
                                          f"{', negated' if m.is_neg() else ''}) of a {base.dtype} tensor is not supported")
        size = state.numel if isinstance(state, _Root) else state.index.size
        out = op(torch.arange(size).as_strided(base.shape, base.stride(), base.storage_offset()), *args[1:], **kwargs)
        many = isinstance(out, (list, tuple))
        index = [p.contiguous().numpy() for p in (out if many else [out])]
        if isinstance(state, _Derived):
            index = [state.index.reshape(-1)[i] for i in index]
        held = [many, [[i, None, i.size == root.numel and np.array_equal(i.reshape(-1), np.arange(root.numel))] for i in index]]
        _VIEWS[key] = held
        if len(_VIEWS) > _VIEWS_KEPT:
            _VIEWS.popitem(last=False)
    else:
        _VIEWS.move_to_end(key)
    many, parts = held

    def derive(k: int, part: list[Any]) -> torch.Tensor:
        index = part[0]
        if part[2]:
            # All of the root in order (a reshape): the same storage state, written through.
            return _new(index.shape, base.dtype, root)
        return _new(index.shape, base.dtype, _Derived(root, index, (key, k)))

    views = [derive(k, p) for k, p in enumerate(parts)]
    return views if many else views[0]


def _device_index(state: _Derived) -> Any:
    part = _VIEWS.get(state.key[0])
    if part is None:
        return _upload(state.index.reshape(-1))
    part = part[1][state.key[1]]
    if part[1] is None:
        part[1] = _upload(part[0].reshape(-1))
    return part[1]


def _written(op: Any, args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The ember tensors `op` writes (its `Tensor(a!)` arguments)."""
    out = []
    schema = op._schema.arguments
    for i, arg in enumerate(schema):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = args[i] if i < len(args) and not arg.kwarg_only else kwargs.get(arg.name)
        values = value if isinstance(value, (list, tuple)) else [value]
        out += [v for v in values if is_ember(v)]
    return out


def _fallback(op: Any, *args: Any, **kwargs: Any) -> Any:
    if _is_view(op):
        return _view(op, args, kwargs)
    if op is torch.ops.aten._copy_from.default:
        src, dst = args[0], args[1]
        _copy(src, dst)
        return dst
    if op in (torch.ops.aten.empty.memory_format, torch.ops.aten.empty_strided.default):
        dtype = kwargs.get("dtype") or torch.get_default_dtype()
        shape = tuple(args[0])
        return _new(shape, dtype, _Root(None, math.prod(shape), dtype))
    if op in (torch.ops.aten.zero_.default, torch.ops.aten.fill_.Scalar) and _whole(args[0]):
        # Filled on the device (autograd's zero gradients, `ones_like` seeds): nothing crosses.
        value = 0 if op is torch.ops.aten.zero_.default else args[1]
        t = args[0]
        with _jax().enable_x64(True):
            _state(t).array = _filler(tuple(t.shape), t.dtype)(value)
        return t
    stats["eager_ops"] += 1
    memo: dict[int, tuple[_Root, torch.Tensor]] = {}
    host_of: dict[int, torch.Tensor] = {}

    def down(x: Any) -> Any:
        if is_ember(x):
            h = host_of[id(x)] = _host_view(x, memo)
            return h
        if isinstance(x, torch.device) and x.type == NAME:
            return torch.device("cpu")
        if isinstance(x, (list, tuple)):
            return type(x)(down(v) for v in x)
        return x

    hargs = down(args)
    hkwargs = {k: down(v) for k, v in kwargs.items()}
    out = op(*hargs, **hkwargs)
    written = []
    for t in _written(op, args, kwargs):
        h = host_of[id(t)]
        if h.shape != t.shape:
            # Resized (an `out=` argument): a new value, put in place as torch's `set_data` does.
            t.data = wrap(_put(h), h.dtype)
            continue
        written.append(t)
        if isinstance(_state(t), _Derived):
            _set(t, h, memo)
    roots = {id(_owner(t)) for t in written}
    for key, (root, flat) in memo.items():
        if key in roots:
            _store(root, flat)
    # An op returning one of its arguments (in place, `out=`) returns the ember tensor.
    back = {id(host_of[id(t)]): t for t in _tensors([args, list(kwargs.values())]) if is_ember(t)}

    def up(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            if id(x) in back:
                return back[id(x)]
            return wrap(_put(x), x.dtype) if x.device.type == "cpu" else x
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        return x

    return up(out)


def _owner(t: torch.Tensor) -> _Root:
    state = _state(t)
    return state if isinstance(state, _Root) else state.root


def _tensors(xs: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for x in xs:
        if isinstance(x, torch.Tensor):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            out += _tensors(x)
    return out


def _copy(src: torch.Tensor, dst: torch.Tensor) -> None:
    """`dst.copy_(src)` with `dst` or `src` on the ember device."""
    if not is_ember(dst):
        dst.copy_(to_host(src))
        return
    state = _state(dst)
    if _whole(dst) and src.shape == dst.shape and src.dtype == dst.dtype:
        # Device arrays are immutable: sharing one is a copy.
        state.array = array(src) if is_ember(src) else _put(src)
        return
    value = (to_host(src) if is_ember(src) else src).to(dst.dtype).expand(dst.shape)
    memo: dict[int, tuple[_Root, torch.Tensor]] = {}
    _set(dst, value, memo)
    for root, flat in memo.values():
        _store(root, flat)


register()
