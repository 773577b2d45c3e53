//! The f32 math library: LLVM intrinsics and libm calls, and inline polynomial forms (exp, tanh,
//! erf, atan2) that vectorize where a libm call per element would not. The other transcendentals
//! (sin, cos, tan, log, log1p, pow, and every f64 one) stay calls, tagged with their glibc libmvec
//! vector variants so the loop vectorizer calls those instead. Accuracy lives here, apart from the
//! op dispatch that calls it.

use super::{le, Kernel, R};
use inkwell::attributes::{Attribute, AttributeLoc};
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Linkage;
use inkwell::targets::TargetMachine;
use inkwell::types::{BasicType, BasicTypeEnum, FloatType};
use inkwell::values::{BasicMetadataValueEnum, BasicValueEnum, CallSiteValue, FloatValue, FunctionValue};
use std::sync::OnceLock;

/// libm functions glibc's libmvec (2.35 and later) has vector variants of, f32 and f64, for SSE,
/// AVX2 and AVX-512. LLVM's own `-vector-library=LIBMVEC` table covers only sin, cos, tan, exp,
/// log and pow, without the AVX-512 widths the kernels prefer, and is a process-wide option, so
/// the mapping is given per call (the `vector-function-abi-variant` attribute) instead.
const LIBMVEC: &[&str] = &["sin", "cos", "tan", "exp", "log", "log1p", "pow", "tanh", "erf", "atan2"];

/// Prefix of libmvec's symbols; `module_object` keeps their declarations alive until the
/// vectorizer has run and drops the unused ones after.
pub(super) const VECTOR_ABI_PREFIX: &str = "_ZGV";

/// The x86 vector ABIs (`_ZGV<isa>`: b SSE, d AVX2, e AVX-512) this CPU runs, with their vector
/// width in bits. Every width is offered so the epilogue and narrower loops find one too; the
/// features are the ones the manifest records, so the artifact depends on nothing else.
fn vector_isas() -> &'static [(char, u32)] {
    static ISAS: OnceLock<Vec<(char, u32)>> = OnceLock::new();
    ISAS.get_or_init(|| {
        let triple = TargetMachine::get_default_triple();
        if !triple.as_str().to_string_lossy().starts_with("x86_64") {
            return vec![];
        }
        let f = super::host_features();
        let mut v = vec![('b', 128)];
        if f.contains("+avx2") {
            v.push(('d', 256));
        }
        if f.contains("+avx512f") {
            v.push(('e', 512));
        }
        v
    })
}

/// Marks a math function as pure (no errno, as `-fno-math-errno`): the vectorizer only widens
/// calls without side effects.
fn pure_fn(ctx: &inkwell::context::Context, f: FunctionValue) {
    for a in ["nounwind", "willreturn"] {
        f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id(a), 0));
    }
    // memory(none): the encoded ModRef of every location is 0.
    f.add_attribute(AttributeLoc::Function, ctx.create_enum_attribute(Attribute::get_named_enum_kind_id("memory"), 0));
}
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
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &margs, "").map_err(le)?;
        if let (Some(base), BasicTypeEnum::FloatType(ft)) = (name.strip_prefix("llvm."), ty) {
            let callee = f.get_name().to_str().map_err(le)?.to_string();
            self.vector_variants(call, &callee, base, ft, args.len());
        }
        Ok(call.try_as_basic_value().basic().ok_or("intrinsic returned void")?)
    }

    /// Tags a call of the libm function `base` (f32 or f64, `arity` operands) with its libmvec
    /// variants, declared in the module, for the ABIs this CPU runs; other calls are left alone.
    fn vector_variants(&self, call: CallSiteValue<'ctx>, callee: &str, base: &str, ft: FloatType<'ctx>, arity: usize) {
        if !LIBMVEC.contains(&base) {
            return;
        }
        let (bits, suffix) = if ft == self.ctx.f32_type() {
            (32, "f")
        } else if ft == self.ctx.f64_type() {
            (64, "")
        } else {
            return;
        };
        let params = "v".repeat(arity);
        let mut variants = Vec::new();
        for &(isa, width) in vector_isas() {
            let lanes = width / bits;
            let vname = format!("{VECTOR_ABI_PREFIX}{isa}N{lanes}{params}_{base}{suffix}");
            if self.module.get_function(&vname).is_none() {
                let vt = ft.vec_type(lanes);
                let f = self.module.add_function(&vname, vt.fn_type(&vec![vt.into(); arity], false), None);
                pure_fn(self.ctx, f);
            }
            variants.push(format!("_ZGV_LLVM_N{lanes}{params}_{callee}({vname})"));
        }
        if !variants.is_empty() {
            let attr = self.ctx.create_string_attribute("vector-function-abi-variant", &variants.join(","));
            call.add_attribute(AttributeLoc::Function, attr);
        }
    }

    pub(super) fn libm(&self, name: &str, x: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        self.libm_call(name, &[x])
    }

    pub(super) fn libm2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        self.libm_call(name, &[x, y])
    }

    /// A call of libm's `name` (`namef` for f32), with its vector variants.
    fn libm_call(&self, name: &str, args: &[FloatValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let ft = args[0].get_type();
        let sym = if ft == self.ctx.f32_type() { format!("{name}f") } else { name.to_string() };
        let f = self.module.get_function(&sym).unwrap_or_else(|| {
            let params: Vec<_> = args.iter().map(|_| ft.into()).collect();
            let f = self.module.add_function(&sym, ft.fn_type(&params, false), Some(Linkage::External));
            pure_fn(self.ctx, f);
            f
        });
        let margs: Vec<BasicMetadataValueEnum> = args.iter().map(|&a| a.into()).collect();
        let call = self.b.build_call(f, &margs, "").map_err(le)?;
        self.vector_variants(call, &sym, name, ft, args.len());
        Ok(call.try_as_basic_value().basic().ok_or("libm returned void")?)
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

    // Vectorizable f32 math, written out inline: no call, so no vector registers spilled around
    // one in a long fused chain, and the same bits on every CPU and glibc.

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
