//! Creation rules: `full`, `empty`, `arange`, `randperm` and scalar tensors, whose shapes come
//! from attributes rather than operands (arange's length is a symbolic ceiling division).

use super::{c, ceil_div, err, tt, InferCtx, Rule, R};
use crate::attr::Attr;
use crate::sym::SymExpr;
use crate::types::{DType, Type};

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        Full => {
            let size = cx.dims("size")?;
            let dt = cx.dtype().unwrap_or(match cx.attr("fill_value") {
                Some(Attr::Bool(_)) => DType::Bool,
                Some(Attr::Int(_)) => DType::I64,
                _ => DType::F32,
            });
            one(tt(size, dt))
        }
        Empty => one(tt(cx.dims("size")?, cx.dtype().unwrap_or(DType::F32))),
        Randperm => one(tt(vec![cx.sym("n")?.unwrap_or(c(0))], cx.dtype().unwrap_or(DType::I64))),
        Arange => {
            let get = |n: &str| cx.attr(n);
            // Python bools are ints here (arange(False, True) == [0]).
            let as_num = |a: Option<&Attr>, d: i64| -> Attr {
                match a {
                    Some(Attr::Bool(b)) => Attr::Int(*b as i64),
                    Some(a) => a.clone(),
                    None => Attr::Int(d),
                }
            };
            let (start, end, step) =
                (&as_num(get("start"), 0), get("end").map(|e| as_num(Some(e), 0)), &as_num(get("step"), 1));
            let end = end.as_ref();
            let Some(end) = end else { return err("arange needs `end`") };
            let all_int = [start, end, step].iter().all(|a| !matches!(a, Attr::Float(_)));
            let dt = cx.dtype().unwrap_or(if all_int { DType::I64 } else { DType::F32 });
            let len = if all_int {
                let (s, e, st) = (start.as_sym(), end.as_sym(), step.as_int());
                match (s, e, st) {
                    (Some(s), Some(e), Some(st)) if st > 0 => {
                        let span = SymExpr::plus(e, SymExpr::times(c(-1), s));
                        match span.as_const() {
                            Some(v) => c(((v + st - 1) / st).max(0)),
                            None => ceil_div(span, st),
                        }
                    }
                    (Some(s), Some(e), Some(st)) if st < 0 => match (s.as_const(), e.as_const()) {
                        (Some(s), Some(e)) => c(((s - e + (-st) - 1) / (-st)).max(0)),
                        _ => return err("negative-step arange needs static bounds"),
                    },
                    _ => return err("arange bounds must be integers"),
                }
            } else {
                let (s, e, st) =
                    (start.as_float().unwrap_or(0.0), end.as_float().unwrap_or(0.0), step.as_float().unwrap_or(1.0));
                c(((e - s) / st).ceil().max(0.0) as i64)
            };
            one(tt(vec![len], dt))
        }
        ScalarTensor => one(tt(vec![], cx.dtype().unwrap_or(DType::F32))),
        _ => unreachable!("`infer` dispatches {rule:?} to another family"),
    }
}
