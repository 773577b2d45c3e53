#!/usr/bin/env python3
"""Eager references for complex graph inputs and outputs:

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/complex_io.py:make \\
        -o testdata/cpu/complex_io.pt2

writes complex_io.pt2 and complex_io.npz (complex64 and complex128 arrays). An artifact takes a
complex input and returns a complex output as its real view, (real, imaginary) pairs in a
trailing dim of 2 (the manifest marks it `complex`); `ember run` reads and writes them as
complex arrays. Covered: a complex64 input and a complex128 one, complex outputs of both
widths (an input returned as is, a product, an FFT of a real input, `ihfft2`, which conjugates
with `_conj_physical`), a real output of complex inputs, constant padding of a complex value (by
0, and by a real value, which pads the real part only). `tools/tests/cpu/mod.rs` (`complex_io_matches_eager`) runs it on the CPU,
`tools/python/tests/test_tpu.py` on XLA.
"""

import torch


class ComplexIO(torch.nn.Module):
    def forward(self, z, a, w):
        # z: complex64 [3, 4]; a: float32 [3, 4]; w: complex128 [5]
        padded = (torch.nn.functional.pad(z, (1, 2), value=1.5), torch.nn.functional.pad(z, (0, 1, 1, 0)))
        return z * a + 1.0, torch.fft.fft(a, dim=0), z.abs(), w * w.conj(), z, *padded, torch.fft.ihfft2(a)


def make():
    torch.manual_seed(0)
    z = torch.randn(3, 4, dtype=torch.complex64)
    a = torch.randn(3, 4)
    w = torch.randn(5, dtype=torch.complex128)
    return ComplexIO().eval(), (z, a, w), None
