"""Random ops in compiled graphs: a counter-based generator (Philox4x32-10) keyed by a seed input.

``functional(gm)`` rewrites each random op of an AOT graph (``rand``, ``randn``, dropout,
``bernoulli``, ``randint``, ...) into the ATen integer ops of Philox4x32-10 on a new last graph
input, a 64-bit seed, with the element index and the op's position in the graph as the counter.
The graph stays pure: Ember compiles it like any other (on every target, since it is plain
elementwise integer math), a replay does not recompile, and the same seed gives the same bits
on Ember and in torch eager (so check mode compares exactly). ``seed()`` draws the seed from
torch's default generator: results are reproducible under ``torch.manual_seed``, and
consecutive calls differ. They are not torch's CPU stream (which is a Mersenne Twister): the
same statistics, other numbers.
"""

from __future__ import annotations

import math
import operator

import torch

aten = torch.ops.aten

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF
_HIGH = -(1 << 32)  # 0xFFFFFFFF00000000 as an int64


def _mulhilo(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The high and low 32-bit words of a·m, a < 2³², m < 2³², in int64 arithmetic: the product
    wraps modulo 2⁶⁴ and clearing its low word leaves an exact multiple of 2³²."""
    p = a * m
    return torch.div(p & _HIGH, 1 << 32, rounding_mode="floor") & _MASK, p & _MASK


def philox(seed: torch.Tensor, stream: torch.Tensor, n: int) -> list[torch.Tensor]:
    """The four 32-bit words (as int64) Philox4x32-10 gives for counters (i, 0, stream, 0),
    i < n, under the key (low, high word of `seed`); `stream` is an int64 scalar tensor."""
    c0 = torch.arange(n, dtype=torch.int64)
    c1 = torch.zeros(n, dtype=torch.int64)
    c2 = c1 + stream
    c3 = torch.zeros(n, dtype=torch.int64)
    k0, k1 = seed & _MASK, torch.div(seed & _HIGH, 1 << 32, rounding_mode="floor") & _MASK
    for _ in range(10):
        hi0, lo0 = _mulhilo(c0, _M0)
        hi1, lo1 = _mulhilo(c2, _M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
    return [c0, c1, c2, c3]


# Mantissa digits a uniform of the dtype takes from a word: every k·2⁻ᵈ is exact in it, so
# none rounds up to 1 (passes/src/lower/random.rs draws the same for a .pt2).
_DIGITS = {torch.float16: 11, torch.bfloat16: 8}


def _uniform(word: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[0, 1) from the top d bits of a word (24, fewer for float16/bfloat16)."""
    d = _DIGITS.get(dtype, 24)
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    return (torch.div(word, 1 << (32 - d), rounding_mode="floor").to(wide) * (2.0**-d)).to(dtype)


def uniform(seed: torch.Tensor, stream: torch.Tensor, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    return _uniform(philox(seed, stream, math.prod(shape))[0], dtype).reshape(shape)


def normal(seed: torch.Tensor, stream: torch.Tensor, shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    """Standard normal by Box-Muller from two words (u1 in (0, 1], so the log is finite)."""
    w = philox(seed, stream, math.prod(shape))
    u1 = (torch.div(w[0], 256, rounding_mode="floor") + 1).to(torch.float32) * (2.0**-24)
    u2 = _uniform(w[1], torch.float32)
    return (torch.sqrt(-2.0 * torch.log(u1)) * torch.cos((2.0 * math.pi) * u2)).to(dtype).reshape(shape)


# Each maps (seed, stream, node args, node kwargs, meta of the node's value) to its result, in
# torch ops; tensors among the args are traced inputs.
def _rand(seed, stream, args, kwargs, val):
    return uniform(seed, stream, list(val.shape), val.dtype)


def _randn(seed, stream, args, kwargs, val):
    return normal(seed, stream, list(val.shape), val.dtype)


def _uniform_range(seed, stream, args, kwargs, val):
    x, low, high = args[0], args[1] if len(args) > 1 else kwargs.get("from", 0.0), args[2] if len(args) > 2 else kwargs.get("to", 1.0)
    return uniform(seed, stream, list(x.shape), x.dtype) * (high - low) + low


def _bernoulli(seed, stream, args, kwargs, val):
    x = args[0]
    p = args[1] if len(args) > 1 else kwargs.get("p", x)
    return (uniform(seed, stream, list(x.shape), torch.float32) < p).to(x.dtype)


def _dropout(seed, stream, args, kwargs, val):
    x, p, train = args
    if not train:
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    keep = uniform(seed, stream, list(x.shape), torch.float32) >= p
    return x * keep * (1.0 / (1.0 - p)) if p < 1 else x * 0.0, keep


def _randint(low: int, high: int, seed, stream, val):
    word = philox(seed, stream, math.prod(val.shape))[0]
    return (torch.remainder(word, high - low) + low).to(val.dtype).reshape(list(val.shape))


_RANDOM = {
    aten.rand.default: _rand,
    aten.rand_like.default: _rand,
    aten.randn.default: _randn,
    aten.randn_like.default: _randn,
    aten.uniform.default: _uniform_range,
    aten.bernoulli.default: _bernoulli,
    aten.bernoulli.p: _bernoulli,
    aten.native_dropout.default: _dropout,
    aten.randint.default: lambda seed, stream, args, kwargs, val: _randint(0, args[0], seed, stream, val),
    aten.randint.low: lambda seed, stream, args, kwargs, val: _randint(args[0], args[1], seed, stream, val),
}


def functional(gm: torch.fx.GraphModule) -> bool:
    """Rewrites the random ops of `gm` (in place) onto a new last input, the seed; whether it had any."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily
    from torch.fx.experimental.proxy_tensor import make_fx

    from . import decompositions

    g = gm.graph
    nodes = [n for n in g.nodes if n.op == "call_function" and n.target in _RANDOM]
    if not nodes:
        return False
    last = [n for n in g.nodes if n.op == "placeholder"][-1]
    with g.inserting_after(last):
        seed = g.placeholder("ember_seed")
    seed.meta["val"] = torch.empty((), dtype=torch.int64, device="meta")
    # One trace per form (op, sizes, dtypes, constants), the stream an input of it: a trace of
    # the generator takes ~0.2 s, and a transformer has one dropout of each form per layer
    # (GPT-2 with 4 blocks: 13 traces, 2.6 s of its first step's compile, now 3).
    traces: dict[str, torch.fx.GraphModule] = {}
    for stream, node in enumerate(nodes):
        tensor_args = [a for a in node.args if isinstance(a, torch.fx.Node)]
        rule = _RANDOM[node.target]
        args, kwargs, val = node.args, node.kwargs, node.meta.get("val")
        if isinstance(val, (tuple, list)):
            val = val[0]

        def fn(s, st, *ts, rule=rule, args=args, kwargs=kwargs, val=val):
            it = iter(ts)
            concrete = [next(it) if isinstance(a, torch.fx.Node) else a for a in args]
            return rule(s, st, concrete, kwargs, val)

        shapes = [(tuple(int(d) for d in a.meta["val"].shape), a.meta["val"].dtype) for a in tensor_args]
        form = repr((node.target, shapes, [a for a in args if not isinstance(a, torch.fx.Node)], sorted(kwargs.items()),
                     None if val is None else (tuple(val.shape), val.dtype)))
        if form not in traces:
            # Outside Dynamo's tracing context, whose shape environment would give the
            # generator's values symbolic sizes.
            with unset_fake_temporarily(), torch._guards.tracing(None):
                examples = [torch.zeros(shape, dtype=dtype) for shape, dtype in shapes]
                # Two tensors: the tracer tells inputs apart by identity.
                s, st = torch.zeros((), dtype=torch.int64), torch.zeros((), dtype=torch.int64)
                traces[form] = make_fx(fn, decomposition_table=decompositions.table(), tracing_mode="fake")(s, st, *examples)
        traced = traces[form]
        with g.inserting_before(node):
            stream_node = g.call_function(aten.full.default, ([], stream), {"dtype": torch.int64})
        stream_node.meta["val"] = torch.empty((), dtype=torch.int64, device="meta")
        env = dict(zip([p for p in traced.graph.nodes if p.op == "placeholder"], [seed, stream_node, *tensor_args]))
        result = None
        with g.inserting_before(node):
            for t in traced.graph.nodes:
                if t.op == "placeholder":
                    continue
                if t.op == "output":
                    result = torch.fx.node.map_arg(t.args[0], lambda n: env[n])
                    break
                if t.op == "get_attr":
                    raise ValueError(f"the generator for `{node.name}` holds a constant")
                env[t] = g.node_copy(t, lambda n: env[n])
        if isinstance(result, (tuple, list)):
            for user in list(node.users):
                assert user.target is operator.getitem
                user.replace_all_uses_with(result[user.args[1]])
                g.erase_node(user)
        else:
            node.replace_all_uses_with(result)
        g.erase_node(node)
    g.lint()
    gm.recompile()
    return True


def seed() -> torch.Tensor:
    """A fresh seed from torch's default generator (advancing it)."""
    return torch.randint(0, 1 << 62, (), dtype=torch.int64)
