#!/usr/bin/env python3
"""Eager references for grid_sampler_3d and grid_sampler_2d's reflection padding, antialiased
bilinear resize, embedding_bag (sum, mean, max; all four results), masked_scatter, histc over the
data's range, histogram, angle of reals (±0, ±inf, NaN, integers) and a functional resize
to as many elements on the CPU target and on XLA.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/misc_ops.py:make \\
        -o testdata/cpu/misc_ops.pt2

writes misc_ops.pt2 and misc_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu/mod.rs` (`misc_ops_match_eager`) and the tpu model tests compile the archive
and compare.
"""

import torch
import torch.nn.functional as F

aten = torch.ops.aten


class MiscOps(torch.nn.Module):
    def forward(self, vol, grid3, img, grid2, pic, weight, idx, offsets, psw, flat, mask, row_mask, source, data, same):
        outs = []
        # Grids reach past the input (|g| up to 1.6), so every padding mode matters.
        for mode in ("bilinear", "nearest"):
            for padding in ("zeros", "border", "reflection"):
                for align in (False, True):
                    outs.append(F.grid_sample(vol, grid3, mode=mode, padding_mode=padding, align_corners=align))
        for mode in ("bilinear", "nearest"):
            for align in (False, True):
                outs.append(F.grid_sample(img, grid2, mode=mode, padding_mode="reflection", align_corners=align))
        # Downsampling widens the filter; upsampling and an unchanged dim too.
        outs += [
            F.interpolate(pic, size=(5, 7), mode="bilinear", antialias=True),
            F.interpolate(pic, size=(23, 4), mode="bilinear", antialias=True, align_corners=True),
            F.interpolate(pic, scale_factor=(0.45, 1.7), mode="bilinear", antialias=True),
            F.interpolate(pic, size=(12, 3), mode="bilinear", antialias=True),
        ]
        # Bags [0, 3), [3, 3) (empty), [3, 7), [7, 9); padding row 2; ties, NaN and -inf in `weight`.
        for mode in (0, 1, 2):
            for pad in (-1, 2):
                outs += aten._embedding_bag_forward_only(weight, idx, offsets, False, mode, False, None, False, pad)
            # include_last_offset: the last offset (7) ends the last bag early.
            outs += aten._embedding_bag(weight, idx, offsets, False, mode, False, None, True, -1)
        outs += aten._embedding_bag_forward_only(weight, idx, offsets, False, 0, False, psw, False, 2)
        outs += aten._embedding_bag(weight, idx, offsets, False, 0, False, psw, True, -1)
        outs += [
            torch.masked_scatter(flat, mask, source),
            torch.masked_scatter(flat, row_mask, source),
            torch.histc(data, bins=7),
            torch.histc(same, bins=3),
            torch.histc(data, bins=5, min=-1.0, max=1.0),
            *torch.histogram(data, 6),
            *torch.histogram(same, 4, density=True),
            *torch.histogram(data, 5, range=(-1.0, 1.0), weight=data.abs()),
            *torch.histogram(data, torch.tensor([-2.0, -0.5, 0.0, 0.1, 2.0]), density=True),
            torch.angle(torch.cat([data, -data.abs() * 0.0, data / 0.0])),
            torch.angle(idx - 3),
            torch.ops.aten.resize(flat, [5, 4]),
        ]
        return tuple(outs)


def make():
    torch.manual_seed(0)
    vol = torch.randn(2, 3, 4, 5, 6)
    grid3 = torch.rand(2, 3, 4, 2, 3) * 3.2 - 1.6
    img = torch.randn(2, 3, 5, 7)
    grid2 = torch.rand(2, 4, 6, 2) * 3.2 - 1.6
    pic = torch.randn(2, 3, 11, 9)
    weight = torch.randn(6, 4)
    weight[3] = weight[5]
    weight[1, 0] = float("nan")
    weight[4, 1] = float("-inf")
    weight[0, 1] = float("-inf")
    idx = torch.tensor([1, 2, 3, 0, 4, 2, 5, 3, 1])
    offsets = torch.tensor([0, 3, 3, 7])
    psw = torch.randn(9)
    flat = torch.randn(4, 5)
    mask = torch.rand(4, 5) > 0.5
    row_mask = torch.tensor([True, False, True, True, False])
    source = torch.randn(5, 5)
    data = torch.tensor([-1.0, -0.4, 0.0, 0.1, 0.35, 1.0, 2.5, -3.0, 0.1, 0.7])
    same = torch.full((5,), 2.5)
    return MiscOps().eval(), (vol, grid3, img, grid2, pic, weight, idx, offsets, psw, flat, mask, row_mask, source, data, same)
