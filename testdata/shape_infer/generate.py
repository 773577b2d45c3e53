"""Writes cases.json: random shapes, dtypes and attributes for torch ops whose result-type rule
Ember writes (`ir/src/dialect/infer.rs`), each with what torch's meta kernels say: the result
types, or that torch rejects the call. `tools/tests/shape_infer.rs` checks Ember's rules against
it with no Python at run time. Deterministic (seeded): `python testdata/shape_infer/generate.py`
rewrites the same bytes for the same torch.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any, Callable

import torch

N_PER_OP = 40
DTYPES = {
    torch.float32: "f32",
    torch.float64: "f64",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "ui8",
    torch.bool: "i1",
}
COMMON = [torch.float32, torch.float64, torch.int64, torch.int32, torch.bool, torch.float16, torch.bfloat16, torch.int8, torch.uint8]


def shape(r: random.Random, rank: int | None = None, lo: int = 1) -> list[int]:
    rank = r.randint(0, 4) if rank is None else rank
    return [r.choice([lo, lo, 2, 3, 4, 5]) for _ in range(rank)]


def dtype(r: random.Random, floats: bool = False) -> torch.dtype:
    return r.choice(COMMON[:2] + [torch.float16, torch.bfloat16] if floats else COMMON)


def bcast_pair(r: random.Random) -> tuple[list[int], list[int]]:
    a = shape(r)
    b = list(a[r.randint(0, len(a)) :]) if a else []
    b = [1 if r.random() < 0.3 else d for d in b]
    if r.random() < 0.3:
        b = shape(r, r.randint(0, 2)) + b  # extra leading dims
    if r.random() < 0.15 and b:
        b[-1] += 1  # usually not broadcastable
    return (a, b) if r.random() < 0.5 else (b, a)


def arr(v: list[int]) -> str:
    return f"array<i64: {', '.join(map(str, v))}>" if v else "array<i64>"


def i64(v: int) -> str:
    return f"{v} : i64"


def b(v: bool) -> str:
    return "true" if v else "false"


def attrs(**kw: str) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(kw.items()))


Case = tuple[list[tuple[list[int], torch.dtype]], str, Callable[..., Any]]


def binary(name: str, fn: Callable[..., Any], alpha: bool = False) -> Callable[[random.Random], Case]:
    def gen(r: random.Random) -> Case:
        a, c = bcast_pair(r)
        return [(a, dtype(r)), (c, dtype(r))], attrs(alpha=i64(1)) if alpha else "", fn

    return gen


def where(r: random.Random) -> Case:
    a, c = bcast_pair(r)
    cond = list(a[r.randint(0, len(a)) :]) if a else []
    return [(cond, torch.bool), (a, dtype(r)), (c, dtype(r))], "", torch.where


def reduce(fn: Callable[..., Any], with_dtype: bool = False, floats: bool = False) -> Callable[[random.Random], Case]:
    def gen(r: random.Random) -> Case:
        s = shape(r, r.randint(1, 4))
        n = len(s)
        dims = r.sample(range(-n, n), r.randint(1, min(2, n)))
        if r.random() < 0.1:
            dims = [n]  # out of range
        keep = r.random() < 0.5
        return [(s, dtype(r, floats))], attrs(dim=arr(dims), keepdim=b(keep)), lambda x: fn(x, dims, keepdim=keep)

    return gen


def amax(r: random.Random) -> Case:
    return reduce(torch.amax)(r)


def argmax(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 4))
    d = r.randrange(-len(s), len(s))
    keep = r.random() < 0.5
    return [(s, r.choice([torch.float32, torch.int64]))], attrs(dim=i64(d), keepdim=b(keep)), lambda x: torch.argmax(x, d, keepdim=keep)


def permute(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 4))
    p = list(range(len(s)))
    r.shuffle(p)
    p = [d - len(s) if r.random() < 0.3 else d for d in p]
    if r.random() < 0.1:
        p[0] = p[-1]  # repeated dim
    return [(s, dtype(r))], attrs(dims=arr(p)), lambda x: torch.permute(x, p)


def transpose(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 4))
    n = len(s)
    d0, d1 = r.randrange(-n, n), r.randrange(-n, n)
    return [(s, dtype(r))], attrs(dim0=i64(d0), dim1=i64(d1)), lambda x: torch.transpose(x, d0, d1)


def unsqueeze(r: random.Random) -> Case:
    s = shape(r)
    d = r.randint(-len(s) - 1, len(s))
    return [(s, dtype(r))], attrs(dim=i64(d)), lambda x: torch.unsqueeze(x, d)


def squeeze(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 4))
    d = r.randrange(-len(s), len(s))
    return [(s, dtype(r))], attrs(dim=i64(d)), lambda x: torch.squeeze(x, d)


def cat(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 3))
    d = r.randrange(-len(s), len(s))
    parts = []
    for _ in range(r.randint(1, 3)):
        p = list(s)
        p[d] = r.randint(1, 4)
        if r.random() < 0.1:
            p[(d + 1) % len(p)] += 1
        parts.append((p, dtype(r)))
    return parts, attrs(dim=i64(d)), lambda *xs: torch.cat(xs, d)


def mm(r: random.Random) -> Case:
    m, k, n = r.randint(1, 5), r.randint(1, 5), r.randint(1, 5)
    k2 = k if r.random() < 0.9 else k + 1
    dt = r.choice([torch.float32, torch.float64])
    return [([m, k], dt), ([k2, n], dt)], "", torch.mm


def bmm(r: random.Random) -> Case:
    bb, m, k, n = r.randint(1, 3), r.randint(1, 5), r.randint(1, 5), r.randint(1, 5)
    dt = r.choice([torch.float32, torch.float64])
    return [([bb, m, k], dt), ([bb if r.random() < 0.9 else bb + 1, k, n], dt)], "", torch.bmm


def expand(r: random.Random) -> Case:
    s = shape(r, r.randint(0, 3))
    size = [r.choice([d, -1]) if d != 1 else r.choice([1, 3, -1]) for d in s]
    size = shape(r, r.randint(0, 2), 2) + size
    return [(s, dtype(r))], attrs(implicit=b(False), size=arr(size)), lambda x: x.expand(size)


def view(r: random.Random) -> Case:
    s = shape(r)
    n = 1
    for d in s:
        n *= d
    out: list[int] = []
    rest = n
    for f in (2, 3, 5):
        while rest % f == 0 and r.random() < 0.6:
            out.append(f)
            rest //= f
    out.append(rest)
    r.shuffle(out)
    if r.random() < 0.3:
        out[r.randrange(len(out))] = -1
    if r.random() < 0.1:
        out.append(2)
    return [(s, dtype(r))], attrs(size=arr(out)), lambda x: x.view(out)


def softmax(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 4))
    d = r.randrange(-len(s), len(s))
    return [(s, r.choice([torch.float32, torch.float64]))], attrs(dim=i64(d), half_to_float=b(False)), lambda x: torch._softmax(x, d, False)


def cumsum(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 3))
    d = r.randrange(-len(s), len(s))
    return [(s, dtype(r))], attrs(dim=i64(d)), lambda x: torch.cumsum(x, d)


def slice_(r: random.Random) -> Case:
    s = shape(r, r.randint(1, 3), 2)
    d = r.randrange(-len(s), len(s))
    start, end, step = r.randint(-6, 6), r.choice([r.randint(-6, 8), 9223372036854775807]), r.randint(1, 3)
    return [(s, dtype(r))], attrs(dim=i64(d), start=i64(start), end=i64(end), step=i64(step)), lambda x: torch.ops.aten.slice.Tensor(x, d, start, end, step)


OPS: dict[str, Callable[[random.Random], Case]] = {
    "add.Tensor": binary("add", torch.add, alpha=True),
    "sub.Tensor": binary("sub", torch.sub, alpha=True),
    "mul.Tensor": binary("mul", torch.mul),
    "div.Tensor": binary("div", torch.div),
    "eq.Tensor": binary("eq", torch.eq),
    "maximum": binary("maximum", torch.maximum),
    "where.self": where,
    "sum.dim_IntList": reduce(torch.sum),
    "mean.dim": reduce(torch.mean, floats=True),
    "amax": amax,
    "argmax": argmax,
    "permute": permute,
    "transpose.int": transpose,
    "unsqueeze": unsqueeze,
    "squeeze.dim": squeeze,
    "cat": cat,
    "mm": mm,
    "bmm": bmm,
    "expand": expand,
    "view": view,
    "_softmax": softmax,
    "cumsum": cumsum,
    "slice.Tensor": slice_,
}


def main() -> None:
    cases = []
    for name, gen in OPS.items():
        r = random.Random(f"ember-{name}")
        for _ in range(N_PER_OP):
            operands, at, fn = gen(r)
            args = [torch.empty(s, dtype=dt, device="meta") for s, dt in operands]
            case: dict[str, Any] = {"op": f"torch.aten.{name}", "operands": [[DTYPES[dt], s] for s, dt in operands], "attrs": at}
            try:
                out = fn(*args)
                outs = list(out) if isinstance(out, (tuple, list)) else [out]
                case["results"] = [[DTYPES[o.dtype], list(o.shape)] for o in outs]
            except (RuntimeError, IndexError, ValueError, TypeError) as exc:
                case["error"] = str(exc).splitlines()[0][:200]
            cases.append(case)
    out = Path(__file__).with_name("cases.json")
    text = "[\n" + ",\n".join(json.dumps(c, separators=(", ", ": ")) for c in cases) + "\n]\n"
    out.write_text(text)
    print(f"wrote {out} ({len(cases)} cases, {sum('error' in c for c in cases)} that torch rejects; torch {torch.__version__})")


if __name__ == "__main__":
    main()
