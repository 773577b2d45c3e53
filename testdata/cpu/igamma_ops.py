#!/usr/bin/env python3
"""Eager references for `ten.special`'s igamma/igammac (`targets/src/cpu/runtime/special.rs`):
torch.igamma and torch.igammac (and torch.special.gammainc/gammaincc, which export to them), the
regularized incomplete gamma functions P(a, x) and Q(a, x), in float32 and float64, and through
float32 from float16 and bfloat16.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/igamma_ops.py:make \\
        -o testdata/cpu/igamma_ops.pt2

writes igamma_ops.pt2 and igamma_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu/mod.rs` (`igamma_ops_match_eager`) compiles the archive and compares. A grid
of a against x (broadcast) crosses the kernel's special values (either operand ±0, negative,
tiny, huge, ±inf, NaN) and its regions: x ≤ 0.5, x in (0.5, 1.1] and above, x below and above
a, small and large a. Pairs (a, x) then aim at each branch's edges: the uniform asymptotic series
(20 < a < 200 with |x - a|/a < 0.3, a > 200 with |x - a|/a < 4.5/√a, x = a exactly), just
outside it (Boost's Lanczos form of xᵃe⁻ˣ/Γ(a) for |x - a| ≤ 0.4a, its log1p form where a or x
≥ 200), the switches between P's series, Q's series and the continued fraction (x = 1.1,
-0.4/ln x = a for x ≤ 0.5, 1.1x = a above), and xᵃe⁻ˣ/Γ(a) underflowing to 0. The operands are
contiguous or broadcast: for those torch's igamma runs its copy without FMAs, which the runtime
follows (strided ones take a fused copy, a few ulp apart).
"""

import math

import torch

INF, NAN = float("inf"), float("nan")
AS = [0.0, -0.0, -1.0, -1e-3, 1e-38, 1e-8, 0.01, 0.1, 0.5, 0.9, 1.0, 1.5, 2.0, 3.7, 5.0, 10.0, 19.9, 20.5, 25.0,
      50.0, 100.0, 150.0, 199.0, 201.0, 250.0, 500.0, 1000.0, 1e4, 1e6, 1e10, 1e30, INF, -INF, NAN]
XS = [0.0, -0.0, -1.0, -1e-6, 1e-38, 1e-8, 0.01, 0.1, 0.3, 0.5, 0.6, 0.9, 1.0, 1.05, 1.1, 1.2, 2.0, 5.0, 10.0, 19.0,
      22.0, 30.0, 45.0, 99.0, 105.0, 160.0, 199.0, 205.0, 240.0, 480.0, 1000.0, 1e4, 1e6, 1e10, 1e30, INF, -INF, NAN]


def pairs() -> list[tuple[float, float]]:
    ps = []
    # The asymptotic series and its edges.
    for a in [20.5, 21.0, 30.0, 50.0, 100.0, 150.0, 199.5]:
        rs = [-0.35, -0.31, -0.29, -0.2, -0.1, -0.01, -1e-4, 0.0, 1e-4, 0.01, 0.1, 0.2, 0.29, 0.31, 0.35]
        ps += [(a, a * (1 + r)) for r in rs]
    for a in [200.5, 250.0, 500.0, 1000.0, 1e4, 1e5, 1e6, 1e8]:
        s = 1 / math.sqrt(a)
        rs = [-0.39, -4.6 * s, -4.4 * s, -s, -0.1 * s, 0.0, 0.1 * s, s, 4.4 * s, 4.6 * s, 0.39]
        ps += [(a, a * (1 + r)) for r in rs]
    # The Lanczos form (|x - a| ≤ 0.4a outside the asymptotic region), a and x below 200 or not.
    ps += [(100.0, 135.0), (100.0, 65.0), (30.0, 40.0), (10.0, 13.0), (10.0, 7.0), (3.0, 2.0), (300.0, 400.0),
           (250.0, 170.0), (180.0, 240.0), (1e4, 1.3e4), (1e4, 7e3), (5.0, 3.5), (1.5, 1.2), (0.7, 0.6)]
    # Q's series against 1 - P's series: -0.4/ln(x) against a for x ≤ 0.5, 1.1x against a above.
    for x in [0.5, 0.1, 1e-3]:
        t = -0.4 / math.log(x)
        ps += [(t * 0.99, x), (t * 1.01, x)]
    for x in [0.6, 0.8, 1.0, 1.1]:
        ps += [(1.1 * x * 0.99, x), (1.1 * x * 1.01, x)]
    # Around x = 1.1 and x = a for the continued fraction; tiny results; underflow of xᵃe⁻ˣ/Γ(a).
    ps += [(1.2, 1.1), (1.0, 1.1000001), (1.1, 1.1000001), (1.2, 1.2), (2.0, 5.0), (0.5, 30.0), (10.0, 1000.0),
           (3.0, 80.0), (0.01, 0.3), (0.01, 50.0), (500.0, 10.0), (90.0, 5.0), (1e-3, 1e-30), (15.0, 0.2),
           (1e-20, 2.0), (1e-5, 1e-5), (7.5, 7.5), (19.99, 19.99), (0.25, 40.0)]
    return ps


class IgammaOps(torch.nn.Module):
    def forward(self, a, x, pa, px, a64, x64, pa64, px64):
        outs = []
        for ga, gx, qa, qx in ((a, x, pa, px), (a64, x64, pa64, px64)):
            ga, gx = ga[:, None], gx[None, :]
            outs += [torch.igamma(ga, gx), torch.igammac(ga, gx), torch.special.gammainc(qa, qx),
                     torch.special.gammaincc(qa, qx)]
        outs += [torch.igamma(pa.half(), px.half()), torch.igammac(pa.bfloat16(), px.bfloat16())]
        return tuple(outs)


def make():
    a, x = torch.tensor(AS, dtype=torch.float64), torch.tensor(XS, dtype=torch.float64)
    ps = pairs()
    pa = torch.tensor([p[0] for p in ps], dtype=torch.float64)
    px = torch.tensor([p[1] for p in ps], dtype=torch.float64)
    return IgammaOps().eval(), (a.float(), x.float(), pa.float(), px.float(), a, x, pa, px)
