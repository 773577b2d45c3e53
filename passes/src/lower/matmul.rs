//! mm, bmm and addmm as `ten.dot_general`.

use super::build::{Cx, Lowered};
use ember_ir::attr::Attr;

/// mm: [M,K] x [K,N]; bmm: [B,M,K] x [B,K,N]; addmm: beta*self + alpha*(mat1 @ mat2), with the
/// multiplies skipped when a factor is 1 and `self` ignored when beta is 0 (as torch does).
pub fn matmul(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let (lhs, rhs) = if name == "addmm" { (cx.arg("mat1")?, cx.arg("mat2")?) } else { (cx.arg("self")?, cx.arg("mat2")?) };
    let lhs = cx.convert(lhs, t.dtype)?;
    let rhs = cx.convert(rhs, t.dtype)?;
    let ints = |v: &[i64]| Attr::Ints(v.to_vec());
    let (batch, lc, rc): (&[i64], i64, i64) = if name == "bmm" { (&[0], 2, 1) } else { (&[], 1, 0) };
    let mut p = cx.emit(
        "ten.dot_general",
        vec![lhs, rhs],
        vec![("lhs_batch", ints(batch)), ("rhs_batch", ints(batch)), ("lhs_contract", ints(&[lc])), ("rhs_contract", ints(&[rc]))],
    )?;
    if name != "addmm" {
        return Ok(Some(vec![p]));
    }
    let one = |a: &Option<Attr>| a.as_ref().and_then(|a| a.as_float()).unwrap_or(1.0);
    let (alpha, beta) = (cx.attr("alpha"), cx.attr("beta"));
    if one(&alpha) != 1.0 {
        let k = cx.constant(alpha.as_ref().unwrap(), t.dtype, &t.dims)?;
        p = cx.emit("ten.mul", vec![p, k], vec![])?;
    }
    if one(&beta) == 0.0 {
        return Ok(Some(vec![p]));
    }
    let bias = cx.arg("self")?;
    let mut bias = cx.coerce(bias, t.dtype, &t.dims)?;
    if one(&beta) != 1.0 {
        let k = cx.constant(beta.as_ref().unwrap(), t.dtype, &t.dims)?;
        bias = cx.emit("ten.mul", vec![bias, k], vec![])?;
    }
    Ok(Some(vec![cx.emit("ten.add", vec![bias, p], vec![])?]))
}
