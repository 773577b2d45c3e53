#!/usr/bin/env python3
"""Eager references for unfold, index_reduce (prod, mean, amax, amin; with and without self),
hypot (±inf, NaN, zeros, huge and tiny values), ldexp, exp2, narrow_copy, unbind_copy,
as_strided_copy, index_select of a 0-d tensor and cat of legacy empty tensors on the CPU target
and on XLA.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/gather_ops.py:make \\
        -o testdata/cpu/gather_ops.pt2

writes gather_ops.pt2 and gather_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu/mod.rs` (`gather_ops_match_eager`) and the tpu/trainium model tests compile the
archive and compare.
"""

import torch


class GatherOps(torch.nn.Module):
    def forward(self, x, seq, index, source, a, b, e):
        return (
            x.unfold(1, 3, 2), seq.unfold(0, 4, 3), x.unfold(-1, 2, 1),
            torch.index_reduce(x, 0, index, source, "prod"),
            torch.index_reduce(x, 0, index, source, "mean"),
            torch.index_reduce(x, 0, index, source, "amax", include_self=False),
            torch.index_reduce(x, 0, index, source, "amin"),
            torch.hypot(a, b), torch.ldexp(a, e), torch.exp2(b),
            torch.narrow_copy(x, 1, -3, 2), *torch.unbind_copy(x, 1),
            torch.as_strided_copy(seq, (3, 2), (2, 1), 1),
            torch.index_select(seq[4], 0, index[:1] * 0),
            torch.cat([seq[:0], seq[:0]]),
        )


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 6)
    index = torch.tensor([2, 0, 2, 3, 0])
    source = torch.randn(5, 6)
    a = torch.tensor([3.0, 0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, 1e-30, -5.0, 2.5])
    b = torch.tensor([4.0, 0.0, 0.0, float("nan"), 1.0, 2.0, 1e30, 1e-30, 12.0, -7.25])
    e = torch.tensor([2, 0, 1, 3, -1, 4, -100, 100, 5, -3])
    return GatherOps().eval(), (x, torch.randn(11), index, source, a, b, e)
