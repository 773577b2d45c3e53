//! Literals: attribute values as StableHLO constant text, with each dtype's range, overflow point
//! and the bit patterns of its special values. Exact printing is what keeps emitted constants
//! identical to torch's, so it sits apart from the op code.

use ember_ir::attr::{fmt_f64, Attr};
use ember_ir::types::DType;

/// A scalar value for `dense<..>` of element type `dt`.
#[derive(Clone, Copy, Debug)]
pub(super) enum Lit {
    F(f64),
    I(i128),
    B(bool),
}

impl Lit {
    pub(super) fn from_attr(a: &Attr) -> Option<Lit> {
        match a {
            Attr::Bool(b) => Some(Lit::B(*b)),
            Attr::Int(i) => Some(Lit::I(*i as i128)),
            Attr::Float(f) => Some(Lit::F(*f)),
            _ => None,
        }
    }
}

/// Integer range of an integer dtype.
pub(crate) fn int_range(dt: DType) -> (i128, i128) {
    match dt {
        DType::Bool => (0, 1),
        DType::U8 => (0, u8::MAX as i128),
        DType::U16 => (0, u16::MAX as i128),
        DType::U32 => (0, u32::MAX as i128),
        DType::U64 => (0, u64::MAX as i128),
        DType::I8 => (i8::MIN as i128, i8::MAX as i128),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

/// Bits of +inf, -inf and NaN in a float dtype (E4M3FN has no infinity: its NaN stands in).
pub(super) fn special_bits(dt: DType) -> Option<(u64, u64, u64, usize)> {
    Some(match dt {
        DType::F64 => (0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 16),
        DType::F32 => (0x7F800000, 0xFF800000, 0x7FC00000, 8),
        DType::F16 => (0x7C00, 0xFC00, 0x7E00, 4),
        DType::BF16 => (0x7F80, 0xFF80, 0x7FC0, 4),
        DType::F8E5M2 => (0x7C, 0xFC, 0x7E, 2),
        DType::F8E4M3FN => (0x7F, 0xFF, 0x7F, 2),
        _ => return None,
    })
}

/// Largest finite value of a float dtype, and the magnitude from which a value rounds to infinity.
pub(super) fn overflow_at(dt: DType) -> f64 {
    match dt {
        DType::F16 => 65520.0,
        DType::BF16 => 3.396_177_6e38,
        DType::F8E5M2 => 61440.0,
        DType::F8E4M3FN => 464.0,
        _ => f64::INFINITY,
    }
}

/// The `dense<..>` payload of `v` as an element of `dt`: ints wrap/saturate like a C cast of the
/// value, floats round to `dt` (MLIR rounds the decimal; non-finite values are hex bit patterns).
pub(super) fn lit_text(v: Lit, dt: DType) -> String {
    if dt == DType::Bool {
        let b = match v {
            Lit::B(b) => b,
            Lit::I(i) => i != 0,
            Lit::F(f) => f != 0.0,
        };
        return b.to_string();
    }
    if dt.is_float() {
        let mut f = match v {
            Lit::B(b) => b as i64 as f64,
            Lit::I(i) => i as f64,
            Lit::F(f) => f,
        };
        if dt == DType::F32 {
            f = f as f32 as f64;
        }
        if f.is_finite() && f.abs() >= overflow_at(dt) {
            f = f64::INFINITY.copysign(f);
        }
        if !f.is_finite() {
            let (pinf, ninf, nan, w) = special_bits(dt).expect("float dtype");
            let bits = if f.is_nan() {
                nan
            } else if f > 0.0 {
                pinf
            } else {
                ninf
            };
            return format!("0x{bits:0w$X}");
        }
        return fmt_f64(f);
    }
    let (lo, hi) = int_range(dt);
    let i = match v {
        Lit::B(b) => b as i128,
        Lit::I(i) => i,
        Lit::F(f) if f.is_nan() => 0,
        Lit::F(f) => (f.trunc().clamp(lo as f64, hi as f64)) as i128,
    };
    // Wrap into the dtype's range (two's complement), like torch's cast of an int scalar.
    let bits = 8 * dt.byte_size() as u32;
    let m = 1i128 << bits;
    let mut w = i.rem_euclid(m);
    if w > hi {
        w -= m;
    }
    w.to_string()
}
