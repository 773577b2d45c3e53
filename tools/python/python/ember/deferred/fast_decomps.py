"""Decompositions of the ops a training step spends most recording time in (torch's reference
decompositions cost ~1 ms each in Python wrappers). Each follows its ATen CPU kernel's formula
and evaluation order, so results match torch eager; `op(func, *args)` records one ATen op."""

from __future__ import annotations

import math

import torch

from .. import decompositions

aten = torch.ops.aten


def _lerp(op, x, end, weight):
    d = op(aten.sub.Tensor, end, x)
    if abs(weight) < 0.5:
        return op(aten.add.Tensor, x, op(aten.mul.Tensor, d, weight))
    return op(aten.sub.Tensor, end, op(aten.mul.Tensor, d, 1 - weight))


def _addcmul(op, x, t1, t2, value=1):
    m = op(aten.mul.Tensor, t1, value) if value != 1 else t1
    return op(aten.add.Tensor, x, op(aten.mul.Tensor, m, t2))


def _addcdiv(op, x, t1, t2, value=1):
    m = op(aten.mul.Tensor, t1, value) if value != 1 else t1
    return op(aten.add.Tensor, x, op(aten.div.Tensor, m, t2))


def _mse_loss(op, a, b, reduction=1):
    d = op(aten.sub.Tensor, a, b)
    sq = op(aten.mul.Tensor, d, d)
    return op(aten.mean.default, sq) if reduction == 1 else op(aten.sum.default, sq) if reduction == 2 else sq


def _mse_loss_backward(op, grad, a, b, reduction):
    norm = 2.0 / a.numel() if reduction == 1 else 2.0
    return op(aten.mul.Tensor, op(aten.mul.Tensor, op(aten.sub.Tensor, a, b), norm), grad)


def _threshold_backward(op, grad, x, threshold):
    zero = torch.zeros((), dtype=grad.dtype)
    return op(aten.where.self, op(aten.le.Scalar, x, threshold), zero, grad)


def _flatten(op, x, start_dim=0, end_dim=-1):
    n = x.dim()
    if n == 0:
        return op(aten.reshape.default, x, [1])
    s, e = start_dim % n, end_dim % n
    if s == e:
        return x  # torch returns the tensor itself
    return op(aten.reshape.default, x, list(x.shape[:s]) + [math.prod(x.shape[s : e + 1])] + list(x.shape[e + 1 :]))


def _max_all(op, x):
    return op(aten.amax.default, x, list(range(x.dim())), False)


def _min_all(op, x):
    return op(aten.amin.default, x, list(range(x.dim())), False)


def _conj_physical(op, x):
    return NotImplemented if x.is_complex() else op(aten.clone.default, x)


def _native_batch_norm(op, x, weight, bias, running_mean, running_var, training, momentum, eps):
    """`native_batch_norm` (what BatchNorm modules dispatch to) as its functional forms: training
    with running stats updates them through pending in-place copies, as the kernel writes them
    in place."""
    if not training:
        if running_mean is None or running_var is None:
            return NotImplemented  # torch raises its own error
        return _batch_norm_eval(op, x, weight, bias, running_mean, running_var, momentum, eps)
    if running_mean is None or running_var is None:
        return op(aten._native_batch_norm_legit.no_stats, x, weight, bias, True, momentum, eps)
    out, mean, rstd, new_mean, new_var = op(aten._native_batch_norm_legit_functional.default, x, weight, bias, running_mean, running_var, True, momentum, eps)
    rec = getattr(op, "__self__", None)
    for dst, src in ((running_mean, new_mean), (running_var, new_var)):
        if rec is None:
            dst.copy_(src)  # the native recorder: through dispatch
        else:
            rec.__torch_dispatch__(aten.copy_.default, (), (dst, src), {})  # the Python recorder's own handler
    return out, mean, rstd


def _batch_norm_eval(op, x, weight, bias, running_mean, running_var, momentum, eps):
    """Inference BatchNorm as torch's CPU kernel computes it: alpha = weight * rsqrt(var + eps),
    beta = bias - mean * alpha, out = x * alpha + beta per channel (dim 1). Its statistics results
    are empty, as the CPU kernel's; the meta kernel's are `[C]`, so the op itself is not recorded
    (Ember's dialect types them as the CPU kernel does)."""
    if x.dim() < 2 or x.dtype not in (torch.float32, torch.float64) or running_mean.dtype != x.dtype or running_var.dtype != x.dtype:
        return NotImplemented
    shape = [x.shape[1]] + [1] * (x.dim() - 2)
    alpha = op(aten.rsqrt.default, op(aten.add.Scalar, running_var, eps))
    if weight is not None:
        alpha = op(aten.mul.Tensor, alpha, weight)
    beta = op(aten.mul.Tensor, running_mean, alpha)
    beta = op(aten.neg.default, beta) if bias is None else op(aten.sub.Tensor, bias, beta)
    out = op(aten.add.Tensor, op(aten.mul.Tensor, x, op(aten.view.default, alpha, shape)), op(aten.view.default, beta, shape))
    return out, torch.empty(0, dtype=x.dtype), torch.empty(0, dtype=x.dtype)


def _native_batch_norm_backward(op, grad, x, weight, running_mean, running_var, save_mean, save_invstd, train, eps, output_mask):
    """Training-mode BatchNorm gradients as torch's CPU kernel computes them, from the saved batch
    mean and inverse std (torch's decomposition also reads the running statistics, which have
    a pending write after the forward and would force a flush): with xc = x - mean, per channel
    total = Σ grad and dotp = Σ xc·grad, grad_input = (grad - total/n - xc·dotp·invstd²/n)·invstd·w,
    grad_weight = dotp·invstd, grad_bias = total. Eval mode: the running statistics in their
    place, and grad_input = grad·invstd·w (the statistics are constants)."""
    if x.dim() < 2:
        return NotImplemented
    if train:
        mean, invstd = save_mean, save_invstd
    elif running_mean is None or running_var is None:
        return NotImplemented
    else:
        mean, invstd = running_mean, op(aten.rsqrt.default, op(aten.add.Scalar, running_var, eps))
    c = x.shape[1]
    n = x.numel() // c
    dims = [0] + list(range(2, x.dim()))
    shape = [1, c] + [1] * (x.dim() - 2)
    xc = op(aten.sub.Tensor, x, op(aten.reshape.default, mean, shape))
    total = op(aten.sum.dim_IntList, grad, dims, False)
    dotp = op(aten.sum.dim_IntList, op(aten.mul.Tensor, xc, grad), dims, False)
    gi = gw = gb = None
    if output_mask[0]:
        centered = grad
        if train:
            k = op(aten.div.Tensor, op(aten.mul.Tensor, dotp, op(aten.mul.Tensor, invstd, invstd)), float(n))
            centered = op(aten.sub.Tensor, grad, op(aten.reshape.default, op(aten.div.Tensor, total, float(n)), shape))
            centered = op(aten.sub.Tensor, centered, op(aten.mul.Tensor, xc, op(aten.reshape.default, k, shape)))
        scale = invstd if weight is None else op(aten.mul.Tensor, invstd, weight)
        gi = op(aten.mul.Tensor, centered, op(aten.reshape.default, scale, shape))
    if output_mask[1]:
        gw = op(aten.mul.Tensor, dotp, invstd)
    if output_mask[2]:
        gb = total
    return gi, gw, gb


def _tensor_split(op, x, sections_or_indices, dim=0):
    """`tensor_split` into sections (the first `size % n` one longer) or at indices: slices."""
    size = x.shape[dim]
    if isinstance(sections_or_indices, int):
        n = sections_or_indices
        if n <= 0:
            return NotImplemented  # torch raises its own error
        q, r = divmod(size, n)
        bounds = [i * q + min(i, r) for i in range(n + 1)]
    else:
        bounds = [0] + [min(max(i + size if i < 0 else i, 0), size) for i in sections_or_indices] + [size]
    return [op(aten.slice.Tensor, x, dim, a, max(a, b), 1) for a, b in zip(bounds, bounds[1:])]


def _weight_norm_backward(op, grad_w, v, g, norms, dim):
    """Gradients of w = g·v/‖v‖ (norms over every dim but `dim`, kept): with
    grad_g = Σ grad_w·v / ‖v‖, grad_v = g/‖v‖ · (grad_w - v·grad_g/‖v‖)."""
    if v.dtype not in (torch.float32, torch.float64) or norms.dtype != v.dtype:
        return NotImplemented
    dims = [d for d in range(v.dim()) if d != dim % v.dim()]
    gg = op(aten.div.Tensor, op(aten.sum.dim_IntList, op(aten.mul.Tensor, grad_w, v), dims, True), norms)
    inner = op(aten.sub.Tensor, grad_w, op(aten.mul.Tensor, v, op(aten.div.Tensor, gg, norms)))
    return op(aten.mul.Tensor, op(aten.div.Tensor, g, norms), inner), gg


def _t(op, x):
    return op(aten.transpose.int, x, 0, 1) if x.dim() == 2 else op(aten.alias.default, x)


def _or_kernel(decomp, func):
    """`decomp`, or the op's own kernel (with torch eager) for the forms it leaves."""

    def run(op, *args, **kwargs):
        out = decomp(op, *args, **kwargs)
        if out is NotImplemented:
            from .schema import _schema  # `schema` reads this module's table at import

            return op.__self__._eager(func, _schema(func), args, kwargs)
        return out

    return run


_FAST = {
    "aten._scaled_dot_product_flash_attention_for_cpu.default": _or_kernel(decompositions.sdpa_cpu, aten._scaled_dot_product_flash_attention_for_cpu.default),
    "aten._scaled_dot_product_flash_attention_for_cpu_backward.default": _or_kernel(decompositions.sdpa_cpu_backward, aten._scaled_dot_product_flash_attention_for_cpu_backward.default),
    "aten.lerp.Scalar": _lerp,
    "aten.addcmul.default": _addcmul,
    "aten.addcdiv.default": _addcdiv,
    "aten.mse_loss.default": _mse_loss,
    "aten.mse_loss_backward.default": _mse_loss_backward,
    "aten.threshold_backward.default": _threshold_backward,
    "aten.t.default": _t,
    "aten.flatten.using_ints": _flatten,
    "aten.conj_physical.default": _conj_physical,
    "aten.max.default": _max_all,
    "aten.min.default": _min_all,
    "aten.native_batch_norm.default": _native_batch_norm,
    "aten.native_batch_norm_backward.default": _native_batch_norm_backward,
    "aten._native_batch_norm_legit_no_training.default": _batch_norm_eval,
    "aten.convolution_backward.default": decompositions.convolution_backward,
    "aten.zero.default": lambda op, x: op(aten.fill.Scalar, x, 0),
    "aten.tensor_split.sections": _tensor_split,
    "aten.tensor_split.indices": _tensor_split,
    "aten._weight_norm_interface_backward.default": _weight_norm_backward,
}
