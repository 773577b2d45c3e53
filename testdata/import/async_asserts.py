#!/usr/bin/env python3
"""Tensor assertions the import proves (compiler/src/frontend/asserts.rs):

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/import/async_asserts.py:make \\
        -o testdata/import/async_asserts.pt2

`import/async_asserts.mlir` imports the archive: one_hot checks its classes with
`_assert_async.msg` over the data (`logical_not(any(logical_not(x >= 0)))` and `x < num_classes`),
which an argmax over 4 classes satisfies, so the checks leave nothing behind.
`tools/tests/bad_input.rs` (`unprovable_async_assert`) edits num_classes in the check to 3, which
the import cannot prove and refuses.
"""

import torch


class AsyncAsserts(torch.nn.Module):
    def forward(self, scores):
        return torch.nn.functional.one_hot(scores.argmax(dim=1), 4)


def make():
    torch.manual_seed(0)
    return AsyncAsserts().eval(), (torch.randn(3, 4),)
