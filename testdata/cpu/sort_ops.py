#!/usr/bin/env python3
"""Eager references for sort, argsort, msort and topk on the CPU target (and on XLA through the
tpu target): ascending and descending along every dim, ties (stable order), NaN and infinities,
integers, topk largest and smallest.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/sort_ops.py:make \\
        -o testdata/cpu/sort_ops.pt2

writes sort_ops.pt2 and sort_ops.npz (inputs arg0.., eager outputs out0..); `tools/tests/cpu.rs`
(`sort_ops_match_eager`) compiles the archive for the CPU and compares.
"""

import torch


class SortOps(torch.nn.Module):
    def forward(self, x, ties, n):
        outs = []
        for t in (x, ties, n):
            for dim in range(t.dim()):
                for desc in (False, True):
                    v, i = torch.sort(t, dim=dim, descending=desc, stable=True)
                    outs += [v, i]
        outs.append(torch.argsort(x, dim=-1))
        outs.append(torch.msort(ties))
        for largest in (True, False):
            v, i = torch.topk(x, 3, dim=1, largest=largest)
            outs += [v, i]
        return tuple(outs)


def make():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 7, 5, generator=g)
    x[0, 1, 2] = float("nan")
    x[1, 3, 0] = float("inf")
    x[2, 0, 4] = float("-inf")
    x[3, 2, 1] = float("nan")
    ties = torch.randint(0, 3, (6, 9), generator=g).float()
    ties[2, 2] = -0.0
    n = torch.randint(-5, 5, (3, 11), generator=g)
    return SortOps(), (x, ties, n)
