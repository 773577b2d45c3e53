//! Indexing rules: index_select, gather, masks, embedding, advanced indexing and the flat
//! `ten` gather/scatter forms, whose result shapes follow the index operands.

use super::{broadcast, c, err, norm_dim, tt, InferCtx, InferError, Rule, R};
use crate::sym::SymExpr;
use crate::types::{DType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        IndexSelect => {
            let (t, idx) = (cx.t("self")?, cx.t("index")?);
            let d = norm_dim(cx.int("dim")?, t.rank().max(1))?;
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims[d] = idx.numel();
            }
            one(tt(dims, t.dtype))
        }
        Gather => one(tt(cx.t("index")?.dims.clone(), cx.t("self")?.dtype)),
        MaskedLike => {
            let (t, mask) = (cx.t("self")?, cx.t("mask")?);
            one(tt(broadcast(&[&t.dims, &mask.dims])?, t.dtype))
        }
        Embedding => {
            let (w, idx) = (cx.t("weight")?, cx.t("indices")?);
            if w.rank() != 2 {
                return err(format!("embedding weight must be 2-D, got rank {}", w.rank()));
            }
            let mut dims = idx.dims.clone();
            dims.push(w.dims[1].clone());
            one(tt(dims, w.dtype))
        }
        Index => {
            let t = cx.t("self")?;
            let idx = cx.list("indices");
            if idx.len() > t.rank() {
                return err(format!("{} indices for a rank-{} tensor", idx.len(), t.rank()));
            }
            let mut shapes: Vec<Vec<SymExpr>> = Vec::new();
            for i in idx.iter().flatten() {
                if i.dtype == DType::Bool || i.dtype == DType::U8 {
                    // Boolean masks give a data-dependent count.
                    return err("boolean mask indexing has a data-dependent shape");
                }
                shapes.push(i.dims.clone());
            }
            let refs: Vec<&[SymExpr]> = shapes.iter().map(|s| s.as_slice()).collect();
            let bshape = broadcast(&refs)?;
            let present: Vec<usize> = idx.iter().enumerate().filter(|(_, i)| i.is_some()).map(|(k, _)| k).collect();
            let adjacent = present.windows(2).all(|w| w[1] == w[0] + 1);
            let mut dims = Vec::new();
            if adjacent && !present.is_empty() {
                let first = present[0];
                dims.extend_from_slice(&t.dims[..first]);
                dims.extend(bshape);
                dims.extend((0..t.rank()).filter(|k| *k > first && !present.contains(k)).map(|k| t.dims[k].clone()));
            } else {
                dims.extend(bshape);
                dims.extend((0..t.rank()).filter(|k| !present.contains(k)).map(|k| t.dims[k].clone()));
            }
            one(tt(dims, t.dtype))
        }
        TakeDim => {
            let (x, idx) = (cx.t("x")?, cx.t("index")?);
            let d = cx.int("dim")?;
            if d < 0 || d as usize >= x.rank() {
                return err(format!("dim {d} is outside rank {}", x.rank()));
            }
            if idx.dtype.is_float() || idx.dtype == DType::Bool {
                return err("`index` must be an integer tensor");
            }
            let d = d as usize;
            let mut dims = x.dims[..d].to_vec();
            dims.extend(idx.dims.iter().cloned());
            dims.extend(x.dims[d + 1..].iter().cloned());
            one(tt(dims, x.dtype))
        }
        ScatterFlat => {
            let (x, idx, upd) = (cx.t("x")?, cx.t("index")?, cx.t("updates")?);
            if x.rank() != 1 {
                return err(format!("`x` must be 1-D, found rank {}", x.rank()));
            }
            if idx.dtype.is_float() || idx.dtype == DType::Bool {
                return err("`index` must be an integer tensor");
            }
            if upd.dims != idx.dims || upd.dtype != x.dtype {
                return err("`updates` must have the shape of `index` and the dtype of `x`");
            }
            let kind = cx.attr("kind").and_then(|a| a.as_str()).unwrap_or("");
            if !matches!(kind, "set" | "sum" | "prod" | "max" | "min") {
                return err(format!("unknown scatter kind `{kind}` (set, sum, prod, max or min)"));
            }
            one(Type::Tensor(x.clone()))
        }
        EmbeddingBackward => {
            let g = cx.t("grad_output")?;
            let n = cx.sym("num_weights")?.ok_or_else(|| InferError("missing num_weights".into()))?;
            let last = g.dims.last().cloned().unwrap_or(c(1));
            one(tt(vec![n, last], g.dtype))
        }
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
