//! mm, bmm, addmm, addmv and addbmm as `ten.dot_general`; _trilinear as a broadcast product and sum.

use super::build::{Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;

/// mm: [M,K] x [K,N]; bmm: [B,M,K] x [B,K,N]; addmm: beta*self + alpha*(mat1 @ mat2), with the
/// multiplies skipped when a factor is 1 and `self` ignored when beta is 0 (as torch does).
pub fn matmul(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let (lhs, rhs) =
        if name == "addmm" { (cx.arg("mat1")?, cx.arg("mat2")?) } else { (cx.arg("self")?, cx.arg("mat2")?) };
    let lhs = cx.convert(lhs, t.dtype)?;
    let rhs = cx.convert(rhs, t.dtype)?;
    let (batch, lc, rc): (&[i64], i64, i64) = if name == "bmm" { (&[0], 2, 1) } else { (&[], 1, 0) };
    let p = dot(cx, lhs, rhs, batch, lc, rc, name == "addmm")?;
    if name != "addmm" {
        return Ok(Some(vec![p]));
    }
    scale_and_add(cx, p, &t)
}

/// beta·self + alpha·p, the multiplies skipped when a factor is 1 and `self` ignored when beta
/// is 0 (as torch does). f16/bf16 products are f32 accumulators (`p` from `dot`): scaled and
/// biased in f32 and rounded once, as torch's GEMMs add the bias before rounding.
fn scale_and_add(cx: &mut Cx, mut p: ember_ir::Value, t: &ember_ir::TensorType) -> Lowered {
    let one = |a: &Option<Attr>| a.as_ref().and_then(|a| a.as_float()).unwrap_or(1.0);
    let (alpha, beta) = (cx.attr("alpha"), cx.attr("beta"));
    let acc = cx.tt(p).dtype;
    if one(&alpha) != 1.0 {
        let k = cx.constant(alpha.as_ref().unwrap(), acc, &t.dims)?;
        p = cx.emit(TenOp::Mul, vec![p, k], vec![])?;
    }
    if one(&beta) != 0.0 {
        let bias = cx.arg("self")?;
        let mut bias = cx.coerce(bias, acc, &t.dims)?;
        if one(&beta) != 1.0 {
            let k = cx.constant(beta.as_ref().unwrap(), acc, &t.dims)?;
            bias = cx.emit(TenOp::Mul, vec![bias, k], vec![])?;
        }
        p = cx.emit(TenOp::Add, vec![bias, p], vec![])?;
    }
    Ok(Some(vec![cx.convert(p, t.dtype)?]))
}

/// `ten.dot_general` of `lhs` and `rhs`, contracting `lc`/`rc` over the batch dims `batch`; for
/// f16/bf16 operands with `wide`, the f32 accumulator (rounded by whoever consumes it).
fn dot(
    cx: &mut Cx,
    lhs: ember_ir::Value,
    rhs: ember_ir::Value,
    batch: &[i64],
    lc: i64,
    rc: i64,
    wide: bool,
) -> Result<ember_ir::Value, String> {
    let ints = |v: &[i64]| Attr::Ints(v.to_vec());
    let mut attrs = vec![
        ("lhs_batch", ints(batch)),
        ("rhs_batch", ints(batch)),
        ("lhs_contract", ints(&[lc])),
        ("rhs_contract", ints(&[rc])),
    ];
    if wide && matches!(cx.tt(lhs).dtype, ember_ir::DType::F16 | ember_ir::DType::BF16) {
        attrs.push(("dtype", Attr::DType(ember_ir::DType::F32)));
    }
    cx.emit(TenOp::DotGeneral, vec![lhs, rhs], attrs)
}

/// addbmm: beta·self + alpha·Σ_b batch1[b] @ batch2[b], one product contracting batch and k:
/// batch1 [B,M,K] as [M, B·K] (a transpose and a reshape), batch2 [B,K,N] as [B·K, N].
pub fn addbmm(cx: &mut Cx) -> Lowered {
    use ember_ir::SymExpr;
    let t = cx.out(0)?;
    let (b1, b2) = (cx.arg("batch1")?, cx.arg("batch2")?);
    let (t1, t2) = (cx.tt(b1), cx.tt(b2));
    if t1.rank() != 3 || t2.rank() != 3 {
        return Err(cx.err("addbmm takes 3-d batch1 and batch2"));
    }
    let b1 = cx.convert(b1, t.dtype)?;
    let b2 = cx.convert(b2, t.dtype)?;
    let bk = SymExpr::times(t1.dims[0].clone(), t1.dims[2].clone());
    let lhs = cx.emit(TenOp::Transpose, vec![b1], vec![("dims", Attr::Ints(vec![1, 0, 2]))])?;
    let lhs = cx.reshape(lhs, &[t1.dims[1].clone(), bk.clone()])?;
    let rhs = cx.reshape(b2, &[bk, t2.dims[2].clone()])?;
    let p = dot(cx, lhs, rhs, &[], 1, 0, true)?;
    scale_and_add(cx, p, &t)
}

/// addmv: beta·self + alpha·(mat @ vec), the vector as a one-column matrix.
pub fn addmv(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (mat, vec) = (cx.arg("mat")?, cx.arg("vec")?);
    let (mt, vt) = (cx.tt(mat), cx.tt(vec));
    if mt.rank() != 2 || vt.rank() != 1 {
        return Err(cx.err("addmv takes a 2-d mat and a 1-d vec"));
    }
    let mat = cx.convert(mat, t.dtype)?;
    let vec = cx.convert(vec, t.dtype)?;
    let col = cx.reshape(vec, &[vt.dims[0].clone(), ember_ir::SymExpr::Const(1)])?;
    let p = dot(cx, mat, col, &[], 1, 0, true)?;
    let p = cx.reshape(p, &t.dims)?;
    scale_and_add(cx, p, &t)
}

/// _trilinear (nn.functional.bilinear's op), as ATen defines it: each input unsqueezed at its
/// `expand` dims to the full rank, the three multiplied (broadcast) and summed over `sumdim`
/// (`unroll_dim` only chooses ATen's loop order).
pub fn trilinear(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let ints = |cx: &Cx, n: &str| -> Result<Vec<i64>, String> {
        cx.attr(n).and_then(|a| a.as_ints().map(<[i64]>::to_vec)).ok_or_else(|| cx.err(&format!("missing `{n}`")))
    };
    let ins = [cx.arg("i1")?, cx.arg("i2")?, cx.arg("i3")?];
    let expands = [ints(cx, "expand1")?, ints(cx, "expand2")?, ints(cx, "expand3")?];
    let sumdim = ints(cx, "sumdim")?;
    let total = cx.tt(ins[0]).rank() + expands[0].len();
    let mut shaped = Vec::new();
    for (x, expand) in ins.iter().zip(&expands) {
        let xt = cx.tt(*x);
        if xt.rank() + expand.len() != total || expand.iter().any(|&d| d < 0 || d as usize >= total) {
            return Err(cx.err("_trilinear's inputs and expand dims disagree on the rank"));
        }
        let mut it = xt.dims.iter();
        let dims: Vec<ember_ir::SymExpr> = (0..total as i64)
            .map(|k| if expand.contains(&k) { super::build::c(1) } else { it.next().cloned().expect("rank checked") })
            .collect();
        let x = cx.convert(*x, t.dtype)?;
        shaped.push(cx.reshape(x, &dims)?);
    }
    let full: Vec<ember_ir::SymExpr> = (0..total)
        .map(|k| {
            let sizes = shaped.iter().map(|&v| cx.tt(v).dims[k].clone());
            sizes.clone().find(|d| *d != super::build::c(1)).unwrap_or(super::build::c(1))
        })
        .collect();
    let map: Vec<usize> = (0..total).collect();
    let mut prod = None;
    for v in shaped {
        let v = cx.bcast_in_dim(v, &full, &map)?;
        prod = Some(match prod {
            None => v,
            Some(p) => cx.emit(TenOp::Mul, vec![p, v], vec![])?,
        });
    }
    let dims: Vec<usize> = sumdim.iter().map(|&d| d as usize).collect();
    if dims.iter().any(|&d| d >= total) {
        return Err(cx.err("_trilinear's sumdim is outside the rank"));
    }
    let sum = cx.reduce(prod.expect("three inputs"), "sum", &dims)?;
    Ok(Some(vec![cx.reshape(sum, &t.dims)?]))
}
