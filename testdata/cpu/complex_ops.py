#!/usr/bin/env python3
"""Eager references for complex values inside a graph:

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/complex_ops.py:make \\
        -o testdata/cpu/complex_ops.pt2

writes complex_ops.pt2 and complex_ops.npz. Ember imports a complex value as (real, imaginary)
pairs in a trailing dim of 2 and rewrites every op on it into real ops
(compiler/src/frontend/complex.rs); inputs and outputs are real. Covered: RoPE as Llama 4 and
DeepSeek-V2 write it (`polar`, `view_as_complex`, a broadcast complex product, `view_as_real`),
a complex64 buffer (TorchTitan's `freqs_cis`), `complex`, `real`/`imag`/`abs`/`angle`, `conj`,
`exp`, complex +, -, *, / with complex, real-tensor and Python-number operands, casts both ways (with the dtype check torch.export writes),
and the shape ops (reshape, permute, transpose, unsqueeze, squeeze, select, slice, cat, stack,
expand, index), sum/mean with negative dims, casts to bool, `abs` where re² + im² over- or underflows,
and FFTs (complex and real input, one-sided, complex to real, each
normalization, FNet's two-dim mixing) as products with the transform's cos and sin matrices. `tools/tests/cpu/mod.rs`
(`complex_ops_match_eager`) compiles the archive for the CPU and compares;
`tools/python/tests/test_tpu.py` runs it on XLA.
"""

import torch


def rope_cis(positions: torch.Tensor, dim: int) -> torch.Tensor:
    inv = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
    f = torch.outer(positions, inv)
    return torch.polar(torch.ones_like(f), f)


class ComplexOps(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", rope_cis(torch.arange(6).float(), 8))

    def forward(self, x, pos, a, b):
        # x: [2, 6, 3, 8] (batch, seq, heads, head_dim); pos: [6]; a, b: [4, 5]
        xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        rope = torch.view_as_real(xc * rope_cis(pos, 8)[None, :, None, :]).flatten(3)
        buffered = torch.view_as_real(xc * self.freqs_cis[None, :, None, :]).flatten(3)
        z = torch.complex(a, b)
        w = torch.complex(b, a[0])  # broadcast parts
        arith = torch.stack(
            [
                (z * w).real, (z * w).imag, (z / w).real, (z / w).imag,
                (z + a).real, (z - 2.0).imag, (z * 3.0).imag, (z * a).real,
                (2.0 - z).real, (a / z).imag, (z / 4.0).real, (-z).imag,
            ]
        )
        parts = torch.stack([z.abs(), z.angle(), z.conj().imag, torch.exp(z * 0.5).real, torch.exp(z * 0.5).imag])
        zs = z.reshape(2, 2, 5).permute(2, 0, 1).transpose(0, 2).unsqueeze(-1)
        shaped = torch.view_as_real(torch.cat([zs[..., 0], zs[:, :, :1, 0].expand(2, 2, 3)], dim=-1))
        picked = torch.view_as_real(torch.stack([z[1, :4], z[:, 2], z[pos[:2].long()][0, 1:]], dim=-1))
        sums = torch.view_as_real(torch.stack([z.sum(-1), z.mean(dim=-1), z.sum(0)[:4]]))
        casts = torch.view_as_real(a.to(torch.complex64) * z.to(torch.complex64)).sum(-1)
        spectra = (
            torch.view_as_real(torch.fft.fft2(z)),  # complex to complex over two dims
            torch.view_as_real(torch.fft.rfft(a, norm="ortho")),  # real to complex, one-sided
            torch.view_as_real(torch.fft.ifft(torch.fft.fft(a, dim=0), dim=0, norm="forward")),
            torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real,  # FNet's token mixing
            torch.fft.irfft(torch.fft.rfft(a), n=5),  # complex to real, odd length
            torch.fft.irfft2(z[:, :3], s=(4, 4), norm="ortho"),  # two dims, even length
            torch.fft.hfft(z[0, :3], n=4),
        )
        # Non-zero when either part is; |z| where re^2 + im^2 overflows float32, and at 0.
        bools = torch.complex(torch.zeros_like(a), (b > 0).float()).bool()
        big = torch.complex(a * 1e30, b * 1e30).abs() * 1e-30
        tiny = torch.complex(a * 1e-30, b * 1e-30).abs() * 1e30
        zero = torch.complex(a * 0, b * 0).abs()
        return rope, buffered, arith, parts, shaped, picked, sums, casts, z.squeeze(0).real, *spectra, bools, big, tiny, zero


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 3, 8)
    pos = torch.arange(6).float() * 1.5
    a = torch.randn(4, 5)
    b = torch.randn(4, 5)
    return ComplexOps().eval(), (x, pos, a, b), None
