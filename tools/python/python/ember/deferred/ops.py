"""A queued op and its arguments as the scheduler and the replay matcher see them."""

from __future__ import annotations

import math

import torch

from ..dtypes import by_torch

_DTYPES = by_torch()


class _Ref:
    """A tensor argument of a queued op: the value id it reads."""

    __slots__ = ("vid",)

    def __init__(self, vid: int) -> None:
        self.vid = vid


class _Op:
    __slots__ = ("func", "target", "pos", "kw", "spec", "ins", "outs", "descs", "native_outs", "hidden", "file", "line", "sig", "expect", "root", "base", "kwdev")


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
