#!/usr/bin/env python3
"""Runtime assertions the import proves (compiler/src/frontend/asserts.rs):

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/import/asserts.py:make \\
        -o testdata/import/asserts.pt2

`import/asserts.mlir` imports the archive: the `_assert_scalar` nodes leave nothing behind.
FlauBERT and XLM assert `lengths.max().item() <= slen` where `lengths` counts the non-pad tokens
of each row (a sum of bools over a dim of 8: within [0, 8]); `torch._check` on a count, and on a
max of bools. `tools/tests/bad_input.rs` (`unprovable_assert`) edits the bound to 7, which the
import cannot prove and refuses.
"""

import torch


class Asserts(torch.nn.Module):
    def forward(self, ids, x):
        lengths = (ids != 0).sum(dim=1)  # [batch], each within [0, 8]
        assert lengths.max().item() <= ids.shape[1]
        torch._check(lengths.min().item() >= 0)
        torch._check((ids > 2).int().amax().item() < 2)
        return x * lengths[:, None].float()


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 5, (3, 8))
    x = torch.randn(3, 4)
    batch = torch.export.Dim("batch", min=2, max=16)
    return Asserts().eval(), (ids, x), {"ids": {0: batch}, "x": {0: batch}}
