#!/usr/bin/env python3
"""Eager references for `aten.as_strided` on computed values:

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/strided_ops.py:make \\
        -o testdata/cpu/strided_ops.pt2

writes strided_ops.pt2 and strided_ops.npz (inputs arg0.., eager outputs out0..). The pooling
of a channels-last tensor decomposes to `mean` + `as_strided` (how ConvNeXt and Swin end), and an
explicit `as_strided` reads a value whose eager layout is transposed (an elementwise op keeps its
input's strides), so its storage order is not its row-major order. `tools/tests/cpu/mod.rs`
(`strided_ops_match_eager`) and the tpu/trainium model tests compile the archive and compare.
"""

import torch


class StridedOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.ln = torch.nn.LayerNorm(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x, m):
        y = self.ln(self.conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        pooled = self.fc(torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1))
        t = m.transpose(0, 1) * 2.0
        return pooled, torch.as_strided(t, (3, 2), (1, 4), 1)


def make():
    torch.manual_seed(0)
    return StridedOps().eval(), (torch.randn(2, 3, 8, 8), torch.randn(4, 5))
