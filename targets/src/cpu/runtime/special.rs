//! `Step::Routine` of `ten.special`: the classical orthogonal polynomials at
//! (x, n) element by element, as torch's CPU kernels compute them (ATen's `native/Math.h`):
//! the three-term recurrence run n times in the element type (a trip count that is data, so
//! no loop nest is generated for it), closed forms where the kernel switches to them, and the
//! kernel's special values at x = ±1 (or 0 and 1 for the shifted ones). torch's kernels are
//! compiled with floating-point contraction (GCC's default), so each step's `a·q - b·p` is
//! `fma(a, q, -(b·p))`: rounded twice instead, U_600(1.0000001) in float32 is off by 2e-4.

use crate::cpu::plan::SpecialFn;
use ember_ir::types::DType;
use num_traits::Float;

/// Runs the step over dense buffers of one shape: `x` and `n` (the result's dtype) into `out`.
pub(super) fn run(
    kind: SpecialFn,
    dtype: DType,
    elems: usize,
    x: *const u8,
    n: *const u8,
    out: *mut u8,
) -> Result<(), String> {
    match dtype {
        DType::F32 => each::<f32>(kind, elems, x, n, out),
        DType::F64 => each::<f64>(kind, elems, x, n, out),
        d => return Err(format!("`{}` of {} is not supported by the CPU target", kind.name(), d.torch_name())),
    }
    Ok(())
}

fn each<T: Float>(kind: SpecialFn, elems: usize, x: *const u8, n: *const u8, out: *mut u8) {
    // SAFETY: the planner sized the three buffers as `elems` elements of T.
    let (x, n, out) = unsafe {
        (
            std::slice::from_raw_parts(x as *const T, elems),
            std::slice::from_raw_parts(n as *const T, elems),
            std::slice::from_raw_parts_mut(out as *mut T, elems),
        )
    };
    for ((o, &x), &n) in out.iter_mut().zip(x).zip(n) {
        *o = eval(kind, x, trip(n));
    }
}

/// The kernel's `static_cast<int64_t>(n)`: truncation, and x86's `cvttss2si` answer for what
/// does not fit (NaN, ±inf, |n| ≥ 2⁶³): i64::MIN, which every polynomial maps to 0.
fn trip<T: Float>(n: T) -> i64 {
    n.to_i64().unwrap_or(i64::MIN)
}

fn c<T: Float>(v: f64) -> T {
    T::from(v).unwrap()
}

fn i<T: Float>(v: i64) -> T {
    T::from(v).unwrap()
}

/// The degree above which the kernel answers NaN for Hermite polynomials, its guard against
/// loops the values overflow long before: 128 for float32, 512 for float64.
fn hermite_limit<T: Float>() -> i64 {
    if T::epsilon() < c::<T>(1e-10) {
        512
    } else {
        128
    }
}

fn eval<T: Float>(kind: SpecialFn, x: T, n: i64) -> T {
    use SpecialFn::*;
    if n < 0 {
        return T::zero();
    }
    let one = T::one();
    let two = c::<T>(2.0);
    let half = c::<T>(0.5);
    let odd = n % 2 != 0;
    // The recurrence r = a·q - p from (p, q) = (1, q1), n - 1 times: Chebyshev's kinds.
    let cheb = |a: T, q1: T| {
        let (mut p, mut q) = (one, q1);
        // The kernel stops at a NaN, which the recurrence would keep.
        for _ in 2..=n {
            if q.is_nan() {
                break;
            }
            let r = a.mul_add(q, -p);
            (p, q) = (q, r);
        }
        q
    };
    let sign = |v: T| if odd { -v } else { v };
    // A Chebyshev kind's argument (x, or 2x - 1 shifted), whether x is at its +1 and -1 ends
    // (1 and 0 for the shifted kinds), and the degree past which |y| < 1 takes a closed form.
    let frame = |plain_cut: i64, shifted_cut: i64| {
        if matches!(kind, ChebyshevT | ChebyshevU | ChebyshevV | ChebyshevW) {
            (x, x.abs() == one && x > T::zero(), x.abs() == one && x < T::zero(), plain_cut)
        } else {
            (x + x - one, x == one, x == T::zero(), shifted_cut)
        }
    };
    // Degree 0 is 1, degree 1 is q1, then the recurrence with multiplier a.
    let recur = |a: T, q1: T| match n {
        0 => one,
        1 => q1,
        _ => cheb(a, q1),
    };
    match kind {
        ChebyshevT | ShiftedChebyshevT => {
            let (y, at_one, at_minus, cut) = frame(6, 6);
            if at_one {
                return one;
            }
            if at_minus {
                return sign(one);
            }
            if n > cut && y.abs() < one {
                return (i::<T>(n) * y.acos()).cos();
            }
            recur(y + y, y)
        }
        ChebyshevU | ShiftedChebyshevU => {
            let (y, at_one, at_minus, cut) = frame(8, 6);
            let n1 = i::<T>(n.wrapping_add(1));
            if at_one {
                return n1;
            }
            if at_minus {
                return sign(n1);
            }
            if n > cut && y.abs() < one {
                let t = y.acos();
                if t.sin() != T::zero() {
                    return (n1 * t).sin() / t.sin();
                }
                return n1 * (n1 * t).cos() / y;
            }
            recur(y + y, y + y)
        }
        ChebyshevV | ShiftedChebyshevV => {
            let (y, at_one, at_minus, cut) = frame(8, 6);
            let n21 = i::<T>(n.wrapping_mul(2).wrapping_add(1));
            if at_one {
                return one;
            }
            if at_minus {
                return sign(n21);
            }
            if n > cut && y.abs() < one {
                let t = y.acos();
                if (t / two).sin() != one {
                    return ((i::<T>(n) + half) * t).cos() / (t / two).cos();
                }
                return sign(n21);
            }
            recur(y + y, y + y - one)
        }
        ChebyshevW | ShiftedChebyshevW => {
            let (y, at_one, at_minus, cut) = frame(8, 4);
            let n21 = i::<T>(n.wrapping_mul(2).wrapping_add(1));
            if at_one {
                return n21;
            }
            if at_minus {
                return sign(one);
            }
            if n > cut && y.abs() < one {
                let t = y.acos();
                if (t / two).cos() != one {
                    return ((i::<T>(n) + half) * t).sin() / (t / two).sin();
                }
                if kind == ChebyshevW && x > T::zero() {
                    return n21;
                }
                return sign(one);
            }
            recur(y + y, y + y + one)
        }
        HermiteH => {
            if n == 0 {
                return one;
            }
            if n > 1 && n > hermite_limit::<T>() {
                return T::nan();
            }
            let (mut p, mut q) = (one, x + x);
            let mut k = 2;
            while k < n.saturating_mul(2) {
                let r = (x + x).mul_add(q, -(i::<T>(k) * p));
                (p, q) = (q, r);
                k += 2;
            }
            q
        }
        HermiteHe => {
            if n == 0 {
                return one;
            }
            if n > 1 && n > hermite_limit::<T>() {
                return T::nan();
            }
            let (mut p, mut q) = (one, x);
            for k in 1..n {
                let r = x.mul_add(q, -(i::<T>(k) * p));
                (p, q) = (q, r);
            }
            q
        }
        LaguerreL => {
            if x.abs() == T::zero() || n == 0 {
                return one;
            }
            let (mut p, mut q) = (one, one - x);
            for k in 1..n {
                if q.is_nan() {
                    break;
                }
                let r = (i::<T>(k + k) + (one - x)).mul_add(q, -(i::<T>(k) * p)) / i::<T>(k + 1);
                (p, q) = (q, r);
            }
            q
        }
        LegendreP => {
            if x.abs() == one {
                return if x > T::zero() { one } else { sign(one) };
            }
            if n == 0 {
                return one;
            }
            let (mut p, mut q) = (one, x);
            for k in 1..n {
                if q.is_nan() {
                    break;
                }
                let r = (i::<T>(k + k + 1) * x).mul_add(q, -(i::<T>(k) * p)) / i::<T>(k + 1);
                (p, q) = (q, r);
            }
            q
        }
    }
}
