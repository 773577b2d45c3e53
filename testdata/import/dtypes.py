#!/usr/bin/env python3
"""Every float dtype torch.export writes, and the ops whose result dtype torch sets per op:

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/import/dtypes.py:make \\
        -o testdata/import/dtypes.pt2

`import/dtypes.mlir` imports the archive (a snapshot of the types Ember's rules give):
float16/bfloat16 norm statistics (a CPU export keeps the input's dtype), `var_mean`,
index outputs (int64), float64
arithmetic, and the float8 types as storage and casts.
"""

import torch
import torch.nn.functional as F


class Dtypes(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(8).to(torch.bfloat16)
        self.gn = torch.nn.GroupNorm(2, 4).to(torch.float16)
        self.bn = torch.nn.BatchNorm1d(4).to(torch.bfloat16).eval()

    def forward(self, h, b, d, c):
        outs = [self.ln(b), self.gn(c), self.bn(b[:, :4])]
        var, mean = torch.var_mean(h, dim=1)
        outs += [var, mean, F.softmax(b, dim=-1)]
        vals, idx = torch.max(b, dim=1)
        outs += [vals, idx, torch.argmax(h, dim=0), torch.sort(b, dim=1).indices]
        outs += [d * 2.5 + d.sin(), (d.sum() / 3).to(torch.float32), h.to(torch.bfloat16) + b]
        e4 = b.to(torch.float8_e4m3fn)
        e5 = h.to(torch.float8_e5m2)
        outs += [e4, e5, e4.to(torch.float32) + e5.to(torch.float32)]
        return tuple(outs)


def make():
    torch.manual_seed(0)
    h = torch.randn(4, 8).to(torch.float16)
    b = torch.randn(4, 8).to(torch.bfloat16)
    d = torch.randn(4, 8, dtype=torch.float64)
    c = torch.randn(2, 4, 3).to(torch.float16)
    return Dtypes(), (h, b, d, c)
