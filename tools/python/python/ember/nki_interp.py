"""Reference interpreter (numpy) for the NKI subset Ember's trainium target emits.

**This is not AWS's simulator.** It was written from the public NKI API documentation
(``nki.language`` / ``nki.isa``, Neuron SDK 2.2x, the ``dst``-first instruction form) to check
Ember's generated kernels where neither the ``nki`` package nor Neuron hardware exists. Kernels and
interpreter come from the same reading of the docs, so agreement here shows the kernels are
consistent with that reading, not that they run on a NeuronCore. Where a real ``nki`` is
importable, the tests run :func:`nki.simulate` instead (:func:`real_nki`).

Subset: ``nki.jit``, ``nki.simulate``; ``nl.ndarray(shape, dtype, buffer=nl.sbuf|nl.psum|
nl.shared_hbm|nl.hbm)``, ``nl.affine_range``, ``nl.sequential_range``, Python ``range``;
``nisa.dma_copy``, ``nisa.nc_matmul`` (``dst = stationary.T @ moving``, fp32 PSUM, ``accumulate``
a bool), ``nisa.nc_transpose`` (Tensor Engine form), ``nisa.tensor_tensor``,
``nisa.tensor_scalar``, ``nisa.activation`` (``f(data * scale + bias)``), ``nisa.tensor_reduce``,
``nisa.tensor_copy``, ``nisa.memset``; slicing of tiles and ``reshape`` of HBM tensors.
Anything else raises :class:`NkiSubsetError`.

Hardware limits are enforced at run time (:class:`NkiLimitError`): partition dim <= 128 for on-chip
tiles; ``nc_matmul`` stationary ``[K<=128, M<=128]``, moving ``[K<=128, N<=512]``, PSUM result;
PSUM 8 banks x 2 KiB per partition (a tile uses whole banks, at most one bank per matmul result);
SBUF 212,984 bytes per partition usable by kernels on Trn2. Allocation is modelled as static:
every on-chip ``nl.ndarray`` lives until the kernel returns (Ember's kernels allocate all tiles up
front), which is also what the Rust verifier (``targets/src/trainium/verify.rs``) sums.

Engines compute in fp32 and cast on write to the destination's dtype. Fresh on-chip tiles hold NaN
so a read of never-written memory shows up in results.
"""

from __future__ import annotations

import builtins
import math
import types
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "PARTITIONS",
    "STATIONARY_FREE_MAX",
    "MOVING_FREE_MAX",
    "PSUM_BANKS",
    "PSUM_BANK_BYTES",
    "SBUF_PARTITION_BYTES",
    "NkiLimitError",
    "NkiSubsetError",
    "nki",
    "load_kernel",
    "real_nki",
]

PARTITIONS = 128
STATIONARY_FREE_MAX = 128
MOVING_FREE_MAX = 512
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048
# Trn2 SBUF: 128 partitions x 224 KiB; 212,984 bytes per partition are usable by NKI kernels (the
# rest is reserved). Source: AWS's NKI documentation for Trn2 (NeuronCore-v3 SBUF/PSUM sizes);
# the Rust verifier defines the same constant (targets/src/trainium/verify.rs).
SBUF_PARTITION_BYTES = 212_984


class NkiLimitError(Exception):
    """A kernel broke a hardware limit (tile shape, PSUM or SBUF capacity)."""


class NkiSubsetError(Exception):
    """A kernel used NKI outside the subset this interpreter implements, or used it wrongly."""


# ---- buffers, dtypes, tensors -----------------------------------------------------------------


class _Buffer:
    def __init__(self, name: str, on_chip: bool) -> None:
        self.name = name
        self.on_chip = on_chip

    def __repr__(self) -> str:
        return f"nl.{self.name}"


sbuf = _Buffer("sbuf", True)
psum = _Buffer("psum", True)
shared_hbm = _Buffer("shared_hbm", False)
hbm = _Buffer("hbm", False)


def _bf16() -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
int32 = np.dtype(np.int32)


class Tensor:
    """An HBM tensor or an on-chip tile (or a view of one): numpy data plus the buffer it lives in."""

    def __init__(self, data: np.ndarray, buffer: _Buffer, name: str = "") -> None:
        self.data = data
        self.buffer = buffer
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def __getitem__(self, idx: Any) -> "Tensor":
        idx = idx if isinstance(idx, tuple) else (idx,)
        for i in idx:
            if isinstance(i, slice):
                if i.step not in (None, 1):
                    raise NkiSubsetError(f"strided slice {i} of `{self.name}` is outside Ember's NKI subset")
                for bound in (i.start, i.stop):
                    if bound is not None and not (0 <= bound):
                        raise NkiSubsetError(f"negative slice bound {i} of `{self.name}`")
            elif not isinstance(i, (int, np.integer)):
                raise NkiSubsetError(f"index {i!r} of `{self.name}`: only ints and slices are in the subset")
        if self.buffer.on_chip and idx and not isinstance(idx[0], slice):
            raise NkiSubsetError(f"`{self.name}`: the partition dim of an on-chip tile must be sliced, not indexed")
        # Out-of-range slices would silently shrink in numpy; on hardware they are errors.
        for d, i in enumerate(idx):
            n = self.data.shape[d]
            if isinstance(i, slice):
                stop = n if i.stop is None else i.stop
                start = 0 if i.start is None else i.start
                if stop > n or start > stop:
                    raise NkiLimitError(f"slice {start}:{stop} of dim {d} of `{self.name}` {self.shape} is out of bounds")
            elif not 0 <= i < n:
                raise NkiLimitError(f"index {i} of dim {d} of `{self.name}` {self.shape} is out of bounds")
        return Tensor(self.data[idx], self.buffer, self.name)

    def reshape(self, shape: Sequence[int]) -> "Tensor":
        if self.buffer.on_chip:
            raise NkiSubsetError(f"reshape of on-chip tile `{self.name}` is outside Ember's NKI subset")
        if not self.data.flags.c_contiguous:
            raise NkiSubsetError(f"reshape of a non-contiguous view of `{self.name}`")
        return Tensor(self.data.reshape(tuple(shape)), self.buffer, self.name)

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype}, {self.buffer})"


class _State:
    """Allocation totals of the running kernel (static allocation: nothing is freed)."""

    def __init__(self) -> None:
        self.sbuf_bytes = 0
        self.psum_banks = 0
        self.count = 0


_state: _State | None = None


def _running() -> _State:
    if _state is None:
        raise NkiSubsetError("NKI calls must run inside a kernel called through nki.jit")
    return _state


def ndarray(shape: Sequence[int], dtype: Any, buffer: _Buffer = sbuf, name: str = "") -> Tensor:
    st = _running()
    shape = tuple(int(s) for s in shape)
    dt = np.dtype(dtype)
    if not isinstance(buffer, _Buffer):
        raise NkiSubsetError(f"nl.ndarray buffer {buffer!r} is not nl.sbuf/psum/shared_hbm/hbm")
    st.count += 1
    label = name or f"tile{st.count}"
    if any(s <= 0 for s in shape):
        raise NkiLimitError(f"nl.ndarray `{label}` has an empty dim: {shape}")
    if buffer.on_chip:
        if len(shape) < 2:
            raise NkiSubsetError(f"on-chip tile `{label}` {shape} needs a partition dim and at least one free dim")
        if shape[0] > PARTITIONS:
            raise NkiLimitError(f"tile `{label}` {shape} in {buffer}: partition dim {shape[0]} > {PARTITIONS}")
        per_partition = math.prod(shape[1:]) * dt.itemsize
        if buffer is psum:
            if per_partition > PSUM_BANK_BYTES:
                raise NkiLimitError(
                    f"PSUM tile `{label}` {shape} {dt}: {per_partition} bytes per partition > one bank ({PSUM_BANK_BYTES})"
                )
            st.psum_banks += 1
            if st.psum_banks > PSUM_BANKS:
                raise NkiLimitError(f"PSUM tile `{label}`: {st.psum_banks} banks in use > {PSUM_BANKS}")
        else:
            st.sbuf_bytes += per_partition
            if st.sbuf_bytes > SBUF_PARTITION_BYTES:
                raise NkiLimitError(
                    f"SBUF tile `{label}` {shape} {dt}: {st.sbuf_bytes} bytes per partition in use > {SBUF_PARTITION_BYTES}"
                )
        fill = np.nan if dt.kind == "f" or dt == _bf16() else 0
        data = np.full(shape, fill, dtype=dt)
    else:
        data = np.zeros(shape, dtype=dt)
    return Tensor(data, buffer, label)


def affine_range(*args: int) -> range:
    return range(*args)


def sequential_range(*args: int) -> range:
    return range(*args)


# ---- operators --------------------------------------------------------------------------------


class _Op:
    def __init__(self, name: str, fn: Callable[..., np.ndarray], kind: str) -> None:
        self.name, self.fn, self.kind = name, fn, kind

    def __repr__(self) -> str:
        return f"nl.{self.name}"


def _erf(x: np.ndarray) -> np.ndarray:
    from math import erf

    return np.vectorize(erf, otypes=[np.float64])(x.astype(np.float64)).astype(np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    c = np.float32(math.sqrt(2.0 / math.pi))
    return (0.5 * x * (1.0 + np.tanh(c * (x + np.float32(0.044715) * x * x * x)))).astype(np.float32)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


# Elementwise ALU operators (tensor_tensor, tensor_scalar) and reductions (tensor_reduce).
add = _Op("add", np.add, "alu")
subtract = _Op("subtract", np.subtract, "alu")
multiply = _Op("multiply", np.multiply, "alu")
divide = _Op("divide", np.divide, "alu")
maximum = _Op("maximum", np.maximum, "alu")
minimum = _Op("minimum", np.minimum, "alu")
max = _Op("max", np.maximum, "alu")  # noqa: A001  (NKI's reduction names)
min = _Op("min", np.minimum, "alu")  # noqa: A001
# Activation functions (Scalar Engine).
exp = _Op("exp", np.exp, "act")
tanh = _Op("tanh", np.tanh, "act")
sigmoid = _Op("sigmoid", _sigmoid, "act")
relu = _Op("relu", lambda x: np.maximum(x, np.float32(0)), "act")
gelu = _Op("gelu", _gelu, "act")
gelu_apprx_tanh = _Op("gelu_apprx_tanh", _gelu_tanh, "act")
silu = _Op("silu", lambda x: (x * _sigmoid(x)).astype(np.float32), "act")
rsqrt = _Op("rsqrt", lambda x: (np.float32(1) / np.sqrt(x)).astype(np.float32), "act")
sqrt = _Op("sqrt", np.sqrt, "act")
reciprocal = _Op("reciprocal", lambda x: (np.float32(1) / x).astype(np.float32), "act")
square = _Op("square", np.square, "act")
copy = _Op("copy", lambda x: x, "act")

_REDUCE = {"add": np.sum, "max": np.max, "maximum": np.max, "min": np.min, "minimum": np.min, "multiply": np.prod}


# ---- instructions -----------------------------------------------------------------------------


def _tensor(x: Any, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise NkiSubsetError(f"{what} must be an NKI tensor, got {type(x).__name__}")
    return x


def _on_chip(x: Tensor, what: str, instr: str) -> None:
    if not x.buffer.on_chip:
        raise NkiSubsetError(f"nisa.{instr}: {what} `{x.name}` must be an SBUF or PSUM tile, not {x.buffer}")


def _check_partitions(x: Tensor, instr: str) -> None:
    if x.shape and x.shape[0] > PARTITIONS:
        raise NkiLimitError(f"nisa.{instr}: `{x.name}` {x.shape} spans {x.shape[0]} partitions > {PARTITIONS}")


def _write(dst: Tensor, value: np.ndarray, instr: str) -> None:
    if tuple(value.shape) != dst.shape:
        raise NkiSubsetError(f"nisa.{instr}: result shape {tuple(value.shape)} != dst `{dst.name}` shape {dst.shape}")
    with np.errstate(all="ignore"):
        dst.data[...] = value.astype(dst.dtype)


def _f32(x: Tensor) -> np.ndarray:
    return x.data.astype(np.float32)


def _operand(x: Any, data: Tensor, what: str, instr: str) -> np.ndarray | np.float32:
    """A scalar (compile-time float) or a per-partition vector tile of shape (P, 1)."""
    if isinstance(x, (int, float, np.floating, np.integer)):
        return np.float32(x)
    x = _tensor(x, what)
    _on_chip(x, what, instr)
    if x.shape != (data.shape[0], 1):
        raise NkiSubsetError(f"nisa.{instr}: {what} `{x.name}` must be a scalar or a ({data.shape[0]}, 1) vector, got {x.shape}")
    return _f32(x).reshape((data.shape[0],) + (1,) * (len(data.shape) - 1))


def dma_copy(dst: Tensor, src: Tensor, **kw: Any) -> None:
    _no_extra(kw, "dma_copy")
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    for t in (dst, src):
        if t.buffer is psum:
            raise NkiSubsetError(f"nisa.dma_copy: `{t.name}` is in PSUM; DMA moves data between HBM and SBUF")
        if t.buffer.on_chip:
            _check_partitions(t, "dma_copy")
    if dst.shape != src.shape:
        raise NkiSubsetError(f"nisa.dma_copy: dst `{dst.name}` {dst.shape} and src `{src.name}` {src.shape} differ in shape")
    if dst.dtype != src.dtype:
        raise NkiSubsetError(f"nisa.dma_copy: dst {dst.dtype} and src {src.dtype} differ in dtype (DMA does not convert here)")
    dst.data[...] = src.data


def nc_matmul(dst: Tensor, stationary: Tensor, moving: Tensor, accumulate: bool = False, **kw: Any) -> None:
    _no_extra(kw, "nc_matmul")
    dst, st, mv = _tensor(dst, "dst"), _tensor(stationary, "stationary"), _tensor(moving, "moving")
    if st.buffer is not sbuf or mv.buffer is not sbuf:
        raise NkiSubsetError("nisa.nc_matmul: stationary and moving must be SBUF tiles")
    if dst.buffer is not psum:
        raise NkiSubsetError(f"nisa.nc_matmul: dst `{dst.name}` must be a PSUM tile")
    if not isinstance(accumulate, bool):
        raise NkiSubsetError("nisa.nc_matmul: Ember's subset passes accumulate as a bool")
    if len(st.shape) != 2 or len(mv.shape) != 2:
        raise NkiSubsetError(f"nisa.nc_matmul: 2-D tiles expected, got {st.shape} and {mv.shape}")
    (k, m), (k2, n) = st.shape, mv.shape
    if k != k2:
        raise NkiSubsetError(f"nisa.nc_matmul: contraction (partition) dims differ: stationary {st.shape}, moving {mv.shape}")
    if k > PARTITIONS or m > STATIONARY_FREE_MAX or n > MOVING_FREE_MAX:
        raise NkiLimitError(
            f"nisa.nc_matmul: stationary {st.shape} (limit [{PARTITIONS}, {STATIONARY_FREE_MAX}]) / moving {mv.shape} "
            f"(limit [{PARTITIONS}, {MOVING_FREE_MAX}]) out of Tensor Engine limits"
        )
    if dst.shape != (m, n) or dst.dtype != float32:
        raise NkiSubsetError(f"nisa.nc_matmul: dst `{dst.name}` must be fp32 ({m}, {n}), got {dst.dtype} {dst.shape}")
    prod = _f32(st).T @ _f32(mv)
    dst.data[...] = dst.data + prod if accumulate else prod


def nc_transpose(dst: Tensor, data: Tensor, **kw: Any) -> None:
    _no_extra(kw, "nc_transpose")
    dst, data = _tensor(dst, "dst"), _tensor(data, "data")
    if data.buffer is not sbuf or dst.buffer is not psum:
        raise NkiSubsetError("nisa.nc_transpose (Tensor Engine): data must be in SBUF and dst in PSUM")
    if len(data.shape) != 2 or data.shape[0] > PARTITIONS or data.shape[1] > PARTITIONS:
        raise NkiLimitError(f"nisa.nc_transpose: data {data.shape} exceeds the Tensor Engine's [128, 128]")
    if dst.dtype != data.dtype:
        raise NkiSubsetError("nisa.nc_transpose: dst must have the dtype of data")
    _write(dst, _f32(data).T, "nc_transpose")


def tensor_tensor(dst: Tensor, data1: Tensor, data2: Tensor, op: _Op, **kw: Any) -> None:
    _no_extra(kw, "tensor_tensor")
    dst, a, b = _tensor(dst, "dst"), _tensor(data1, "data1"), _tensor(data2, "data2")
    for t in (dst, a, b):
        _on_chip(t, "operand", "tensor_tensor")
        _check_partitions(t, "tensor_tensor")
    if a.shape != b.shape:
        raise NkiSubsetError(f"nisa.tensor_tensor: data1 {a.shape} and data2 {b.shape} differ in shape")
    if a.buffer is psum and b.buffer is psum:
        raise NkiSubsetError("nisa.tensor_tensor: data1 and data2 cannot both be in PSUM")
    _alu(op, "tensor_tensor")
    with np.errstate(all="ignore"):
        _write(dst, op.fn(_f32(a), _f32(b)), "tensor_tensor")


def tensor_scalar(
    dst: Tensor, data: Tensor, op0: _Op, operand0: Any, reverse0: bool = False, op1: _Op | None = None,
    operand1: Any = None, reverse1: bool = False, **kw: Any,
) -> None:
    _no_extra(kw, "tensor_scalar")
    dst, data = _tensor(dst, "dst"), _tensor(data, "data")
    for t in (dst, data):
        _on_chip(t, "operand", "tensor_scalar")
        _check_partitions(t, "tensor_scalar")
    _alu(op0, "tensor_scalar")
    x = _f32(data)
    with np.errstate(all="ignore"):
        o0 = _operand(operand0, data, "operand0", "tensor_scalar")
        x = op0.fn(o0, x) if reverse0 else op0.fn(x, o0)
        if op1 is not None:
            _alu(op1, "tensor_scalar")
            o1 = _operand(operand1, data, "operand1", "tensor_scalar")
            x = op1.fn(o1, x) if reverse1 else op1.fn(x, o1)
        elif operand1 is not None:
            raise NkiSubsetError("nisa.tensor_scalar: operand1 given without op1")
    _write(dst, np.asarray(x, np.float32), "tensor_scalar")


def activation(dst: Tensor, op: _Op, data: Tensor, bias: Any = None, scale: Any = 1.0, **kw: Any) -> None:
    _no_extra(kw, "activation")
    dst, data = _tensor(dst, "dst"), _tensor(data, "data")
    for t in (dst, data):
        _on_chip(t, "operand", "activation")
        _check_partitions(t, "activation")
    if not isinstance(op, _Op) or op.kind != "act":
        raise NkiSubsetError(f"nisa.activation: {op!r} is not an activation function of Ember's subset")
    x = _f32(data) * _operand(scale, data, "scale", "activation")
    if bias is not None:
        x = x + _operand(bias, data, "bias", "activation")
    with np.errstate(all="ignore"):
        _write(dst, np.asarray(op.fn(x.astype(np.float32)), np.float32), "activation")


def tensor_reduce(dst: Tensor, op: _Op, data: Tensor, axis: Any, negate: bool = False, keepdims: bool = False, **kw: Any) -> None:
    _no_extra(kw, "tensor_reduce")
    dst, data = _tensor(dst, "dst"), _tensor(data, "data")
    for t in (dst, data):
        _on_chip(t, "operand", "tensor_reduce")
        _check_partitions(t, "tensor_reduce")
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    rank = len(data.shape)
    if 0 in axes or sorted(axes) != list(range(rank - len(axes), rank)):
        raise NkiSubsetError(f"nisa.tensor_reduce: axis {axis} must be the last contiguous free dims of a rank-{rank} tile")
    if not isinstance(op, _Op) or op.name not in _REDUCE:
        raise NkiSubsetError(f"nisa.tensor_reduce: {op!r} is not a reduction of Ember's subset")
    r = _REDUCE[op.name](_f32(data), axis=axes, keepdims=keepdims)
    if negate:
        r = -r
    _write(dst, np.asarray(r, np.float32), "tensor_reduce")


def tensor_copy(dst: Tensor, src: Tensor, **kw: Any) -> None:
    _no_extra(kw, "tensor_copy")
    dst, src = _tensor(dst, "dst"), _tensor(src, "src")
    for t in (dst, src):
        _on_chip(t, "operand", "tensor_copy")
        _check_partitions(t, "tensor_copy")
    if dst.shape != src.shape:
        raise NkiSubsetError(f"nisa.tensor_copy: dst {dst.shape} and src {src.shape} differ in shape")
    _write(dst, src.data, "tensor_copy")


def memset(dst: Tensor, value: float, **kw: Any) -> None:
    _no_extra(kw, "memset")
    dst = _tensor(dst, "dst")
    _on_chip(dst, "dst", "memset")
    _check_partitions(dst, "memset")
    dst.data[...] = value


def _alu(op: Any, instr: str) -> None:
    if not isinstance(op, _Op) or op.kind != "alu":
        raise NkiSubsetError(f"nisa.{instr}: {op!r} is not an arithmetic operator of Ember's subset")


def _no_extra(kw: dict[str, Any], instr: str) -> None:
    kw.pop("name", None)
    if kw:
        raise NkiSubsetError(f"nisa.{instr}: arguments {sorted(kw)} are outside Ember's NKI subset")


# ---- nki.jit / simulate -----------------------------------------------------------------------


def jit(fn: Callable[..., Any] | None = None, **_options: Any) -> Any:
    """`@nki.jit`: the kernel runs here on numpy arrays (one fresh allocation state per call)."""
    if fn is None:
        return lambda f: jit(f)

    def run(*args: Any) -> Any:
        global _state
        if _state is not None:
            raise NkiSubsetError("nested kernel calls are outside Ember's NKI subset")
        hbm_args = [Tensor(np.array(a, copy=True), shared_hbm, f"arg{i}") if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
        _state = _State()
        try:
            out = fn(*hbm_args)
        finally:
            _state = None
        if isinstance(out, Tensor):
            return out.data
        if isinstance(out, (tuple, list)):
            return type(out)(o.data if isinstance(o, Tensor) else o for o in out)
        return out

    run.__wrapped__ = fn  # type: ignore[attr-defined]
    run.__name__ = getattr(fn, "__name__", "kernel")
    return run


def simulate(kernel: Callable[..., Any]) -> Callable[..., Any]:
    """`nki.simulate(kernel)(*arrays)`: here the same as calling the jitted kernel."""
    return kernel


def _module(name: str, members: dict[str, Any]) -> types.ModuleType:
    m = types.ModuleType(name, "Ember's NKI reference interpreter (not AWS's simulator)")
    m.__dict__.update(members)
    return m


_g = dict(globals())
language = _module(
    "nki.language",
    {k: _g[k] for k in ["ndarray", "affine_range", "sequential_range", "sbuf", "psum", "shared_hbm", "hbm", "float32", "float16", "int32",
                        "add", "subtract", "multiply", "divide", "maximum", "minimum", "max", "min", "exp", "tanh", "sigmoid",
                        "relu", "gelu", "gelu_apprx_tanh", "silu", "rsqrt", "sqrt", "reciprocal", "square", "copy"]},
)


def _outside(module: str) -> Callable[[str], Any]:
    """Module `__getattr__`: names outside the subset are a clear error, not an AttributeError."""

    def get(n: str) -> Any:
        if module == "nki.language" and n == "bfloat16":
            return _bf16()  # ml_dtypes is imported only when a kernel asks for it
        raise NkiSubsetError(f"{module}.{n} is outside Ember's NKI subset")

    return get


language.__getattr__ = _outside("nki.language")  # type: ignore[attr-defined]
isa = _module(
    "nki.isa",
    {k: _g[k] for k in ["dma_copy", "nc_matmul", "nc_transpose", "tensor_tensor", "tensor_scalar", "activation", "tensor_reduce",
                        "tensor_copy", "memset"]},
)
isa.__getattr__ = _outside("nki.isa")  # type: ignore[attr-defined]
nki = _module("nki", {"jit": jit, "simulate": simulate, "language": language, "isa": isa})
del _g


def _importer(real: Callable[..., Any]) -> Callable[..., Any]:
    def imp(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:  # noqa: A002
        if level == 0 and (name == "nki" or name.startswith("nki.")):
            if fromlist:
                return {"nki": nki, "nki.language": language, "nki.isa": isa}.get(name) or _missing(name)
            return nki
        return real(name, globals, locals, fromlist, level)

    return imp


def _missing(name: str) -> Any:
    raise NkiSubsetError(f"module `{name}` is outside Ember's NKI subset")


def load_kernel(source: str | Path, name: str | None = None, use_real_nki: bool = False) -> Callable[..., Any]:
    """Executes a kernel file (or source text) and returns its `@nki.jit` function `name`
    (default: the only jitted function). With `use_real_nki` the file imports the real `nki`
    package and the result is wrapped in `nki.simulate`."""
    text = source.read_text() if isinstance(source, Path) else source
    b = dict(vars(builtins))
    if not use_real_nki:
        b["__import__"] = _importer(builtins.__import__)
    scope: dict[str, Any] = {"__builtins__": b, "__name__": "ember_nki_kernel"}
    exec(compile(text, str(source) if isinstance(source, Path) else "<kernel>", "exec"), scope)
    jitted = {k: v for k, v in scope.items() if callable(v) and hasattr(v, "__wrapped__")} if not use_real_nki else {}
    if use_real_nki:
        import nki as real  # type: ignore[import-not-found]

        fns = {k: v for k, v in scope.items() if k == name}
        if not fns:
            raise NkiSubsetError(f"no kernel `{name}` in the source")
        return lambda *a: real.simulate(fns[name])(*a)
    if name is not None:
        if name not in jitted:
            raise NkiSubsetError(f"no @nki.jit kernel `{name}` in the source")
        return jitted[name]
    if len(jitted) != 1:
        raise NkiSubsetError(f"expected one @nki.jit kernel, found {sorted(jitted)}")
    return next(iter(jitted.values()))


def real_nki() -> bool:
    """True when AWS's `nki` package (with `nki.simulate`) is importable: tests then use it."""
    try:
        import nki as real  # type: ignore[import-not-found]
        import nki.isa  # noqa: F401
        import nki.language  # noqa: F401
    except Exception:
        return False
    return hasattr(real, "simulate") and hasattr(real, "jit")
