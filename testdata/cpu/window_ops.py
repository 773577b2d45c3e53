#!/usr/bin/env python3
"""Eager references for the CPU target's sliding-window, scan and arg-reduction lowerings.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/window_ops.py:make \\
        -o testdata/cpu/window_ops.pt2

writes window_ops.pt2 and window_ops.npz (inputs arg0.., eager outputs out0..). The inputs
include ties and NaNs for the arg-reductions and max pooling (values and indices; adaptive max
pooling with ties only: with two NaNs in one window torch's index is the last, Ember's the first); `tools/tests/cpu.rs`
(`window_ops_match_eager`) compiles the archive for the CPU and compares.
"""

import torch
import torch.nn.functional as F


class WindowOps(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.dil = torch.nn.Conv2d(3, 2, 3, dilation=2, padding=2, bias=False)
        self.grouped = torch.nn.Conv2d(4, 6, (3, 2), groups=2, padding=(1, 0))
        self.conv1d = torch.nn.Conv1d(3, 2, 3, stride=2, padding=1)
        self.pointwise = torch.nn.Conv2d(3, 5, 1)
        self.bn = torch.nn.BatchNorm2d(3)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.tensor([0.5, -0.25, 1.0]))
            self.bn.running_var.copy_(torch.tensor([2.0, 0.5, 1.5]))
            self.bn.weight.copy_(torch.tensor([1.5, -0.5, 0.75]))
            self.bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))

    def forward(self, x, t, s):
        # x: [2, 3, 7, 7] images; t: [3, 5] with ties and NaNs; s: [2, 6] sequence values
        g = self.grouped(torch.cat([x, x[:, :1] * 2.0], dim=1))
        return (
            self.conv(x),
            self.dil(x),
            g,
            self.conv1d(s.reshape(2, 3, 4)),
            self.bn(x),
            F.max_pool2d(x, 3, stride=2, padding=1),
            F.max_pool2d(x, 2, ceil_mode=True),
            F.max_pool2d(x, 2, stride=1, dilation=2),
            F.avg_pool2d(x, 3, stride=2, padding=1),
            F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
            F.avg_pool2d(x, 2, ceil_mode=True),
            F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, divisor_override=4),
            F.adaptive_avg_pool2d(x, (3, 2)),
            F.adaptive_avg_pool2d(x, 1),
            F.pad(x, (1, 2, 0, 1), value=-0.5),
            F.pad(s, (-1, 2)),
            torch.cumsum(s, 0),
            torch.cumsum(s, 1),
            torch.cumsum(s > 0, 1),
            torch.argmax(t, 1),
            torch.argmin(t, 0),
            torch.argmax(t),
            torch.max(t, 1),
            torch.min(t, 1, keepdim=True),
            torch.max(x, 3),
            F.max_pool2d(t.reshape(1, 1, 3, 5), 2, ceil_mode=True),
            self.pointwise(x),
            self.pointwise(x[1:]),
            # max pooling's indices (flat positions in the input plane; ties keep the first)
            *F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True),
            *F.max_pool2d(x, 2, stride=1, dilation=2, return_indices=True),
            *F.max_pool2d(t.reshape(1, 1, 3, 5), 2, ceil_mode=True, return_indices=True),
            *F.max_pool1d(s.reshape(2, 3, 4), 2, return_indices=True),
            *F.max_pool3d(x[:, :, None].expand(2, 3, 2, 7, 7) * 1.0, (2, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1), return_indices=True),
            # adaptive max pooling: windows that overlap (7 -> 4, 5), ties (rounded values keep the first)
            *F.adaptive_max_pool2d(x, (3, 2), return_indices=True),
            *F.adaptive_max_pool2d(torch.round(x), (4, 5), return_indices=True),
            *F.adaptive_max_pool1d(s.reshape(2, 3, 4), 3, return_indices=True),
            *F.adaptive_max_pool3d(x[:, :, None].expand(2, 3, 2, 7, 7) * 1.0, (1, 3, 4), return_indices=True),
        )


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, 7)
    t = torch.tensor(
        [
            [1.0, 3.0, 3.0, -2.0, 0.0],
            [float("nan"), 2.0, float("nan"), 5.0, -1.0],
            [-4.0, -4.0, 7.0, 7.0, -4.0],
        ]
    )
    s = torch.randn(2, 12)
    return WindowOps(), (x, t, s)
