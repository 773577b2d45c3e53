#!/usr/bin/env python3
"""Eager references for sort, argsort, msort, topk, median, nanmedian and kthvalue on the CPU
target (and on XLA through the tpu target), and cummax/cummin: ascending and descending along
every dim, ties (stable order), NaN and infinities, integers, topk largest and smallest.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/sort_ops.py:make \\
        -o testdata/cpu/sort_ops.pt2

writes sort_ops.pt2 and sort_ops.npz (inputs arg0.., eager outputs out0..); `tools/tests/cpu.rs`
(`sort_ops_match_eager`) compiles the archive for the CPU and compares.
"""

import torch


class SortOps(torch.nn.Module):
    def forward(self, x, ties, n, m):
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
        # Order statistics: a NaN makes the median NaN (its index the first NaN's); nanmedian
        # skips NaNs (all-NaN rows give NaN); kthvalue counts NaN as largest. Ties only where
        # torch's quickselect and a stable order agree on the index.
        outs += [*torch.median(m, 1), *torch.nanmedian(m, 1, keepdim=True), torch.median(m), torch.nanmedian(m)]
        outs += [*torch.kthvalue(m[[0, 1, 4]], 2, 1), *torch.kthvalue(m, 5, 1), *torch.kthvalue(x, 3, 0)]
        outs += [*torch.median(n, 1), *torch.median(x, 2), torch.median(n), torch.nanmedian(ties)]
        # Running extremes: ties move the index to the later element; NaN sticks, at the
        # latest NaN's index.
        outs += [*torch.cummax(x, 1), *torch.cummin(x, 2), *torch.cummax(ties, 1), *torch.cummin(n, 1), *torch.cummax(m, 1)]
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
    nan = float("nan")
    m = torch.tensor(
        [[3.0, 1.0, 2.0, 1.0, 2.0], [nan, 1.0, nan, 0.0, 5.0], [nan] * 5, [2.0] * 5, [1.0, nan, 0.0, nan, 2.0]]
    )
    return SortOps(), (x, ties, n, m)
