"""Ember's NKI reference interpreter (`ember.nki_interp`, not AWS's simulator): instruction
semantics against numpy, and the hardware limits it enforces at run time.

The `nki` backend runs the same kernels through AWS's `nki.simulate` where the real package is
importable; here it is not (the `nki` name on the package index is an empty placeholder), so
those cases are skipped, never passed.
"""

from __future__ import annotations

import numpy as np
import pytest

from ember import nki_interp
from ember.nki_interp import NkiLimitError, NkiSubsetError, load_kernel

BACKENDS = ["interp", "nki"]

TILED_MATMUL = '''
import nki
import nki.language as nl
import nki.isa as nisa

@nki.jit
def tiled_matmul(a_t, b):
    """out[M, N] = a_t.T @ b with a_t [K, M] (K, M multiples of 128 or ragged) and b [K, N]."""
    K, M = a_t.shape
    N = b.shape[1]
    out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    st = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
    mv = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    res = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for m0 in nl.affine_range((M + 127) // 128):
        mp = min(128, M - m0 * 128)
        for n0 in nl.affine_range((N + 511) // 512):
            nf = min(512, N - n0 * 512)
            for k0 in range((K + 127) // 128):
                kp = min(128, K - k0 * 128)
                nisa.dma_copy(dst=st[0:kp, 0:mp], src=a_t[k0 * 128:k0 * 128 + kp, m0 * 128:m0 * 128 + mp])
                nisa.dma_copy(dst=mv[0:kp, 0:nf], src=b[k0 * 128:k0 * 128 + kp, n0 * 512:n0 * 512 + nf])
                nisa.nc_matmul(acc[0:mp, 0:nf], st[0:kp, 0:mp], mv[0:kp, 0:nf], accumulate=k0 > 0)
            nisa.tensor_copy(dst=res[0:mp, 0:nf], src=acc[0:mp, 0:nf])
            nisa.dma_copy(dst=out[m0 * 128:m0 * 128 + mp, n0 * 512:n0 * 512 + nf], src=res[0:mp, 0:nf])
    return out
'''


def kernel(source: str, backend: str):
    if backend == "nki":
        if not nki_interp.real_nki():
            pytest.skip("AWS's nki package is not importable here (no Neuron SDK): nki.simulate not run")
        return load_kernel(source, use_real_nki=True, name=source.split("def ")[1].split("(")[0])
    return load_kernel(source)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k,m,n", [(128, 128, 512), (300, 200, 700), (1, 3, 5)])
def test_tiled_matmul(backend: str, k: int, m: int, n: int) -> None:
    rng = np.random.default_rng(k * 7 + m + n)
    a_t = rng.standard_normal((k, m), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    got = kernel(TILED_MATMUL, backend)(a_t, b)
    np.testing.assert_allclose(got, a_t.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def run(body: str, *args: np.ndarray):
    src = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n\n@nki.jit\ndef k(x):\n" + "".join(
        "    " + line + "\n" for line in body.strip().splitlines()
    )
    return load_kernel(src)(*args)


def test_engine_instructions() -> None:
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 3
    out = run(
        """
out = nl.ndarray((3, 4), nl.float32, buffer=nl.shared_hbm)
t = nl.ndarray((3, 4), nl.float32, buffer=nl.sbuf)
u = nl.ndarray((3, 4), nl.float32, buffer=nl.sbuf)
m = nl.ndarray((3, 1), nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=t, src=x)
nisa.tensor_reduce(dst=m, op=nl.max, data=t, axis=1, negate=True, keepdims=True)
nisa.activation(dst=u, op=nl.exp, data=t, bias=m, scale=2.0)
nisa.tensor_scalar(dst=u, data=u, op0=nl.multiply, operand0=m, op1=nl.subtract, operand1=1.0, reverse1=True)
nisa.tensor_tensor(dst=u, data1=u, data2=t, op=nl.add)
nisa.dma_copy(dst=out, src=u)
return out
""",
        x,
    )
    negmax = -x.max(axis=1, keepdims=True)
    want = (1.0 - np.exp(x * 2 + negmax) * negmax) + x
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_transpose_and_broadcast_by_matmul() -> None:
    x = np.random.default_rng(0).standard_normal((5, 7), dtype=np.float32)
    out = run(
        """
out = nl.ndarray((7, 5), nl.float32, buffer=nl.shared_hbm)
t = nl.ndarray((5, 7), nl.float32, buffer=nl.sbuf)
p = nl.ndarray((7, 5), nl.float32, buffer=nl.psum)
s = nl.ndarray((7, 5), nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=t, src=x)
nisa.nc_transpose(dst=p, data=t)
nisa.tensor_copy(dst=s, src=p)
nisa.dma_copy(dst=out, src=s)
return out
""",
        x,
    )
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize(
    "body,error,match",
    [
        ("t = nl.ndarray((129, 4), nl.float32, buffer=nl.sbuf)", NkiLimitError, "partition dim 129 > 128"),
        ("t = nl.ndarray((128, 513), nl.float32, buffer=nl.psum)", NkiLimitError, "2052 bytes per partition > one bank"),
        ("ts = [nl.ndarray((128, 512), nl.float32, buffer=nl.psum) for _ in range(9)]", NkiLimitError, "9 banks in use > 8"),
        ("a = nl.ndarray((128, 50000), nl.float32, buffer=nl.sbuf)\nb = nl.ndarray((128, 3247), nl.float32, buffer=nl.sbuf)",
         NkiLimitError, "212988 bytes per partition in use > 212984"),
        ("s = nl.ndarray((128, 129), nl.float32, buffer=nl.sbuf)\nm = nl.ndarray((128, 8), nl.float32, buffer=nl.sbuf)\n"
         "p = nl.ndarray((129, 8), nl.float32, buffer=nl.psum)\nnisa.nc_matmul(p, s, m)", NkiLimitError, "partition dim 129"),
        ("s = nl.ndarray((128, 129), nl.float32, buffer=nl.sbuf)\nm = nl.ndarray((128, 8), nl.float32, buffer=nl.sbuf)\n"
         "p = nl.ndarray((128, 8), nl.float32, buffer=nl.psum)\nnisa.nc_matmul(p, s, m)", NkiLimitError, "out of Tensor Engine limits"),
        ("t = nl.ndarray((4, 4), nl.float32, buffer=nl.sbuf)\nnisa.dma_copy(dst=t, src=x[0:5, 0:4])", NkiLimitError, "out of bounds"),
        ("t = nl.ndarray((4, 4), nl.float32, buffer=nl.sbuf)\nnisa.tensor_reduce(dst=t, op=nl.add, data=t, axis=0)",
         NkiSubsetError, "last contiguous free dims"),
        ("nisa.dma_transpose(x, x)", NkiSubsetError, "outside Ember's NKI subset"),
    ],
)
def test_limits_enforced(body: str, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        run(body + "\nreturn x", np.zeros((4, 4), np.float32))


def test_uninitialized_reads_are_nan() -> None:
    out = run(
        """
out = nl.ndarray((2, 2), nl.float32, buffer=nl.shared_hbm)
t = nl.ndarray((2, 2), nl.float32, buffer=nl.sbuf)
nisa.dma_copy(dst=out, src=t)
return out
""",
        np.zeros((2, 2), np.float32),
    )
    assert np.isnan(out).all()
