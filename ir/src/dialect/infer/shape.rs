//! Shape and layout rules: views, reshapes, permutations, slicing, concatenation and padding.
//! These move or reinterpret elements without computing any, so only dims change.

use super::{c, ceil_div, div_exact, err, norm_dim, result_type, tt, InferCtx, Rule, R};
use crate::attr::Attr;
use crate::sym::SymExpr;
use crate::types::{TensorType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        View => {
            let t = cx.first()?;
            let size = cx.dims("size").or_else(|_| cx.dims("shape"))?;
            let wild: Vec<usize> =
                size.iter().enumerate().filter(|(_, d)| d.as_const() == Some(-1)).map(|(i, _)| i).collect();
            let mut size = size;
            if wild.len() > 1 {
                return err("only one dim of a view may be -1");
            }
            if let Some(&w) = wild.first() {
                let known = size
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != w)
                    .fold(c(1), |acc, (_, d)| SymExpr::times(acc, d.clone()));
                size[w] = div_exact(&t.numel(), &known);
            }
            let (a, b) = (t.numel(), size.iter().cloned().fold(c(1), SymExpr::times));
            if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
                if x != y {
                    return err(format!("cannot view {x} elements as {y}"));
                }
            }
            one(tt(size, t.dtype))
        }
        Expand => {
            let t = cx.first()?;
            let size = cx.dims("size")?;
            if size.len() < t.rank() {
                return err(format!("expand to rank {} is below the input rank {}", size.len(), t.rank()));
            }
            let off = size.len() - t.rank();
            let mut dims = Vec::new();
            for (i, d) in size.iter().enumerate() {
                if d.as_const() == Some(-1) {
                    if i < off {
                        return err("-1 is not allowed for a new leading dim of expand");
                    }
                    dims.push(t.dims[i - off].clone());
                } else {
                    if i >= off {
                        let src = &t.dims[i - off];
                        if src.as_const() != Some(1) && src != d && src.as_const().is_some() && d.as_const().is_some() {
                            return err(format!("cannot expand dim {} of size {src} to {d}", i - off));
                        }
                    }
                    dims.push(d.clone());
                }
            }
            one(tt(dims, t.dtype))
        }
        Permute => {
            let t = cx.first()?;
            let p = cx.ints("dims")?;
            if p.len() != t.rank() {
                return err(format!("permutation has {} entries for rank {}", p.len(), t.rank()));
            }
            let mut seen = vec![false; t.rank()];
            let mut dims = Vec::new();
            for &d in &p {
                let d = norm_dim(d, t.rank())?;
                if std::mem::replace(&mut seen[d], true) {
                    return err(format!("dim {d} repeats in the permutation"));
                }
                dims.push(t.dims[d].clone());
            }
            one(tt(dims, t.dtype))
        }
        Transpose => {
            let t = cx.first()?;
            let r = t.rank().max(1);
            let (a, b) = (norm_dim(cx.int("dim0")?, r)?, norm_dim(cx.int("dim1")?, r)?);
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims.swap(a, b);
            }
            one(tt(dims, t.dtype))
        }
        Unsqueeze => {
            let t = cx.first()?;
            let d = norm_dim(cx.int("dim")?, t.rank() + 1)?;
            let mut dims = t.dims.clone();
            dims.insert(d, c(1));
            one(tt(dims, t.dtype))
        }
        Squeeze => {
            let t = cx.first()?;
            // An empty `dim` list squeezes nothing (unlike reductions, where [] means all dims).
            let sel = match cx.attr("dim") {
                Some(Attr::Ints(v)) if v.is_empty() => vec![],
                Some(_) => cx.reduce_dims(t.rank())?,
                None => (0..t.rank()).collect(),
            };
            let dims = t
                .dims
                .iter()
                .enumerate()
                .filter(|(i, d)| !(sel.contains(i) && d.as_const() == Some(1)))
                .map(|(_, d)| d.clone())
                .collect();
            one(tt(dims, t.dtype))
        }
        Select => {
            let t = cx.first()?;
            let d = norm_dim(cx.int("dim")?, t.rank())?;
            let mut dims = t.dims.clone();
            dims.remove(d);
            one(tt(dims, t.dtype))
        }
        Slice => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", 0)?, t.rank())?;
            let size = t.dims[d].clone();
            let step = cx.int_or("step", 1)?;
            if step <= 0 {
                return err("slice step must be positive");
            }
            let clamp = |e: Option<SymExpr>, dflt: SymExpr| -> SymExpr {
                match e {
                    None => dflt,
                    Some(e) => match (e.as_const(), size.as_const()) {
                        (Some(v), Some(n)) => c(if v < 0 { (v + n).max(0) } else { v.min(n) }),
                        (Some(v), None) if v >= i64::MAX / 2 => size.clone(),
                        (Some(v), None) if v < 0 => SymExpr::plus(size.clone(), c(v)),
                        _ => e,
                    },
                }
            };
            let start = clamp(cx.sym("start")?, c(0));
            let end = clamp(cx.sym("end")?, size.clone());
            let len = SymExpr::plus(end, SymExpr::times(c(-1), start));
            let len = match len.as_const() {
                Some(l) => c(if l <= 0 { 0 } else { (l + step - 1) / step }),
                None => ceil_div(len, step),
            };
            let mut dims = t.dims.clone();
            dims[d] = len;
            one(tt(dims, t.dtype))
        }
        SplitWithSizes => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", 0)?, t.rank())?;
            let sizes = cx.dims("split_sizes")?;
            Ok(sizes
                .into_iter()
                .map(|s| {
                    let mut dims = t.dims.clone();
                    dims[d] = s;
                    tt(dims, t.dtype)
                })
                .collect())
        }
        Cat | Stack => {
            let name = if cx.sig.param("inputs").is_some() { "inputs" } else { "tensors" };
            let ts: Vec<&TensorType> = cx.list(name).into_iter().flatten().collect();
            // torch skips legacy empty 1-D tensors in cat.
            let all = ts.clone();
            let mut ts: Vec<&TensorType> =
                ts.into_iter().filter(|t| !(rule == Cat && t.rank() == 1 && t.dims[0].as_const() == Some(0))).collect();
            if ts.is_empty() && !all.is_empty() {
                ts = vec![all[0]];
            }
            let Some(first) = ts.first() else { return err("cat of no tensors") };
            let dt = result_type(&ts, &[]);
            let rank = first.rank();
            if ts.iter().any(|t| t.rank() != rank) {
                return err("cat/stack inputs must have equal rank");
            }
            if rule == Stack {
                let d = norm_dim(cx.int_or("dim", 0)?, rank + 1)?;
                let mut dims = first.dims.clone();
                dims.insert(d, c(ts.len() as i64));
                return one(tt(dims, dt));
            }
            let d = norm_dim(cx.int_or("dim", 0)?, rank)?;
            // Every other dim must agree (symbolic ones are torch.export's to guarantee).
            for (k, t) in ts.iter().enumerate() {
                for i in (0..rank).filter(|&i| i != d) {
                    if let (Some(x), Some(y)) = (first.dims[i].as_const(), t.dims[i].as_const()) {
                        if x != y {
                            return err(format!("cat input {k} has size {y} in dim {i}, the first input {x}"));
                        }
                    }
                }
            }
            let mut dims = first.dims.clone();
            dims[d] = ts.iter().map(|t| t.dims[d].clone()).fold(c(0), SymExpr::plus);
            one(tt(dims, dt))
        }
        Repeat => {
            let t = cx.first()?;
            let reps = cx.dims("repeats")?;
            if reps.len() < t.rank() {
                return err("repeat needs at least as many repeats as dims");
            }
            let off = reps.len() - t.rank();
            let dims = reps
                .iter()
                .enumerate()
                .map(|(i, r)| if i < off { r.clone() } else { SymExpr::times(r.clone(), t.dims[i - off].clone()) })
                .collect();
            one(tt(dims, t.dtype))
        }
        ConstantPad | Pad => {
            let t = cx.first()?;
            let pad = cx.dims(if rule == ConstantPad { "pad" } else { "padding" })?;
            if pad.len() % 2 != 0 || pad.len() / 2 > t.rank() {
                return err(format!("padding has {} entries for rank {}", pad.len(), t.rank()));
            }
            let mut dims = t.dims.clone();
            for i in 0..pad.len() / 2 {
                let d = t.rank() - 1 - i;
                dims[d] = SymExpr::plus(dims[d].clone(), SymExpr::plus(pad[2 * i].clone(), pad[2 * i + 1].clone()));
            }
            one(tt(dims, t.dtype))
        }
        Diagonal => {
            let t = cx.first()?;
            let (off, d1, d2) = (
                cx.int_or("offset", 0)?,
                norm_dim(cx.int_or("dim1", 0)?, t.rank())?,
                norm_dim(cx.int_or("dim2", 1)?, t.rank())?,
            );
            let (a, b) = (t.dims[d1].as_const(), t.dims[d2].as_const());
            let len = match (a, b) {
                (Some(a), Some(b)) => c(if off >= 0 { a.min(b - off) } else { (a + off).min(b) }.max(0)),
                _ if off == 0 && t.dims[d1] == t.dims[d2] => t.dims[d1].clone(),
                _ => return err("diagonal of symbolic dims needs offset 0 and equal dims"),
            };
            let mut dims: Vec<SymExpr> =
                t.dims.iter().enumerate().filter(|(i, _)| *i != d1 && *i != d2).map(|(_, d)| d.clone()).collect();
            dims.push(len);
            one(tt(dims, t.dtype))
        }
        AsStrided => one(tt(cx.dims("size")?, cx.first()?.dtype)),
        Reshape => {
            let t = cx.first()?;
            let shape = cx.dims("shape")?;
            let (a, b) = (t.numel(), shape.iter().cloned().fold(c(1), SymExpr::times));
            if a != b && a.as_const().is_some() && b.as_const().is_some() {
                return err(format!("cannot reshape {a} elements into {b}"));
            }
            one(tt(shape, t.dtype))
        }
        SliceStrided => {
            let t = cx.first()?;
            let (start, shape, step) = (cx.dims("start")?, cx.dims("shape")?, cx.ints("step")?);
            if start.len() != t.rank() || shape.len() != t.rank() || step.len() != t.rank() {
                return err("`start`, `shape` and `step` need one entry per dim");
            }
            if step.iter().any(|&s| s <= 0) {
                return err("slice steps must be positive");
            }
            one(tt(shape, t.dtype))
        }
        PadEdges => {
            let t = cx.first()?;
            let (low, high) = (cx.dims("low")?, cx.dims("high")?);
            if low.len() != t.rank() || high.len() != t.rank() {
                return err("`low` and `high` need one entry per dim");
            }
            let mut dims = Vec::new();
            for (i, d) in t.dims.iter().enumerate() {
                let n = SymExpr::plus(d.clone(), SymExpr::plus(low[i].clone(), high[i].clone()));
                if n.as_const().is_some_and(|n| n < 0) {
                    return err(format!(
                        "padding dim {i} (size {d}) by {} and {} leaves a negative size",
                        low[i], high[i]
                    ));
                }
                dims.push(n);
            }
            one(tt(dims, t.dtype))
        }
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
