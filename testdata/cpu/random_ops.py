#!/usr/bin/env python3
"""A graph of every random op Ember lowers (`passes/src/lower/random.rs`): rand, randn, the
`_like` forms, uniform, normal (each overload), log_normal, exponential, cauchy, geometric,
bernoulli (tensor and float p), training-mode dropout, randint (each overload), rrelu and multinomial (with and without replacement), over 2^16
elements each.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python testdata/cpu/random_ops.py

writes random_ops.pt2 only: draws have no eager reference to compare with. `tools/tests/cpu/mod.rs`
(`random_ops_draw_their_distributions`) runs the archive with several seeds and checks each
output's moments (or quantile, for Cauchy), its range, that a seed repeats its draws and that
another seed changes them.
"""

from pathlib import Path

import torch

N = 1 << 16


class RandomOps(torch.nn.Module):
    def forward(self, p, ones, m, s, wts):
        aten = torch.ops.aten
        return (
            torch.rand(N),
            torch.randn(N),
            torch.rand_like(p, dtype=torch.float64),
            torch.randn_like(p),
            aten.uniform(p, -2.0, 6.0),
            torch.normal(m, s),
            torch.normal(m, 3.0),
            torch.normal(1.0, s),
            torch.normal(1.0, 3.0, (N,)),
            aten.log_normal(p, 0.0, 0.5),
            aten.exponential(p, 2.0),
            aten.cauchy(p, 1.0, 2.0),
            aten.geometric(p, 0.25),
            torch.bernoulli(p),
            aten.bernoulli.p(p, 0.8),
            torch.nn.functional.dropout(ones, 0.25, training=True),
            torch.randint(3, 9, (N,)),
            torch.randint(7, (N,)),
            torch.randint_like(p, 5),
            torch.rand(N, dtype=torch.bfloat16),
            torch.nn.functional.rrelu(-ones, 0.1, 0.3, training=True),
            torch.multinomial(wts, N, replacement=True),
            torch.multinomial(wts.expand(N, 4), 2),
        )


def make():
    p = torch.full((N,), 0.3)
    return RandomOps().eval(), (p, torch.ones(N), torch.ones(N), torch.full((N,), 3.0), torch.tensor([0.1, 0.0, 0.6, 0.3]))


if __name__ == "__main__":
    model, args = make()
    out = Path(__file__).with_suffix(".pt2")
    torch.export.save(torch.export.export(model, args).run_decompositions(), out)
    print(f"wrote {out}")
