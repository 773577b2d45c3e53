//! The f32 math library: LLVM intrinsics and libm calls, and inline polynomial forms (exp, tanh,
//! erf, atan2) that vectorize where a libm call per element would not. Accuracy lives here, apart
//! from the op dispatch that calls it.

use super::{le, Kernel, R};
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Linkage;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, FloatValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    pub(super) fn intrinsic(
        &self,
        name: &str,
        ty: BasicTypeEnum<'ctx>,
        args: &[BasicValueEnum<'ctx>],
    ) -> R<BasicValueEnum<'ctx>> {
        let i = Intrinsic::find(name).ok_or_else(|| format!("LLVM has no intrinsic {name}"))?;
        let f = i.get_declaration(self.module, &[ty]).ok_or_else(|| format!("cannot declare {name}"))?;
        let args: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        Ok(self
            .b
            .build_call(f, &args, "")
            .map_err(le)?
            .try_as_basic_value()
            .basic()
            .ok_or("intrinsic returned void")?)
    }

    pub(super) fn libm(&self, name: &str, x: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let ft = x.get_type();
        let sym = if ft == self.ctx.f32_type() { format!("{name}f") } else { name.to_string() };
        let f = self.module.get_function(&sym).unwrap_or_else(|| {
            self.module.add_function(&sym, ft.fn_type(&[ft.into()], false), Some(Linkage::External))
        });
        Ok(self
            .b
            .build_call(f, &[x.into()], "")
            .map_err(le)?
            .try_as_basic_value()
            .basic()
            .ok_or("libm returned void")?)
    }

    pub(super) fn libm2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let ft = x.get_type();
        let sym = if ft == self.ctx.f32_type() { format!("{name}f") } else { name.to_string() };
        let f = self.module.get_function(&sym).unwrap_or_else(|| {
            self.module.add_function(&sym, ft.fn_type(&[ft.into(), ft.into()], false), Some(Linkage::External))
        });
        Ok(self
            .b
            .build_call(f, &[x.into(), y.into()], "")
            .map_err(le)?
            .try_as_basic_value()
            .basic()
            .ok_or("libm returned void")?)
    }

    /// atan2(y, x) in f32 without a libm call: t = min(|x|, |y|) / max(|x|, |y|) in [0, 1]
    /// (0 when both are 0, 1 when they are equal, so two infinities give pi/4), reduced to
    /// |z| <= tan(pi/8) by z = (t - 1) / (t + 1) above tan(pi/8), Cephes' atanf polynomial, then
    /// the octant and quadrant fix-ups: pi/2 - r when |y| > |x|, pi - r when x has its sign bit
    /// set (so atan2(0, -0) = pi), and the sign of y. NaN in either operand gives NaN.
    pub(super) fn atan2_f32(&self, y: FloatValue<'ctx>, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let ty = x.get_type().as_basic_type_enum();
        let fabs = |v: FloatValue<'ctx>| -> R<FloatValue<'ctx>> {
            Ok(self.intrinsic("llvm.fabs", ty, &[v.into()])?.into_float_value())
        };
        let sel = |c, a: FloatValue<'ctx>, e: FloatValue<'ctx>| -> R<FloatValue<'ctx>> {
            Ok(b.build_select(c, a, e, "").map_err(le)?.into_float_value())
        };
        let (ax, ay) = (fabs(x)?, fabs(y)?);
        let swap = b.build_float_compare(FloatPredicate::OGT, ay, ax, "").map_err(le)?;
        let mx = sel(swap, ay, ax)?;
        let mn = sel(swap, ax, ay)?;
        let q = b.build_float_div(mn, mx, "").map_err(le)?;
        let eq = b.build_float_compare(FloatPredicate::OEQ, ax, ay, "").map_err(le)?;
        let t = sel(eq, self.fconst(1.0), q)?;
        let zero = b.build_float_compare(FloatPredicate::OEQ, mx, self.fconst(0.0), "").map_err(le)?;
        let t = sel(zero, self.fconst(0.0), t)?;
        let big =
            b.build_float_compare(FloatPredicate::OGT, t, self.fconst(0.414_213_562_373_095_03), "").map_err(le)?;
        let zb = b
            .build_float_div(
                b.build_float_sub(t, self.fconst(1.0), "").map_err(le)?,
                b.build_float_add(t, self.fconst(1.0), "").map_err(le)?,
                "",
            )
            .map_err(le)?;
        let z = sel(big, zb, t)?;
        let z2 = b.build_float_mul(z, z, "").map_err(le)?;
        let p =
            self.horner(z2, &[-3.333_294_915_39e-1, 1.997_771_064_78e-1, -1.387_768_560_32e-1, 8.053_744_495_38e-2])?;
        let r = b
            .build_float_add(z, b.build_float_mul(b.build_float_mul(z, z2, "").map_err(le)?, p, "").map_err(le)?, "")
            .map_err(le)?;
        let r = sel(big, b.build_float_add(r, self.fconst(std::f64::consts::FRAC_PI_4), "").map_err(le)?, r)?;
        let r = sel(swap, b.build_float_sub(self.fconst(std::f64::consts::FRAC_PI_2), r, "").map_err(le)?, r)?;
        let i32t = self.ctx.i32_type();
        let xbits = b.build_bit_cast(x, i32t, "").map_err(le)?.into_int_value();
        let xneg = b.build_int_compare(IntPredicate::SLT, xbits, i32t.const_zero(), "").map_err(le)?;
        let r = sel(xneg, b.build_float_sub(self.fconst(std::f64::consts::PI), r, "").map_err(le)?, r)?;
        let r = self.intrinsic("llvm.copysign", ty, &[r.into(), y.into()])?.into_float_value();
        let nan = b.build_float_compare(FloatPredicate::UNO, x, y, "").map_err(le)?;
        sel(nan, b.build_float_add(x, y, "").map_err(le)?, r)
    }

    // Vectorizable f32 math. LLVM has no vector exp/tanh/erf without a vector math library, and a
    // scalar libm call per element keeps loops from vectorizing, so these are written out inline.

    pub(super) fn fconst(&self, v: f64) -> FloatValue<'ctx> {
        self.ctx.f32_type().const_float(v)
    }

    /// p[0] + x*(p[1] + x*(p[2] + ...)) by Horner's rule.
    pub(super) fn horner(&self, x: FloatValue<'ctx>, p: &[f64]) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let _ = b;
        let mut acc = self.fconst(*p.last().unwrap());
        for &c in p.iter().rev().skip(1) {
            acc = self.fma(acc, x, self.fconst(c))?;
        }
        Ok(acc)
    }

    /// a*b + c, fused where the CPU has FMA (one rounding instead of two: never less accurate, and
    /// half the instructions of the inline polynomials).
    pub(super) fn fma(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>, c: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let ty = a.get_type().as_basic_type_enum();
        Ok(self.intrinsic("llvm.fmuladd", ty, &[a.into(), b.into(), c.into()])?.into_float_value())
    }

    /// x clamped to [lo, hi] for a non-NaN x (NaN gives lo or hi: callers pass NaN through
    /// themselves). Compare-and-select is one vmaxps/vminps; maxnum/minnum need NaN fix-ups on x86.
    pub(super) fn fmin_max(&self, x: FloatValue<'ctx>, lo: f64, hi: f64) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let (lo, hi) = (self.fconst(lo), self.fconst(hi));
        let above = b.build_float_compare(FloatPredicate::OGT, x, lo, "").map_err(le)?;
        let a = b.build_select(above, x, lo, "").map_err(le)?.into_float_value();
        let below = b.build_float_compare(FloatPredicate::OLT, a, hi, "").map_err(le)?;
        Ok(b.build_select(below, a, hi, "").map_err(le)?.into_float_value())
    }

    /// e^x: Cody-Waite range reduction and Cephes' expf polynomial (about 1 ulp); exp(-inf) = 0.
    pub(super) fn exp_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let ty = self.ctx.f32_type().as_basic_type_enum();
        let nan = b.build_float_compare(FloatPredicate::UNO, x, x, "").map_err(le)?;
        let xc = self.fmin_max(x, -88.376_262_664_794_9, 88.376_262_664_795)?;
        let t = self.fma(xc, self.fconst(std::f64::consts::LOG2_E), self.fconst(0.5))?;
        let fx = self.intrinsic("llvm.floor", ty, &[t.into()])?.into_float_value();
        let r = self.fma(fx, self.fconst(-0.693_359_375), xc)?;
        let r = self.fma(fx, self.fconst(2.121_944_4e-4), r)?;
        let z = b.build_float_mul(r, r, "").map_err(le)?;
        let p = self.horner(
            r,
            &[
                5.000_000_120_1e-1,
                1.666_666_545_9e-1,
                4.166_579_589_4e-2,
                8.333_451_907_3e-3,
                1.398_199_950_7e-3,
                1.987_569_150_0e-4,
            ],
        )?;
        let y = b.build_float_add(self.fma(p, z, r)?, self.fconst(1.0), "").map_err(le)?;
        // 2^fx through the exponent bits; fx = -127 gives 0 (the clamp makes exp(-inf) exactly 0).
        let i32t = self.ctx.i32_type();
        let n = b.build_float_to_signed_int(fx, i32t, "").map_err(le)?;
        let e = b
            .build_left_shift(
                b.build_int_add(n, i32t.const_int(127, false), "").map_err(le)?,
                i32t.const_int(23, false),
                "",
            )
            .map_err(le)?;
        let pow2 = b.build_bit_cast(e, self.ctx.f32_type(), "").map_err(le)?.into_float_value();
        let out = b.build_float_mul(y, pow2, "").map_err(le)?;
        Ok(b.build_select(nan, x, out, "").map_err(le)?.into_float_value())
    }

    /// An odd function from its small-|x| form and its large-|x| form of |x|: `small` below
    /// `threshold`, `big` with x's sign above, NaN passed through.
    pub(super) fn odd_blend(
        &self,
        x: FloatValue<'ctx>,
        ax: FloatValue<'ctx>,
        small: FloatValue<'ctx>,
        big: FloatValue<'ctx>,
        threshold: f64,
    ) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let ty = self.ctx.f32_type().as_basic_type_enum();
        let signed = self.intrinsic("llvm.copysign", ty, &[big.into(), x.into()])?.into_float_value();
        let is_small = b.build_float_compare(FloatPredicate::OLT, ax, self.fconst(threshold), "").map_err(le)?;
        let r = b.build_select(is_small, small, signed, "").map_err(le)?.into_float_value();
        let nan = b.build_float_compare(FloatPredicate::UNO, x, x, "").map_err(le)?;
        Ok(b.build_select(nan, x, r, "").map_err(le)?.into_float_value())
    }

    /// tanh: Cephes' odd polynomial below 0.625, 1 - 2/(e^2|x| + 1) above, with the sign restored.
    pub(super) fn tanh_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let ty = self.ctx.f32_type().as_basic_type_enum();
        let ax = self.intrinsic("llvm.fabs", ty, &[x.into()])?.into_float_value();
        let z = b.build_float_mul(x, x, "").map_err(le)?;
        let p = self.horner(
            z,
            &[
                -3.333_328_194_22e-1,
                1.333_144_220_36e-1,
                -5.373_971_555_31e-2,
                2.063_908_879_54e-2,
                -5.704_988_727_45e-3,
            ],
        )?;
        let small = self.fma(b.build_float_mul(p, z, "").map_err(le)?, x, x)?;
        let two_ax = b.build_float_mul(self.fmin_max(ax, 0.0, 20.0)?, self.fconst(2.0), "").map_err(le)?;
        let e2 = self.exp_f32(two_ax)?;
        let big = b
            .build_float_sub(
                self.fconst(1.0),
                b.build_float_div(self.fconst(2.0), b.build_float_add(e2, self.fconst(1.0), "").map_err(le)?, "")
                    .map_err(le)?,
                "",
            )
            .map_err(le)?;
        self.odd_blend(x, ax, small, big, 0.625)
    }

    /// erf: Maclaurin series below 0.5 (relative error < 1e-6); above, Abramowitz-Stegun 7.1.26
    /// (absolute error < 1.5e-7), odd-extended.
    pub(super) fn erf_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let ty = self.ctx.f32_type().as_basic_type_enum();
        let ax = self.intrinsic("llvm.fabs", ty, &[x.into()])?.into_float_value();
        let z = b.build_float_mul(x, x, "").map_err(le)?;
        let k = std::f64::consts::FRAC_2_SQRT_PI;
        let series = self.horner(z, &[k, -k / 3.0, k / 10.0, -k / 42.0, k / 216.0, -k / 1320.0])?;
        let small = b.build_float_mul(series, x, "").map_err(le)?;
        let t = b
            .build_float_div(
                self.fconst(1.0),
                b.build_float_add(
                    self.fconst(1.0),
                    b.build_float_mul(ax, self.fconst(0.327_591_1), "").map_err(le)?,
                    "",
                )
                .map_err(le)?,
                "",
            )
            .map_err(le)?;
        let poly =
            self.horner(t, &[0.0, 0.254_829_592, -0.284_496_736, 1.421_413_741, -1.453_152_027, 1.061_405_429])?;
        let nz = b.build_float_neg(b.build_float_mul(ax, ax, "").map_err(le)?, "").map_err(le)?;
        let big = b
            .build_float_sub(self.fconst(1.0), b.build_float_mul(poly, self.exp_f32(nz)?, "").map_err(le)?, "")
            .map_err(le)?;
        self.odd_blend(x, ax, small, big, 0.5)
    }
}
