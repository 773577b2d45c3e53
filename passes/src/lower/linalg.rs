//! torch.linalg: each op is one of the `ten` factorizations (cholesky, lu, qr, eigh, svd) or
//! solves (lu_solve, triangular_solve), which the CPU runtime runs on faer, plus elementwise ops,
//! reductions and products where the formula over the factors is short (det, slogdet, inv,
//! pinv). Batch dims are broadcast here: a `ten` linalg op's operands share theirs.
//!
//! Right-hand solves (X·A = B) are left-hand solves of the transposes (Aᵀ·Xᵀ = Bᵀ). `info`
//! results are int32 as LAPACK's; `_linalg_check_errors` on one becomes an attribute of the op
//! that computed it, so the runtime raises torch's error where torch raises it.

use super::build::{Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::{TenOp, CHECK_ERRORS};
use ember_ir::module::Value;
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;

type R<T> = Result<T, String>;

/// The matrix transpose of `x` (its last two dims swapped).
fn mt(cx: &mut Cx, x: Value) -> R<Value> {
    let r = cx.tt(x).rank();
    let mut dims: Vec<i64> = (0..r as i64).collect();
    dims.swap(r - 2, r - 1);
    cx.emit(TenOp::Transpose, vec![x], vec![("dims", Attr::Ints(dims))])
}

/// `x` with its batch dims (all but the last `core`) broadcast to `batch`.
fn to_batch(cx: &mut Cx, x: Value, batch: &[SymExpr], core: usize) -> R<Value> {
    let t = cx.tt(x);
    let mut shape = batch.to_vec();
    shape.extend_from_slice(&t.dims[t.rank() - core..]);
    cx.bcast(x, &shape)
}

fn batch_of(cx: &Cx, x: Value, core: usize) -> Vec<SymExpr> {
    let t = cx.tt(x);
    t.dims[..t.rank() - core].to_vec()
}

/// The common batch of two operands with `ca` and `cb` core dims.
fn common_batch(cx: &Cx, a: Value, ca: usize, b: Value, cb: usize) -> R<Vec<SymExpr>> {
    let (x, y) = (batch_of(cx, a, ca), batch_of(cx, b, cb));
    ember_ir::dialect::infer::broadcast(&[&x, &y]).map_err(|e| cx.err(&e.0))
}

/// Identity matrices of `shape` [.., n, n] as `dtype`.
fn eye(cx: &mut Cx, shape: &[SymExpr], dtype: DType) -> R<Value> {
    let r = shape.len();
    let on = diag_mask(cx, shape, r)?;
    let one = cx.constf(1.0, dtype, shape)?;
    let zero = cx.constf(0.0, dtype, shape)?;
    cx.select(on, one, zero)
}

/// True on the diagonal of `shape`'s last two dims.
fn diag_mask(cx: &mut Cx, shape: &[SymExpr], r: usize) -> R<Value> {
    let iota = |cx: &mut Cx, d: usize| {
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![
                ("shape", Attr::dims(shape.to_vec())),
                ("dim", Attr::Int(d as i64)),
                ("dtype", Attr::DType(DType::I64)),
            ],
        )
    };
    let (i, j) = (iota(cx, r - 2)?, iota(cx, r - 1)?);
    cx.compare("EQ", i, j)
}

/// The diagonal [.., k] of `x` [.., m, n], read exactly (a select and a sum with zeros).
fn diagonal(cx: &mut Cx, x: Value) -> R<Value> {
    let t = cx.tt(x);
    let r = t.rank();
    let on = diag_mask(cx, &t.dims, r)?;
    let zero = cx.splat_like(0.0, x)?;
    let d = cx.select(on, x, zero)?;
    let (m, n) = (&t.dims[r - 2], &t.dims[r - 1]);
    if m == n || m.as_const().zip(n.as_const()).is_some_and(|(a, b)| a <= b) {
        // Each row holds its diagonal entry (rows past n hold none).
        cx.reduce(d, "sum", &[r - 1])
    } else {
        let s = cx.reduce(d, "sum", &[r - 2])?;
        Ok(s)
    }
}

/// X with op(A)·X = B (`left`) or X·op(A) = B, op(A) = Aᵀ when `adjoint`, A from `ten.lu`.
fn lu_solve_any(cx: &mut Cx, lu: Value, piv: Value, b: Value, left: bool, adjoint: bool) -> R<Value> {
    let batch = common_batch(cx, lu, 2, b, 2)?;
    let lu = to_batch(cx, lu, &batch, 2)?;
    let piv = to_batch(cx, piv, &batch, 1)?;
    let b = to_batch(cx, b, &batch, 2)?;
    if left {
        return cx.emit(TenOp::LuSolve, vec![lu, piv, b], vec![("adjoint", Attr::Bool(adjoint))]);
    }
    let bt = mt(cx, b)?;
    let xt = cx.emit(TenOp::LuSolve, vec![lu, piv, bt], vec![("adjoint", Attr::Bool(!adjoint))])?;
    mt(cx, xt)
}

/// X with A·X = B (`left`) or X·A = B for triangular A.
fn tri_solve(cx: &mut Cx, a: Value, b: Value, upper: bool, left: bool, unit: bool) -> R<Value> {
    let batch = common_batch(cx, a, 2, b, 2)?;
    let a = to_batch(cx, a, &batch, 2)?;
    let b = to_batch(cx, b, &batch, 2)?;
    let solve = |cx: &mut Cx, a: Value, b: Value, upper: bool| {
        cx.emit(
            TenOp::TriangularSolve,
            vec![a, b],
            vec![("upper", Attr::Bool(upper)), ("unitriangular", Attr::Bool(unit))],
        )
    };
    if left {
        return solve(cx, a, b, upper);
    }
    let (at, bt) = (mt(cx, a)?, mt(cx, b)?);
    let xt = solve(cx, at, bt, !upper)?;
    mt(cx, xt)
}

/// An empty result (torch's placeholder for an output not computed: `compute_uv=False`).
fn empty(cx: &mut Cx, i: usize) -> R<Value> {
    let t = cx.out(i)?;
    if t.dims.iter().any(|d| d.as_const() == Some(0)) {
        return cx.constf(0.0, t.dtype, &t.dims);
    }
    Err(cx.err(&format!("result {i} is not computed but is not empty either ({t})")))
}

/// Sets `ember.check_errors` when the op asks for it (`check_errors=True`).
fn mark_check(cx: &mut Cx, v: Value, api: &str) {
    if cx.bool_or("check_errors", false) {
        let op = cx.m.defining_op(v).expect("a linalg result");
        cx.m.op_mut(op).attrs.insert(CHECK_ERRORS.into(), Attr::Str(api.into()));
    }
}

pub fn cholesky_ex(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let upper = cx.bool_or("upper", false);
    let r = cx.emit_n(TenOp::Cholesky, vec![x], vec![("upper", Attr::Bool(upper))])?;
    mark_check(cx, r[0], "linalg.cholesky_ex");
    Ok(Some(r))
}

pub fn lu_factor_ex(cx: &mut Cx) -> Lowered {
    if !cx.bool_or("pivot", true) {
        // torch's CPU kernel refuses LU without pivoting: so does the CPU target.
        return Ok(None);
    }
    let x = cx.arg("A")?;
    let r = cx.emit_n(TenOp::Lu, vec![x], vec![])?;
    mark_check(cx, r[0], "linalg.lu_factor_ex");
    Ok(Some(r))
}

/// `_linalg_check_errors(info)`: the op that computed `info` raises torch's error when an info
/// is non-zero (`ember.check_errors`, read by the runtime), so the check itself goes.
pub fn check_errors(cx: &mut Cx) -> Lowered {
    let info = cx.arg("info")?;
    let api = cx.str_attr("api_name").unwrap_or_default();
    let producer = cx.m.defining_op(info).filter(|&p| {
        let d = cx.m.op(p);
        matches!(d.ten(), Some(TenOp::Cholesky | TenOp::Lu)) && d.results.last() == Some(&info)
    });
    let Some(p) = producer else {
        return Err(cx.err(&format!(
            "`{api}` checks an `info` that no linalg factorization computed directly: Ember cannot raise its error at run time"
        )));
    };
    cx.m.op_mut(p).attrs.insert(CHECK_ERRORS.into(), Attr::Str(api));
    Ok(Some(vec![]))
}

pub fn inv_ex(cx: &mut Cx) -> Lowered {
    let a = cx.arg("A")?;
    let t = cx.tt(a);
    let f = cx.emit_n(TenOp::Lu, vec![a], vec![])?;
    let i = eye(cx, &t.dims, t.dtype)?;
    let x = cx.emit(TenOp::LuSolve, vec![f[0], f[1], i], vec![("adjoint", Attr::Bool(false))])?;
    mark_check(cx, f[0], "linalg.inv_ex");
    Ok(Some(vec![x, f[2]]))
}

/// A vector right-hand side: B of A's batch shape plus n, or 1-d (torch's rule in linalg.solve).
fn vector_rhs(cx: &Cx, a: Value, b: Value) -> bool {
    let (ta, tb) = (cx.tt(a), cx.tt(b));
    tb.rank() == 1 || (tb.rank() + 1 == ta.rank() && tb.dims[..] == ta.dims[..ta.rank() - 1])
}

/// `_linalg_solve_ex`: LU of Aᵀ and a transposed solve, as torch does for a contiguous A (the
/// returned LU and pivots are then torch's).
pub fn solve_ex(cx: &mut Cx) -> Lowered {
    let (a, b) = (cx.arg("A")?, cx.arg("B")?);
    let left = cx.bool_or("left", true);
    let lu_t = cx.out(1)?;
    let a = cx.bcast(a, &lu_t.dims)?;
    let at = mt(cx, a)?;
    let f = cx.emit_n(TenOp::Lu, vec![at], vec![])?;
    mark_check(cx, f[0], "linalg.solve_ex");
    let vector = vector_rhs(cx, a, b);
    let b = if vector {
        let mut s = cx.tt(b).dims;
        s.insert(if left { s.len() } else { s.len() - 1 }, SymExpr::Const(1));
        cx.reshape(b, &s)?
    } else {
        b
    };
    let x = lu_solve_any(cx, f[0], f[1], b, left, true)?;
    let out = cx.out(0)?;
    let x = cx.reshape(x, &out.dims)?;
    Ok(Some(vec![x, f[0], f[1], f[2]]))
}

pub fn lu_solve(cx: &mut Cx) -> Lowered {
    let (lu, piv, b) = (cx.arg("LU")?, cx.arg("pivots")?, cx.arg("B")?);
    let (left, adjoint) = (cx.bool_or("left", true), cx.bool_or("adjoint", false));
    Ok(Some(vec![lu_solve_any(cx, lu, piv, b, left, adjoint)?]))
}

/// (-1)^(number of row interchanges) of `ten.lu`'s pivots, as `dtype` [..].
fn perm_sign(cx: &mut Cx, piv: Value, dtype: DType) -> R<Value> {
    let t = cx.tt(piv);
    let r = t.rank();
    let pos = cx.emit(
        TenOp::Iota,
        vec![],
        vec![
            ("shape", Attr::dims(t.dims.clone())),
            ("dim", Attr::Int(r as i64 - 1)),
            ("dtype", Attr::DType(DType::I32)),
        ],
    )?;
    let one = cx.constant(&Attr::Int(1), DType::I32, &t.dims)?;
    let pos = cx.emit(TenOp::Add, vec![pos, one], vec![])?;
    let swapped = cx.compare("NE", piv, pos)?;
    let swapped = cx.convert(swapped, DType::I32)?;
    let n = cx.reduce(swapped, "sum", &[r - 1])?;
    let two = cx.constant(&Attr::Int(2), DType::I32, &t.dims[..r - 1])?;
    let odd = cx.emit(TenOp::Rem, vec![n, two], vec![])?;
    let odd = cx.convert(odd, dtype)?;
    // 1 - 2·odd
    let m2 = cx.binary_scalar(TenOp::Mul, odd, -2.0)?;
    cx.binary_scalar(TenOp::Add, m2, 1.0)
}

/// `_linalg_det` and `_linalg_slogdet`: LU of Aᵀ (torch's, for a contiguous A; det(Aᵀ) = det(A)),
/// the product of U's diagonal and the interchanges' sign; a singular A's zero pivot makes it 0.
pub fn det(cx: &mut Cx, log: bool) -> Lowered {
    let a = cx.arg("A")?;
    let dt = cx.tt(a).dtype;
    let at = mt(cx, a)?;
    let f = cx.emit_n(TenOp::Lu, vec![at], vec![])?;
    let d = diagonal(cx, f[0])?;
    let r = cx.tt(d).rank();
    let sign = perm_sign(cx, f[1], dt)?;
    if !log {
        let p = cx.reduce(d, "prod", &[r - 1])?;
        let v = cx.emit(TenOp::Mul, vec![p, sign], vec![])?;
        return Ok(Some(vec![v, f[0], f[1]]));
    }
    let s = cx.unary(TenOp::Sign, d)?;
    let s = cx.reduce(s, "prod", &[r - 1])?;
    let s = cx.emit(TenOp::Mul, vec![s, sign], vec![])?;
    let m = cx.unary(TenOp::Abs, d)?;
    let l = cx.unary(TenOp::Log, m)?;
    let l = cx.reduce(l, "sum", &[r - 1])?;
    Ok(Some(vec![s, l, f[0], f[1]]))
}

pub fn svd(cx: &mut Cx) -> Lowered {
    let a = cx.arg("A")?;
    let full = cx.bool_or("full_matrices", false);
    let compute_uv = cx.bool_or("compute_uv", true);
    let r = cx.emit_n(TenOp::Svd, vec![a], vec![("full_matrices", Attr::Bool(full && compute_uv))])?;
    if compute_uv {
        return Ok(Some(r));
    }
    let (u, vh) = (empty(cx, 0)?, empty(cx, 2)?);
    Ok(Some(vec![u, r[1], vh]))
}

pub fn eigh(cx: &mut Cx) -> Lowered {
    let a = cx.arg("A")?;
    let upper = cx.str_attr("UPLO").is_some_and(|s| s == "U");
    let r = cx.emit_n(TenOp::Eigh, vec![a], vec![("upper", Attr::Bool(upper))])?;
    if cx.bool_or("compute_v", true) {
        return Ok(Some(r));
    }
    Ok(Some(vec![r[0], empty(cx, 1)?]))
}

pub fn qr(cx: &mut Cx) -> Lowered {
    let a = cx.arg("A")?;
    let mode = cx.str_attr("mode").unwrap_or_else(|| "reduced".into());
    let complete = match mode.as_str() {
        "reduced" | "r" => false,
        "complete" => true,
        m => return Err(cx.err(&format!("qr mode `{m}` is not one of reduced, complete, r"))),
    };
    let r = cx.emit_n(TenOp::Qr, vec![a], vec![("complete", Attr::Bool(complete))])?;
    if mode == "r" {
        return Ok(Some(vec![empty(cx, 0)?, r[1]]));
    }
    Ok(Some(r))
}

pub fn solve_triangular(cx: &mut Cx) -> Lowered {
    let (a, b) = (cx.arg("self")?, cx.arg("B")?);
    let upper = cx.bool_or("upper", false);
    let (left, unit) = (cx.bool_or("left", true), cx.bool_or("unitriangular", false));
    Ok(Some(vec![tri_solve(cx, a, b, upper, left, unit)?]))
}

/// triangular_solve(B, A): (X with op(A)·X = B, A broadcast to the batch).
pub fn triangular_solve(cx: &mut Cx) -> Lowered {
    let (b, a) = (cx.arg("self")?, cx.arg("A")?);
    let (upper, transpose) = (cx.bool_or("upper", true), cx.bool_or("transpose", false));
    let unit = cx.bool_or("unitriangular", false);
    let (a_op, up) = if transpose { (mt(cx, a)?, !upper) } else { (a, upper) };
    let x = tri_solve(cx, a_op, b, up, true, unit)?;
    let ct = cx.out(1)?;
    let a = cx.bcast(a, &ct.dims)?;
    Ok(Some(vec![x, a]))
}

/// X with A·X = B for A = L·Lᵀ (or Uᵀ·U when `upper`) given its factor: two triangular solves.
fn cholesky_solve_with(cx: &mut Cx, b: Value, f: Value, upper: bool) -> R<Value> {
    let (first, second) = if upper { (mt(cx, f)?, f) } else { (f, mt(cx, f)?) };
    let y = tri_solve(cx, first, b, false, true, false)?;
    tri_solve(cx, second, y, true, true, false)
}

pub fn cholesky_solve(cx: &mut Cx) -> Lowered {
    let (b, f) = (cx.arg("self")?, cx.arg("input2")?);
    let upper = cx.bool_or("upper", false);
    Ok(Some(vec![cholesky_solve_with(cx, b, f, upper)?]))
}

pub fn cholesky_inverse(cx: &mut Cx) -> Lowered {
    let f = cx.arg("self")?;
    let t = cx.tt(f);
    let i = eye(cx, &t.dims, t.dtype)?;
    let upper = cx.bool_or("upper", false);
    Ok(Some(vec![cholesky_solve_with(cx, i, f, upper)?]))
}

/// torch's pinv: V·diag(1/σ)·Uᵀ over the singular values above max(atol, rtol·σ₁) (eigh's
/// |λ| and V·diag(1/λ)·Vᵀ when `hermitian`); the tolerances are float64, as torch's, and
/// default to atol 0 and rtol ε·max(m, n) (0 when a positive atol is given).
pub fn pinv(cx: &mut Cx) -> Lowered {
    let a = cx.arg("self")?;
    let t = cx.tt(a);
    let (r, dt) = (t.rank(), t.dtype);
    let hermitian = cx.bool_or("hermitian", false);
    let (atol, rtol) = (cx.operand("atol"), cx.operand("rtol"));
    let (m, n) = (t.dims[r - 2].as_const(), t.dims[r - 1].as_const());
    let (Some(m), Some(n)) = (m, n) else { return Ok(None) };
    let (u, s, vh) = if hermitian {
        let e = cx.emit_n(TenOp::Eigh, vec![a], vec![("upper", Attr::Bool(false))])?;
        let ut = mt(cx, e[1])?;
        (e[1], e[0], ut)
    } else {
        let e = cx.emit_n(TenOp::Svd, vec![a], vec![("full_matrices", Attr::Bool(false))])?;
        (e[0], e[1], e[2])
    };
    let st = cx.tt(s);
    let sabs = if hermitian { cx.unary(TenOp::Abs, s)? } else { s };
    let s64 = cx.convert(sabs, DType::F64)?;
    let k = st.rank() - 1;
    let big = cx.reduce(s64, "max", &[k])?;
    let big = cx.reshape(big, &[st.dims[..k].to_vec(), vec![SymExpr::Const(1)]].concat())?;
    let eps = if dt == DType::F64 { f64::EPSILON } else { f32::EPSILON as f64 };
    let zero64 = |cx: &mut Cx| cx.constf(0.0, DType::F64, &[]);
    let atol_v = match atol {
        Some(v) => cx.convert(v, DType::F64)?,
        None => zero64(cx)?,
    };
    let rtol_v = match rtol {
        Some(v) => cx.convert(v, DType::F64)?,
        None => {
            let d = cx.constf(eps * m.max(n) as f64, DType::F64, &[])?;
            match atol {
                Some(_) => {
                    let z = zero64(cx)?;
                    let pos = cx.compare("GT", atol_v, z)?;
                    let z = cx.splat_like(0.0, d)?;
                    let ts = cx.tt(pos).dims;
                    let z = cx.bcast(z, &ts)?;
                    let d = cx.bcast(d, &ts)?;
                    cx.select(pos, z, d)?
                }
                None => d,
            }
        }
    };
    // atol.unsqueeze(-1), rtol.unsqueeze(-1) against [.., 1]
    let unsq = |cx: &mut Cx, v: Value| {
        let mut d = cx.tt(v).dims;
        d.push(SymExpr::Const(1));
        cx.reshape(v, &d)
    };
    let (atol_v, rtol_v) = (unsq(cx, atol_v)?, unsq(cx, rtol_v)?);
    let scaled = cx.binary(TenOp::Mul, rtol_v, big)?;
    let tol = cx.binary(TenOp::Max, atol_v, scaled)?;
    let keep = cx.binary(TenOp::Sub, s64, tol)?;
    let zero = cx.splat_like(0.0, keep)?;
    let keep = cx.compare("GT", keep, zero)?;
    // The kept values' reciprocals, in the input dtype; the batch shape may have grown
    // through the tolerances' broadcast.
    let kt = cx.tt(keep).dims;
    let s = cx.bcast(s, &kt)?;
    let one = cx.splat_like(1.0, s)?;
    let inv = cx.emit(TenOp::Div, vec![one, s], vec![])?;
    let z = cx.splat_like(0.0, s)?;
    let inv = cx.select(keep, inv, z)?;
    // (Vh)ᵀ · diag(inv) · Uᵀ: Vh's columns scaled, then one batched product.
    let v = mt(cx, vh)?;
    let ut = mt(cx, u)?;
    let p = scaled_product(cx, v, inv, ut)?;
    let out = cx.out(0)?;
    Ok(Some(vec![cx.bcast(p, &out.dims)?]))
}

/// a·diag(d)·b for a [.., m, k], d [.., k], b [.., k, n] (batches broadcast): a's columns
/// scaled, then one batched product.
fn scaled_product(cx: &mut Cx, a: Value, d: Value, b: Value) -> R<Value> {
    let batch = common_batch(cx, a, 2, d, 1)?;
    let batch = {
        let bb = batch_of(cx, b, 2);
        ember_ir::dialect::infer::broadcast(&[&batch, &bb]).map_err(|e| cx.err(&e.0))?
    };
    let a = to_batch(cx, a, &batch, 2)?;
    let b = to_batch(cx, b, &batch, 2)?;
    let d = to_batch(cx, d, &batch, 1)?;
    // d [.., k] scales a's columns: [.., 1, k] against a [.., m, k].
    let mut row = cx.tt(d).dims;
    row.insert(row.len() - 1, SymExpr::Const(1));
    let d = cx.reshape(d, &row)?;
    let at = cx.tt(a).dims;
    let d = cx.bcast(d, &at)?;
    let scaled = cx.emit(TenOp::Mul, vec![a, d], vec![])?;
    let nb = batch.len() as i64;
    let bd: Vec<i64> = (0..nb).collect();
    cx.emit(
        TenOp::DotGeneral,
        vec![scaled, b],
        vec![
            ("lhs_batch", Attr::Ints(bd.clone())),
            ("rhs_batch", Attr::Ints(bd)),
            ("lhs_contract", Attr::Ints(vec![nb + 1])),
            ("rhs_contract", Attr::Ints(vec![nb])),
        ],
    )
}

/// polar: A = U·H from the thin SVD A = W·diag(S)·Vh: U = W·Vh, H = Vhᵀ·diag(S)·Vh (both
/// unique for a full-rank A, whatever signs the SVD's vectors have).
pub fn polar(cx: &mut Cx) -> Lowered {
    let a = cx.arg("A")?;
    let f = cx.emit_n(TenOp::Svd, vec![a], vec![("full_matrices", Attr::Bool(false))])?;
    let nb = cx.tt(a).rank() as i64 - 2;
    let bd: Vec<i64> = (0..nb).collect();
    let u = cx.emit(
        TenOp::DotGeneral,
        vec![f[0], f[2]],
        vec![
            ("lhs_batch", Attr::Ints(bd.clone())),
            ("rhs_batch", Attr::Ints(bd)),
            ("lhs_contract", Attr::Ints(vec![nb + 1])),
            ("rhs_contract", Attr::Ints(vec![nb])),
        ],
    )?;
    let v = mt(cx, f[2])?;
    let h = scaled_product(cx, v, f[1], f[2])?;
    Ok(Some(vec![u, h]))
}

/// matrix_sqrth: V·diag(√λ)·Vᵀ from eigh of the lower triangle (unique for a positive-definite A).
pub fn matrix_sqrth(cx: &mut Cx) -> Lowered {
    let a = cx.arg("self")?;
    let e = cx.emit_n(TenOp::Eigh, vec![a], vec![("upper", Attr::Bool(false))])?;
    let r = cx.unary(TenOp::Sqrt, e[0])?;
    let vt = mt(cx, e[1])?;
    Ok(Some(vec![scaled_product(cx, e[1], r, vt)?]))
}

/// `x` [.., R, C] cut to its first `rows` rows and `cols` columns.
fn corner(cx: &mut Cx, x: Value, rows: &SymExpr, cols: &SymExpr) -> R<Value> {
    let t = cx.tt(x);
    let r = t.rank();
    if &t.dims[r - 2] == rows && &t.dims[r - 1] == cols {
        return Ok(x);
    }
    let mut shape = t.dims.clone();
    shape[r - 2] = rows.clone();
    shape[r - 1] = cols.clone();
    cx.emit(
        TenOp::Slice,
        vec![x],
        vec![
            ("start", Attr::dims(vec![SymExpr::Const(0); r])),
            ("shape", Attr::dims(shape)),
            ("step", Attr::Ints(vec![1; r])),
        ],
    )
}

/// `x` [.., R, C] padded with zeros to `rows` x `cols`.
fn pad_to(cx: &mut Cx, x: Value, rows: &SymExpr, cols: &SymExpr) -> R<Value> {
    let t = cx.tt(x);
    let r = t.rank();
    let extra =
        |want: &SymExpr, have: &SymExpr| SymExpr::plus(want.clone(), SymExpr::times(have.clone(), SymExpr::Const(-1)));
    let mut high = vec![SymExpr::Const(0); r];
    high[r - 2] = extra(rows, &t.dims[r - 2]);
    high[r - 1] = extra(cols, &t.dims[r - 1]);
    if high.iter().all(|h| h.as_const() == Some(0)) {
        return Ok(x);
    }
    let low = vec![SymExpr::Const(0); r];
    cx.emit(
        TenOp::Pad,
        vec![x],
        vec![("low", Attr::dims(low)), ("high", Attr::dims(high)), ("value", Attr::Float(0.0))],
    )
}

/// The entries of `x` strictly below (`lower`) or on and above its diagonal, zeros elsewhere.
fn triangle(cx: &mut Cx, x: Value, lower: bool) -> R<Value> {
    let t = cx.tt(x);
    let r = t.rank();
    let iota = |cx: &mut Cx, d: usize| {
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![
                ("shape", Attr::dims(t.dims.clone())),
                ("dim", Attr::Int(d as i64)),
                ("dtype", Attr::DType(DType::I64)),
            ],
        )
    };
    let (i, j) = (iota(cx, r - 2)?, iota(cx, r - 1)?);
    let keep = cx.compare(if lower { "GT" } else { "LE" }, i, j)?;
    let zero = cx.splat_like(0.0, x)?;
    cx.select(keep, x, zero)
}

pub fn geqrf(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    Ok(Some(cx.emit_n(TenOp::Geqrf, vec![x], vec![])?))
}

pub fn householder_product(cx: &mut Cx) -> Lowered {
    let (v, tau) = (cx.arg("input")?, cx.arg("tau")?);
    let batch = common_batch(cx, v, 2, tau, 1)?;
    let v = to_batch(cx, v, &batch, 2)?;
    let tau = to_batch(cx, tau, &batch, 1)?;
    Ok(Some(vec![cx.emit(TenOp::HouseholderProduct, vec![v, tau], vec![])?]))
}

/// ormqr: the m x m Q of the reflections (orgqr of the reflectors padded to m columns, the
/// padding's scales 0: identities), then one product with `input3`.
pub fn ormqr(cx: &mut Cx) -> Lowered {
    let (v, tau, c) = (cx.arg("self")?, cx.arg("input2")?, cx.arg("input3")?);
    let (left, transpose) = (cx.bool_or("left", true), cx.bool_or("transpose", false));
    let (vt, ct) = (cx.tt(v), cx.tt(c));
    let m = vt.dims[vt.rank() - 2].clone();
    let batch = common_batch(cx, v, 2, tau, 1)?;
    let batch = ember_ir::dialect::infer::broadcast(&[&batch, &ct.dims[..ct.rank() - 2]]).map_err(|e| cx.err(&e.0))?;
    let v = to_batch(cx, v, &batch, 2)?;
    let tau = to_batch(cx, tau, &batch, 1)?;
    let c = to_batch(cx, c, &batch, 2)?;
    let v = pad_to(cx, v, &m, &m)?;
    let tau_t = cx.tt(tau);
    let k = tau_t.dims.last().cloned().unwrap_or(SymExpr::Const(0));
    let tau = {
        let r = tau_t.rank();
        let mut high = vec![SymExpr::Const(0); r];
        high[r - 1] = SymExpr::plus(m.clone(), SymExpr::times(k, SymExpr::Const(-1)));
        if high[r - 1].as_const() == Some(0) {
            tau
        } else {
            let low = vec![SymExpr::Const(0); r];
            cx.emit(
                TenOp::Pad,
                vec![tau],
                vec![("low", Attr::dims(low)), ("high", Attr::dims(high)), ("value", Attr::Float(0.0))],
            )?
        }
    };
    let q = cx.emit(TenOp::HouseholderProduct, vec![v, tau], vec![])?;
    let q = if transpose { mt(cx, q)? } else { q };
    let nb = batch.len() as i64;
    let b: Vec<i64> = (0..nb).collect();
    let (lhs, rhs) = if left { (q, c) } else { (c, q) };
    let p = cx.emit(
        TenOp::DotGeneral,
        vec![lhs, rhs],
        vec![
            ("lhs_batch", Attr::Ints(b.clone())),
            ("rhs_batch", Attr::Ints(b)),
            ("lhs_contract", Attr::Ints(vec![nb + 1])),
            ("rhs_contract", Attr::Ints(vec![nb])),
        ],
    )?;
    Ok(Some(vec![p]))
}

/// (P, L, U) of a packed LU: P = lu_solve(I, pivots, I) with `adjoint` (the interchanges
/// applied to the identity, exactly: the factors are identities), pivots extended to m with
/// rows that stay; L its unit lower trapezoid [.., m, k], U its upper one [.., k, n].
fn unpack(cx: &mut Cx, lu: Value, piv: Value, data: bool, pivots: bool) -> R<Vec<Value>> {
    let t = cx.tt(lu);
    let r = t.rank();
    let (m, n) = (t.dims[r - 2].clone(), t.dims[r - 1].clone());
    let p = if pivots {
        let pt = cx.tt(piv);
        let batch = batch_of(cx, lu, 2);
        let batch =
            ember_ir::dialect::infer::broadcast(&[&batch, &pt.dims[..pt.rank() - 1]]).map_err(|e| cx.err(&e.0))?;
        let piv = to_batch(cx, piv, &batch, 1)?;
        let k = cx.tt(piv).dims.last().cloned().unwrap_or(SymExpr::Const(0));
        let mut pshape = batch.clone();
        pshape.push(m.clone());
        let piv = if k == m {
            piv
        } else {
            let pos = cx.emit(
                TenOp::Iota,
                vec![],
                vec![
                    ("shape", Attr::dims(pshape.clone())),
                    ("dim", Attr::Int(batch.len() as i64)),
                    ("dtype", Attr::DType(DType::I32)),
                ],
            )?;
            let one = cx.constant(&Attr::Int(1), DType::I32, &pshape)?;
            let stay = cx.emit(TenOp::Add, vec![pos, one], vec![])?;
            let mut rest = batch.clone();
            rest.push(SymExpr::plus(m.clone(), SymExpr::times(k.clone(), SymExpr::Const(-1))));
            let tail = cx.emit(
                TenOp::Slice,
                vec![stay],
                vec![
                    ("start", Attr::dims([vec![SymExpr::Const(0); batch.len()], vec![k]].concat())),
                    ("shape", Attr::dims(rest)),
                    ("step", Attr::Ints(vec![1; batch.len() + 1])),
                ],
            )?;
            cx.emit(TenOp::Concat, vec![piv, tail], vec![("dim", Attr::Int(batch.len() as i64))])?
        };
        let mut ishape = batch.clone();
        ishape.extend([m.clone(), m.clone()]);
        let i = eye(cx, &ishape, t.dtype)?;
        cx.emit(TenOp::LuSolve, vec![i, piv, i], vec![("adjoint", Attr::Bool(true))])?
    } else {
        empty(cx, 0)?
    };
    if !data {
        return Ok(vec![p, empty(cx, 1)?, empty(cx, 2)?]);
    }
    let k = match (m.as_const(), n.as_const()) {
        (Some(a), Some(b)) => SymExpr::Const(a.min(b)),
        _ if m == n => m.clone(),
        _ => return Err(cx.err("unpacking an LU needs min(m, n) static or m == n")),
    };
    let l = corner(cx, lu, &m, &k)?;
    let l = triangle(cx, l, true)?;
    let mut lshape = t.dims[..r - 2].to_vec();
    lshape.extend([m.clone(), k.clone()]);
    let i = eye(cx, &lshape, t.dtype)?;
    let l = cx.emit(TenOp::Add, vec![l, i], vec![])?;
    let u = corner(cx, lu, &k, &n)?;
    let u = triangle(cx, u, false)?;
    Ok(vec![p, l, u])
}

pub fn linalg_lu(cx: &mut Cx) -> Lowered {
    if !cx.bool_or("pivot", true) {
        return Ok(None);
    }
    let a = cx.arg("A")?;
    let f = cx.emit_n(TenOp::Lu, vec![a], vec![])?;
    Ok(Some(unpack(cx, f[0], f[1], true, true)?))
}

pub fn lu_unpack(cx: &mut Cx) -> Lowered {
    let (lu, piv) = (cx.arg("LU_data")?, cx.arg("LU_pivots")?);
    let (data, pivots) = (cx.bool_or("unpack_data", true), cx.bool_or("unpack_pivots", true));
    Ok(Some(unpack(cx, lu, piv, data, pivots)?))
}
