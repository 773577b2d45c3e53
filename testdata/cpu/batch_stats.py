#!/usr/bin/env python3
"""Reductions over a dynamic batch (mean, var, max, softmax over dim 0):

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/batch_stats.py:make \\
        -o testdata/cpu/batch_stats.pt2

writes batch_stats.pt2 and batch_stats.npz (batch 5 of the range [2, 16]). The tpu and trainium
targets run the batch as padded buckets, which these reductions must not see: their padding is
masked against the true size. `tools/python/tests/test_tpu.py`
(`test_batch_reductions_at_several_sizes`) runs one compile at several sizes.
"""

import torch


class BatchStats(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 6)

    def forward(self, x):
        h = self.fc(x)
        h = h - h.mean(0, keepdim=True)
        return torch.softmax(h, dim=0) + h.amax(0) + h.sum(0) / h.var(0)


def make():
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=2, max=16)
    return BatchStats().eval(), (torch.randn(5, 4),), {"x": {0: batch}}
