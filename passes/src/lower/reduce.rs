//! Reductions (`ten.reduce` then a reshape for keepdim), mean and variance (divided by the element
//! count, symbolic counts included), softmax and layer norm. Half-float inputs of mean, variance,
//! softmax and layer norm compute in f32 and convert back, as torch's kernels accumulate.

use super::build::{acc_dtype, c, norm_dim, Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::types::DType;
use ember_ir::{SymExpr, Value};

/// The dims of `shape` not in `dims`, and the shape they leave.
fn kept(shape: &[SymExpr], dims: &[usize]) -> (Vec<usize>, Vec<SymExpr>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let rest = keep.iter().map(|&d| shape[d].clone()).collect();
    (keep, rest)
}

/// sum/prod (integers accumulate in the result dtype, int64 unless `dtype`), amax/amin (and
/// max/min of every element), any (truthiness, then OR) and mean (sum / count).
pub fn reduction(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let dims = cx.reduce_dims(xt.rank())?;
    let base = name.split('.').next().unwrap_or(name);
    let out = match base {
        "sum" | "prod" | "amax" | "amin" | "max" | "min" => {
            let kind = match base {
                "sum" => "sum",
                "prod" => "prod",
                "amax" | "max" => "max",
                _ => "min",
            };
            // Half sums and products accumulate in f32 and round once, as torch's kernels do
            // (XLA would otherwise accumulate in the narrow type); max/min are exact anyway.
            let acc = if matches!(kind, "sum" | "prod") { acc_dtype(t.dtype) } else { t.dtype };
            let x = cx.convert(x, acc)?;
            let r = cx.reduce(x, kind, &dims)?;
            cx.convert(r, t.dtype)?
        }
        "any" => {
            let x = cx.truthy(x)?;
            cx.reduce(x, "or", &dims)?
        }
        "mean" => {
            let acc = acc_dtype(t.dtype);
            let x = cx.convert(x, acc)?;
            let s = cx.reduce(x, "sum", &dims)?;
            let (_, rest) = kept(&xt.dims, &dims);
            let n = cx.count(&xt.dims, &dims, acc, &rest)?;
            let m = cx.emit(TenOp::Div, vec![s, n], vec![])?;
            cx.convert(m, t.dtype)?
        }
        _ => return Err(cx.err("no lowering for this reduction")),
    };
    Ok(Some(vec![cx.reshape(out, &t.dims)?]))
}

/// var (sum of squared deviations / max(0, N - correction)) and var_mean.
pub fn variance(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let dims = cx.reduce_dims(xt.rank())?;
    let correction = if name == "var.dim" {
        if cx.bool_or("unbiased", true) {
            1.0
        } else {
            0.0
        }
    } else {
        cx.attr("correction").and_then(|a| a.as_float()).unwrap_or(1.0)
    };
    let acc = acc_dtype(t.dtype);
    let (keep, rest) = kept(&xt.dims, &dims);
    let xa = cx.convert(x, acc)?;
    let s = cx.reduce(xa, "sum", &dims)?;
    let n = cx.count(&xt.dims, &dims, acc, &rest)?;
    let mean = cx.emit(TenOp::Div, vec![s, n], vec![])?;
    let mean_b = cx.bcast_in_dim(mean, &xt.dims, &keep)?;
    let d = cx.emit(TenOp::Sub, vec![xa, mean_b], vec![])?;
    let sq = cx.emit(TenOp::Mul, vec![d, d], vec![])?;
    let ss = cx.reduce(sq, "sum", &dims)?;
    let numel = dims.iter().map(|&d| xt.dims[d].clone()).fold(c(1), SymExpr::times);
    let denom = match numel.as_const() {
        Some(k) => cx.constf((k as f64 - correction).max(0.0), acc, &rest)?,
        None if correction == 0.0 => n,
        None => {
            let k = cx.binary_scalar(TenOp::Sub, n, correction)?;
            cx.binary_scalar(TenOp::Max, k, 0.0)?
        }
    };
    let var = cx.emit(TenOp::Div, vec![ss, denom], vec![])?;
    let mut outs = vec![var];
    if name == "var_mean.correction" {
        outs.push(mean);
    }
    let mut res = Vec::new();
    for (i, v) in outs.into_iter().enumerate() {
        let ti = cx.out(i)?;
        let v = cx.convert(v, ti.dtype)?;
        res.push(cx.reshape(v, &ti.dims)?);
    }
    Ok(Some(res))
}

/// softmax = exp(x - max) / sum(exp(x - max)); log_softmax = (x - max) - log(sum(exp(x - max))).
pub fn softmax(cx: &mut Cx, log: bool) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let dims = if xt.rank() == 0 { vec![] } else { vec![norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))?] };
    let (keep, _) = kept(&xt.dims, &dims);
    let acc = acc_dtype(t.dtype);
    let x = cx.convert(x, acc)?;
    let m = cx.reduce_bcast(x, "max", &dims)?;
    let z = cx.emit(TenOp::Sub, vec![x, m], vec![])?;
    let e = cx.unary(TenOp::Exp, z)?;
    let s = cx.reduce(e, "sum", &dims)?;
    let out = if log {
        let ls = cx.unary(TenOp::Log, s)?;
        let ls = cx.bcast_in_dim(ls, &xt.dims, &keep)?;
        cx.emit(TenOp::Sub, vec![z, ls], vec![])?
    } else {
        let s = cx.bcast_in_dim(s, &xt.dims, &keep)?;
        cx.emit(TenOp::Div, vec![e, s], vec![])?
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}

/// Biased moments of `x` (already in the accumulation dtype) over `dims`, shaped as the kept
/// dims: mean, variance, element count, rsqrt(var + eps), and (x - mean)·rstd broadcast back
/// to x's shape. Layer, group and training batch norm normalize this way.
struct Moments {
    mean: Value,
    var: Value,
    n: Value,
    rstd: Value,
    normalized: Value,
}

fn moments(cx: &mut Cx, x: Value, dims: &[usize], eps: f64) -> Result<Moments, String> {
    let xt = cx.tt(x);
    let (keep, rest) = kept(&xt.dims, dims);
    let s = cx.reduce(x, "sum", dims)?;
    let n = cx.count(&xt.dims, dims, xt.dtype, &rest)?;
    let mean = cx.emit(TenOp::Div, vec![s, n], vec![])?;
    let mean_b = cx.bcast_in_dim(mean, &xt.dims, &keep)?;
    let d = cx.emit(TenOp::Sub, vec![x, mean_b], vec![])?;
    let sq = cx.emit(TenOp::Mul, vec![d, d], vec![])?;
    let ss = cx.reduce(sq, "sum", dims)?;
    let var = cx.emit(TenOp::Div, vec![ss, n], vec![])?;
    let var_eps = cx.binary_scalar(TenOp::Add, var, eps)?;
    let rstd = cx.unary(TenOp::Rsqrt, var_eps)?;
    let rstd_b = cx.bcast_in_dim(rstd, &xt.dims, &keep)?;
    let normalized = cx.emit(TenOp::Mul, vec![d, rstd_b], vec![])?;
    Ok(Moments { mean, var, n, rstd, normalized })
}

/// native_layer_norm: (out, mean, rstd) over the trailing `normalized_shape` dims, with
/// out = (x - mean) * rsqrt(var + eps) * weight + bias and mean/rstd keeping those dims as 1.
pub fn layer_norm(cx: &mut Cx) -> Lowered {
    let (t_out, t_mean, t_rstd) = (cx.out(0)?, cx.out(1)?, cx.out(2)?);
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    let k = cx.dims_attr("normalized_shape")?.len();
    if k > xt.rank() {
        return Err(cx.err("normalized_shape is longer than the input rank"));
    }
    let eps = cx.attr("eps").and_then(|a| a.as_float()).ok_or_else(|| cx.err("attribute `eps` must be a float"))?;
    let dims: Vec<usize> = (xt.rank() - k..xt.rank()).collect();
    // f32 even where the statistics are stored narrow (a CPU export's bf16 mean/rstd): torch's
    // kernel normalizes in f32 and rounds only its results.
    let acc = acc_dtype(t_mean.dtype);
    let xa = cx.convert(x, acc)?;
    let Moments { mean, rstd, normalized: mut y, .. } = moments(cx, xa, &dims, eps)?;
    for (param, op) in [("weight", TenOp::Mul), ("bias", TenOp::Add)] {
        if let Some(p) = cx.operand(param) {
            let p = cx.coerce(p, acc, &xt.dims)?;
            y = cx.emit(op, vec![y, p], vec![])?;
        }
    }
    let out = cx.convert(y, t_out.dtype)?;
    let mean = cx.convert(mean, t_mean.dtype)?;
    let mean = cx.reshape(mean, &t_mean.dims)?;
    let rstd = cx.convert(rstd, t_rstd.dtype)?;
    let rstd = cx.reshape(rstd, &t_rstd.dims)?;
    Ok(Some(vec![out, mean, rstd]))
}

/// native_group_norm: the input [N, C, *] viewed as [N, group, C/group * HxW], normalized per
/// row like layer norm (biased variance), then per-channel weight and bias. Needs static C and
/// spatial dims (N may be symbolic).
pub fn group_norm(cx: &mut Cx) -> Lowered {
    let (t_out, t_mean, t_rstd) = (cx.out(0)?, cx.out(1)?, cx.out(2)?);
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    let g = cx.int("group")?;
    let eps = cx.attr("eps").and_then(|a| a.as_float()).ok_or_else(|| cx.err("attribute `eps` must be a float"))?;
    if xt.rank() < 2 {
        return Err(cx.err("group norm needs an input of rank >= 2 (channels are dim 1)"));
    }
    let Some(inner) = xt.dims[1..].iter().map(SymExpr::as_const).collect::<Option<Vec<i64>>>() else { return Ok(None) };
    let ch = inner[0];
    if g <= 0 || ch % g != 0 {
        return Err(cx.err(&format!("{ch} channels do not split into {g} groups")));
    }
    let hxw: i64 = inner[1..].iter().product();
    let n = xt.dims[0].clone();
    let acc = acc_dtype(t_mean.dtype); // as in layer_norm
    let rows = [n.clone(), c(g), c(ch / g * hxw)];
    let xa = cx.convert(x, acc)?;
    let xr = cx.reshape(xa, &rows)?;
    let Moments { mean, rstd, normalized, .. } = moments(cx, xr, &[2], eps)?;
    let mut y = cx.reshape(normalized, &xt.dims)?;
    for (param, op) in [("weight", TenOp::Mul), ("bias", TenOp::Add)] {
        if let Some(p) = cx.operand(param) {
            let p = cx.convert(p, acc)?;
            let p = cx.bcast_in_dim(p, &xt.dims, &[1])?;
            y = cx.emit(op, vec![y, p], vec![])?;
        }
    }
    let out = cx.convert(y, t_out.dtype)?;
    let mean = cx.convert(mean, t_mean.dtype)?;
    let mean = cx.reshape(mean, &t_mean.dims)?;
    let rstd = cx.convert(rstd, t_rstd.dtype)?;
    let rstd = cx.reshape(rstd, &t_rstd.dims)?;
    Ok(Some(vec![out, mean, rstd]))
}

/// Inference batch norm (`_native_batch_norm_legit_no_training`, and `_native_batch_norm_legit`
/// with training false) per channel (dim 1), as torch's CPU kernel computes it:
/// alpha = weight * rsqrt(running_var + eps), beta = bias - running_mean * alpha,
/// out = x * alpha + beta. The two statistics results are empty tensors (their types say `[0]`).
/// Training mode (batch statistics, running-stat updates) stays a torch op.
pub fn batch_norm(cx: &mut Cx, name: &str) -> Lowered {
    if name == "_native_batch_norm_legit" && cx.bool_or("training", true) {
        return Ok(None);
    }
    let t = cx.out(0)?;
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    if xt.rank() < 2 {
        return Err(cx.err("batch norm needs an input of rank >= 2 (channels are dim 1)"));
    }
    let eps = cx.attr("eps").and_then(|a| a.as_float()).ok_or_else(|| cx.err("attribute `eps` must be a float"))?;
    let acc = acc_dtype(t.dtype);
    let ch = [xt.dims[1].clone()];
    let mean = cx.arg("running_mean")?;
    let mean = cx.convert(mean, acc)?;
    let var = cx.arg("running_var")?;
    let var = cx.convert(var, acc)?;
    let ve = cx.binary_scalar(TenOp::Add, var, eps)?;
    let mut alpha = cx.unary(TenOp::Rsqrt, ve)?;
    if let Some(w) = cx.operand("weight") {
        let w = cx.coerce(w, acc, &ch)?;
        alpha = cx.emit(TenOp::Mul, vec![alpha, w], vec![])?;
    }
    let ma = cx.emit(TenOp::Mul, vec![mean, alpha], vec![])?;
    let beta = match cx.operand("bias") {
        Some(b) => {
            let b = cx.coerce(b, acc, &ch)?;
            cx.emit(TenOp::Sub, vec![b, ma], vec![])?
        }
        None => cx.unary(TenOp::Neg, ma)?,
    };
    let xa = cx.convert(x, acc)?;
    let alpha = cx.bcast_in_dim(alpha, &xt.dims, &[1])?;
    let beta = cx.bcast_in_dim(beta, &xt.dims, &[1])?;
    let y = cx.emit(TenOp::Mul, vec![xa, alpha], vec![])?;
    let y = cx.emit(TenOp::Add, vec![y, beta], vec![])?;
    let mut outs = vec![cx.convert(y, t.dtype)?];
    for i in 1..3 {
        let ti = cx.out(i)?;
        outs.push(cx.constf(0.0, ti.dtype, &ti.dims)?);
    }
    Ok(Some(outs))
}

/// cumsum/cumprod: `ten.cumsum`/`ten.cumprod` of the input converted to the result dtype (bool
/// and ints accumulate in int64), half floats accumulated in f32 and rounded once, as torch's
/// CPU kernel does (a bf16 running sum stops growing once its ulp exceeds the addends).
pub fn cumsum(cx: &mut Cx, op: TenOp) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let rank = cx.tt(x).rank();
    let x = cx.convert(x, t.dtype)?;
    if rank == 0 {
        return Ok(Some(vec![x]));
    }
    let d = norm_dim(cx.int("dim")?, rank).map_err(|e| cx.err(&e))?;
    let x = cx.convert(x, acc_dtype(t.dtype))?;
    let y = cx.emit(op, vec![x], vec![("dim", ember_ir::attr::Attr::Int(d as i64))])?;
    Ok(Some(vec![cx.convert(y, t.dtype)?]))
}

/// cummax/cummin along `dim`: (running extreme, the index where it was last reached), as torch:
/// a tie moves the index to the later element, and from the first NaN on the value is NaN with
/// the index of the latest NaN. A log-step (Hillis-Steele) scan: step s combines each element's
/// prefix with the one s before it, preferring the later side unless the earlier is strictly
/// more extreme (or NaN where the later is not); ⌈log₂ n⌉ steps of shifts and selects.
pub fn cum_extreme(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let (tv, ti) = (cx.out(0)?, cx.out(1)?);
    if xt.rank() == 0 {
        return Ok(Some(vec![x, cx.constant(&Attr::Int(0), DType::I64, &ti.dims)?]));
    }
    let d = norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))?;
    let Some(n) = xt.dims[d].as_const() else {
        return Err(cx.err("cummax/cummin along a symbolic dim is not supported"));
    };
    let float = xt.dtype.is_float();
    let more = if name == "cummax" { "GT" } else { "LT" };
    let mut v = x;
    let mut idx = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(xt.dims.clone())), ("dim", Attr::Int(d as i64)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let shifted = |cx: &mut Cx, y: Value, s: i64, fill: Attr| -> Result<Value, String> {
        let mut low = vec![c(0); xt.rank()];
        let mut high = low.clone();
        low[d] = c(s);
        high[d] = c(-s);
        super::window::pad(cx, y, low, high, fill)
    };
    let mut s = 1;
    while s < n {
        let lv = shifted(cx, v, s, Attr::Int(0))?;
        let li = shifted(cx, idx, s, Attr::Int(-1))?;
        let zero = cx.splat_like(0.0, li)?;
        let valid = cx.compare("GE", li, zero)?;
        let mut left = cx.compare(more, lv, v)?;
        if float {
            let lnan = cx.compare("NE", lv, lv)?;
            let rnan = cx.compare("NE", v, v)?;
            let rnum = cx.unary(TenOp::Not, rnan)?;
            let nan_left = cx.emit(TenOp::And, vec![lnan, rnum], vec![])?;
            let num_left = cx.emit(TenOp::And, vec![left, rnum], vec![])?;
            left = cx.emit(TenOp::Or, vec![nan_left, num_left], vec![])?;
        }
        let take = cx.emit(TenOp::And, vec![valid, left], vec![])?;
        v = cx.select(take, lv, v)?;
        idx = cx.select(take, li, idx)?;
        s *= 2;
    }
    Ok(Some(vec![cx.reshape(v, &tv.dims)?, idx]))
}

/// argmax/argmin (over `dim`, or over all dims flattened when absent) and max.dim/min.dim
/// (values from a max/min reduce, indices from an argmax/argmin reduce): first occurrence wins,
/// NaN counts as the extreme, as in torch.
pub fn arg_reduction(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let is_max = name.starts_with("argmax") || name.starts_with("max");
    let with_values = name.ends_with(".dim");
    let dims: Vec<usize> = match cx.attr("dim") {
        _ if xt.rank() == 0 => vec![],
        None => (0..xt.rank()).collect(),
        Some(_) => vec![norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))?],
    };
    let mut outs = Vec::new();
    if with_values {
        let t = cx.out(0)?;
        let v = cx.reduce(x, if is_max { "max" } else { "min" }, &dims)?;
        outs.push(cx.reshape(v, &t.dims)?);
    }
    let ti = cx.out(outs.len())?;
    let idx = if dims.is_empty() {
        cx.constant(&ember_ir::attr::Attr::Int(0), ember_ir::DType::I64, &ti.dims)?
    } else {
        let r = cx.reduce(x, if is_max { "argmax" } else { "argmin" }, &dims)?;
        cx.reshape(r, &ti.dims)?
    };
    outs.push(idx);
    Ok(Some(outs))
}

/// _cdist_forward: the p-norm of x1[.., i, :] - x2[.., j, :] for every pair, over the difference
/// broadcast to [.., P, R, M] (batch dims broadcast as torch does). p = 0 counts nonzero
/// differences, p = ∞ takes the largest, p = 1 and 2 need no pow. torch may use a matmul form
/// for p = 2 (`compute_mode`); the direct form is at least as accurate.
pub fn cdist(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (x1, x2) = (cx.arg("x1")?, cx.arg("x2")?);
    let p = cx.attr("p").and_then(|a| a.as_float()).ok_or_else(|| cx.err("`p` must be a float"))?;
    if p < 0.0 {
        return Err(cx.err("cdist only supports non-negative p"));
    }
    let (a, b) = (cx.tt(x1), cx.tt(x2));
    let nb = t.rank().checked_sub(2).ok_or_else(|| cx.err("the result needs rank >= 2"))?;
    let m = a.dims.last().cloned().ok_or_else(|| cx.err("x1 needs rank >= 2"))?;
    let mut full: Vec<SymExpr> = t.dims.clone();
    full.push(m);
    let place = |rank: usize, row: usize| -> Vec<usize> {
        let mut map: Vec<usize> = (0..rank - 2).map(|i| nb + 2 - rank + i).collect();
        map.extend([row, nb + 2]);
        map
    };
    // f16/bf16 in f32, rounded once (Σ|d|ᵖ overflows f16 long before the norm does).
    let acc = acc_dtype(t.dtype);
    let x1 = cx.convert(x1, acc)?;
    let x2 = cx.convert(x2, acc)?;
    let x1 = cx.bcast_in_dim(x1, &full, &place(a.rank(), nb))?;
    let x2 = cx.bcast_in_dim(x2, &full, &place(b.rank(), nb + 1))?;
    let d = cx.emit(TenOp::Sub, vec![x1, x2], vec![])?;
    let out = p_norm(cx, d, p, &[nb + 2], acc)?;
    let out = cx.convert(out, t.dtype)?;
    Ok(Some(vec![cx.reshape(out, &t.dims)?]))
}

/// _pdist_forward(x [N, M], p): the p-norm distance of every pair i < j in row-major order:
/// cdist's forms over the [N, N, M] differences, then the upper triangle compacted, each kept
/// position sent to its rank (a running count of the mask) as tril_indices does.
pub fn pdist(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let p = cx.attr("p").and_then(|a| a.as_float()).ok_or_else(|| cx.err("`p` must be a float"))?;
    if p < 0.0 {
        return Err(cx.err("pdist only supports non-negative p"));
    }
    let xt = cx.tt(x);
    let [n, m] = xt.dims.as_slice() else { return Err(cx.err("pdist takes a [N, M] input")) };
    let Some(n) = n.as_const() else { return Err(cx.err("pdist needs a static number of rows")) };
    let pairs = n * (n - 1) / 2;
    if pairs == 0 {
        return Ok(Some(vec![cx.constant(&Attr::Int(0), t.dtype, &t.dims)?]));
    }
    let acc = acc_dtype(t.dtype);
    let xa = cx.convert(x, acc)?;
    let full = [c(n), c(n), m.clone()];
    let x1 = cx.bcast_in_dim(xa, &full, &[0, 2])?;
    let x2 = cx.bcast_in_dim(xa, &full, &[1, 2])?;
    let d = cx.emit(TenOp::Sub, vec![x1, x2], vec![])?;
    let dist = p_norm(cx, d, p, &[2], acc)?;
    let (grid, flat) = ([c(n), c(n)], [c(n * n)]);
    let iota = |cx: &mut Cx, dim: i64| {
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(grid.to_vec())), ("dim", Attr::Int(dim)), ("dtype", Attr::DType(DType::I64))],
        )
    };
    let (i, j) = (iota(cx, 0)?, iota(cx, 1)?);
    let keep = cx.compare("GT", j, i)?;
    let keep = cx.reshape(keep, &flat)?;
    let at = cx.packed_positions(keep, pairs)?;
    let vals = cx.reshape(dist, &flat)?;
    let base = cx.constant(&Attr::Float(0.0), acc, &[c(pairs)])?;
    let out = cx.emit(TenOp::Scatter, vec![base, at, vals], vec![("kind", Attr::Str("set".into()))])?;
    let out = cx.convert(out, t.dtype)?;
    Ok(Some(vec![cx.reshape(out, &t.dims)?]))
}

/// Training-mode batch norm: batch statistics over every dim but channels (dim 1), the biased
/// variance to normalize, and for the functional forms the new running stats
/// (1 - momentum)·running + momentum·batch, the variance unbiased (n/(n-1)) as torch updates it.
/// `_native_batch_norm_legit.no_stats` has no running stats; the functional forms with
/// training=False normalize with the running stats and return them unchanged. Outputs:
/// (out, save_mean, save_invstd[, reserve], running_mean, running_var).
pub fn batch_norm_train(cx: &mut Cx, name: &str) -> Lowered {
    let functional = name != "_native_batch_norm_legit.no_stats";
    if name == "_native_batch_norm_legit_functional" && !cx.bool_or("training", true) {
        let Some(mut outs) = batch_norm(cx, name)? else { return Ok(None) };
        for (i, k) in [(3, "running_mean"), (4, "running_var")] {
            let ti = cx.out(i)?;
            let r = cx.arg(k)?;
            outs.push(cx.convert(r, ti.dtype)?);
        }
        return Ok(Some(outs));
    }
    let t = cx.out(0)?;
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    if xt.rank() < 2 {
        return Err(cx.err("batch norm needs an input of rank >= 2 (channels are dim 1)"));
    }
    let f = |cx: &Cx, k: &str| {
        cx.attr(k).and_then(|a| a.as_float()).ok_or_else(|| cx.err(&format!("attribute `{k}` must be a float")))
    };
    let (eps, momentum) = (f(cx, "eps")?, f(cx, "momentum")?);
    let acc = acc_dtype(t.dtype);
    let dims: Vec<usize> = (0..xt.rank()).filter(|&d| d != 1).collect();
    let ch = vec![xt.dims[1].clone()];
    let xa = cx.convert(x, acc)?;
    let Moments { mean, var, n, rstd: invstd, normalized: mut y } = moments(cx, xa, &dims, eps)?;
    if let Some(w) = cx.operand("weight") {
        let w = cx.coerce(w, acc, &ch)?;
        let wb = cx.bcast_in_dim(w, &xt.dims, &[1])?;
        y = cx.emit(TenOp::Mul, vec![y, wb], vec![])?;
    }
    if let Some(b) = cx.operand("bias") {
        let b = cx.coerce(b, acc, &ch)?;
        let bb = cx.bcast_in_dim(b, &xt.dims, &[1])?;
        y = cx.emit(TenOp::Add, vec![y, bb], vec![])?;
    }
    let mut outs = vec![cx.convert(y, t.dtype)?];
    for (i, v) in [(1, mean), (2, invstd)] {
        let ti = cx.out(i)?;
        outs.push(cx.convert(v, ti.dtype)?);
    }
    if !functional {
        return Ok(Some(outs));
    }
    if name == "_batch_norm_with_update_functional" {
        let ti = cx.out(3)?;
        outs.push(cx.constf(0.0, ti.dtype, &ti.dims)?);
    }
    // n/(n-1) for the unbiased running variance (n = 1 gives inf·0, NaN in torch as well).
    let nm1 = cx.binary_scalar(TenOp::Sub, n, 1.0)?;
    let unbias = cx.emit(TenOp::Div, vec![n, nm1], vec![])?;
    let var_u = cx.emit(TenOp::Mul, vec![var, unbias], vec![])?;
    let base = outs.len();
    for (i, (k, batch)) in [("running_mean", mean), ("running_var", var_u)].into_iter().enumerate() {
        let ti = cx.out(base + i)?;
        let r = cx.arg(k)?;
        let r = cx.convert(r, acc)?;
        let keep = cx.binary_scalar(TenOp::Mul, r, 1.0 - momentum)?;
        let add = cx.binary_scalar(TenOp::Mul, batch, momentum)?;
        let v = cx.emit(TenOp::Add, vec![keep, add], vec![])?;
        outs.push(cx.convert(v, ti.dtype)?);
    }
    Ok(Some(outs))
}

/// The p-norm of `d` over `dims` (cdist and dist): p = 0 counts nonzeros, ±inf takes the
/// largest/smallest |d|, 1 and 2 need no pow, others (Σ|d|ᵖ)^(1/p).
fn p_norm(cx: &mut Cx, d: Value, p: f64, dims: &[usize], dtype: ember_ir::DType) -> Result<Value, String> {
    if p == 0.0 {
        let zero = cx.splat_like(0.0, d)?;
        let nz = cx.compare("NE", d, zero)?;
        let nz = cx.convert(nz, dtype)?;
        return cx.reduce(nz, "sum", dims);
    }
    if p == 2.0 {
        let sq = cx.emit(TenOp::Mul, vec![d, d], vec![])?;
        let s = cx.reduce(sq, "sum", dims)?;
        return cx.unary(TenOp::Sqrt, s);
    }
    let ad = cx.unary(TenOp::Abs, d)?;
    if p.is_infinite() {
        return cx.reduce(ad, if p > 0.0 { "max" } else { "min" }, dims);
    }
    let powd = if p == 1.0 { ad } else { cx.binary_scalar(TenOp::Pow, ad, p)? };
    let s = cx.reduce(powd, "sum", dims)?;
    if p == 1.0 {
        Ok(s)
    } else {
        cx.binary_scalar(TenOp::Pow, s, 1.0 / p)
    }
}

/// dist: the p-norm of self - other over every element (broadcast), a 0-d result.
pub fn dist(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (a, b) = (cx.arg("self")?, cx.arg("other")?);
    let p = cx.attr("p").and_then(|a| a.as_float()).unwrap_or(2.0);
    let shape = ember_ir::dialect::infer::broadcast(&[&cx.tt(a).dims, &cx.tt(b).dims]).map_err(|e| cx.err(&e.0))?;
    let acc = acc_dtype(t.dtype); // as in cdist
    let a = cx.coerce(a, acc, &shape)?;
    let b = cx.coerce(b, acc, &shape)?;
    let d = cx.emit(TenOp::Sub, vec![a, b], vec![])?;
    let all: Vec<usize> = (0..shape.len()).collect();
    let out = p_norm(cx, d, p, &all, acc)?;
    let out = cx.convert(out, t.dtype)?;
    Ok(Some(vec![cx.reshape(out, &t.dims)?]))
}

/// searchsorted / bucketize: for each value, how many elements of its sorted row are before it:
/// !(s >= v) counted for the left side, !(s > v) for the right (torch's binary-search tests, so
/// a NaN value lands after every element), over the comparison broadcast to [.., M, N].
/// `sorter` gathers the row into order first. A NaN inside the sequence, which a binary search
/// would step over, is counted here: results differ from torch only for such sequences.
pub fn searchsorted(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let (seq, v) = if name == "bucketize.Tensor" {
        (cx.arg("boundaries")?, cx.arg("self")?)
    } else {
        (cx.arg("sorted_sequence")?, cx.arg("self")?)
    };
    let right = match cx.str_attr("side").as_deref() {
        Some("right") => true,
        Some("left") => false,
        _ => cx.bool_or("right", false),
    };
    let (st, vt) = (cx.tt(seq), cx.tt(v));
    let n = st.dims.last().cloned().ok_or_else(|| cx.err("the sorted sequence must have at least one dim"))?;
    let mut seq = seq;
    if let Some(sorter) = cx.operand("sorter") {
        if st.rank() != 1 {
            return Ok(None);
        }
        let idx = cx.convert(sorter, ember_ir::DType::I64)?;
        seq = cx.emit(TenOp::Gather, vec![seq, idx], vec![("dim", ember_ir::attr::Attr::Int(0))])?;
    }
    let dt = ember_ir::dialect::infer::result_type(&[&st, &vt], &[]);
    let seq = cx.convert(seq, dt)?;
    let v = cx.convert(v, dt)?;
    let mut full = vt.dims.clone();
    full.push(n);
    let r = full.len();
    let smap: Vec<usize> = if st.rank() == 1 { vec![r - 1] } else { (0..st.rank() - 1).chain([r - 1]).collect() };
    if st.rank() != 1 && (st.rank() != vt.rank() || st.dims[..st.rank() - 1] != vt.dims[..vt.rank() - 1]) {
        return Err(cx.err("the sorted sequence's leading dims must match the values' leading dims"));
    }
    let sb = cx.bcast_in_dim(seq, &full, &smap)?;
    let vb = cx.bcast_in_dim(v, &full, &(0..r - 1).collect::<Vec<_>>())?;
    let ahead = cx.compare(if right { "GT" } else { "GE" }, sb, vb)?;
    let before = cx.unary(TenOp::Not, ahead)?;
    let cnt = cx.convert(before, t.dtype)?;
    Ok(Some(vec![cx.reduce(cnt, "sum", &[r - 1])?]))
}

/// histc(self, bins, min, max): each element's bin is `trunc((x - min) / (max - min) * bins)`
/// in the input dtype (torch's CPU kernel, same order of operations), capped at the last bin
/// (`max` itself, or a quotient rounding up to `bins`); a one-hot of [numel, bins] over the
/// elements inside [min, max] (NaN is in no bin) is summed. min == max means the data's own
/// range (its min and max, widened by 1 each way when equal, as torch's
/// `histc_select_outer_bin_edges`), computed as splats of the reduced values.
pub fn histc(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let t = cx.out(0)?;
    let bins = cx.int_or("bins", 100)?;
    let bound = |k: &str, d: f64| cx.attr(k).map_or(Some(d), |a| a.as_float());
    let (Some(lo), Some(hi)) = (bound("min", 0.0), bound("max", 0.0)) else { return Ok(None) };
    if lo > hi || lo.is_nan() || hi.is_nan() || bins < 1 || !xt.dtype.is_float() || !xt.is_static() {
        return Ok(None);
    }
    let n = xt.numel();
    let flat = cx.reshape(x, std::slice::from_ref(&n))?;
    let nv = std::slice::from_ref(&n);
    let (bottom, top) = if lo < hi || n == c(0) {
        let (lo, hi) = if lo < hi { (lo, hi) } else { (lo - 1.0, hi + 1.0) };
        (cx.constf(lo, xt.dtype, nv)?, cx.constf(hi, xt.dtype, nv)?)
    } else {
        data_range(cx, flat, 1.0)?
    };
    let above = cx.compare("GE", flat, bottom)?;
    let below = cx.compare("LE", flat, top)?;
    let inside = cx.binary(TenOp::And, above, below)?;
    let shifted = cx.emit(TenOp::Sub, vec![flat, bottom], vec![])?;
    let width = cx.emit(TenOp::Sub, vec![top, bottom], vec![])?;
    let scaled = cx.emit(TenOp::Div, vec![shifted, width], vec![])?;
    let scaled = cx.binary_scalar(TenOp::Mul, scaled, bins as f64)?;
    // Only elements inside reach the conversion: NaN or a huge value has no integer.
    let zero = cx.constf(0.0, xt.dtype, nv)?;
    let scaled = cx.select(inside, scaled, zero)?;
    let pos = cx.convert(scaled, DType::I64)?;
    let pos = cx.binary_scalar(TenOp::Min, pos, (bins - 1) as f64)?;
    one_hot_sum(cx, pos, inside, None, bins, t.dtype)
}

/// The min and max of the 1-D `flat` as splats of its shape, each moved `widen` outwards when
/// they are equal (torch's rule for an empty range).
fn data_range(cx: &mut Cx, flat: Value, widen: f64) -> Result<(Value, Value), String> {
    let shape = cx.tt(flat).dims;
    let lo = cx.reduce(flat, "min", &[0])?;
    let hi = cx.reduce(flat, "max", &[0])?;
    let same = cx.compare("EQ", lo, hi)?;
    let lo_w = cx.binary_scalar(TenOp::Sub, lo, widen)?;
    let hi_w = cx.binary_scalar(TenOp::Add, hi, widen)?;
    let lo = cx.select(same, lo_w, lo)?;
    let hi = cx.select(same, hi_w, hi)?;
    Ok((cx.bcast(lo, &shape)?, cx.bcast(hi, &shape)?))
}

/// Sum over the elements (dim 0) of a one-hot of [n, bins] at `pos` where `inside` holds, each
/// hit counting 1 or its `weight`, as `dtype`.
fn one_hot_sum(cx: &mut Cx, pos: Value, inside: Value, weight: Option<Value>, bins: i64, dtype: DType) -> Lowered {
    let n = cx.tt(pos).dims[0].clone();
    let grid = [n, c(bins)];
    let iota = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(grid.to_vec())), ("dim", Attr::Int(1)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let pos = cx.bcast_in_dim(pos, &grid, &[0])?;
    let inside = cx.bcast_in_dim(inside, &grid, &[0])?;
    let hit = cx.compare("EQ", iota, pos)?;
    let hit = cx.binary(TenOp::And, hit, inside)?;
    let ones = match weight {
        None => cx.convert(hit, dtype)?,
        Some(w) => {
            let w = cx.convert(w, dtype)?;
            let w = cx.bcast_in_dim(w, &grid, &[0])?;
            let z = cx.splat_like(0.0, w)?;
            cx.select(hit, w, z)?
        }
    };
    Ok(Some(vec![cx.reduce(ones, "sum", &[0])?]))
}

/// histogram.bin_ct / histogram.bins_tensor (self, bins, range | bin edges, weight, density) ->
/// (hist, bin_edges). bin_ct's edges are torch's linspace over `range` (or the data's min and
/// max, widened by 0.5 each way when equal) in the input dtype: `start + step·i` for the first
/// half, `end - step·(bins - i)` for the rest, `step = (end - start) / bins`. An element's bin
/// is the number of edges at or below it, minus one, capped at the last (whose right edge is
/// closed): the binary search torch's kernel does for given edges and the linear estimate plus
/// local search it does for linspace edges agree on it. Elements outside [first, last] edge
/// count nowhere; density divides by the total and each bin's width.
pub fn histogram(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let (t, et) = (cx.out(0)?, cx.out(1)?);
    if !xt.dtype.is_float() || !xt.is_static() || t.dtype != xt.dtype {
        return Ok(None);
    }
    let Some(bins) = t.dims.first().and_then(|d| d.as_const()) else { return Ok(None) };
    if bins < 1 || et.dims != [c(bins + 1)] {
        return Err(cx.err("expected one dimension of bins"));
    }
    let n = xt.numel();
    let flat = cx.reshape(x, std::slice::from_ref(&n))?;
    let edges = if name == "histogram.bins_tensor" {
        let b = cx.arg("bins")?;
        let b = cx.reshape(b, &[c(bins + 1)])?;
        cx.convert(b, xt.dtype)?
    } else {
        let range = match cx.attr("range") {
            Some(Attr::Floats(v)) if v.len() == 2 => Some((v[0], v[1])),
            Some(Attr::Ints(v)) if v.len() == 2 => Some((v[0] as f64, v[1] as f64)),
            None | Some(Attr::Unit) => None,
            Some(a) => return Err(cx.err(&format!("`range` must be two floats, found `{a}`"))),
        };
        let one = [c(1)];
        let (lo, hi) = match range {
            Some((lo, hi)) => {
                let (lo, hi) = if lo == hi { (lo - 0.5, hi + 0.5) } else { (lo, hi) };
                (cx.constf(lo, xt.dtype, &one)?, cx.constf(hi, xt.dtype, &one)?)
            }
            None if n == c(0) => (cx.constf(-0.5, xt.dtype, &one)?, cx.constf(0.5, xt.dtype, &one)?),
            None => {
                let (lo, hi) = data_range(cx, flat, 0.5)?;
                let first = |cx: &mut Cx, v: Value| {
                    cx.emit(
                        TenOp::Slice,
                        vec![v],
                        vec![
                            ("start", Attr::Ints(vec![0])),
                            ("shape", Attr::Ints(vec![1])),
                            ("step", Attr::Ints(vec![1])),
                        ],
                    )
                };
                (first(cx, lo)?, first(cx, hi)?)
            }
        };
        let es = [c(bins + 1)];
        let width = cx.emit(TenOp::Sub, vec![hi, lo], vec![])?;
        let step = cx.binary_scalar(TenOp::Div, width, bins as f64)?;
        let (lo, hi, step) = (cx.bcast(lo, &es)?, cx.bcast(hi, &es)?, cx.bcast(step, &es)?);
        let i = cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(es.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(xt.dtype))],
        )?;
        let up = cx.emit(TenOp::Mul, vec![step, i], vec![])?;
        let up = cx.emit(TenOp::Add, vec![lo, up], vec![])?;
        let last = cx.splat_like(bins as f64, i)?;
        let left = cx.emit(TenOp::Sub, vec![last, i], vec![])?;
        let down = cx.emit(TenOp::Mul, vec![step, left], vec![])?;
        let down = cx.emit(TenOp::Sub, vec![hi, down], vec![])?;
        let half = cx.splat_like(((bins + 1) / 2) as f64, i)?;
        let first_half = cx.compare("LT", i, half)?;
        cx.select(first_half, up, down)?
    };
    let nv = std::slice::from_ref(&n);
    if n == c(0) {
        return Ok(Some(vec![cx.constf(0.0, t.dtype, &t.dims)?, edges]));
    }
    let grid = [n.clone(), c(bins + 1)];
    let eb = cx.bcast_in_dim(edges, &grid, &[1])?;
    let xb = cx.bcast_in_dim(flat, &grid, &[0])?;
    let reached = cx.compare("LE", eb, xb)?;
    let reached = cx.convert(reached, DType::I64)?;
    let pos = cx.reduce(reached, "sum", &[1])?;
    let pos = cx.binary_scalar(TenOp::Sub, pos, 1.0)?;
    let pos = cx.binary_scalar(TenOp::Min, pos, (bins - 1) as f64)?;
    let edge = |cx: &mut Cx, k: i64| -> Result<Value, String> {
        let e = cx.emit(
            TenOp::Slice,
            vec![edges],
            vec![("start", Attr::Ints(vec![k])), ("shape", Attr::Ints(vec![1])), ("step", Attr::Ints(vec![1]))],
        )?;
        cx.bcast(e, nv)
    };
    let (bottom, top) = (edge(cx, 0)?, edge(cx, bins)?);
    let above = cx.compare("GE", flat, bottom)?;
    let below = cx.compare("LE", flat, top)?;
    let inside = cx.emit(TenOp::And, vec![above, below], vec![])?;
    let weight = match cx.operand("weight") {
        Some(w) => Some(cx.reshape(w, nv)?),
        None => None,
    };
    let Some(h) = one_hot_sum(cx, pos, inside, weight, bins, t.dtype)? else { return Ok(None) };
    let mut hist = h[0];
    if cx.bool_or("density", false) {
        let total = cx.reduce(hist, "sum", &[0])?;
        let total = cx.bcast(total, &t.dims)?;
        hist = cx.emit(TenOp::Div, vec![hist, total], vec![])?;
        let slice = |cx: &mut Cx, k: i64| {
            cx.emit(
                TenOp::Slice,
                vec![edges],
                vec![("start", Attr::Ints(vec![k])), ("shape", Attr::Ints(vec![bins])), ("step", Attr::Ints(vec![1]))],
            )
        };
        let (a, b) = (slice(cx, 0)?, slice(cx, 1)?);
        let widths = cx.emit(TenOp::Sub, vec![b, a], vec![])?;
        hist = cx.emit(TenOp::Div, vec![hist, widths], vec![])?;
    }
    Ok(Some(vec![hist, edges]))
}
