//! Reductions (`ten.reduce` then a reshape for keepdim), mean and variance (divided by the element
//! count, symbolic counts included), softmax and layer norm. Half-float inputs of mean, variance,
//! softmax and layer norm compute in f32 and convert back, as torch's kernels accumulate.

use super::build::{acc_dtype, c, norm_dim, Cx, Lowered};
use ember_ir::SymExpr;

/// The dims of `shape` not in `dims`, and the shape they leave.
fn kept(shape: &[SymExpr], dims: &[usize]) -> (Vec<usize>, Vec<SymExpr>) {
    let keep: Vec<usize> = (0..shape.len()).filter(|d| !dims.contains(d)).collect();
    let rest = keep.iter().map(|&d| shape[d].clone()).collect();
    (keep, rest)
}

/// sum/prod (integers accumulate in the result dtype, int64 unless `dtype`), amax/amin, any
/// (truthiness, then OR) and mean (sum / count).
pub fn reduction(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let dims = cx.reduce_dims(xt.rank())?;
    let base = name.split('.').next().unwrap_or(name);
    let out = match base {
        "sum" | "prod" | "amax" | "amin" => {
            let kind = match base {
                "sum" => "sum",
                "prod" => "prod",
                "amax" => "max",
                _ => "min",
            };
            let x = cx.convert(x, t.dtype)?;
            cx.reduce(x, kind, &dims)?
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
            let m = cx.emit("ten.div", vec![s, n], vec![])?;
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
    let mean = cx.emit("ten.div", vec![s, n], vec![])?;
    let mean_b = cx.bcast_in_dim(mean, &xt.dims, &keep)?;
    let d = cx.emit("ten.sub", vec![xa, mean_b], vec![])?;
    let sq = cx.emit("ten.mul", vec![d, d], vec![])?;
    let ss = cx.reduce(sq, "sum", &dims)?;
    let numel = dims.iter().map(|&d| xt.dims[d].clone()).fold(c(1), SymExpr::mul);
    let denom = match numel.as_const() {
        Some(k) => cx.constf((k as f64 - correction).max(0.0), acc, &rest)?,
        None if correction == 0.0 => n,
        None => {
            let k = cx.binary_scalar("ten.sub", n, correction)?;
            cx.binary_scalar("ten.max", k, 0.0)?
        }
    };
    let var = cx.emit("ten.div", vec![ss, denom], vec![])?;
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
    let z = cx.emit("ten.sub", vec![x, m], vec![])?;
    let e = cx.unary("ten.exp", z)?;
    let s = cx.reduce(e, "sum", &dims)?;
    let out = if log {
        let ls = cx.unary("ten.log", s)?;
        let ls = cx.bcast_in_dim(ls, &xt.dims, &keep)?;
        cx.emit("ten.sub", vec![z, ls], vec![])?
    } else {
        let s = cx.bcast_in_dim(s, &xt.dims, &keep)?;
        cx.emit("ten.div", vec![e, s], vec![])?
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
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
    let (lead, rest) = kept(&xt.dims, &dims);
    let acc = t_mean.dtype;
    let xa = cx.convert(x, acc)?;
    let s = cx.reduce(xa, "sum", &dims)?;
    let n = cx.count(&xt.dims, &dims, acc, &rest)?;
    let mean = cx.emit("ten.div", vec![s, n], vec![])?;
    let mean_b = cx.bcast_in_dim(mean, &xt.dims, &lead)?;
    let d = cx.emit("ten.sub", vec![xa, mean_b], vec![])?;
    let sq = cx.emit("ten.mul", vec![d, d], vec![])?;
    let ss = cx.reduce(sq, "sum", &dims)?;
    let var = cx.emit("ten.div", vec![ss, n], vec![])?;
    let var_eps = cx.binary_scalar("ten.add", var, eps)?;
    let rstd = cx.unary("ten.rsqrt", var_eps)?;
    let rstd_b = cx.bcast_in_dim(rstd, &xt.dims, &lead)?;
    let mut y = cx.emit("ten.mul", vec![d, rstd_b], vec![])?;
    for (param, op) in [("weight", "ten.mul"), ("bias", "ten.add")] {
        if let Some(p) = cx.operand(param) {
            let p = cx.coerce(p, acc, &xt.dims)?;
            y = cx.emit(op, vec![y, p], vec![])?;
        }
    }
    let out = cx.convert(y, t_out.dtype)?;
    let mean = cx.reshape(mean, &t_mean.dims)?;
    let rstd = cx.reshape(rstd, &t_rstd.dims)?;
    Ok(Some(vec![out, mean, rstd]))
}
