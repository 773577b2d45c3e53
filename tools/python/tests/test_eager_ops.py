"""``ember.eager()`` on the ops it records or decomposes (GEMM layouts, attention, convolution,
pooling and normalization backward, value-dependent shapes), against torch eager."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

import ember
from ember import deferred

from eager_common import ATOL, RTOL, TorchEager, check_masked_gradients, train_steps


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gemm_layouts_on_the_host_blas(dtype: torch.dtype) -> None:
    # Inside a torch process the runtime's GEMMs run on torch's BLAS: every operand layout
    # (row- or column-major lhs and rhs), batched and broadcast products, and products split
    # over the pool by rows (m > n) or by columns, sizes not multiples of the 16-wide blocks.
    assert ember._native().host_blas(), "torch's BLAS was not registered with the CPU runtime"
    torch.manual_seed(0)
    cases = [
        lambda a, b, c: a @ b,  # m > n: split by rows
        lambda a, b, c: a.t() @ b,
        lambda a, b, c: a @ c.t(),
        lambda a, b, c: a.t() @ c.t(),
        lambda a, b, c: torch.stack([a, a * 2]) @ b,  # rhs broadcast over the batch
        lambda a, b, c: torch.bmm(torch.stack([a, -a]), torch.stack([b, b + 1])),
        lambda a, b, c: torch.stack([a, -a]).transpose(1, 2) @ torch.stack([c, c]).transpose(1, 2),
        lambda a, b, c: b.t() @ a.t(),  # n > m: split by columns
    ]
    a, b, c = torch.randn(150, 150, dtype=dtype), torch.randn(150, 70, dtype=dtype), torch.randn(70, 150, dtype=dtype)
    for i, f in enumerate(cases):
        want = f(a, b, c)
        with torch.no_grad(), ember.eager():
            got = f(a + 0, b + 0, c + 0).cpu()
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4, msg=lambda m: f"case {i}: {m}")


def test_gemm_crate_splits_over_torchs_openmp_team() -> None:
    # Without torch's BLAS (EMBER_HOST_BLAS=0; a torch build without MKL) products run on the
    # gemm crate, in blocks over torch's OpenMP team (its own rayon threads would contend with the
    # team's spinning ones): rows or columns, transposed operands, a batch.
    code = """
import torch, ember
from ember import deferred
assert not ember._native().host_blas()
torch.manual_seed(0)
a, b, c = torch.randn(300, 300), torch.randn(300, 150), torch.randn(150, 300)
cases = [lambda: a @ b, lambda: b.t() @ a, lambda: a @ c.t(), lambda: torch.stack([a, -a]) @ b]
for i, f in enumerate(cases):
    want = f()
    with torch.no_grad(), ember.eager():
        got = f().cpu()
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-3, msg=lambda m: f"case {i}: {m}")
"""
    env = {**os.environ, "EMBER_HOST_BLAS": "0"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


def test_attention_matches_eager_with_its_layouts() -> None:
    # scaled_dot_product_attention is recorded by Ember's own decomposition: the output is laid
    # out as q (the CPU kernel's `empty_like`) and the log-sum-exp matches the kernel's.
    torch.manual_seed(0)
    qkv = torch.randn(2, 9, 3 * 12)
    sdpa = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    for causal in (False, True):
        qs = [t.view(2, 9, 3, 4).transpose(1, 2) for t in qkv.split(12, dim=2)]
        want = sdpa(*qs, is_causal=causal)
        with torch.no_grad(), ember.eager():
            x = qkv + 0
            got = sdpa(*[t.view(2, 9, 3, 4).transpose(1, 2) for t in x.split(12, dim=2)], is_causal=causal)
            got = [t.cpu() for t in got]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)
            assert g.stride() == w.stride()
        # The backward from the saved output and log-sum-exp, with the kernel's gradient layout.
        grad = torch.randn(2, 3, 9, 4)
        want = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(grad, *qs, *want, 0.0, causal)
        with torch.no_grad(), ember.eager():
            x = qkv + 0
            qd = [t.view(2, 9, 3, 4).transpose(1, 2) for t in x.split(12, dim=2)]
            out = sdpa(*qd, is_causal=causal)
            got = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(grad + 0, *qd, *out, 0.0, causal)
            got = [t.cpu() for t in got]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
            assert g.stride() == w.stride()


@pytest.mark.parametrize(
    "x_shape,w_shape,stride,padding,dilation,transposed,output_padding,groups",
    [
        ((2, 3, 9, 9), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
        ((2, 3, 10, 9), (5, 3, 3, 2), [2, 2], [1, 0], [1, 1], False, [0, 0], 1),
        ((1, 2, 11, 11), (3, 2, 3, 3), [2, 3], [2, 1], [2, 1], False, [0, 0], 1),
        ((2, 4, 7), (6, 4, 3), [2], [1], [1], False, [0], 1),
        ((1, 2, 5, 6, 6), (2, 2, 2, 3, 3), [1, 2, 1], [0, 1, 1], [1, 1, 2], False, [0, 0, 0], 1),
        # grouped, depthwise (with a channel multiplier), transposed (grouped, output padding)
        ((2, 6, 9, 8), (4, 3, 3, 3), [2, 1], [1, 1], [1, 2], False, [0, 0], 2),
        ((2, 4, 8, 8), (8, 1, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 4),
        ((2, 4, 5, 6), (4, 3, 3, 2), [2, 2], [1, 0], [1, 1], True, [1, 0], 1),
        ((1, 6, 4, 5), (6, 2, 3, 3), [2, 3], [1, 1], [2, 1], True, [1, 2], 3),
        ((2, 4, 7), (4, 2, 4), [3], [1], [1], True, [2], 2),
    ],
)
def test_convolution_backward_is_recorded(x_shape, w_shape, stride, padding, dilation, transposed, output_padding, groups) -> None:
    # Convolutions' gradients are recorded as convolutions (plain: the input's a transposed conv
    # with the output padding that restores its size, the weight's a conv over the batch with
    # stride and dilation exchanged, cut to the kernel; transposed: the roles of the input and
    # the gradient exchanged), each gradient only when output_mask asks for it.
    torch.manual_seed(0)
    cb = torch.ops.aten.convolution_backward.default
    x, w = torch.randn(x_shape), torch.randn(w_shape)
    g = torch.randn(torch.ops.aten.convolution(x, w, None, stride, padding, dilation, transposed, output_padding, groups).shape)
    bias = [g.shape[1]]
    want = cb(g, x, w, bias, stride, padding, dilation, transposed, output_padding, groups, [True, True, True])
    for mask in ([True, True, True], [False, True, True], [True, False, False]):
        check_masked_gradients(lambda: cb(g + 0, x + 0, w + 0, bias, stride, padding, dilation, transposed, output_padding, groups, mask), mask, want, atol=1e-4)


def test_value_dependent_shapes_run_with_torch() -> None:
    # nonzero, boolean-mask indexing and masked_select have no meta kernel (their result shape
    # depends on values): they run with torch eager on the real values, twice (the second time
    # from the cached decision), and what follows is deferred again.
    torch.manual_seed(0)
    x = torch.randn(5, 6)
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # masked_select: the one-time "runs with torch eager"
            with ember.eager():
                y = x * 2 + 1
                got = [y[y > 1], torch.nonzero(y > 0.5), torch.masked_select(y, y < 0), (y[y > 1] * 3).sum()]
                got = [t.cpu() for t in got]
        y = x * 2 + 1
        want = [y[y > 1], torch.nonzero(y > 0.5), torch.masked_select(y, y < 0), (y[y > 1] * 3).sum()]
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)


def test_full_max_and_min_are_recorded() -> None:
    x = torch.tensor([[1.0, float("nan")], [3.0, -2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.eager():
            got = [(x[1] + 0).max().cpu(), (x[1] + 0).min().cpu(), (x + 0).max().cpu()]
    torch.testing.assert_close(got[0], torch.tensor(3.0))
    torch.testing.assert_close(got[1], torch.tensor(-2.0))
    assert got[2].isnan()


def test_attention_with_an_additive_mask() -> None:
    # A float mask (what F.scaled_dot_product_attention passes the CPU kernel), one query row
    # masked whole: output 0 and log-sum-exp 0 there, as the kernel gives, and the backward too.
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
    mask = torch.randn(5, 5)
    mask[1] = float("-inf")
    mask[3, :2] = float("-inf")
    fwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    bwd = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward
    grad = torch.randn(2, 3, 5, 4)
    out, lse = fwd(q, k, v, attn_mask=mask)
    want = [out, lse, *bwd(grad, q, k, v, out, lse, 0.0, False, attn_mask=mask)]
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # recorded, nothing left to torch eager
        with ember.eager():
            o, l = fwd(q + 0, k + 0, v + 0, attn_mask=mask)
            got = [o, l, *bwd(grad + 0, q + 0, k + 0, v + 0, o, l, 0.0, False, attn_mask=mask)]
            got = [t.cpu() for t in got]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shape,kernel,stride,padding,dilation,ceil",
    [
        ((2, 3, 9, 9), [3, 3], [2, 2], [1, 1], [1, 1], False),
        ((1, 2, 8, 7), [2, 3], [2, 1], [0, 1], [1, 2], False),
        ((1, 2, 9, 9), [3, 3], [2, 2], [1, 1], [1, 1], True),
        ((2, 7, 7), [2, 2], [2, 2], [0, 0], [1, 1], False),
    ],
)
def test_max_pool_indices_are_recorded(shape, kernel, stride, padding, dilation, ceil) -> None:
    # Values and indices (flat positions in the input plane, the first of tied maxima) from the
    # CPU target, nothing left to torch eager.
    torch.manual_seed(0)
    x = torch.randn(shape)
    x.view(-1)[::7] = 0.5  # ties
    f = torch.ops.aten.max_pool2d_with_indices.default
    want = f(x, kernel, stride, padding, dilation, ceil)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.eager():
            got = [t.cpu() for t in f(x + 0, kernel, stride, padding, dilation, ceil)]
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_max_pool_backward_is_recorded() -> None:
    # Overlapping windows (a position that wins several windows gets their gradients summed),
    # 2-d and 3-d, and a small CNN trained through max pooling with one region per step.
    torch.manual_seed(0)
    for f, b, shape, k, s in (
        (torch.ops.aten.max_pool2d_with_indices, torch.ops.aten.max_pool2d_with_indices_backward, (2, 3, 7, 7), [3, 3], [1, 2]),
        (torch.ops.aten.max_pool3d_with_indices, torch.ops.aten.max_pool3d_with_indices_backward, (1, 2, 4, 5, 5), [2, 3, 3], [1, 2, 1]),
    ):
        x = torch.randn(shape)
        pad, dil = [1] * len(k), [1] * len(k)
        out, idx = f(x, k, s, pad, dil, False)
        g = torch.randn(out.shape)
        want = b(g, x, k, s, pad, dil, False, idx)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error")
            with ember.eager():
                o, i = f(x + 0, k, s, pad, dil, False)
                got = b(g + 0, x, k, s, pad, dil, False, i).cpu()
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)

    def run(ctx):
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 3))
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        x, y = torch.randn(2, 3, 8, 8), torch.tensor([0, 2])
        losses, caught = train_steps(ctx, opt, lambda: F.cross_entropy(m(x), y), 3)
        return losses + [p.detach().clone() for p in m.parameters()], caught

    before = deferred.stats()
    (got, caught), (want, _) = run(ember.eager), run(TorchEager)
    assert deferred.stats()["flushes"] - before["flushes"] == 3 and not caught, [str(w.message) for w in caught]
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("shape,affine", [((4, 3, 5, 5), True), ((6, 4), False), ((2, 3, 4), True)])
def test_batch_norm_is_recorded(shape, affine, train) -> None:
    # Training: the CPU kernel's backward from the saved batch statistics. Eval: the forward as
    # x * alpha + beta (its statistics results empty, as the CPU kernel's; the meta kernel's are
    # [C]) and the backward from the running statistics.
    torch.manual_seed(0)
    x, g = torch.randn(shape), torch.randn(shape)
    c = shape[1]
    w = torch.rand(c) + 0.5 if affine else None
    b = torch.randn(c) if affine else None
    rm, rv = torch.randn(c) * 0.1, torch.rand(c) + 0.5
    if train:
        _, mean, invstd = torch.ops.aten.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
    else:
        fwd = torch.ops.aten._native_batch_norm_legit_no_training.default
        want = fwd(x, w, b, rm, rv, 0.1, 1e-5)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("error")
            with ember.eager():
                got = [t.cpu() for t in fwd(x + 0, w, b, rm, rv, 0.1, 1e-5)]
        for a, e in zip(got, want):
            assert a.shape == e.shape
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)
        mean, invstd = want[1], want[2]
    bwd = torch.ops.aten.native_batch_norm_backward.default
    for mask in ([True, True, True], [True, False, False], [False, True, True]):
        want = bwd(g, x, w, rm, rv, mean, invstd, train, 1e-5, mask)
        check_masked_gradients(lambda: bwd(g + 0, x + 0, w, rm, rv, mean, invstd, train, 1e-5, mask), mask, want, atol=1e-5)


@pytest.mark.parametrize("shape,dim", [((4, 3, 5), 0), ((4, 3, 5), 2), ((6, 2), 1)])
def test_weight_norm_backward_is_recorded(shape, dim) -> None:
    # nn.utils.weight_norm's gradients (wav2vec2's positional convolution) are recorded.
    torch.manual_seed(0)
    v = torch.randn(shape)
    keep = [s if d == dim else 1 for d, s in enumerate(shape)]
    g = torch.rand(keep) + 0.5
    w, norms = torch.ops.aten._weight_norm_interface(v, g, dim)
    gw = torch.randn(shape)
    bwd = torch.ops.aten._weight_norm_interface_backward.default
    want = bwd(gw, v, g, norms, dim)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")
        with ember.eager():
            got = [t.cpu() for t in bwd(gw + 0, v + 0, g, norms, dim)]
    for a, e in zip(got, want):
        assert a.shape == e.shape
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


def test_meta_tensors_inside_a_block() -> None:
    # Meta tensors are not recorded: their ops go on to the meta kernels as outside the block.
    x = torch.randn(8, 8)
    with ember.eager():
        m = torch.empty(3, 4, device="meta") * 2
        n = (m @ torch.empty(4, 5, device="meta")).relu()
        y = torch.relu(x @ x) * 2
    assert m.device.type == "meta" and m.shape == (3, 4) and n.shape == (3, 5)
    torch.testing.assert_close(y.cpu(), torch.relu(x @ x) * 2, rtol=RTOL, atol=ATOL)
