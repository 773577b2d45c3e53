#!/usr/bin/env python3
"""Eager references for fmax/fmin, copysign, round(decimals), dist, addbmm, searchsorted,
bucketize, cumprod (NaN, zeros, negatives, int64), max/min of every element, training-mode batch norm (the functional forms' running-stat outputs included),
segment_reduce, nonzero_static, pdist and bilinear (_trilinear)
on the CPU target and on XLA, and an input updated in place (a user-input-mutation output).

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/extra_ops.py:make \\
        -o testdata/cpu/extra_ops.pt2

writes extra_ops.pt2 and extra_ops.npz (inputs arg0.., eager outputs out0..); `tools/tests/cpu.rs`
(`extra_ops_match_eager`) compiles the archive for the CPU and compares.
"""

import torch


class ExtraOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm2d(3, momentum=0.2)
        self.bn1d = torch.nn.BatchNorm1d(4, affine=False)

    def forward(self, a, b, seq, vals, b1, b2, img, feats):
        out = (
            torch.fmax(a, b), torch.fmin(a, b), torch.copysign(a, b),
            torch.round(a * 7.3, decimals=2), torch.round(a * 730.0, decimals=-2),
            torch.dist(a, b), torch.dist(a, b, p=1), torch.dist(a, b, p=float("inf")), torch.dist(a, b, p=0), torch.dist(a, b, p=3),
            torch.addbmm(a[:2, :5], b1, b2, beta=0.5, alpha=2.0),
            torch.searchsorted(seq, vals), torch.searchsorted(seq, vals, right=True),
            torch.searchsorted(seq, vals, side="right", out_int32=True),
            torch.bucketize(vals, seq[0]), torch.bucketize(vals, seq[0], right=True),
            self.bn(img), self.bn1d(feats),
            # the functional form's running-stat outputs (a module's are buffer mutations)
            *torch.ops.aten._native_batch_norm_legit_functional(img, None, None, img[0, :, 0, 0], img[1, :, 1, 1].abs(), True, 0.3, 1e-3),
            *torch.ops.aten._native_batch_norm_legit.no_stats(feats, None, None, True, 0.1, 1e-5),
            torch.cumprod(a, dim=1), torch.cumprod(b1, dim=0), torch.cumprod(seq[:, :6].round().long(), dim=1),
            # max/min of every element (NaN-propagating; int64)
            torch.max(a), torch.max(b1), torch.min(b1), torch.max(seq[:, :6].round().long()), torch.min(seq.round().long()),
            # segment_reduce: every kind, with and without `initial`, an empty segment, a NaN
            # (a[0, 0]), offsets starting past 0, 2-D data (segments along dim 0)
            *(torch.segment_reduce(a[0], r, lengths=torch.tensor([2, 0, 3, 1]), initial=i)
              for r in ("sum", "prod", "mean", "max", "min") for i in (None, 1.5)),
            torch.segment_reduce(a[1], "mean", offsets=torch.tensor([1, 3, 3, 6])),
            torch.segment_reduce(b.T.contiguous(), "max", lengths=torch.tensor([1, 2, 3])),
            # nonzero_static: padded past the count (NaN is nonzero), truncated, a custom fill
            torch.nonzero_static(a, size=30), torch.nonzero_static(b1 > 0, size=3, fill_value=7),
            # pdist (every p form; a repeated row gives 0) and bilinear (_trilinear)
            *(torch.nn.functional.pdist(torch.cat([feats, feats[:1]]), p) for p in (0.0, 1.0, 2.0, 3.0, float("inf"))),
            torch.nn.functional.bilinear(feats[:, :3], seq[:8, :5].repeat(2, 1)[:8], img[:, :, :, :5].reshape(6, 5, 5)[:, :3], seq[0, :6]),
        )
        # An in-place update of an input: `ember run` writes it as mutated_input.vals.
        vals.mul_(2.0)
        return out


def make():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(4, 6, generator=g)
    b = torch.randn(4, 6, generator=g)
    a[0, 0], b[0, 1], a[1, 1], b[1, 1] = float("nan"), float("nan"), float("nan"), float("nan")
    b[2, 0], b[2, 1], a[3, 3] = -0.0, 0.0, b[3, 3]
    seq = torch.sort(torch.randn(4, 10, generator=g), dim=-1).values
    vals = torch.randn(4, 7, generator=g)
    vals[0, :3] = seq[0, 2:5]  # exact hits: left and right differ
    vals[1, 0] = float("nan")
    b1, b2 = torch.randn(3, 2, 4, generator=g), torch.randn(3, 4, 5, generator=g)
    img = torch.randn(2, 3, 5, 5, generator=g) * 2.0 + 1.0
    feats = torch.randn(8, 4, generator=g)
    m = ExtraOps().train()
    return m, (a, b, seq, vals, b1, b2, img, feats)
