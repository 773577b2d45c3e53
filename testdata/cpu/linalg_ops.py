#!/usr/bin/env python3
"""Eager references for torch.linalg on the CPU target: Cholesky (both triangles, info of a
matrix that is not positive-definite), LU (square, wide, tall, a singular matrix's info, P/L/U),
solves (LU, triangular from both sides, Cholesky, vector right-hand sides), inv, det and slogdet
(a singular matrix: 0 and -inf), QR (reduced, complete, tall and wide), geqrf/orgqr/ormqr,
eigenvalues and singular values and what is unique of their vectors (V·diag(w)·Vᵀ, U·diag(S)·Vh,
projectors), pinv, matrix_rank, cond, the nuclear and spectral norms, polar and
matrix_sqrth, in float32 and float64 over batches.

    PYTHONPATH=tools/python/python TMPDIR=/tmp/ember-tmp \\
        ~/.cache/ember/venv/bin/python -m ember.export testdata/cpu/linalg_ops.py:make \\
        -o testdata/cpu/linalg_ops.pt2

writes linalg_ops.pt2 and linalg_ops.npz (inputs arg0.., eager outputs out0..);
`tools/tests/cpu` (`linalg_ops_match_eager`) compiles the archive for the CPU and compares.
"""

import torch

L = torch.linalg


class LinalgOps(torch.nn.Module):
    def forward(self, spd, sq, rect, tall, b, spd64, sq64, sing, notpd):
        outs = []
        outs += [L.cholesky(spd), L.cholesky(spd, upper=True), L.cholesky(spd64)]
        outs += [L.cholesky_ex(notpd).info]  # L is unspecified where the factorization fails
        lu, piv, info = L.lu_factor_ex(sq)
        outs += [lu, piv, info]
        outs += list(L.lu_factor_ex(sing))
        outs += list(L.lu_factor_ex(rect)) + list(L.lu_factor_ex(tall))
        outs += list(L.lu(rect)) + list(L.lu(tall)) + list(torch.lu_unpack(lu, piv))
        outs += [L.lu_solve(lu, piv, b), L.lu_solve(lu, piv, b, adjoint=True)]
        outs += [L.lu_solve(lu, piv, b.mT, left=False)]
        outs += [L.inv(sq), L.inv(sq64), L.det(sq), L.det(sing), L.det(sq64)]
        outs += list(L.slogdet(sq)) + list(L.slogdet(sing))
        outs += [L.solve(sq, b), L.solve(sq, b[..., 0]), L.solve(sq, b.mT, left=False)]
        outs += [L.solve_triangular(sq.triu(), b, upper=True)]
        outs += [L.solve_triangular(sq.tril(), b.mT, upper=False, left=False)]
        outs += [L.solve_triangular(sq.tril(), b, upper=False, unitriangular=True)]
        outs += [torch.cholesky_solve(b, L.cholesky(spd)), torch.cholesky_inverse(L.cholesky(spd, upper=True), upper=True)]
        outs += list(L.qr(tall)) + list(L.qr(rect)) + list(L.qr(tall, mode="complete")) + [L.qr(sq64, mode="r")[1]]
        a, tau = torch.geqrf(tall)
        outs += [a, tau, L.householder_product(a, tau), torch.ormqr(a, tau, tall[..., :2], transpose=True), torch.ormqr(a, tau, tall.mT, left=False)]
        w, v = L.eigh(spd)
        outs += [w, v @ torch.diag_embed(w) @ v.mT, L.eigvalsh(sq64 + sq64.mT, UPLO="U")]
        u, s, vh = L.svd(rect, full_matrices=False)
        outs += [s, u @ torch.diag_embed(s) @ vh, u @ u.mT, L.svdvals(tall), L.svdvals(sq64)]
        outs += [L.pinv(tall), L.pinv(spd, hermitian=True), L.pinv(sing)]
        outs += [L.matrix_rank(sing), L.cond(sq), L.matrix_norm(sq, "nuc"), L.matrix_norm(sq64, 2)]
        outs += list(L.polar(tall)) + [L.matrix_sqrth(spd), L.matrix_sqrth(spd64)]
        return tuple(outs)


def make():
    g = torch.Generator().manual_seed(0)
    sq = torch.randn(2, 4, 4, generator=g)
    spd = sq @ sq.mT + 4 * torch.eye(4)
    rect = torch.randn(2, 3, 5, generator=g)
    tall = torch.randn(2, 5, 3, generator=g)
    b = torch.randn(2, 4, 2, generator=g)
    sq64 = torch.randn(3, 3, generator=g, dtype=torch.float64)
    spd64 = sq64 @ sq64.mT + torch.eye(3, dtype=torch.float64)
    sing = torch.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    notpd = torch.stack([torch.eye(3), torch.tensor([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])])
    return LinalgOps(), (spd, sq, rect, tall, b, spd64, sq64, sing, notpd)
