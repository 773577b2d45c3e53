//! Rules of the `ten` linalg ops: batches of matrices `[.., M, N]` in, factors of the same batch
//! out; pivots and `info` are int32 as LAPACK (and torch) gives them.

use super::{err, tt, InferCtx, Rule, R};
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};

/// The batch dims and the two matrix dims of operand `name`.
fn matrix<'a>(cx: &InferCtx<'a>, name: &str) -> R<(&'a [SymExpr], &'a SymExpr, &'a SymExpr, &'a TensorType)> {
    let t = cx.t(name)?;
    let r = t.rank();
    if r < 2 {
        return err(format!("`{name}` must be a batch of matrices, found rank {r}"));
    }
    if !t.dtype.is_float() {
        return err(format!("`{name}` must be a float tensor, found {}", t.dtype.torch_name()));
    }
    Ok((&t.dims[..r - 2], &t.dims[r - 2], &t.dims[r - 1], t))
}

fn min(a: &SymExpr, b: &SymExpr) -> SymExpr {
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => SymExpr::Const(x.min(y)),
        _ if a == b => a.clone(),
        _ => SymExpr::Min(Box::new(a.clone()), Box::new(b.clone())),
    }
}

fn with(batch: &[SymExpr], tail: &[&SymExpr], dt: DType) -> Type {
    tt(batch.iter().chain(tail.iter().copied()).cloned().collect(), dt)
}

fn square(name: &str, m: &SymExpr, n: &SymExpr) -> R<()> {
    if m != n {
        return err(format!("`{name}` must be square, found {m} x {n}"));
    }
    Ok(())
}

pub(super) fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    match rule {
        Cholesky => {
            let (b, m, n, t) = matrix(cx, "x")?;
            square("x", m, n)?;
            Ok(vec![Type::Tensor(t.clone()), with(b, &[], DType::I32)])
        }
        Eigh => {
            let (b, m, n, t) = matrix(cx, "x")?;
            square("x", m, n)?;
            Ok(vec![with(b, &[n], t.dtype), Type::Tensor(t.clone())])
        }
        Lu => {
            let (b, m, n, t) = matrix(cx, "x")?;
            let k = min(m, n);
            Ok(vec![Type::Tensor(t.clone()), with(b, &[&k], DType::I32), with(b, &[], DType::I32)])
        }
        LuSolve | TriangularSolve => {
            let a = if rule == LuSolve { "lu" } else { "a" };
            let (ba, m, n, at) = matrix(cx, a)?;
            square(a, m, n)?;
            let (bb, rows, _, bt) = matrix(cx, "b")?;
            if ba != bb || rows != n || at.dtype != bt.dtype {
                return err(format!("`{a}` [.., n, n] and `b` [.., n, k] must share batch dims, n and dtype"));
            }
            if rule == LuSolve {
                let p = cx.t("pivots")?;
                if p.dtype != DType::I32
                    || p.rank() != ba.len() + 1
                    || &p.dims[..ba.len()] != ba
                    || &p.dims[ba.len()] != n
                {
                    return err("`pivots` must be int32 [.., n] with the batch dims of `lu`");
                }
            }
            Ok(vec![Type::Tensor(bt.clone())])
        }
        Qr => {
            let (b, m, n, t) = matrix(cx, "x")?;
            let k = min(m, n);
            if cx.bool_or("complete", false) {
                Ok(vec![with(b, &[m, m], t.dtype), Type::Tensor(t.clone())])
            } else {
                Ok(vec![with(b, &[m, &k], t.dtype), with(b, &[&k, n], t.dtype)])
            }
        }
        Svd => {
            let (b, m, n, t) = matrix(cx, "x")?;
            let k = min(m, n);
            let (cu, rv) = if cx.bool_or("full_matrices", false) { (m, n) } else { (&k, &k) };
            Ok(vec![with(b, &[m, cu], t.dtype), with(b, &[&k], t.dtype), with(b, &[rv, n], t.dtype)])
        }
        Geqrf => {
            let (b, m, n, t) = matrix(cx, "x")?;
            Ok(vec![Type::Tensor(t.clone()), with(b, &[&min(m, n)], t.dtype)])
        }
        HouseholderProduct => {
            let (b, m, n, t) = matrix(cx, "v")?;
            let tau = cx.t("tau")?;
            let k = tau.dims.last();
            let fits = |x: &SymExpr, y: &SymExpr| x == y || x.as_const().zip(y.as_const()).is_some_and(|(x, y)| x <= y);
            if tau.rank() != b.len() + 1
                || &tau.dims[..b.len()] != b
                || tau.dtype != t.dtype
                || !k.is_some_and(|k| fits(k, n))
                || !fits(n, m)
            {
                return err(
                    "`v` must be [.., m, n] with n <= m and `tau` [.., k] with k <= n, sharing batch dims and dtype",
                );
            }
            Ok(vec![Type::Tensor(t.clone())])
        }
        _ => unreachable!("not a linalg rule: {rule:?}"),
    }
}
