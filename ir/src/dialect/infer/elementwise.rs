//! Elementwise and broadcast rules: same-as-operand, unary float/bool, binary ops with torch's
//! type promotion, `where`, and the strict `ten` forms. Promotion is where most rule bugs hide, so
//! these sit together.

use super::{broadcast, err, float_of, fmt_shapes, result_type, tt, InferCtx, InferError, Rule, R};
use crate::attr::Attr;
use crate::dialect::schema::Kind;
use crate::sym::SymExpr;
use crate::types::{DType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        Same | LikeSelf => {
            let t = if rule == LikeSelf { cx.t("self")? } else { cx.first()? };
            one(Type::Tensor(t.clone()))
        }
        Softmax => {
            let t = cx.t("self")?;
            one(tt(t.dims.clone(), if cx.bool_or("half_to_float", false) { DType::F32 } else { t.dtype }))
        }
        UnaryFloat => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), float_of(t.dtype)))
        }
        UnaryBool => one(tt(cx.first()?.dims.clone(), DType::Bool)),
        Binary | BinaryFloat | Compare => {
            let ts = cx.all_tensors();
            let shapes: Vec<&[SymExpr]> = ts.iter().map(|t| t.dims.as_slice()).collect();
            let dims = broadcast(&shapes)?;
            let scalars: Vec<&Attr> = ["other", "exponent", "self"]
                .iter()
                .filter_map(|n| cx.sig.param(n).filter(|p| p.kind == Kind::Scalar).and(cx.attr(n)))
                .collect();
            let dt = result_type(&ts, &scalars);
            one(tt(
                dims,
                match rule {
                    Compare => DType::Bool,
                    BinaryFloat => float_of(dt),
                    _ => dt,
                },
            ))
        }
        Where => {
            let (cnd, a, b) = (cx.t("condition")?, cx.t("self")?, cx.t("other")?);
            let dims = broadcast(&[&cnd.dims, &a.dims, &b.dims])?;
            one(tt(dims, result_type(&[a, b], &[])))
        }
        SameWithDtype => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), cx.dtype().unwrap_or(t.dtype)))
        }
        Dropout => {
            let t = cx.first()?;
            Ok(vec![Type::Tensor(t.clone()), tt(t.dims.clone(), DType::Bool)])
        }
        Elementwise | CompareStrict | SelectStrict => {
            let ts = cx.all_tensors();
            let first = if rule == SelectStrict { cx.t("on_true")? } else { cx.first()? };
            for (i, t) in ts.iter().enumerate() {
                if t.dims != first.dims {
                    return err(format!(
                        "operand {i} has shape {} but the op needs {} for every operand",
                        fmt_shapes(&[&t.dims]),
                        fmt_shapes(&[&first.dims])
                    ));
                }
            }
            if rule == SelectStrict {
                if cx.t("pred")?.dtype != DType::Bool {
                    return err("`pred` must be bool");
                }
                if cx.t("on_false")?.dtype != first.dtype {
                    return err("`on_true` and `on_false` dtypes differ");
                }
            } else if ts.iter().any(|t| t.dtype != first.dtype) {
                return err("operand dtypes differ; insert ten.convert");
            }
            one(tt(first.dims.clone(), if rule == CompareStrict { DType::Bool } else { first.dtype }))
        }
        BroadcastInDim => {
            let t = cx.first()?;
            let shape = cx.dims("shape")?;
            let map = cx.ints("dims")?;
            if map.len() != t.rank() {
                return err(format!("`dims` has {} entries for a rank-{} operand", map.len(), t.rank()));
            }
            for (i, &d) in map.iter().enumerate() {
                let Some(target) = usize::try_from(d).ok().and_then(|d| shape.get(d)) else {
                    return err(format!("`dims`[{i}] = {d} is outside the result rank {}", shape.len()));
                };
                let src = &t.dims[i];
                if src.as_const() != Some(1) && src != target && src.as_const().is_some() && target.as_const().is_some()
                {
                    return err(format!("operand dim {i} (size {src}) cannot broadcast to size {target}"));
                }
            }
            one(tt(shape, t.dtype))
        }
        Splat | Iota => {
            let dt = cx.dtype().ok_or_else(|| InferError("missing `dtype`".into()))?;
            one(tt(cx.dims("shape")?, dt))
        }
        SymInt => one(Type::Scalar(DType::I64)),
        Scalar => one(Type::Scalar(cx.first()?.dtype)),
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
