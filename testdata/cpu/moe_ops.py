#!/usr/bin/env python3
"""Eager references for the ops of transformers' default MoE experts (float32, CPU):

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/moe_ops.py:make \\
        -o testdata/cpu/moe_ops.pt2

writes moe_ops.pt2 and moe_ops.npz. `histc` counts tokens per expert (here also on values at
`max`, outside the range and NaN); `transformers::grouped_mm_fallback` multiplies each run of
expert-sorted rows by its expert's weight, rows past the last offset left zero, and is exported
through Ember's decomposition of it (`ember.decompositions.grouped_mm`), so the references are
transformers' own fallback. `tools/tests/cpu/mod.rs` (`moe_ops_match_eager`) and the tpu/trainium
model tests compile the archive and compare.
"""

import torch
import transformers.integrations.moe  # noqa: F401 - registers torch.ops.transformers


class MoeOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 8, 6))

    def forward(self, ids, values, x):
        counts = torch.histc(ids, bins=4, min=0, max=3)
        spread = torch.histc(values, bins=5, min=-1.0, max=1.5)
        offs = torch.cumsum(counts, dim=0, dtype=torch.int32)
        offs = torch.minimum(offs, torch.tensor(9, dtype=torch.int32))  # the last rows past every expert
        return counts, spread, torch.ops.transformers.grouped_mm_fallback(x, self.weight, offs)


def make():
    torch.manual_seed(0)
    ids = torch.tensor([0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0, 3.0])
    values = torch.tensor([-1.0, -0.5, 0.0, 0.49, 0.5, 1.0, 1.5, 1.6, -1.2, float("nan"), 0.999])
    return MoeOps().eval(), (ids, values, torch.randn(11, 8))
