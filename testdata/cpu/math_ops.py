#!/usr/bin/env python3
"""Eager references for the CPU target's unary math formulas (expm1, log2, log10, sinh, cosh,
asinh, acosh, atanh, asin, acos, atan, elu/selu/celu, lgamma) and cdist (p = 0, 1, 2, 3, inf, with
broadcast batch dims and repeated rows).

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/math_ops.py:make \\
        -o testdata/cpu/math_ops.pt2

writes math_ops.pt2 and math_ops.npz (inputs arg0.., eager outputs out0..); `tools/tests/cpu.rs`
(`math_ops_match_eager`) compiles the archive for the CPU and compares. Besides a wide grid with
infinities and NaN, the functions that behave like x near 0 are also checked on tiny inputs
scaled back up (f(s)/s), so a formula that cancels near 0 fails the relative tolerance.
"""

import torch
import torch.nn.functional as F

NEAR_ZERO = ("expm1", "sinh", "asinh", "atanh", "asin", "atan")


class MathOps(torch.nn.Module):
    def forward(self, x, u, big, s, c1, c2):
        outs = [torch.expm1(x), torch.log2(big), torch.log10(big), torch.sinh(x), torch.cosh(x), torch.asinh(x),
                torch.acosh(big), torch.atanh(u), torch.asin(u), torch.acos(u), torch.atan(x),
                F.elu(x), F.elu(x, alpha=0.5), F.selu(x), F.celu(x, alpha=2.0), torch.lgamma(x)]
        outs += [getattr(torch, f)(s) / s for f in NEAR_ZERO]
        outs += [torch.cdist(c1, c2, p=p) for p in (0.0, 1.0, 2.0, 3.0, float("inf"))]
        return tuple(outs)


def make():
    special = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 0.5, -0.5, 88.0, -88.0, 90.0, -90.0, 1e20, -1e20,
               float("inf"), float("-inf"), float("nan")]
    x = torch.cat([torch.linspace(-20, 20, 4001), torch.tensor(special)])
    # |u| <= 1 densely (both ends exactly), then outside the domain.
    u = torch.cat([torch.linspace(-1, 1, 2001), torch.tensor([1.5, -1.5, 1e-30, -0.0, float("inf"), float("nan")])])
    # acosh/log: below 1 (NaN), 1 exactly, near 1, up to 1e30; 0 and negatives for the logs.
    big = torch.cat([torch.tensor([1.0, 1.0 + 1e-6, 1.0001, 0.5, 0.0, -1.0, float("inf"), float("nan")]),
                     torch.logspace(0, 30, 1001)])
    s = torch.cat([torch.logspace(-30, -1, 600), -torch.logspace(-30, -1, 600)])
    c1 = torch.randn(2, 5, 3)
    c2 = torch.cat([c1[:1, :2], torch.randn(1, 4, 3)], dim=1)  # [1, 6, 3]: batch broadcast, rows equal to c1's
    return MathOps(), (x, u, big, s, c1, c2)
