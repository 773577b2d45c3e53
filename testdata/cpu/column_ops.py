#!/usr/bin/env python3
"""Eager references for reductions that keep the last dim (column reductions):

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/column_ops.py:make \\
        -o testdata/cpu/column_ops.pt2

writes column_ops.pt2 and column_ops.npz (batch 6 of the range [2, 32]). The CPU target computes
these with the output row as the accumulator (`column_reduce` in targets/src/cpu/codegen/rows.rs):
sums over leading dims (a bias gradient), over a middle dim with kept outer dims, of an inlined
expression (a LayerNorm weight gradient), max/min with a NaN, prod, an int64 sum, a kept dim
shorter than 8 (the per-element loop), a batch norm's statistics over a channels-last tensor
read as NCHW (the kept dim is the one memory runs along, not the last), and a value computed from
that tensor and read by several reductions, which the CPU target stores channels-last
(`layout::decide` in targets/src/cpu/layout.rs). `tools/tests/cpu/mod.rs` (`column_ops_match_eager`)
compiles the archive and compares.
"""

import torch


class ColumnOps(torch.nn.Module):
    def forward(self, x, dy, k, img):
        # x, dy: [batch, 7, 40]; k: [batch, 40] int64; img: [batch, 5, 6, 16] (NHWC)
        bias_grad = dy.sum((0, 1))
        mid = x.sum(1)  # [batch, 40]: outer dim kept
        xhat = (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True) + 1e-5)
        weight_grad = (dy * xhat).sum((0, 1))
        top = x.amax(0)  # [7, 40]
        low = x.amin((0, 1))
        prod = (1.0 + 0.01 * x).prod(0)
        ints = k.sum(0)
        short = x[..., :5].sum((0, 1))
        nchw = img.permute(0, 3, 1, 2)
        mean = nchw.mean((0, 2, 3))
        var = ((nchw - mean[None, :, None, None]) ** 2).sum((0, 2, 3))
        e = torch.tanh(torch.exp(nchw * 0.5) + torch.sin(nchw)) * torch.cos(nchw) + torch.erf(nchw)
        stored = (e.sum((0, 2, 3)), e.amax((0, 2, 3)), (e * nchw).sum((0, 2, 3)))
        return bias_grad, mid, weight_grad, top, low, prod, ints, short, mean, var, *stored


def make():
    torch.manual_seed(0)
    x = torch.randn(6, 7, 40)
    x[2, 3, 11] = float("nan")
    dy = torch.randn(6, 7, 40)
    k = torch.randint(-1000, 1000, (6, 40))
    img = torch.randn(6, 5, 6, 16)
    batch = torch.export.Dim("batch", min=2, max=32)
    return ColumnOps().eval(), (x, dy, k, img), {"x": {0: batch}, "dy": {0: batch}, "k": {0: batch}, "img": {0: batch}}
