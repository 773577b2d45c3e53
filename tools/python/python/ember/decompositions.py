"""ATen decompositions Ember applies, shared by ``torch.compile`` (AOT Autograd) and ``ember.eager``.

Each decomposition takes ``op(func, *args, **kwargs)`` first, the way it emits one ATen op: the
eager recorder records it, a tracer (``table()``) calls it. Returning ``NotImplemented`` leaves the
op to the caller (traced as is, or run by its own kernel).

torch's own decomposition of the CPU flash-attention op returns the attention probabilities
where the op returns its log-sum-exp. In a training graph autograd saves that output for
``_scaled_dot_product_flash_attention_for_cpu_backward``, which reads it as the log-sum-exp
without checking its shape: every gradient below an attention layer comes out silently wrong
(a transformers GPT-2 trained under ``torch.compile`` got |ember − eager| > |grad| from the last
block's ``c_attn`` down). ``table()`` replaces it with one that returns the log-sum-exp, and
decomposes the backward from it; it also decomposes into ops Ember lowers the backward of the
convolution (off the CPU), of weight norm and of average pooling (which core ATen keeps), the
optimizers' `_foreach_*` ops and Dynamo's `prims.fma`, and `nll_loss`'s backward as a one-hot
select rather than torch's scatter.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch

aten = torch.ops.aten
_FLASH = aten._scaled_dot_product_flash_attention_for_cpu.default
_FLASH_BACKWARD = aten._scaled_dot_product_flash_attention_for_cpu_backward.default


def _call(func, *args, **kwargs):
    return func(*args, **kwargs)


def core_aten() -> dict:
    """torch's core ATen decompositions without the wrong one (see the module docstring): a
    copy of the table built once (torch builds it anew per call, 0.15 s of every graph's
    compile)."""
    return dict(_core_aten())


@functools.cache
def _core_aten() -> dict:
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    table.pop(_FLASH, None)
    return table


def table(target: str = "cpu") -> dict:
    """The table AOT Autograd traces with for `target`: ``core_aten()`` plus Ember's."""
    t = core_aten()
    t[_FLASH] = functools.partial(sdpa_cpu, _call)
    t[_FLASH_BACKWARD] = functools.partial(sdpa_cpu_backward, _call)
    # Core ATen keeps it (Ember has no lowering of its own for it). On the CPU the
    # convolution's backward runs with torch's kernel instead (backend._EXTERN).
    if target != "cpu":
        t[aten.convolution_backward.default] = functools.partial(convolution_backward, _call)
    t[aten.nll_loss_backward.default] = functools.partial(nll_loss_backward, _call)
    t[aten._weight_norm_interface_backward.default] = functools.partial(weight_norm_backward, _call)
    t[aten.avg_pool2d_backward.default] = functools.partial(avg_pool2d_backward, _call)
    # Registered when Dynamo imports torch._inductor.inductor_prims, before it writes one.
    if hasattr(torch.ops.prims, "fma"):
        t[torch.ops.prims.fma.default] = functools.partial(fma, _call)
    for name in dir(aten):
        if name.startswith("_foreach_") and not name.endswith("_"):
            packet = getattr(aten, name)
            for ov in packet.overloads():
                func = getattr(packet, ov)
                if foreach_element(func) is not None:
                    t[func] = functools.partial(foreach, func, _call)
    t.update(third_party())
    return t


def export_table() -> dict:
    """What `ember.export` runs `run_decompositions` with: torch.export's defaults, the CPU
    flash-attention op decomposed by Ember's `sdpa_cpu` (torch's gives an output whose strides
    differ from the kernel's, so a model that views the attention output, transformers GPT-2 at
    batch > 1, fails to re-trace), and `third_party()`."""
    t = torch.export.default_decompositions()
    t[_FLASH] = functools.partial(sdpa_cpu, _call)
    t.update(third_party())
    return t


def third_party() -> dict:
    """Decompositions of other libraries' custom ops that real models reach, for those
    registered in this process: transformers' MoE experts (`grouped_mm_fallback`, its default
    for float32 on the CPU, and the backward op its autograd formula calls, which a training
    graph holds)."""
    ns = getattr(torch.ops, "transformers", None)
    table = {}
    for name, fn in (("grouped_mm_fallback", grouped_mm), ("grouped_mm_fallback_backward", grouped_mm_backward)):
        op = getattr(ns, name, None) if ns is not None else None
        if op is not None:
            table[op.default] = fn
    return table


def _experts(offs, rows: int, n_experts: int):
    """Row r's expert (rows are sorted by expert, `offs` the cumulative row counts: the number of
    offsets <= r), clamped to a valid index, and whether r is before the last offset."""
    expert = (offs.unsqueeze(0) <= torch.arange(rows, device=offs.device).unsqueeze(1)).sum(1)
    return expert.clamp(max=n_experts - 1), expert < n_experts


def grouped_mm(input, weight, offs):
    """transformers' `grouped_mm_fallback(input [S, K], weight [E, K, N], offs [E])`: row r times
    its expert's weight; rows past the last offset stay zero, as in the fallback."""
    expert, valid = _experts(offs, input.shape[0], weight.shape[0])
    out = torch.bmm(input.unsqueeze(1), weight[expert]).squeeze(1)
    return torch.where(valid.unsqueeze(1), out, torch.zeros((), dtype=out.dtype))


def grouped_mm_backward(input, weight, offs, grad_output):
    """transformers' `grouped_mm_fallback_backward`: each row's input gradient is its output
    gradient times its expert's weight transposed; expert e's weight gradient sums
    input[r]ᵀ·grad[r] over its rows (one-hot over experts, then one batched product per expert).
    Rows past the last offset and experts without rows get zero, as in the fallback."""
    n_experts = weight.shape[0]
    expert, valid = _experts(offs, input.shape[0], n_experts)
    grad = torch.where(valid.unsqueeze(1), grad_output, torch.zeros((), dtype=grad_output.dtype))
    grad_input = torch.bmm(grad.unsqueeze(1), weight[expert].transpose(1, 2)).squeeze(1)
    onehot = (expert.unsqueeze(1) == torch.arange(n_experts, device=expert.device).unsqueeze(0)).to(input.dtype)
    rows_of = onehot.t().unsqueeze(2) * input.unsqueeze(0)  # [E, S, K]
    grad_weight = torch.bmm(rows_of.transpose(1, 2), grad.unsqueeze(0).expand(n_experts, -1, -1))
    return grad_input, grad_weight


def _sdpa_plain(q, k, v, dropout_p, is_causal, attn_mask) -> bool:
    """Whether these decompositions cover this call: 4-D, as many query heads as key/value heads
    or a multiple (grouped-query attention), no dropout, a float additive mask (the kernel's only
    kind) or none, not together with is_causal (the kernel raises torch's own error for that)."""
    if dropout_p != 0.0 or q.dim() != 4 or k.dim() != 4 or v.dim() != 4 or k.shape[1] != v.shape[1] or q.shape[1] % k.shape[1]:
        return False
    return attn_mask is None or (attn_mask.dtype == q.dtype and not is_causal)


_NARROW = (torch.float16, torch.bfloat16)


def _f32(op, x):
    """`x` in float32 (same strides): f16/bf16 attention computes in f32, as the CPU kernel
    accumulates (its log-sum-exp is float32 for every input dtype)."""
    return op(aten._to_copy.default, x, dtype=torch.float32)


def sdpa_cpu(op, q, k, v, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    """CPU `scaled_dot_product_attention` (its flash kernel) as torch's math path computes it:
    scaled q·kᵀ, causal or additive mask, softmax, ·v; the output laid out like q (the kernel's
    `empty_like`), and the log-sum-exp of the scaled scores that its backward reads (a row that
    the mask removes whole gives 0 and log-sum-exp 0, as the kernel). Other forms: NotImplemented."""
    if not _sdpa_plain(q, k, v, dropout_p, is_causal, attn_mask):
        return NotImplemented
    dt = q.dtype
    if dt in _NARROW:
        q, k, v = _f32(op, q), _f32(op, k), _f32(op, v)
        attn_mask = None if attn_mask is None else _f32(op, attn_mask)
    n, h, L, e = q.shape
    S = k.shape[2]
    k, v = _repeat_heads(op, k, h), _repeat_heads(op, v, h)
    sf = math.sqrt(scale if scale is not None else 1.0 / math.sqrt(e))
    qs = op(aten.reshape.default, op(aten.mul.Scalar, q, sf), [n * h, L, e])
    kt = op(aten.reshape.default, op(aten.mul.Scalar, op(aten.transpose.int, k, -2, -1), sf), [n * h, e, S])
    scores = op(aten.view.default, op(aten.bmm.default, qs, kt), [n, h, L, S])
    if is_causal:
        scores = op(aten.add.Tensor, scores, causal_mask(L, S, q))
    if attn_mask is not None:
        probs, lse = _masked_softmax(op, op(aten.add.Tensor, scores, attn_mask), q)
    else:
        probs = op(aten._softmax.default, scores, -1, False)
        top = op(aten.amax.default, scores, [-1], True)
        lse = op(aten.sum.dim_IntList, op(aten.exp.default, op(aten.sub.Tensor, scores, top)), [-1], True)
        lse = op(aten.add.Tensor, op(aten.log.default, lse), top)
    out = op(aten.bmm.default, op(aten.reshape.default, probs, [n * h, L, S]), op(aten.reshape.default, v, [n * h, S, e]))
    out = op(aten.view.default, out, [n, h, L, e])
    perm = _like_order(q)
    if perm != [0, 1, 2, 3]:
        out = op(aten.permute.default, op(aten.clone.default, op(aten.permute.default, out, perm), memory_format=torch.contiguous_format), [perm.index(i) for i in range(4)])
    # [N, H, L] in the kernel's [N, L, H] memory order.
    lse = op(aten.permute.default, op(aten.clone.default, op(aten.permute.default, op(aten.view.default, lse, [n, h, L]), [0, 2, 1]), memory_format=torch.contiguous_format), [0, 2, 1])
    return (op(aten._to_copy.default, out, dtype=dt) if dt in _NARROW else out), lse


def _masked_softmax(op, scores, like):
    """Softmax and log-sum-exp over the last dim of masked scores, where a row may be masked
    whole (all -inf): the CPU kernel gives it probabilities 0 and log-sum-exp 0, and so does this."""
    top = op(aten.amax.default, scores, [-1], True)
    top = op(aten.where.self, op(aten.eq.Scalar, top, float("-inf")), scalar(0.0, like), top)
    ex = op(aten.exp.default, op(aten.sub.Tensor, scores, top))
    total = op(aten.sum.dim_IntList, ex, [-1], True)
    empty = op(aten.eq.Scalar, total, 0.0)
    probs = op(aten.div.Tensor, ex, op(aten.where.self, empty, scalar(1.0, like), total))
    lse = op(aten.where.self, empty, scalar(0.0, like), op(aten.add.Tensor, op(aten.log.default, total), top))
    return probs, lse


def sdpa_cpu_backward(op, grad, q, k, v, out, lse, dropout_p, is_causal, *, attn_mask=None, scale=None):
    """Gradients of `sdpa_cpu` from the saved output and log-sum-exp (probabilities recomputed
    as exp(s − lse)): dv = pᵀ·g, ds = p·(g·vᵀ − rowsum(g·out)), dq = ds·k·scale, dk = dsᵀ·q·scale,
    laid out as the CPU kernel's (its [N, L, H, E] memory order)."""
    if not _sdpa_plain(q, k, v, dropout_p, is_causal, attn_mask):
        return NotImplemented
    dts = (q.dtype, k.dtype, v.dtype)
    if q.dtype in _NARROW:
        grad, q, k, v, out, lse = (_f32(op, x) for x in (grad, q, k, v, out, lse))
        attn_mask = None if attn_mask is None else _f32(op, attn_mask)
    n, h, L, e = q.shape
    S, hk = k.shape[2], k.shape[1]
    k, v = _repeat_heads(op, k, h), _repeat_heads(op, v, h)
    sc = scale if scale is not None else 1.0 / math.sqrt(e)

    def flat(x, rows):
        return op(aten.reshape.default, x, [n * h, rows, e])

    q3, k3, v3, g3, o3 = flat(q, L), flat(k, S), flat(v, S), flat(grad, L), flat(out, L)
    scores = op(aten.mul.Scalar, op(aten.view.default, op(aten.bmm.default, q3, op(aten.transpose.int, k3, 1, 2)), [n, h, L, S]), sc)
    if is_causal:
        scores = op(aten.add.Tensor, scores, causal_mask(L, S, q))
    if attn_mask is not None:
        scores = op(aten.add.Tensor, scores, attn_mask)
    probs = op(aten.exp.default, op(aten.sub.Tensor, scores, op(aten.reshape.default, lse, [n, h, L, 1])))
    p3 = op(aten.reshape.default, probs, [n * h, L, S])
    dv = op(aten.bmm.default, op(aten.transpose.int, p3, 1, 2), g3)
    dp = op(aten.bmm.default, g3, op(aten.transpose.int, v3, 1, 2))
    rowdot = op(aten.sum.dim_IntList, op(aten.mul.Tensor, g3, o3), [-1], True)
    ds = op(aten.mul.Tensor, p3, op(aten.sub.Tensor, dp, rowdot))
    dq = op(aten.mul.Scalar, op(aten.bmm.default, ds, k3), sc)
    dk = op(aten.mul.Scalar, op(aten.bmm.default, op(aten.transpose.int, ds, 1, 2), q3), sc)

    def laid_out(x, rows, heads):
        x = op(aten.view.default, x, [n, h, rows, e])
        if heads != h:  # a key/value head's gradient: the sum over the query heads it served
            x = op(aten.sum.dim_IntList, op(aten.view.default, x, [n, heads, h // heads, rows, e]), [2])
        x = op(aten.permute.default, x, [0, 2, 1, 3])
        return op(aten.permute.default, op(aten.clone.default, x, memory_format=torch.contiguous_format), [0, 2, 1, 3])

    grads = laid_out(dq, L, h), laid_out(dk, S, hk), laid_out(dv, S, hk)
    return tuple(op(aten._to_copy.default, g, dtype=d) if d in _NARROW else g for g, d in zip(grads, dts))


def _repeat_heads(op, x, heads):
    """Key or value heads repeated for `heads` query heads (grouped-query attention: query head
    i reads key head i // (heads / key heads), torch's `repeat_interleave` on dim 1)."""
    n, hk, s, e = x.shape
    if hk == heads:
        return x
    x = op(aten.expand.default, op(aten.unsqueeze.default, x, 2), [n, hk, heads // hk, s, e])
    return op(aten.reshape.default, x, [n, heads, s, e])


def convolution_backward(op, grad, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask):
    """A convolution's gradients as convolutions, any groups, plain or transposed. A plain
    convolution's input gradient is the transposed convolution of the gradient with the same
    weight (output_padding restoring the input size), a transposed one's the plain convolution.
    Weight gradients: `_conv_weight_grad`, with input and output gradient exchanged for a
    transposed convolution. The bias's is a sum."""
    nd = x.dim() - 2
    stride, padding, dilation = ([v[0]] * nd if len(v) == 1 else list(v) for v in (stride, padding, dilation))
    ksize, isize, osize = list(w.shape[2:]), list(x.shape[2:]), list(grad.shape[2:])
    gx = gw = gb = None
    if output_mask[0]:
        if transposed:
            gx = op(aten.convolution.default, grad, w, None, stride, padding, dilation, False, [0] * nd, groups)
        else:
            pad_out = [isize[i] - ((osize[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ksize[i] - 1) + 1) for i in range(nd)]
            gx = op(aten.convolution.default, grad, w, None, stride, padding, dilation, True, pad_out, groups)
    if output_mask[1]:
        # A transposed convolution is the input gradient of the plain one with the same weight:
        # its weight gradient is the plain one's with x and grad in exchanged roles.
        src, dst = (grad, x) if transposed else (x, grad)
        gw = _conv_weight_grad(op, src, dst, ksize, stride, padding, dilation, groups)
    if output_mask[2]:
        gb = op(aten.sum.dim_IntList, grad, [0] + list(range(2, 2 + nd)), False)
    return gx, gw, gb


def _conv_weight_grad(op, x, grad, ksize, stride, padding, dilation, groups):
    """The weight gradient of `conv(x, w)` given the output's gradient: a convolution over the
    batch, x as `[C/g, g*N, ..]` (group j's channels hold its batch) and the gradient as the
    filters `[O, N, ..]`, `groups` groups, stride and dilation exchanged; the result
    `[C/g, O, ..]` is cut to the kernel size and transposed to the weight's `[O, C/g, ..]`."""
    nd = x.dim() - 2
    if groups == 1:
        xt = op(aten.transpose.int, x, 0, 1)
    else:
        n, c, spatial = x.shape[0], x.shape[1], list(x.shape[2:])
        xg = op(aten.reshape.default, x, [n, groups, c // groups] + spatial)
        xg = op(aten.permute.default, xg, [2, 1, 0] + list(range(3, 3 + nd)))
        xt = op(aten.reshape.default, xg, [c // groups, groups * n] + spatial)
    gt = op(aten.transpose.int, grad, 0, 1)
    gw = op(aten.convolution.default, xt, gt, None, dilation, padding, stride, False, [0] * nd, groups)
    for i in range(nd):
        if gw.shape[2 + i] != ksize[i]:
            gw = op(aten.slice.Tensor, gw, 2 + i, 0, ksize[i], 1)
    return op(aten.transpose.int, gw, 0, 1)


def fma(op, a, b, c):
    """Dynamo's `prims.fma(a, b, c)`, which it writes for `addcmul_`, `addcdiv_` with a `value`
    and `add_` with a tensor `alpha` (so AdamW's step without foreach): `a * b + c` rounded after
    the product, as torch's CPU kernels of those ops compute it (the fused form matches CUDA's)."""
    return op(aten.add.Tensor, op(aten.mul.Tensor, a, b), c)


def weight_norm_backward(op, grad_w, v, g, norms, dim):
    """`_weight_norm_interface_backward` (`nn.utils.weight_norm`, a wav2vec2's positional
    convolution), which core ATen keeps: w = v·g/‖v‖ with the norm over every dim but `dim`
    (all of them for -1), so ∂g = Σ(∂w·v)/‖v‖ and ∂v = g/‖v‖·(∂w − v·Σ(∂w·v)/‖v‖²), as torch's
    differentiable backward computes them."""
    dims = [d for d in range(v.dim()) if d != dim] if dim != -1 else list(range(v.dim()))
    sums = op(aten.sum.dim_IntList, op(aten.mul.Tensor, grad_w, v), dims, True)
    sums = op(aten.reshape.default, sums, list(norms.shape))
    scaled = op(aten.div.Tensor, sums, op(aten.mul.Tensor, norms, norms))
    grad_v = op(aten.mul.Tensor, op(aten.div.Tensor, g, norms), op(aten.sub.Tensor, grad_w, op(aten.mul.Tensor, v, scaled)))
    return grad_v, op(aten.div.Tensor, sums, norms)


def avg_pool2d_backward(op, grad, x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override=None):
    """`avg_pool2d_backward` (which core ATen keeps): each window's gradient over its divisor,
    spread back over the window. Where the windows tile the input without overlap or padding (a
    DenseNet's transitions, a Funnel transformer's pooling) that is a broadcast, which Ember fuses
    into its readers, with zeros on the rows and columns no window covers; otherwise a transposed
    convolution with a kernel of ones per channel over the gradient divided by each window's
    divisor (torch's: the window's size clipped to the padded input, or to the input without
    `count_include_pad`, or `divisor_override`), cropped or zero-padded to the input's size
    (ceil mode's last windows reach past it; the last rows may be in no window)."""
    kh, kw = (kernel_size * 2)[:2]
    sh, sw = ((stride or kernel_size) * 2)[:2]
    ph, pw = (padding * 2)[:2]
    oh, ow = grad.shape[-2:]
    h, w = x.shape[-2:]
    lead = list(grad.shape[:-2])
    if (sh, sw) == (kh, kw) and not any(padding) and oh * kh <= h and ow * kw <= w:
        g = op(aten.div.Scalar, grad, divisor_override or kh * kw)
        g = op(aten.expand.default, op(aten.view.default, g, [*lead, oh, 1, ow, 1]), [*lead, oh, kh, ow, kw])
        g = op(aten.clone.default, g, memory_format=torch.contiguous_format)
        g = op(aten.view.default, g, [*lead, oh * kh, ow * kw])
    else:
        with _paused() if not _traced(grad) else contextlib.nullcontext():
            div = _pool_divisors(grad, (oh, ow), (kh, kw), (sh, sw), (ph, pw), (h, w), count_include_pad, divisor_override)
            ones = torch.ones(1, 1, kh, kw, dtype=grad.dtype, device=grad.device)
        g = op(aten.div.Tensor, grad, div)
        g = op(aten.reshape.default, g, [-1, 1, oh, ow])
        # A transposed convolution drops `padding` rows at both ends; the input's last rows are
        # real where the last window reaches them (the padded size minus the kernel not a
        # multiple of the stride): `output_padding` keeps up to stride - 1 of them.
        extra = [min(max(n - ((o - 1) * st - 2 * pd + k), 0), st - 1) for n, o, st, pd, k in ((h, oh, sh, ph, kh), (w, ow, sw, pw, kw))]
        g = op(aten.convolution.default, g, ones, None, [sh, sw], [ph, pw], [1, 1], True, extra, 1)
        g = op(aten.view.default, g, [*lead, *g.shape[-2:]])
        if g.shape[-2] > h or g.shape[-1] > w:
            g = op(aten.slice.Tensor, op(aten.slice.Tensor, g, -2, 0, h), -1, 0, w)
    if (g.shape[-2], g.shape[-1]) != (h, w):
        g = op(aten.constant_pad_nd.default, g, [0, w - g.shape[-1], 0, h - g.shape[-2]], 0.0)
    return g


def _pool_divisors(like, out, kernel, stride, padding, size, count_include_pad, divisor_override):
    """Each average-pooling window's divisor, [OH, OW] in `like`'s dtype, made by ops (inside a
    trace, a constant must be): the window clipped to the padded input (to the input without
    `count_include_pad`), rows times columns, or `divisor_override`."""
    if divisor_override:
        return torch.full(out, float(divisor_override), dtype=like.dtype, device=like.device)
    sides = []
    for n_out, k, s, p, n in zip(out, kernel, stride, padding, size):
        start = torch.arange(n_out, device=like.device) * s - p
        end = (start + k).clamp(max=n + p)
        sides.append((end - start) if count_include_pad else end.clamp(max=n) - start.clamp(min=0))
    return (sides[0].unsqueeze(1) * sides[1].unsqueeze(0)).to(like.dtype)


def nll_loss_backward(op, grad, x, target, weight, reduction, ignore_index, total_weight):
    """`nll_loss`'s input gradient over [N, C] as a one-hot select: −grad (times the target's
    class weight) at each row's target class, 0 elsewhere and on ignored rows. torch's
    decomposition fills zeros, scatters −1 into them and multiplies, three passes over the
    logits' size before log-softmax's backward reads the result; the select is elementwise and
    fuses into that backward (cross entropy over [1024, 8192], forward and backward: 36 -> 28-33 ms,
    Inductor 18-21 in the same runs). Other ranks take torch's decomposition."""
    if x.dim() != 2:
        from torch._decomp.decompositions import nll_loss_backward as torch_nll_loss_backward

        return torch_nll_loss_backward(grad, x, target, weight, reduction, ignore_index, total_weight)
    if reduction == 1:  # mean
        grad = op(aten.div.Tensor, grad, total_weight)
    if grad.dim() == 1:  # reduction none: one gradient per row
        grad = op(aten.unsqueeze.default, grad, 1)
    t = op(aten.unsqueeze.default, target, 1)
    hit = op(aten.eq.Tensor, torch.arange(x.shape[1], dtype=target.dtype, device=x.device), t)
    hit = op(aten.logical_and.default, hit, op(aten.ne.Scalar, t, ignore_index))
    neg = op(aten.neg.default, grad)
    if weight is not None:
        neg = op(aten.mul.Tensor, neg, op(aten.unsqueeze.default, weight, 0))
    return op(aten.where.self, hit, neg, scalar(0.0, x))


_FOREACH_BINARY = {"add", "sub", "mul", "div"}
_FOREACH_UNARY = {"sqrt", "rsqrt", "neg", "abs", "exp", "expm1", "log", "log1p", "reciprocal", "sigmoid", "tanh", "sign", "zero"}


def foreach_element(func) -> tuple | None:
    """The per-tensor op a `_foreach_*` overload applies to each element of its lists, and
    the keyword its trailing scalar passes as there (None: positionally); None for the forms
    Ember leaves to torch."""
    base = func._schema.name.split("::", 1)[1][len("_foreach_"):]
    name, ov = base.rstrip("_"), func._overloadname
    kw = None
    if name in _FOREACH_BINARY and ov in ("Scalar", "List", "ScalarList", "Tensor"):
        elem = "Tensor"
    elif name in ("addcmul", "addcdiv") and ov in ("Scalar", "ScalarList"):
        elem, kw = "default", "value"
    elif name == "lerp" and ov in ("Scalar", "ScalarList", "List"):
        elem = "Tensor" if ov == "List" else "Scalar"
    elif name in _FOREACH_UNARY and ov == "default":
        elem = "default"
    elif name == "pow" and ov in ("List", "Scalar", "ScalarList", "ScalarAndTensor"):
        elem = {"List": "Tensor_Tensor", "ScalarAndTensor": "Scalar"}.get(ov, "Tensor_Scalar")
    else:
        return None
    packet = getattr(aten, name + ("_" if base.endswith("_") else ""), None)
    op = getattr(packet, elem, None) if packet is not None else None
    return None if op is None else (op, kw)


def foreach(func, op, *args, **kwargs):
    """A `_foreach_*` op (an optimizer's multi-tensor step) as its per-tensor op on each element
    of its lists (a lone tensor or scalar goes to every element)."""
    elem, kw = foreach_element(func)
    lists = [isinstance(a, (list, tuple)) for a in args]
    n = len(args[lists.index(True)])
    if any(l and len(a) != n for a, l in zip(args, lists)) or any(isinstance(v, (list, tuple)) for v in kwargs.values()):
        return NotImplemented  # torch raises its own error on mismatched lists
    outs = []
    for i in range(n):
        a = [x[i] if l else x for x, l in zip(args, lists)]
        k = kwargs
        if kw is not None and len(a) > 3:
            k = dict(kwargs, **{kw: a.pop()})
        outs.append(op(elem, *a, **k))
    return outs


def _traced(t) -> bool:
    """Whether `t` belongs to a trace (AOT Autograd's fake tensors): constants must then be made
    by ops inside it, not be real tensors from outside."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


#: Real constants for the eager recorder (its regions read them as inputs), by key.
_constants: dict = {}


def _paused():
    from .deferred.native import paused

    return paused()


def scalar(value: float, like) -> torch.Tensor:
    """A rank-0 tensor of `like`'s dtype."""
    if _traced(like):
        return torch.scalar_tensor(value, dtype=like.dtype)
    key = ("scalar", value, like.dtype)
    if key not in _constants:
        with _paused():  # built once, outside a region
            _constants[key] = torch.tensor(value, dtype=like.dtype)
    return _constants[key]


def causal_mask(L: int, S: int, like) -> torch.Tensor:
    """The additive causal mask (0 on and below the diagonal, -inf above) of torch's math path."""
    key = ("causal", L, S, like.dtype, like.device)
    if not _traced(like) and key in _constants:
        return _constants[key]
    with _paused() if not _traced(like) else contextlib.nullcontext():
        keep = torch.ones(L, S, dtype=torch.bool, device=like.device).tril()
        mask = torch.zeros(L, S, dtype=like.dtype, device=like.device).masked_fill(keep.logical_not(), float("-inf"))
    if not _traced(like):
        _constants[key] = mask
    return mask


_like_orders: dict = {}


def _like_order(t) -> list[int]:
    """The dims of `t` outermost first in the memory order `empty_like(t)` gives its result."""
    # Symbolic sizes (torch.compile's dynamic dims, each >= 2): the order at the sizes Dynamo
    # saw, read without guarding on them.
    hint = lambda s: s.node.hint if isinstance(s, torch.SymInt) and s.node.hint is not None else int(s)  # noqa: E731
    key = (tuple(map(hint, t.shape)), tuple(map(hint, t.stride())))
    order = _like_orders.get(key)
    if order is None:
        from torch.utils._python_dispatch import _disable_current_modes

        with _disable_current_modes():  # plain meta tensors, outside any trace
            st = torch.empty_like(torch.empty_strided(key[0], key[1], device="meta")).stride()
        order = _like_orders[key] = sorted(range(t.dim()), key=lambda d: -st[d])
    return order
