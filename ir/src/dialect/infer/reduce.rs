//! Reduction, scan, sort and normalization rules: ops whose result drops or keeps reduced dims,
//! with torch's reduction dtypes and the statistics outputs of the norms.

use super::{c, err, norm_dim, tt, InferCtx, InferError, Rule, R};
use crate::sym::SymExpr;
use crate::types::{DType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        Reduce | ReduceSum | ReduceBool | ReduceArg | VarMean => {
            let t = cx.t("self")?;
            let keep = cx.bool_or("keepdim", false);
            let rank = t.rank();
            let (dims, flatten) = if rule == ReduceArg && cx.attr("dim").is_none() {
                ((0..rank).collect::<Vec<_>>(), true)
            } else {
                (cx.reduce_dims(rank)?, false)
            };
            let shape: Vec<SymExpr> = if flatten && !keep {
                vec![]
            } else {
                t.dims
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| if dims.contains(&i) { keep.then(|| c(1)) } else { Some(d.clone()) })
                    .collect()
            };
            let dt = match rule {
                ReduceSum => cx.dtype().unwrap_or(if t.dtype.is_float() { t.dtype } else { DType::I64 }),
                ReduceBool => DType::Bool,
                ReduceArg => DType::I64,
                _ => cx.dtype().unwrap_or(t.dtype),
            };
            if rule == VarMean {
                return Ok(vec![tt(shape.clone(), dt), tt(shape, dt)]);
            }
            one(tt(shape, dt))
        }
        ReduceValuesIndices => {
            let t = cx.t("self")?;
            let d = norm_dim(cx.int_or("dim", -1)?, t.rank().max(1))?;
            let keep = cx.bool_or("keepdim", false);
            let mut shape = t.dims.clone();
            if t.rank() > 0 {
                if keep {
                    shape[d] = c(1);
                } else {
                    shape.remove(d);
                }
            }
            Ok(vec![tt(shape.clone(), t.dtype), tt(shape, DType::I64)])
        }
        Cumsum => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), cx.dtype().unwrap_or(if t.dtype.is_float() { t.dtype } else { DType::I64 })))
        }
        LayerNorm => {
            let t = cx.t("input")?;
            let n = cx.dims("normalized_shape")?.len();
            if n > t.rank() {
                return err("normalized_shape is longer than the input rank");
            }
            let stat: Vec<SymExpr> =
                t.dims.iter().enumerate().map(|(i, d)| if i >= t.rank() - n { c(1) } else { d.clone() }).collect();
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(stat.clone(), cx.stat_dtype(1, t.dtype)),
                tt(stat, cx.stat_dtype(2, t.dtype)),
            ])
        }
        GroupNorm => {
            let t = cx.t("input")?;
            let n = cx.sym("N")?.unwrap_or(c(1));
            let g = cx.int("group")?;
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(vec![n.clone(), c(g)], cx.stat_dtype(1, t.dtype)),
                tt(vec![n, c(g)], cx.stat_dtype(2, t.dtype)),
            ])
        }
        BatchNorm => {
            let t = cx.t("input")?;
            let training = cx.bool_or("training", false);
            let ch = if training && t.rank() > 1 { t.dims[1].clone() } else { c(0) };
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(vec![ch.clone()], cx.stat_dtype(1, t.dtype)),
                tt(vec![ch], cx.stat_dtype(2, t.dtype)),
            ])
        }
        Sort => {
            let t = cx.first()?;
            Ok(vec![Type::Tensor(t.clone()), tt(t.dims.clone(), DType::I64)])
        }
        TopK => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", -1)?, t.rank().max(1))?;
            let k = cx.sym("k")?.ok_or_else(|| InferError("topk needs `k`".into()))?;
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims[d] = k;
            }
            Ok(vec![tt(dims.clone(), t.dtype), tt(dims, DType::I64)])
        }
        ReduceDims => {
            let t = cx.first()?;
            let dims = cx.ints("dims")?;
            let arg = matches!(cx.attr("kind").and_then(|a| a.as_str()), Some("argmax" | "argmin"));
            for &d in &dims {
                if d < 0 || d as usize >= t.rank() {
                    return err(format!("reduce dim {d} is outside rank {}", t.rank()));
                }
            }
            let shape = t
                .dims
                .iter()
                .enumerate()
                .filter(|(i, _)| !dims.contains(&(*i as i64)))
                .map(|(_, d)| d.clone())
                .collect();
            one(tt(shape, if arg { DType::I64 } else { t.dtype }))
        }
        Scan | ArgSort => {
            let t = cx.first()?;
            let d = cx.int("dim")?;
            if d < 0 || d as usize >= t.rank() {
                return err(format!("dim {d} is outside rank {}", t.rank()));
            }
            one(if rule == ArgSort { tt(t.dims.clone(), DType::I64) } else { Type::Tensor(t.clone()) })
        }
        LayerNormBackward => {
            let x = cx.t("input")?;
            let ns = cx.dims("normalized_shape")?;
            let w = cx.opt_t("weight").map(|t| t.dims.clone()).unwrap_or(ns.clone());
            let b = cx.opt_t("bias").map(|t| t.dims.clone()).unwrap_or(ns);
            Ok(vec![Type::Tensor(x.clone()), tt(w, x.dtype), tt(b, x.dtype)])
        }
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
