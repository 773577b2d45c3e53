//! Random ops (rand, randn, their `_like` forms, uniform, normal, log_normal, exponential,
//! cauchy, geometric, bernoulli, dropout, randint, rrelu, multinomial) as Philox4x32-10 in int64 `ten` arithmetic,
//! keyed by the function's seed input (`Cx::rng_seed`): the graph stays pure, every target
//! compiles it like other integer math, and one seed gives one result. The generator and the
//! transforms are `ember/rng.py`'s (the torch.compile path's), so a `.pt2` and torch.compile
//! draw the same numbers from the same seed. They are not torch's CPU stream (a Mersenne
//! Twister): the same distributions, other numbers.

use super::build::{acc_dtype, Cx, Lowered};
use super::shape::slice_dim;
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::{DType, SymExpr, Value};
use std::f64::consts::PI;

const M0: i64 = 0xD251_1F53;
const M1: i64 = 0xCD9E_8D57;
const W0: i64 = 0x9E37_79B9;
const W1: i64 = 0xBB67_AE85;
const MASK: i64 = 0xFFFF_FFFF;
const HIGH: i64 = -(1 << 32);

fn int(cx: &mut Cx, v: i64, shape: &[SymExpr]) -> Result<Value, String> {
    cx.constant(&Attr::Int(v), DType::I64, shape)
}

fn op_k(cx: &mut Cx, op: TenOp, x: Value, v: i64) -> Result<Value, String> {
    let k = int(cx, v, &cx.tt(x).dims)?;
    cx.emit(op, vec![x, k], vec![])
}

/// The high and low 32-bit words of a·m (a, m < 2³²) in int64: the product wraps modulo 2⁶⁴,
/// and its high word is the exact quotient of the product with the low word cleared.
fn mulhilo(cx: &mut Cx, a: Value, m: i64) -> Result<(Value, Value), String> {
    let p = op_k(cx, TenOp::Mul, a, m)?;
    let h = op_k(cx, TenOp::And, p, HIGH)?;
    let h = op_k(cx, TenOp::Div, h, 1 << 32)?;
    Ok((op_k(cx, TenOp::And, h, MASK)?, op_k(cx, TenOp::And, p, MASK)?))
}

fn xor(cx: &mut Cx, a: Value, b: Value) -> Result<Value, String> {
    cx.emit(TenOp::Xor, vec![a, b], vec![])
}

/// The four 32-bit words (int64, of shape `dims`) Philox4x32-10 gives for the counters
/// (i, 0, stream, 0), i the row-major element index, under the key (low, high word of `seed`).
fn philox(cx: &mut Cx, seed: Value, stream: i64, dims: &[SymExpr]) -> Result<[Value; 4], String> {
    let n = dims.iter().fold(SymExpr::Const(1), |a, d| SymExpr::times(a, d.clone()));
    let flat = [n];
    let mut c = [
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(flat.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
        )?,
        int(cx, 0, &flat)?,
        int(cx, stream, &flat)?,
        int(cx, 0, &flat)?,
    ];
    let mut k0 = op_k(cx, TenOp::And, seed, MASK)?;
    let k1 = op_k(cx, TenOp::And, seed, HIGH)?;
    let k1 = op_k(cx, TenOp::Div, k1, 1 << 32)?;
    let mut k1 = op_k(cx, TenOp::And, k1, MASK)?;
    for _ in 0..10 {
        let (hi0, lo0) = mulhilo(cx, c[0], M0)?;
        let (hi1, lo1) = mulhilo(cx, c[2], M1)?;
        let (b0, b1) = (cx.bcast(k0, &flat)?, cx.bcast(k1, &flat)?);
        let x0 = xor(cx, hi1, c[1])?;
        let x2 = xor(cx, hi0, c[3])?;
        c = [xor(cx, x0, b0)?, lo1, xor(cx, x2, b1)?, lo0];
        let a0 = op_k(cx, TenOp::Add, k0, W0)?;
        k0 = op_k(cx, TenOp::And, a0, MASK)?;
        let a1 = op_k(cx, TenOp::Add, k1, W1)?;
        k1 = op_k(cx, TenOp::And, a1, MASK)?;
    }
    let mut out = c;
    for w in out.iter_mut() {
        *w = cx.reshape(*w, dims)?;
    }
    Ok(out)
}

/// Mantissa digits a uniform of `dt` gets from a 32-bit word: every value k·2⁻ᵈ is exact in
/// `dt`, so none rounds up to 1 (24 for float32 and float64, as rng.py).
fn digits(dt: DType) -> i64 {
    match dt {
        DType::F16 => 11,
        DType::BF16 => 8,
        _ => 24,
    }
}

/// A uniform in `dt` from a word: its top d bits, plus `offset`, times 2⁻ᵈ: on [0, 1) for
/// offset 0, (0, 1] for 1 (a finite log), (0, 1) for ½.
fn uniform_word(cx: &mut Cx, word: Value, dt: DType, offset: f64) -> Result<Value, String> {
    let d = digits(dt);
    let top = op_k(cx, TenOp::Div, word, 1 << (32 - d))?;
    let f = cx.convert(top, acc_dtype(dt))?;
    let f = if offset != 0.0 { cx.binary_scalar(TenOp::Add, f, offset)? } else { f };
    cx.binary_scalar(TenOp::Mul, f, (-(d as f64)).exp2())
}

/// Standard normal by Box-Muller from two words, computed in f32 as rng.py (u1 in (0, 1], so
/// the log is finite).
fn normal_words(cx: &mut Cx, w: &[Value; 4]) -> Result<Value, String> {
    let u1 = uniform_word(cx, w[0], DType::F32, 1.0)?;
    let u2 = uniform_word(cx, w[1], DType::F32, 0.0)?;
    let l = cx.unary(TenOp::Log, u1)?;
    let r = cx.binary_scalar(TenOp::Mul, l, -2.0)?;
    let r = cx.unary(TenOp::Sqrt, r)?;
    let t = cx.binary_scalar(TenOp::Mul, u2, 2.0 * PI)?;
    let c = cx.unary(TenOp::Cos, t)?;
    cx.emit(TenOp::Mul, vec![r, c], vec![])
}

/// A float operand or attribute `name` (default `d`) as a tensor of `dt` and `dims`.
fn param(cx: &mut Cx, name: &str, d: f64, dt: DType, dims: &[SymExpr]) -> Result<Value, String> {
    match cx.operand(name) {
        Some(v) => cx.coerce(v, dt, dims),
        None => {
            let a = cx.attr(name).unwrap_or(Attr::Float(d));
            cx.constant(&a, dt, dims)
        }
    }
}

fn number(cx: &Cx, name: &str, d: f64) -> Result<f64, String> {
    match cx.attr(name) {
        None => Ok(d),
        Some(a) => a.as_float().ok_or_else(|| cx.err(&format!("`{name}` = {a} is not a number"))),
    }
}

/// One lowering for every random op (`name` is its key in `LOWERINGS`).
pub fn random(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let dims = t.dims.clone();
    let dt = acc_dtype(t.dtype);
    if name == "native_dropout" && (!cx.bool_or("train", true) || number(cx, "p", 0.5)? == 0.0) {
        // Eval mode (or p = 0) draws nothing: the input and an all-true mask.
        let x = cx.arg("input")?;
        let keep = cx.constant(&Attr::Bool(true), DType::Bool, &dims)?;
        return Ok(Some(vec![x, keep]));
    }
    if name == "rrelu_with_noise_functional" {
        return rrelu(cx);
    }
    if name == "multinomial" {
        return multinomial(cx);
    }
    let (seed, stream) = cx.rng_seed()?;
    let w = philox(cx, seed, stream, &dims)?;
    let out = match name {
        "rand" | "rand_like" => uniform_word(cx, w[0], t.dtype, 0.0)?,
        "randn" | "randn_like" => normal_words(cx, &w)?,
        "uniform" => {
            let (lo, hi) = (number(cx, "from", 0.0)?, number(cx, "to", 1.0)?);
            let u = uniform_word(cx, w[0], t.dtype, 0.0)?;
            let u = cx.binary_scalar(TenOp::Mul, u, hi - lo)?;
            cx.binary_scalar(TenOp::Add, u, lo)?
        }
        "normal_functional"
        | "normal.Tensor_Tensor"
        | "normal.Tensor_float"
        | "normal.float_Tensor"
        | "normal.float_float"
        | "log_normal" => {
            let (dm, ds) = if name == "log_normal" { (1.0, 2.0) } else { (0.0, 1.0) };
            let z = normal_words(cx, &w)?;
            let z = cx.convert(z, dt)?;
            let mean = param(cx, "mean", dm, dt, &dims)?;
            let std = param(cx, "std", ds, dt, &dims)?;
            let v = cx.emit(TenOp::Mul, vec![z, std], vec![])?;
            let v = cx.emit(TenOp::Add, vec![v, mean], vec![])?;
            if name == "log_normal" {
                cx.unary(TenOp::Exp, v)?
            } else {
                v
            }
        }
        "exponential" => {
            // -ln(u)/λ with u in (0, 1]: finite, and 0 only for u = 1.
            let lambd = number(cx, "lambd", 1.0)?;
            let u = uniform_word(cx, w[0], DType::F32, 1.0)?;
            let l = cx.unary(TenOp::Log, u)?;
            let v = cx.binary_scalar(TenOp::Mul, l, -1.0 / lambd)?;
            cx.convert(v, dt)?
        }
        "cauchy" => {
            let (median, sigma) = (number(cx, "median", 0.0)?, number(cx, "sigma", 1.0)?);
            let u = uniform_word(cx, w[0], DType::F32, 0.0)?;
            let a = cx.binary_scalar(TenOp::Sub, u, 0.5)?;
            let a = cx.binary_scalar(TenOp::Mul, a, PI)?;
            let v = cx.unary(TenOp::Tan, a)?;
            let v = cx.binary_scalar(TenOp::Mul, v, sigma)?;
            let v = cx.binary_scalar(TenOp::Add, v, median)?;
            cx.convert(v, dt)?
        }
        "geometric" => {
            // The number of trials to the first success: ⌈ln(u)/ln(1 - p)⌉ with u in (0, 1),
            // so at least 1.
            let p = number(cx, "p", 0.5)?;
            let u = uniform_word(cx, w[0], DType::F64, 0.5)?;
            let l = cx.unary(TenOp::Log, u)?;
            let v = cx.binary_scalar(TenOp::Mul, l, 1.0 / (-p).ln_1p())?;
            let v = cx.unary(TenOp::Ceil, v)?;
            cx.convert(v, dt)?
        }
        "bernoulli" | "bernoulli.p" => {
            let u = uniform_word(cx, w[0], DType::F32, 0.0)?;
            let p = match name {
                "bernoulli.p" => cx.constf(number(cx, "p", 0.5)?, DType::F32, &dims)?,
                _ => {
                    let x = cx.arg("self")?;
                    cx.coerce(x, DType::F32, &dims)?
                }
            };
            cx.compare("LT", u, p)?
        }
        "native_dropout" => {
            let p = number(cx, "p", 0.5)?;
            let x = cx.arg("input")?;
            let u = uniform_word(cx, w[0], DType::F32, 0.0)?;
            let pk = cx.constf(p, DType::F32, &dims)?;
            let keep = cx.compare("GE", u, pk)?;
            let scale = if p < 1.0 { 1.0 / (1.0 - p) } else { 0.0 };
            let xd = cx.convert(x, dt)?;
            let kept = cx.convert(keep, dt)?;
            let v = cx.emit(TenOp::Mul, vec![xd, kept], vec![])?;
            let v = cx.binary_scalar(TenOp::Mul, v, scale)?;
            return Ok(Some(vec![cx.convert(v, t.dtype)?, keep]));
        }
        _ => {
            // randint, randint.low, randint_like, randint_like.low_dtype: low + word mod (high - low).
            let (lo, hi) = if name.ends_with("low") || name.ends_with("low_dtype") {
                (cx.int("low")?, cx.int("high")?)
            } else {
                (0, cx.int("high")?)
            };
            if hi <= lo {
                return Err(
                    cx.err(&format!("random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}"))
                );
            }
            let v = op_k(cx, TenOp::Rem, w[0], hi - lo)?;
            op_k(cx, TenOp::Add, v, lo)?
        }
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}

/// Randomized leaky ReLU as torch's CPU kernel: training draws a slope r uniform on
/// [lower, upper] for each x <= 0 (x·r, and r in the noise output; x and 1 elsewhere); eval
/// mode is the leaky ReLU of slope (lower + upper)/2 and leaves `noise` as it was.
fn rrelu(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let dt = acc_dtype(t.dtype);
    let (lo, hi) = (number(cx, "lower", 0.125)?, number(cx, "upper", 1.0 / 3.0)?);
    let x = cx.arg("self")?;
    let x = cx.convert(x, dt)?;
    let zero = cx.constf(0.0, dt, &t.dims)?;
    if !cx.bool_or("training", false) {
        let slope = cx.binary_scalar(TenOp::Mul, x, (lo + hi) / 2.0)?;
        let neg = cx.compare("LT", x, zero)?;
        let out = cx.select(neg, slope, x)?;
        return Ok(Some(vec![cx.convert(out, t.dtype)?, cx.arg("noise")?]));
    }
    let (seed, stream) = cx.rng_seed()?;
    let w = philox(cx, seed, stream, &t.dims)?;
    let u = uniform_word(cx, w[0], t.dtype, 0.0)?;
    let u = cx.convert(u, dt)?;
    let r = cx.binary_scalar(TenOp::Mul, u, hi - lo)?;
    let r = cx.binary_scalar(TenOp::Add, r, lo)?;
    let le = cx.compare("LE", x, zero)?;
    let xr = cx.emit(TenOp::Mul, vec![x, r], vec![])?;
    let out = cx.select(le, xr, x)?;
    let one = cx.constf(1.0, dt, &t.dims)?;
    let noise = cx.select(le, r, one)?;
    let nt = cx.out(1)?;
    Ok(Some(vec![cx.convert(out, t.dtype)?, cx.convert(noise, nt.dtype)?]))
}

/// multinomial(weights, k, replacement) over the last dim of [n] or [rows, n] weights. With
/// replacement, each draw inverts the running sum: the number of categories whose cumulative
/// weight is <= u·total. Without, the exponential race: category i finishes at -ln(u_i)/w_i and
/// the first k to finish are drawn in order, which samples successive draws without replacement
/// with torch's probabilities (zero weights finish at +inf, last).
fn multinomial(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let dt = acc_dtype(xt.dtype);
    let (k, replacement) = (cx.int("num_samples")?, cx.bool_or("replacement", false));
    let last = xt.dims.len() - 1;
    let n = xt.dims[last].clone();
    let w = cx.convert(x, dt)?;
    let (seed, stream) = cx.rng_seed()?;
    let idx = if replacement {
        let words = philox(cx, seed, stream, &t.dims)?;
        let u = uniform_word(cx, words[0], DType::F32, 0.0)?;
        let u = cx.convert(u, dt)?;
        let cdf = cx.emit(TenOp::Cumsum, vec![w], vec![("dim", Attr::Int(last as i64))])?;
        let mut one = xt.dims.clone();
        one[last] = SymExpr::Const(1);
        let total = slice_dim(cx, cdf, last, SymExpr::plus(n.clone(), SymExpr::Const(-1)), 1, &one)?;
        let total = cx.bcast(total, &t.dims)?;
        let target = cx.emit(TenOp::Mul, vec![u, total], vec![])?;
        // [.., k, n]: each draw against every category's cumulative weight.
        let mut grid = t.dims.clone();
        grid.push(n.clone());
        let batch: Vec<usize> = (0..last).collect();
        let cmap: Vec<usize> = batch.iter().copied().chain([last + 1]).collect();
        let tmap: Vec<usize> = (0..=last).collect();
        let cdf = cx.bcast_in_dim(cdf, &grid, &cmap)?;
        let target = cx.bcast_in_dim(target, &grid, &tmap)?;
        let below = cx.compare("LE", cdf, target)?;
        let below = cx.convert(below, DType::I64)?;
        let count = cx.reduce(below, "sum", &[last + 1])?;
        // u·total rounds up to total at most: the last category, not one past it.
        let Some(n) = n.as_const() else {
            return Err(cx.err("multinomial needs a static number of categories"));
        };
        op_k(cx, TenOp::Min, count, n - 1)?
    } else {
        let words = philox(cx, seed, stream, &xt.dims)?;
        // u in (0, 1): -ln(u) > 0, so a zero weight gives +inf.
        let u = uniform_word(cx, words[0], dt, 0.5)?;
        let l = cx.unary(TenOp::Log, u)?;
        let l = cx.unary(TenOp::Neg, l)?;
        let keys = cx.emit(TenOp::Div, vec![l, w], vec![])?;
        let order = cx.emit(
            TenOp::Argsort,
            vec![keys],
            vec![("dim", Attr::Int(last as i64)), ("descending", Attr::Bool(false))],
        )?;
        let mut shape = xt.dims.clone();
        shape[last] = SymExpr::Const(k);
        slice_dim(cx, order, last, SymExpr::Const(0), 1, &shape)?
    };
    Ok(Some(vec![cx.convert(idx, t.dtype)?]))
}
