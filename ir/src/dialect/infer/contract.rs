//! Contraction, convolution and window rules: matmul broadcasting, `dot_general`, conv and pool
//! output sizes (with `pool_out`'s ceil mode), upsampling and sliding windows.

use super::{c, err, nth, pool_out, result_type, tt, InferCtx, InferError, Rule, R};
use crate::attr::Attr;
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        Matmul => {
            let ts: Vec<&TensorType> = match (cx.opt_t("mat1"), cx.opt_t("mat2")) {
                (Some(a), Some(b)) => vec![a, b],
                (None, Some(b)) => vec![cx.t("self")?, b],
                _ => vec![cx.t("self")?, cx.t("other")?],
            };
            let (a, b) = (ts[0], ts[1]);
            if a.rank() < 2 || b.rank() < 2 || a.rank() != b.rank() {
                return err(format!("matmul operands must have equal rank >= 2, got {} and {}", a.rank(), b.rank()));
            }
            let r = a.rank();
            // bmm's batch dims must be equal (torch does not broadcast them).
            for i in 0..r - 2 {
                if let (Some(x), Some(y)) = (a.dims[i].as_const(), b.dims[i].as_const()) {
                    if x != y {
                        return err(format!("batch dim {i} differs: {x} vs {y}"));
                    }
                }
            }
            let (k1, k2) = (&a.dims[r - 1], &b.dims[r - 2]);
            if let (Some(x), Some(y)) = (k1.as_const(), k2.as_const()) {
                if x != y {
                    return err(format!("contraction dims differ: {x} (lhs dim {}) vs {y} (rhs dim {})", r - 1, r - 2));
                }
            }
            let mut dims = a.dims[..r - 1].to_vec();
            dims.push(b.dims[r - 1].clone());
            one(tt(dims, result_type(&[a, b], &[])))
        }
        Convolution => {
            let (x, w) = (cx.t("input")?, cx.t("weight")?);
            if x.rank() < 3 || w.rank() != x.rank() {
                return err(format!(
                    "convolution input rank {} and weight rank {} must match and be >= 3",
                    x.rank(),
                    w.rank()
                ));
            }
            let sp = x.rank() - 2;
            let (stride, pad, dil) = (cx.ints("stride")?, cx.ints("padding")?, cx.ints("dilation")?);
            let transposed = cx.bool_or("transposed", false);
            let groups = cx.int_or("groups", 1)?;
            let opad = if transposed { cx.ints("output_padding")? } else { vec![] };
            let out_ch = if transposed { SymExpr::times(w.dims[1].clone(), c(groups)) } else { w.dims[0].clone() };
            let mut dims = vec![x.dims[0].clone(), out_ch];
            for i in 0..sp {
                let k = w.dims[2 + i]
                    .as_const()
                    .ok_or_else(|| InferError("convolution kernel sizes must be static".into()))?;
                let (s, p, d) = (nth(&stride, i, 1), nth(&pad, i, 0), nth(&dil, i, 1));
                let inp = x.dims[2 + i].clone();
                dims.push(if transposed {
                    SymExpr::plus(
                        SymExpr::times(SymExpr::plus(inp, c(-1)), c(s)),
                        c(-2 * p + d * (k - 1) + nth(&opad, i, 0) + 1),
                    )
                } else {
                    pool_out(&inp, k, s, p, d, false)
                });
            }
            one(tt(dims, x.dtype))
        }
        MaxPool | AvgPool => {
            let t = cx.t("self")?;
            let k = cx.ints("kernel_size")?;
            let sp = k.len().max(1);
            if t.rank() < sp {
                return err("pool input rank is below the kernel rank");
            }
            let stride = cx.ints("stride").unwrap_or_default();
            let pad = cx.ints("padding").unwrap_or_default();
            let dil = if rule == MaxPool { cx.ints("dilation").unwrap_or_default() } else { vec![] };
            let ceil = cx.bool_or("ceil_mode", false);
            let mut dims = t.dims[..t.rank() - sp].to_vec();
            for i in 0..sp {
                let kk = nth(&k, i, 1);
                let s = if stride.is_empty() { kk } else { nth(&stride, i, kk) };
                dims.push(pool_out(&t.dims[t.rank() - sp + i], kk, s, nth(&pad, i, 0), nth(&dil, i, 1), ceil));
            }
            if rule == MaxPool {
                Ok(vec![tt(dims.clone(), t.dtype), tt(dims, DType::I64)])
            } else {
                one(tt(dims, t.dtype))
            }
        }
        AdaptiveAvgPool | AdaptiveMaxPool => {
            let t = cx.t("self")?;
            let o = cx.dims("output_size")?;
            if t.rank() < o.len() {
                return err("output_size is longer than the input rank");
            }
            let mut dims = t.dims[..t.rank() - o.len()].to_vec();
            dims.extend(o);
            if rule == AdaptiveMaxPool {
                Ok(vec![tt(dims.clone(), t.dtype), tt(dims, DType::I64)])
            } else {
                one(tt(dims, t.dtype))
            }
        }
        Upsample => {
            let t = cx.t("input")?;
            let mut dims = t.dims[..2.min(t.rank())].to_vec();
            if let Some(o) = cx.attr("output_size").and_then(|a| a.as_dims()) {
                dims.extend(o);
            } else if let Some(Attr::Floats(f)) = cx.attr("scale_factors") {
                for (i, s) in f.iter().enumerate() {
                    let d = t
                        .dims
                        .get(2 + i)
                        .and_then(|d| d.as_const())
                        .ok_or_else(|| InferError("scale_factors need static input dims".into()))?;
                    dims.push(c((d as f64 * s).floor() as i64));
                }
            } else {
                return err("upsample needs output_size or scale_factors");
            }
            one(tt(dims, t.dtype))
        }
        DotGeneral => {
            let (l, r) = (cx.t("lhs")?, cx.t("rhs")?);
            let (lb, rb, lc, rc) =
                (cx.ints("lhs_batch")?, cx.ints("rhs_batch")?, cx.ints("lhs_contract")?, cx.ints("rhs_contract")?);
            if lb.len() != rb.len() || lc.len() != rc.len() {
                return err("batch and contracting dim lists must pair up");
            }
            let get = |t: &TensorType, d: i64| -> R<SymExpr> {
                t.dims
                    .get(d as usize)
                    .cloned()
                    .ok_or_else(|| InferError(format!("dim {d} is outside rank {}", t.rank())))
            };
            for (&a, &b) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
                let (x, y) = (get(l, a)?, get(r, b)?);
                if x != y && x.as_const().is_some() && y.as_const().is_some() {
                    return err(format!("lhs dim {a} (size {x}) and rhs dim {b} (size {y}) must match"));
                }
            }
            let mut dims: Vec<SymExpr> = lb.iter().map(|&d| get(l, d)).collect::<R<_>>()?;
            dims.extend(
                (0..l.rank() as i64).filter(|d| !lb.contains(d) && !lc.contains(d)).map(|d| l.dims[d as usize].clone()),
            );
            dims.extend(
                (0..r.rank() as i64).filter(|d| !rb.contains(d) && !rc.contains(d)).map(|d| r.dims[d as usize].clone()),
            );
            if l.dtype != r.dtype {
                return err("dot_general operands must share a dtype");
            }
            match cx.dtype() {
                None => one(tt(dims, l.dtype)),
                Some(DType::F32) if matches!(l.dtype, DType::F16 | DType::BF16 | DType::F32) => {
                    one(tt(dims, DType::F32))
                }
                Some(d) => err(format!(
                    "dot_general `dtype` {} of {} operands: only f32 (the f16/bf16 accumulator)",
                    d.torch_name(),
                    l.dtype.torch_name()
                )),
            }
        }
        Windows => {
            let t = cx.first()?;
            let (k, s, d) = (cx.ints("kernel")?, cx.ints("stride")?, cx.ints("dilation")?);
            let n = k.len();
            if s.len() != n || d.len() != n {
                return err("`kernel`, `stride` and `dilation` need one entry per window dim");
            }
            if n > t.rank() {
                return err(format!("{n} window dims for a rank-{} operand", t.rank()));
            }
            if k.iter().chain(&s).chain(&d).any(|&v| v < 1) {
                return err("kernel sizes, strides and dilations must be positive");
            }
            let lead = t.rank() - n;
            let mut dims = t.dims[..lead].to_vec();
            dims.extend(k.iter().map(|&v| c(v)));
            for i in 0..n {
                let span = d[i] * (k[i] - 1) + 1;
                let src = &t.dims[lead + i];
                if src.as_const().is_some_and(|v| v < span) {
                    return err(format!("window dim {i} spans {span} elements but the operand has {src}"));
                }
                dims.push(SymExpr::plus(SymExpr::floordiv(SymExpr::plus(src.clone(), c(-span)), c(s[i])), c(1)));
            }
            one(tt(dims, t.dtype))
        }
        ConvolutionBackward => {
            let (x, w) = (cx.t("input")?, cx.t("weight")?);
            let bias = cx.attr("bias_sizes").and_then(|a| a.as_dims()).unwrap_or_else(|| vec![w.dims[0].clone()]);
            Ok(vec![Type::Tensor(x.clone()), Type::Tensor(w.clone()), tt(bias, x.dtype)])
        }
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
