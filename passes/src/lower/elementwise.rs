//! Elementwise ops: arithmetic, comparisons, logic, unary math and activations.
//!
//! torch broadcasts and promotes implicitly; here every operand is converted to the computation
//! dtype (the torch op's result dtype, or for comparisons the promoted operand dtype) and broadcast
//! to the result shape first, and wrapped Python scalars become `ten.constant` splats.

use super::build::{acc_dtype, Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::infer::result_type;
use ember_ir::dialect::ten::TenOp;
use ember_ir::{DType, SymExpr, Value};

/// A torch operand: a tensor, or a Scalar attribute (a wrapped number).
enum Operand {
    Tensor(Value),
    Scalar(Attr),
}

/// The operand of parameter `name`, tensor or scalar.
fn operand(cx: &Cx, name: &str) -> Result<Operand, String> {
    if let Some(v) = cx.operand(name) {
        return Ok(Operand::Tensor(v));
    }
    match cx.attr(name) {
        Some(a @ (Attr::Int(_) | Attr::Float(_) | Attr::Bool(_))) => Ok(Operand::Scalar(a)),
        _ => Err(cx.err(&format!("missing operand `{name}`"))),
    }
}

/// `x` as a `dtype` tensor of `shape`: converted and broadcast, or a splat for a scalar.
fn materialize(cx: &mut Cx, x: &Operand, dtype: DType, shape: &[SymExpr]) -> Result<Value, String> {
    match x {
        Operand::Tensor(v) => cx.coerce(*v, dtype, shape),
        Operand::Scalar(a) => cx.constant(a, dtype, shape),
    }
}

/// The `(lhs, rhs)` operands of a binary torch op.
fn lhs_rhs(cx: &Cx) -> Result<(Operand, Operand), String> {
    let lhs = operand(cx, "self")?;
    let rhs = if cx.operand("exponent").is_some() || cx.attr("exponent").is_some() {
        operand(cx, "exponent")?
    } else {
        operand(cx, "other")?
    };
    Ok((lhs, rhs))
}

/// Operand `name` (a tensor or a number) as a tensor of the result's dtype and shape.
pub(super) fn operand_as_result(cx: &mut Cx, name: &str) -> Result<Value, String> {
    let t = cx.out(0)?;
    let x = operand(cx, name)?;
    materialize(cx, &x, t.dtype, &t.dims)
}

/// Both operands as tensors of the result's dtype and shape.
pub(super) fn operands_as_result(cx: &mut Cx) -> Result<(Value, Value), String> {
    let t = cx.out(0)?;
    let (lhs, rhs) = lhs_rhs(cx)?;
    let a = materialize(cx, &lhs, t.dtype, &t.dims)?;
    let b = materialize(cx, &rhs, t.dtype, &t.dims)?;
    Ok((a, b))
}

/// add/sub/mul/div (true division: integer operands convert to the float result first),
/// maximum/minimum, pow, fmod and the bitwise ops. `alpha` scales `other` of add/sub.
pub fn arith(cx: &mut Cx, op: TenOp) -> Lowered {
    let (a, mut b) = operands_as_result(cx)?;
    if matches!(op, TenOp::Add | TenOp::Sub) {
        let alpha = cx.attr("alpha").unwrap_or(Attr::Int(1));
        if alpha.as_float() != Some(1.0) {
            let t = cx.tt(b);
            let k = cx.constant(&alpha, t.dtype, &t.dims)?;
            b = cx.emit(TenOp::Mul, vec![b, k], vec![])?;
        }
    }
    Ok(Some(vec![cx.emit(op, vec![a, b], vec![])?]))
}

/// `(r != 0) && ((r < 0) != (b < 0))`: where C-style `div`/`rem` differ from Python's floor
/// semantics.
fn sign_mismatch(cx: &mut Cx, r: Value, b: Value) -> Result<Value, String> {
    let zero = cx.splat_like(0.0, r)?;
    let nonzero = cx.compare("NE", r, zero)?;
    let r_neg = cx.compare("LT", r, zero)?;
    let b_neg = cx.compare("LT", b, zero)?;
    let differ = cx.compare("NE", r_neg, b_neg)?;
    cx.emit(TenOp::And, vec![nonzero, differ], vec![])
}

/// div with rounding_mode "trunc" or "floor" (absent: true division in the result dtype).
pub fn div_mode(cx: &mut Cx) -> Lowered {
    let mode = cx.str_attr("rounding_mode");
    if let Some(m) = mode.as_deref().filter(|m| !matches!(*m, "trunc" | "floor")) {
        return Err(cx.err(&format!("unknown rounding_mode `{m}` (torch accepts \"trunc\" and \"floor\")")));
    }
    let (a, b) = operands_as_result(cx)?;
    let float = cx.tt(a).dtype.is_float();
    let q = cx.emit(TenOp::Div, vec![a, b], vec![])?;
    let out = match (mode.as_deref(), float) {
        (None, _) | (Some("trunc"), false) => q,
        (Some("trunc"), true) => cx.unary(TenOp::Trunc, q)?,
        (Some("floor"), true) => cx.unary(TenOp::Floor, q)?,
        (Some("floor"), false) => {
            // Integer division truncates; step down where the remainder's sign differs from b's.
            let r = cx.emit(TenOp::Rem, vec![a, b], vec![])?;
            let fix = sign_mismatch(cx, r, b)?;
            let q1 = cx.binary_scalar(TenOp::Sub, q, 1.0)?;
            cx.select(fix, q1, q)?
        }
        (Some(_), _) => unreachable!("checked above"),
    };
    Ok(Some(vec![out]))
}

/// Python-style remainder (sign of the divisor): `fmod(a, b) + b` where the signs differ.
pub fn remainder(cx: &mut Cx) -> Lowered {
    let (a, b) = operands_as_result(cx)?;
    let r = cx.emit(TenOp::Rem, vec![a, b], vec![])?;
    let fix = sign_mismatch(cx, r, b)?;
    let rb = cx.emit(TenOp::Add, vec![r, b], vec![])?;
    Ok(Some(vec![cx.select(fix, rb, r)?]))
}

/// bitwise_left_shift / bitwise_right_shift as torch's CPU kernels define them, with no shift
/// op: 2^b is the product of 2^(2^k) over the set bits k of b, a << b is a·2^b (wrapping, as the
/// kernel's unsigned shift), a >> b is ⌊a / 2^b⌋ (the truncated quotient, one less where a
/// negative a leaves a remainder). A b below 0 or of at least the width gives 0 (left) or
/// a >> (width - 1) for a signed type, 0 for uint8 (right).
pub fn shift(cx: &mut Cx, left: bool) -> Lowered {
    let (a, b) = operands_as_result(cx)?;
    let t = cx.tt(a);
    if !t.dtype.is_int() || t.dtype == DType::Bool {
        return Ok(None);
    }
    let bits = 8 * t.dtype.byte_size() as i64;
    let signed = t.dtype != DType::U8;
    // The largest in-range shift: a signed right shift keeps the sign bit.
    let max = if left || !signed { bits } else { bits - 1 };
    let zero = cx.splat_like(0.0, b)?;
    let one = cx.splat_like(1.0, b)?;
    let mut pow = one;
    for k in 0..bits.trailing_zeros() {
        let bit = cx.constant(&Attr::Int(1 << k), t.dtype, &t.dims)?;
        let set = cx.emit(TenOp::And, vec![b, bit], vec![])?;
        let set = cx.compare("NE", set, zero)?;
        // 2^(2^k) for k < 6; in i64 the last factor, 2^32, fits.
        let factor = cx.constant(&Attr::Int(1i64 << (1i64 << k)), t.dtype, &t.dims)?;
        let f = cx.select(set, factor, one)?;
        pow = cx.emit(TenOp::Mul, vec![pow, f], vec![])?;
    }
    let neg_b = cx.compare("LT", b, zero)?;
    let limit = cx.constant(&Attr::Int(max), t.dtype, &t.dims)?;
    let big = cx.compare("GE", b, limit)?;
    let out_of_range = cx.emit(TenOp::Or, vec![neg_b, big], vec![])?;
    let (value, fallback) = if left {
        (cx.emit(TenOp::Mul, vec![a, pow], vec![])?, zero)
    } else {
        let q = cx.emit(TenOp::Div, vec![a, pow], vec![])?;
        let r = cx.emit(TenOp::Rem, vec![a, pow], vec![])?;
        let (r_nonzero, a_neg) = (cx.compare("NE", r, zero)?, cx.compare("LT", a, zero)?);
        let down = cx.emit(TenOp::And, vec![r_nonzero, a_neg], vec![])?;
        let q1 = cx.emit(TenOp::Sub, vec![q, one], vec![])?;
        let floor = cx.select(down, q1, q)?;
        // Past the width: the sign (-1 or 0) for signed types, 0 for uint8.
        let minus = cx.splat_like(-1.0, a)?;
        let sign = if signed { cx.select(a_neg, minus, zero)? } else { zero };
        (floor, sign)
    };
    Ok(Some(vec![cx.select(out_of_range, fallback, value)?]))
}

/// pow with a scalar exponent: 1 is the identity, small integers products (x^3 = x*x*x, as in
/// GELU's tanh form; a pow call per element would not vectorize), 0.5 a square root.
pub fn pow_scalar(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let e = cx.attr("exponent").ok_or_else(|| cx.err("missing attribute `exponent`"))?;
    let x = cx.coerce(x, t.dtype, &t.dims)?;
    let out = match e.as_float() {
        Some(1.0) => x,
        Some(v) if v.fract() == 0.0 && (2.0..=4.0).contains(&v) => {
            let mut acc = cx.emit(TenOp::Mul, vec![x, x], vec![])?;
            for _ in 2..v as i64 {
                acc = cx.emit(TenOp::Mul, vec![acc, x], vec![])?;
            }
            acc
        }
        Some(v) if v == 0.5 && t.dtype.is_float() => cx.unary(TenOp::Sqrt, x)?,
        _ => {
            let k = cx.constant(&e, t.dtype, &t.dims)?;
            cx.emit(TenOp::Pow, vec![x, k], vec![])?
        }
    };
    Ok(Some(vec![out]))
}

/// eq/ne/lt/le/gt/ge: operands promoted to their common dtype (torch's `result_type`, wrapped
/// scalars included), compared, bool result.
pub fn compare(cx: &mut Cx, dir: &str) -> Lowered {
    let t = cx.out(0)?;
    let (lhs, rhs) = lhs_rhs(cx)?;
    let mut tensors = Vec::new();
    let mut scalars = Vec::new();
    for x in [&lhs, &rhs] {
        match x {
            Operand::Tensor(v) => tensors.push(cx.tt(*v)),
            Operand::Scalar(a) => scalars.push(a.clone()),
        }
    }
    let dt = result_type(&tensors.iter().collect::<Vec<_>>(), &scalars.iter().collect::<Vec<_>>());
    let a = materialize(cx, &lhs, dt, &t.dims)?;
    let b = materialize(cx, &rhs, dt, &t.dims)?;
    Ok(Some(vec![cx.emit(TenOp::Compare, vec![a, b], vec![("direction", Attr::Str(dir.into()))])?]))
}

/// logical_and/or/xor/not: operands as truthiness (`x != 0`), bool result.
pub fn logical(cx: &mut Cx, op: TenOp) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let x = cx.truthy(x)?;
    if op == TenOp::Not {
        return Ok(Some(vec![cx.unary(op, x)?]));
    }
    let y = cx.arg("other")?;
    let y = cx.truthy(y)?;
    let out = cx.binary(op, x, y)?;
    Ok(Some(vec![cx.bcast(out, &t.dims)?]))
}

/// A one-operand op in the result dtype (bitwise_not).
pub fn unary(cx: &mut Cx, op: TenOp) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let x = cx.convert(x, t.dtype)?;
    Ok(Some(vec![cx.unary(op, x)?]))
}

/// Unary math that is one `ten` op. Integer inputs of float-valued functions convert first;
/// rounding is the identity on integers, sign and abs on bools. f16/bf16 compute in f32 and
/// round once, as torch's kernels do.
pub fn math_op(cx: &mut Cx, op: TenOp) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let x = cx.convert(x, acc_dtype(t.dtype))?;
    let out = match op {
        TenOp::Floor | TenOp::Ceil | TenOp::Round | TenOp::Trunc if !t.dtype.is_float() => x,
        TenOp::Sign | TenOp::Abs if t.dtype == DType::Bool => x,
        _ => cx.unary(op, x)?,
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}

/// Unary math as a formula over `ten` ops, in the precision of `math_op`: a formula of several
/// ops would otherwise round after each on targets that keep the narrow type (XLA's), which
/// loses the result where it cancels (atanh's 1 - x near 1, gelu's 1 + erf(x/√2) for negative x).
pub fn math(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    if name == "isnan" || name == "isinf" {
        if !xt.dtype.is_float() {
            return Ok(Some(vec![cx.constant(&Attr::Bool(false), DType::Bool, &t.dims)?]));
        }
        if name == "isnan" {
            return Ok(Some(vec![cx.compare("NE", x, x)?]));
        }
        let a = cx.unary(TenOp::Abs, x)?;
        let inf = cx.splat_like(f64::INFINITY, a)?;
        return Ok(Some(vec![cx.compare("EQ", a, inf)?]));
    }
    let x = cx.convert(x, acc_dtype(t.dtype))?;
    let out = match name {
        "reciprocal" => {
            let one = cx.splat_like(1.0, x)?;
            cx.emit(TenOp::Div, vec![one, x], vec![])?
        }
        "expm1" => expm1(cx, x)?,
        "lgamma" => lgamma(cx, x)?,
        "exp2" => {
            let two = cx.splat_like(2.0, x)?;
            cx.emit(TenOp::Pow, vec![two, x], vec![])?
        }
        "log2" | "log10" => {
            let l = cx.unary(TenOp::Log, x)?;
            cx.binary_scalar(
                TenOp::Mul,
                l,
                if name == "log2" { std::f64::consts::LOG2_E } else { std::f64::consts::LOG10_E },
            )?
        }
        "cosh" => {
            // (eˣ + e⁻ˣ)/2: no cancellation, overflows to inf where cosh does.
            let nx = cx.unary(TenOp::Neg, x)?;
            let (a, b) = (cx.unary(TenOp::Exp, x)?, cx.unary(TenOp::Exp, nx)?);
            let s = cx.emit(TenOp::Add, vec![a, b], vec![])?;
            cx.binary_scalar(TenOp::Mul, s, 0.5)?
        }
        "sinh" => {
            // Near 0, (eˣ - e⁻ˣ)/2 cancels: use m(m+2)/(2(m+1)) with m = expm1(x) for |x| < 1.
            let m = expm1(cx, x)?;
            let m2 = cx.binary_scalar(TenOp::Add, m, 2.0)?;
            let num = cx.emit(TenOp::Mul, vec![m, m2], vec![])?;
            let m1 = cx.binary_scalar(TenOp::Add, m, 1.0)?;
            let small = cx.emit(TenOp::Div, vec![num, m1], vec![])?;
            let small = cx.binary_scalar(TenOp::Mul, small, 0.5)?;
            let nx = cx.unary(TenOp::Neg, x)?;
            let (a, b) = (cx.unary(TenOp::Exp, x)?, cx.unary(TenOp::Exp, nx)?);
            let d = cx.emit(TenOp::Sub, vec![a, b], vec![])?;
            let big = cx.binary_scalar(TenOp::Mul, d, 0.5)?;
            let ax = cx.unary(TenOp::Abs, x)?;
            let one = cx.splat_like(1.0, x)?;
            let is_small = cx.compare("LT", ax, one)?;
            cx.select(is_small, small, big)?
        }
        "asinh" => {
            // sign(x)·log1p(|x| + x²/(1 + √(x²+1))), accurate near 0; log|x| + ln 2 where x²
            // would overflow.
            let ax = cx.unary(TenOp::Abs, x)?;
            let x2 = cx.emit(TenOp::Mul, vec![x, x], vec![])?;
            let r = cx.binary_scalar(TenOp::Add, x2, 1.0)?;
            let r = cx.unary(TenOp::Sqrt, r)?;
            let r = cx.binary_scalar(TenOp::Add, r, 1.0)?;
            let q = cx.emit(TenOp::Div, vec![x2, r], vec![])?;
            let s = cx.emit(TenOp::Add, vec![ax, q], vec![])?;
            let near = cx.unary(TenOp::Log1p, s)?;
            let far = huge_log(cx, ax)?;
            let v = cx.select(far.1, far.0, near)?;
            let sg = cx.unary(TenOp::Sign, x)?;
            // sign(±0) is ±0 and asinh(±0) = ±0; NaN stays NaN through both factors.
            let v = cx.emit(TenOp::Mul, vec![sg, v], vec![])?;
            let zero = cx.splat_like(0.0, x)?;
            let is_zero = cx.compare("EQ", x, zero)?;
            cx.select(is_zero, x, v)?
        }
        "acosh" => {
            // log1p(t + √(t(t+2))) with t = x - 1, accurate near 1; NaN below 1.
            let t1 = cx.binary_scalar(TenOp::Sub, x, 1.0)?;
            let t2 = cx.binary_scalar(TenOp::Add, t1, 2.0)?;
            let p = cx.emit(TenOp::Mul, vec![t1, t2], vec![])?;
            let r = cx.unary(TenOp::Sqrt, p)?;
            let s = cx.emit(TenOp::Add, vec![t1, r], vec![])?;
            let near = cx.unary(TenOp::Log1p, s)?;
            let far = huge_log(cx, x)?;
            cx.select(far.1, far.0, near)?
        }
        "atanh" => {
            // log1p(2x/(1-x))/2: ±inf at ±1, NaN beyond.
            let two_x = cx.binary_scalar(TenOp::Mul, x, 2.0)?;
            let one = cx.splat_like(1.0, x)?;
            let d = cx.emit(TenOp::Sub, vec![one, x], vec![])?;
            let q = cx.emit(TenOp::Div, vec![two_x, d], vec![])?;
            let l = cx.unary(TenOp::Log1p, q)?;
            cx.binary_scalar(TenOp::Mul, l, 0.5)?
        }
        "atan" => {
            let one = cx.splat_like(1.0, x)?;
            cx.emit(TenOp::Atan2, vec![x, one], vec![])?
        }
        "asin" | "acos" => {
            // √((1-x)(1+x)) is the other side of the triangle; NaN for |x| > 1.
            let one = cx.splat_like(1.0, x)?;
            let a = cx.emit(TenOp::Sub, vec![one, x], vec![])?;
            let b = cx.binary_scalar(TenOp::Add, x, 1.0)?;
            let p = cx.emit(TenOp::Mul, vec![a, b], vec![])?;
            let c = cx.unary(TenOp::Sqrt, p)?;
            let (y, xx) = if name == "asin" { (x, c) } else { (c, x) };
            cx.emit(TenOp::Atan2, vec![y, xx], vec![])?
        }
        _ => return Err(cx.err("no lowering for this unary op")),
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}

/// eˣ - 1 without the cancellation near 0: 2t/(1 - t) with t = tanh(x/2) for |x| < 1 (tanh is
/// accurate relative to x there; Kahan's (u - 1)·x/log u is not an option because XLA folds
/// log(exp(x)) to x), eˣ - 1 elsewhere (-1 and +inf at the ends, NaN for NaN).
fn expm1(cx: &mut Cx, x: Value) -> Result<Value, String> {
    let half = cx.binary_scalar(TenOp::Mul, x, 0.5)?;
    let t = cx.unary(TenOp::Tanh, half)?;
    let two_t = cx.binary_scalar(TenOp::Mul, t, 2.0)?;
    let one = cx.splat_like(1.0, x)?;
    let d = cx.emit(TenOp::Sub, vec![one, t], vec![])?;
    let near = cx.emit(TenOp::Div, vec![two_t, d], vec![])?;
    let u = cx.unary(TenOp::Exp, x)?;
    let far = cx.binary_scalar(TenOp::Sub, u, 1.0)?;
    let ax = cx.unary(TenOp::Abs, x)?;
    let small = cx.compare("LT", ax, one)?;
    cx.select(small, near, far)
}

/// log |Γ(x)|: Lanczos' approximation (g = 7, 9 terms) for x ≥ 1/2, where its sum cancels by
/// about one digit (~1e-6 in f32, well inside the lgamma's magnitude near its zeros at 1 and 2);
/// reflection, log(π / |sin πx|) - lgamma(1 - x), below; +inf at the poles and at ±inf, as torch.
fn lgamma(cx: &mut Cx, x: Value) -> Result<Value, String> {
    const P: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let half = cx.splat_like(0.5, x)?;
    let reflect = cx.compare("LT", x, half)?;
    // z = (x < 1/2 ? 1 - x : x) - 1, so the series always sees z ≥ -1/2.
    let one_minus = cx.binary_scalar(TenOp::Mul, x, -1.0)?;
    let one_minus = cx.binary_scalar(TenOp::Add, one_minus, 1.0)?;
    let y = cx.select(reflect, one_minus, x)?;
    let z = cx.binary_scalar(TenOp::Sub, y, 1.0)?;
    let mut a = cx.splat_like(P[0], z)?;
    for (i, &p) in P.iter().enumerate().skip(1) {
        let d = cx.binary_scalar(TenOp::Add, z, i as f64)?;
        let num = cx.splat_like(p, z)?;
        let q = cx.emit(TenOp::Div, vec![num, d], vec![])?;
        a = cx.emit(TenOp::Add, vec![a, q], vec![])?;
    }
    let t = cx.binary_scalar(TenOp::Add, z, 7.5)?;
    let lt = cx.unary(TenOp::Log, t)?;
    let zh = cx.binary_scalar(TenOp::Add, z, 0.5)?;
    let m = cx.emit(TenOp::Mul, vec![zh, lt], vec![])?;
    let m = cx.emit(TenOp::Sub, vec![m, t], vec![])?;
    let la = cx.unary(TenOp::Log, a)?;
    let s = cx.emit(TenOp::Add, vec![m, la], vec![])?;
    let series = cx.binary_scalar(TenOp::Add, s, 0.5 * (2.0 * std::f64::consts::PI).ln())?;
    // |sin πx| = |sin π(x - round(x))|: the difference is exact, so near a pole the small sine
    // keeps its relative precision (π·x itself would round away the distance to the pole).
    let rx = cx.unary(TenOp::Round, x)?;
    let frac = cx.emit(TenOp::Sub, vec![x, rx], vec![])?;
    let px = cx.binary_scalar(TenOp::Mul, frac, std::f64::consts::PI)?;
    let sin = cx.unary(TenOp::Sin, px)?;
    let sin = cx.unary(TenOp::Abs, sin)?;
    let pi = cx.splat_like(std::f64::consts::PI, sin)?;
    let r = cx.emit(TenOp::Div, vec![pi, sin], vec![])?;
    let r = cx.unary(TenOp::Log, r)?;
    let reflected = cx.emit(TenOp::Sub, vec![r, series], vec![])?;
    let v = cx.select(reflect, reflected, series)?;
    // +inf at the poles (0, -1, ...: sin πx is not exactly 0 there in floating point) and at ±inf.
    let inf = cx.splat_like(f64::INFINITY, x)?;
    let zero = cx.splat_like(0.0, x)?;
    let fl = cx.unary(TenOp::Floor, x)?;
    let whole = cx.compare("EQ", fl, x)?;
    let nonpos = cx.compare("LE", x, zero)?;
    let pole = cx.emit(TenOp::And, vec![whole, nonpos], vec![])?;
    let ax = cx.unary(TenOp::Abs, x)?;
    let infinite = cx.compare("EQ", ax, inf)?;
    let pole = cx.emit(TenOp::Or, vec![pole, infinite], vec![])?;
    cx.select(pole, inf, v)
}

/// (log x + ln 2, x > 2²⁸): asinh and acosh of large x, where x² would lose everything.
fn huge_log(cx: &mut Cx, x: Value) -> Result<(Value, Value), String> {
    let l = cx.unary(TenOp::Log, x)?;
    let v = cx.binary_scalar(TenOp::Add, l, std::f64::consts::LN_2)?;
    let big = cx.splat_like(268435456.0, x)?;
    Ok((v, cx.compare("GT", x, big)?))
}

/// Activations and clamps, as max/min/select/erf/tanh/sigmoid formulas (f16/bf16 in f32,
/// rounded once, as `math`).
pub fn activation(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    if name == "gelu" && !matches!(cx.str_attr("approximate").as_deref(), None | Some("none") | Some("tanh")) {
        return Ok(None);
    }
    let dt = if matches!(name, "elu" | "silu" | "gelu") { acc_dtype(t.dtype) } else { t.dtype };
    let x = cx.arg("self")?;
    let x = cx.coerce(x, dt, &t.dims)?;
    let out = match name {
        "relu" => cx.binary_scalar(TenOp::Max, x, 0.0)?,
        "leaky_relu" => {
            let slope = cx.attr("negative_slope").unwrap_or(Attr::Float(0.01));
            let k = cx.constant(&slope, dt, &t.dims)?;
            let scaled = cx.emit(TenOp::Mul, vec![x, k], vec![])?;
            let zero = cx.splat_like(0.0, x)?;
            let pos = cx.compare("GT", x, zero)?;
            cx.select(pos, x, scaled)?
        }
        "hardtanh" => {
            let lo = cx.attr("min_val").unwrap_or(Attr::Int(-1));
            let hi = cx.attr("max_val").unwrap_or(Attr::Int(1));
            let lo = cx.constant(&lo, dt, &t.dims)?;
            let hi = cx.constant(&hi, dt, &t.dims)?;
            let y = cx.emit(TenOp::Max, vec![x, lo], vec![])?;
            cx.emit(TenOp::Min, vec![y, hi], vec![])?
        }
        "clamp" | "clamp.Tensor" => {
            let mut y = x;
            for (bound, ten) in [("min", TenOp::Max), ("max", TenOp::Min)] {
                let b = match (cx.operand(bound), cx.attr(bound)) {
                    (Some(v), _) => cx.coerce(v, dt, &t.dims)?,
                    (None, Some(a)) if name == "clamp" => cx.constant(&a, dt, &t.dims)?,
                    _ => continue,
                };
                y = cx.emit(ten, vec![y, b], vec![])?;
            }
            y
        }
        "elu" => {
            // scale·x for x > 0, else scale·alpha·expm1(input_scale·x)
            let f = |cx: &mut Cx, k: &str| cx.attr(k).and_then(|a| a.as_float()).unwrap_or(1.0);
            let (alpha, scale, input_scale) = (f(cx, "alpha"), f(cx, "scale"), f(cx, "input_scale"));
            let xs = cx.binary_scalar(TenOp::Mul, x, input_scale)?;
            let m = expm1(cx, xs)?;
            let neg = cx.binary_scalar(TenOp::Mul, m, alpha * scale)?;
            let pos = cx.binary_scalar(TenOp::Mul, x, scale)?;
            let zero = cx.splat_like(0.0, x)?;
            let gt = cx.compare("GT", x, zero)?;
            cx.select(gt, pos, neg)?
        }
        "silu" => {
            let s = cx.unary(TenOp::Sigmoid, x)?;
            cx.emit(TenOp::Mul, vec![x, s], vec![])?
        }
        "gelu" => {
            let inner = if cx.str_attr("approximate").as_deref() == Some("tanh") {
                // tanh(sqrt(2/pi) * (x + 0.044715 * x^3))
                let x2 = cx.emit(TenOp::Mul, vec![x, x], vec![])?;
                let x3 = cx.emit(TenOp::Mul, vec![x2, x], vec![])?;
                let kx3 = cx.binary_scalar(TenOp::Mul, x3, 0.044715)?;
                let s = cx.emit(TenOp::Add, vec![x, kx3], vec![])?;
                let s = cx.binary_scalar(TenOp::Mul, s, (2.0 / std::f64::consts::PI).sqrt())?;
                cx.unary(TenOp::Tanh, s)?
            } else {
                // erf(x / sqrt(2))
                let s = cx.binary_scalar(TenOp::Mul, x, std::f64::consts::FRAC_1_SQRT_2)?;
                cx.unary(TenOp::Erf, s)?
            };
            // 0.5 * x * (1 + inner)
            let one_plus = cx.binary_scalar(TenOp::Add, inner, 1.0)?;
            let half_x = cx.binary_scalar(TenOp::Mul, x, 0.5)?;
            cx.emit(TenOp::Mul, vec![half_x, one_plus], vec![])?
        }
        _ => return Err(cx.err("no lowering for this activation")),
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}

/// where(condition, self, other): a select on the broadcast bool condition.
pub fn where_self(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let c = cx.arg("condition")?;
    let c = cx.truthy(c)?;
    let c = cx.bcast(c, &t.dims)?;
    let a = cx.arg("self")?;
    let b = cx.arg("other")?;
    let a = cx.coerce(a, t.dtype, &t.dims)?;
    let b = cx.coerce(b, t.dtype, &t.dims)?;
    Ok(Some(vec![cx.select(c, a, b)?]))
}

/// fmax/fmin: max/min that ignore a NaN operand (NaN only where both are); copysign: |self|
/// with other's sign, -0.0 counting as negative (found through 1/other = -inf; a NaN's sign bit
/// cannot be read without a bitcast, so copysign(x, -NaN) is +|x|, where torch gives -|x|);
/// hypot; ldexp.
pub fn binary_special(cx: &mut Cx, name: &str) -> Lowered {
    let (a, b) = operands_as_result(cx)?;
    let float = cx.tt(a).dtype.is_float();
    let out = match name {
        "fmax" | "fmin" => {
            let m = cx.emit(if name == "fmax" { TenOp::Max } else { TenOp::Min }, vec![a, b], vec![])?;
            if !float {
                m
            } else {
                let a_nan = cx.compare("NE", a, a)?;
                let b_nan = cx.compare("NE", b, b)?;
                let m = cx.select(b_nan, a, m)?;
                cx.select(a_nan, b, m)?
            }
        }
        "copysign.Tensor" => {
            let mag = cx.unary(TenOp::Abs, a)?;
            let neg = cx.unary(TenOp::Neg, mag)?;
            let zero = cx.splat_like(0.0, b)?;
            let below = cx.compare("LT", b, zero)?;
            let one = cx.splat_like(1.0, b)?;
            let inv = cx.emit(TenOp::Div, vec![one, b], vec![])?;
            let neg_zero = cx.compare("LT", inv, zero)?;
            let is_zero = cx.compare("EQ", b, zero)?;
            let neg_zero = cx.emit(TenOp::And, vec![is_zero, neg_zero], vec![])?;
            let negative = cx.emit(TenOp::Or, vec![below, neg_zero], vec![])?;
            cx.select(negative, neg, mag)?
        }
        "hypot" => {
            // m·sqrt(1 + (n/m)²) with m = max(|a|, |b|), n = min: no square overflows or
            // underflows. 0 where both are 0 (n/m is NaN there); inf where either is ±inf, NaN
            // where either is NaN otherwise (as C's hypot).
            let (x, y) = (cx.unary(TenOp::Abs, a)?, cx.unary(TenOp::Abs, b)?);
            let m = cx.emit(TenOp::Max, vec![x, y], vec![])?;
            let n = cx.emit(TenOp::Min, vec![x, y], vec![])?;
            let r = cx.emit(TenOp::Div, vec![n, m], vec![])?;
            let r2 = cx.emit(TenOp::Mul, vec![r, r], vec![])?;
            let s = cx.binary_scalar(TenOp::Add, r2, 1.0)?;
            let s = cx.unary(TenOp::Sqrt, s)?;
            let h = cx.emit(TenOp::Mul, vec![m, s], vec![])?;
            let zero = cx.splat_like(0.0, m)?;
            let none = cx.compare("EQ", m, zero)?;
            let h = cx.select(none, zero, h)?;
            let x_nan = cx.compare("NE", x, x)?;
            let y_nan = cx.compare("NE", y, y)?;
            let nan = cx.emit(TenOp::Or, vec![x_nan, y_nan], vec![])?;
            let nan_value = cx.emit(TenOp::Add, vec![x, y], vec![])?;
            let h = cx.select(nan, nan_value, h)?;
            let inf = cx.splat_like(f64::INFINITY, m)?;
            let x_inf = cx.compare("EQ", x, inf)?;
            let y_inf = cx.compare("EQ", y, inf)?;
            let infinite = cx.emit(TenOp::Or, vec![x_inf, y_inf], vec![])?;
            cx.select(infinite, inf, h)?
        }
        "ldexp.Tensor" => {
            let two = cx.splat_like(2.0, b)?;
            let p = cx.emit(TenOp::Pow, vec![two, b], vec![])?;
            cx.emit(TenOp::Mul, vec![a, p], vec![])?
        }
        _ => return Err(cx.err("no lowering for this binary op")),
    };
    Ok(Some(vec![out]))
}

/// round.decimals: round(x·10ᵈ)/10ᵈ, or round(x/10⁻ᵈ)·10⁻ᵈ for negative d, in the input's
/// dtype as torch's kernel computes it.
pub fn round_decimals(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let d = cx.int("decimals")?;
    if !t.dtype.is_float() {
        return Ok(None);
    }
    let x = cx.convert(x, t.dtype)?;
    let p = 10f64.powi(d.unsigned_abs() as i32);
    let (there, back) = if d >= 0 { (TenOp::Mul, TenOp::Div) } else { (TenOp::Div, TenOp::Mul) };
    let y = cx.binary_scalar(there, x, p)?;
    let y = cx.unary(TenOp::Round, y)?;
    Ok(Some(vec![cx.binary_scalar(back, y, p)?]))
}

/// angle of a real tensor: π below 0, 0 from -0 up, NaN at NaN (complex values are rewritten
/// into real ops by the importer before this).
pub fn angle(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let x = cx.coerce(x, t.dtype, &t.dims)?;
    let zero = cx.splat_like(0.0, x)?;
    let pi = cx.splat_like(std::f64::consts::PI, x)?;
    let neg = cx.compare("LT", x, zero)?;
    let v = cx.select(neg, pi, zero)?;
    let nan = cx.compare("NE", x, x)?;
    Ok(Some(vec![cx.select(nan, x, v)?]))
}
