#!/usr/bin/env python3
"""Eager references for `ten.orthogonal_polynomial` (`targets/src/cpu/runtime/special.rs`):
torch.special's Chebyshev polynomials of the four kinds (plain and shifted), Hermite (both
normalizations), Laguerre and Legendre polynomials, in float32 and float64, with either operand
a number.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/polynomial_ops.py:make \\
        -o testdata/cpu/polynomial_ops.pt2

writes polynomial_ops.pt2 and polynomial_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu/mod.rs` (`polynomial_ops_match_eager`) compiles the archive and compares. The
grid crosses x at the kernels' special values (±1, 0 and 1 for the shifted kinds, just beside
them), inside and outside [-1, 1], huge, ±inf and NaN with degrees below 0, 0 and 1, around the
switches to closed forms (4, 6, 8 and one past), fractional (truncated), large enough to
overflow float32, past Hermite's limits (128 for float32, 512 for float64), and NaN/±inf.
"""

import torch

KINDS = [
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]


class PolynomialOps(torch.nn.Module):
    def forward(self, x, n, x64, n64):
        outs = []
        for kind in KINDS:
            f = getattr(torch.special, kind)
            outs += [f(x, n), f(x64, n64), f(x, 3), f(0.25, n)]
        return tuple(outs)


def make():
    xs = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.25, 0.75, 1.0000001, 0.9999999, -0.9999999, 1e-7, 2.0, -3.0, 0.3,
          -0.71, 7.5, 1e20, float("inf"), float("-inf"), float("nan")]
    ns = [-1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 2.7, -0.5, 15.0, 33.0, 100.0, 128.0, 129.0,
          600.0, float("nan"), float("inf"), float("-inf")]
    x = torch.tensor(xs).repeat_interleave(len(ns)).reshape(len(xs), len(ns))
    n = torch.tensor(ns).repeat(len(xs)).reshape(len(xs), len(ns))
    return PolynomialOps().eval(), (x, n, x.double(), n.double())
