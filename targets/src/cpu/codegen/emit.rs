//! Op emission: the `match`es from a `ten` op (unary, binary, constant, conversion, and the
//! expression-tree walk with its cache) to LLVM values at an index. Adding an inlinable op means
//! adding an arm here.

use super::{compute_dtype, le, Kernel, R};
use ember_ir::dialect::ten::{BinaryOp, Form, OtherOp, UnaryOp};
use ember_ir::module::{Value, ValueDef};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use ember_ir::Attr;
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    pub(super) fn unary(&self, op: UnaryOp, dt: DType, x: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        use UnaryOp::*;
        let dt = compute_dtype(dt);
        let unsupported = || Err(format!("`{}` is not supported for {}", op.ten(), dt.torch_name()));
        let b = &self.b;
        if let BasicValueEnum::FloatValue(f) = x {
            let ty = f.get_type().as_basic_type_enum();
            let one = f.get_type().const_float(1.0);
            return Ok(match op {
                Neg => b.build_float_neg(f, "").map_err(le)?.into(),
                Abs => self.intrinsic("llvm.fabs", ty, &[x])?,
                Exp if dt == DType::F32 => self.exp_f32(f)?.into(),
                Tanh if dt == DType::F32 => self.tanh_f32(f)?.into(),
                Erf if dt == DType::F32 => self.erf_f32(f)?.into(),
                Exp => self.intrinsic("llvm.exp", ty, &[x])?,
                Log => self.intrinsic("llvm.log", ty, &[x])?,
                Sqrt => self.intrinsic("llvm.sqrt", ty, &[x])?,
                Sin => self.intrinsic("llvm.sin", ty, &[x])?,
                Cos => self.intrinsic("llvm.cos", ty, &[x])?,
                Tan => self.intrinsic("llvm.tan", ty, &[x])?,
                Floor => self.intrinsic("llvm.floor", ty, &[x])?,
                Ceil => self.intrinsic("llvm.ceil", ty, &[x])?,
                Trunc => self.intrinsic("llvm.trunc", ty, &[x])?,
                Round => self.intrinsic("llvm.roundeven", ty, &[x])?,
                Rsqrt => b
                    .build_float_div(one, self.intrinsic("llvm.sqrt", ty, &[x])?.into_float_value(), "")
                    .map_err(le)?
                    .into(),
                Sigmoid => {
                    let n = b.build_float_neg(f, "").map_err(le)?;
                    let ex = if dt == DType::F32 {
                        self.exp_f32(n)?
                    } else {
                        self.intrinsic("llvm.exp", ty, &[n.into()])?.into_float_value()
                    };
                    b.build_float_div(one, b.build_float_add(one, ex, "").map_err(le)?, "").map_err(le)?.into()
                }
                Tanh | Erf | Log1p => self.libm(op.ten().short(), f)?,
                Sign => {
                    let z = f.get_type().const_zero();
                    let gt = b.build_float_compare(FloatPredicate::OGT, f, z, "").map_err(le)?;
                    let lt = b.build_float_compare(FloatPredicate::OLT, f, z, "").map_err(le)?;
                    let p = b.build_select(gt, one, z, "").map_err(le)?.into_float_value();
                    // NaN stays NaN, as torch.sign.
                    let s = b
                        .build_select(lt, b.build_float_neg(one, "").map_err(le)?, p, "")
                        .map_err(le)?
                        .into_float_value();
                    let nan = b.build_float_compare(FloatPredicate::UNO, f, f, "").map_err(le)?;
                    b.build_select(nan, f, s, "").map_err(le)?
                }
                Not => return unsupported(),
            });
        }
        let i = x.into_int_value();
        let ty = i.get_type();
        Ok(match op {
            Neg => b.build_int_neg(i, "").map_err(le)?.into(),
            Not => b.build_not(i, "").map_err(le)?.into(),
            Abs => {
                let n = b.build_int_neg(i, "").map_err(le)?;
                let c = b.build_int_compare(IntPredicate::SLT, i, ty.const_zero(), "").map_err(le)?;
                b.build_select(c, n, i, "").map_err(le)?
            }
            Sign => {
                let gt = b.build_int_compare(IntPredicate::SGT, i, ty.const_zero(), "").map_err(le)?;
                let lt = b.build_int_compare(IntPredicate::SLT, i, ty.const_zero(), "").map_err(le)?;
                let p = b.build_select(gt, ty.const_int(1, false), ty.const_zero(), "").map_err(le)?.into_int_value();
                b.build_select(lt, ty.const_all_ones(), p, "").map_err(le)?
            }
            Floor | Ceil | Trunc | Round => x,
            Exp | Log | Log1p | Sqrt | Rsqrt | Tanh | Sigmoid | Erf | Sin | Cos | Tan => return unsupported(),
        })
    }

    /// maximum/minimum (NaN-propagating, -0 < +0) against a constant, as one compare and select
    /// (x86 has no single instruction for llvm.maximum; its expansion is several). `x > c ? x : c`
    /// with an unordered compare returns a NaN x and is exact unless c is -0 (for min: +0), where
    /// the tie x = +0 vs c = -0 must pick x; those constants and NaN keep the intrinsic.
    pub(super) fn min_max_const(
        &self,
        is_max: bool,
        x: FloatValue<'ctx>,
        y: FloatValue<'ctx>,
    ) -> R<Option<FloatValue<'ctx>>> {
        let (v, c) = match (x.get_constant(), y.get_constant()) {
            (_, Some((c, _))) => (x, c),
            (Some((c, _)), None) => (y, c),
            _ => return Ok(None),
        };
        let bad_zero = c == 0.0 && c.is_sign_negative() == is_max;
        if c.is_nan() || bad_zero {
            return Ok(None);
        }
        let cv = v.get_type().const_float(c);
        let p = if is_max { FloatPredicate::UGT } else { FloatPredicate::ULT };
        let keep = self.b.build_float_compare(p, v, cv, "").map_err(le)?;
        Ok(Some(self.b.build_select(keep, v, cv, "").map_err(le)?.into_float_value()))
    }

    pub(super) fn binary(
        &self,
        op: BinaryOp,
        dt: DType,
        a: BasicValueEnum<'ctx>,
        c: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        use BinaryOp::*;
        let dt = compute_dtype(dt);
        let unsupported = || Err(format!("`{}` is not supported for {}", op.ten(), dt.torch_name()));
        let b = &self.b;
        if let (BasicValueEnum::FloatValue(x), BasicValueEnum::FloatValue(y)) = (a, c) {
            let ty = x.get_type().as_basic_type_enum();
            return Ok(match op {
                Add => b.build_float_add(x, y, "").map_err(le)?.into(),
                Sub => b.build_float_sub(x, y, "").map_err(le)?.into(),
                Mul => b.build_float_mul(x, y, "").map_err(le)?.into(),
                Div => b.build_float_div(x, y, "").map_err(le)?.into(),
                Rem => b.build_float_rem(x, y, "").map_err(le)?.into(),
                Max | Min => {
                    if let Some(r) = self.min_max_const(op == Max, x, y)? {
                        return Ok(r.into());
                    }
                    self.intrinsic(if op == Max { "llvm.maximum" } else { "llvm.minimum" }, ty, &[a, c])?
                }
                Pow => self.intrinsic("llvm.pow", ty, &[a, c])?,
                Atan2 if dt == DType::F32 => self.atan2_f32(x, y)?.into(),
                Atan2 => self.libm2("atan2", x, y)?,
                And | Or | Xor => return unsupported(),
            });
        }
        let (x, y) = (a.into_int_value(), c.into_int_value());
        let unsigned = dt == DType::Bool || dt.mlir_name().starts_with("ui");
        Ok(match op {
            Add => b.build_int_add(x, y, "").map_err(le)?.into(),
            Sub => b.build_int_sub(x, y, "").map_err(le)?.into(),
            Mul => b.build_int_mul(x, y, "").map_err(le)?.into(),
            Div if unsigned => b.build_int_unsigned_div(x, y, "").map_err(le)?.into(),
            Div => b.build_int_signed_div(x, y, "").map_err(le)?.into(),
            Rem if unsigned => b.build_int_unsigned_rem(x, y, "").map_err(le)?.into(),
            Rem => b.build_int_signed_rem(x, y, "").map_err(le)?.into(),
            And => b.build_and(x, y, "").map_err(le)?.into(),
            Or => b.build_or(x, y, "").map_err(le)?.into(),
            Xor => b.build_xor(x, y, "").map_err(le)?.into(),
            Max | Min => {
                let pred = match (op == Max, unsigned) {
                    (true, false) => IntPredicate::SGT,
                    (true, true) => IntPredicate::UGT,
                    (false, false) => IntPredicate::SLT,
                    (false, true) => IntPredicate::ULT,
                };
                let cnd = b.build_int_compare(pred, x, y, "").map_err(le)?;
                b.build_select(cnd, x, y, "").map_err(le)?
            }
            Pow | Atan2 => return unsupported(),
        })
    }

    pub(super) fn constant(&self, a: &Attr, dt: DType) -> R<BasicValueEnum<'ctx>> {
        Ok(match self.reg_type(dt)? {
            BasicTypeEnum::FloatType(t) => t.const_float(a.as_float().ok_or("constant value must be a number")?).into(),
            BasicTypeEnum::IntType(t) => {
                let v = match a {
                    Attr::Float(f) => *f as i64,
                    a => a.as_int().ok_or("constant value must be a number")?,
                };
                if dt == DType::Bool {
                    t.const_int((v != 0) as u64, false).into()
                } else {
                    t.const_int(v as u64, true).into()
                }
            }
            _ => return Err("unsupported constant type".into()),
        })
    }

    pub(super) fn convert(&self, x: BasicValueEnum<'ctx>, from: DType, to: DType) -> R<BasicValueEnum<'ctx>> {
        let wide = self.convert_reg(x, from, to)?;
        if matches!(to, DType::F16 | DType::BF16) && from != to {
            // An explicit conversion rounds, as torch's `.to()` does (and Inductor keeps).
            return Ok(self.round_narrow(wide.into_float_value(), to)?.into());
        }
        Ok(wide)
    }

    /// `convert` between register types (f16/bf16 are f32 there).
    pub(super) fn convert_reg(&self, x: BasicValueEnum<'ctx>, from: DType, to: DType) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        let tt = self.reg_type(to)?;
        let from_unsigned = from == DType::Bool || from.mlir_name().starts_with("ui");
        Ok(match (x, tt) {
            (BasicValueEnum::FloatValue(f), BasicTypeEnum::FloatType(t)) => {
                b.build_float_cast(f, t, "").map_err(le)?.into()
            }
            (BasicValueEnum::FloatValue(f), BasicTypeEnum::IntType(t)) => {
                if to == DType::Bool {
                    b.build_float_compare(FloatPredicate::UNE, f, f.get_type().const_zero(), "").map_err(le)?.into()
                } else if t.get_bit_width() < 32 {
                    // torch's float -> uint8/int8/int16 is x86's: truncation to int32
                    // (INT_MIN for NaN and beyond ±2³¹), then its low bits: -78.5 -> 178 as
                    // uint8, 1e10 -> 0. A direct fptosi to the narrow type is poison out of its
                    // range, and LLVM folds it to anything.
                    let i32t = self.ctx.i32_type();
                    let w = b.build_float_to_signed_int(f, i32t, "").map_err(le)?;
                    let ft = f.get_type();
                    let lo =
                        b.build_float_compare(FloatPredicate::OGE, f, ft.const_float(-2147483648.0), "").map_err(le)?;
                    let hi =
                        b.build_float_compare(FloatPredicate::OLT, f, ft.const_float(2147483648.0), "").map_err(le)?;
                    let ok = b.build_and(lo, hi, "").map_err(le)?;
                    let min = i32t.const_int(0x8000_0000, false);
                    let w = b.build_select(ok, w, min, "").map_err(le)?.into_int_value();
                    b.build_int_truncate(w, t, "").map_err(le)?.into()
                } else {
                    b.build_float_to_signed_int(f, t, "").map_err(le)?.into()
                }
            }
            (BasicValueEnum::IntValue(i), BasicTypeEnum::FloatType(t)) => {
                if from_unsigned {
                    b.build_unsigned_int_to_float(i, t, "").map_err(le)?.into()
                } else {
                    b.build_signed_int_to_float(i, t, "").map_err(le)?.into()
                }
            }
            (BasicValueEnum::IntValue(i), BasicTypeEnum::IntType(t)) => {
                if to == DType::Bool {
                    b.build_int_compare(IntPredicate::NE, i, i.get_type().const_zero(), "").map_err(le)?.into()
                } else {
                    b.build_int_cast_sign_flag(i, t, !from_unsigned, "").map_err(le)?.into()
                }
            }
            _ => return Err("unsupported conversion".into()),
        })
    }

    /// The value of `v` at index `idx`.
    pub(super) fn emit(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let key = (v, idx.to_vec());
        if let Some(&c) = self.cache.get(&key) {
            return Ok(c);
        }
        let r = self.emit_uncached(v, idx)?;
        self.cache.insert(key, r);
        Ok(r)
    }

    pub(super) fn emit_linear(&mut self, v: Value, lin: IntValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        if let Some(&buf) = self.plan.buf_of.get(&v).filter(|_| self.root != Some(v)) {
            return self.load(buf, lin, self.dtype(v));
        }
        let idx = self.delinear(lin, &self.dims(v))?;
        self.emit(v, &idx)
    }

    pub(super) fn emit_uncached(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        if self.root != Some(v) {
            if let Some((p, lin)) = self.slot(v, idx)? {
                return self.load_at(p, lin, self.dtype(v));
            }
        }
        if let Some(&buf) = self.plan.buf_of.get(&v).filter(|_| self.root != Some(v)) {
            let lin = self.stored_at(v, idx)?;
            return self.load(buf, lin, self.dtype(v));
        }
        let ValueDef::Result(op, _) = self.m.value(v).def else { return Err("unmaterialized argument".into()) };
        let d = self.m.op(op);
        let ten = d.ten().ok_or_else(|| format!("`{}` is not a ten op", d.name))?;
        let ops = d.operands.clone();
        let attrs = d.attrs.clone();
        let dt = self.dtype(v);
        let ints =
            |k: &str| -> Vec<i64> { attrs.get(k).and_then(|a| a.as_ints()).map(|v| v.to_vec()).unwrap_or_default() };
        let b = &self.b;
        let other = match ten.form() {
            Form::Unary(u) => {
                let x = self.emit(ops[0], idx)?;
                return self.unary(u, dt, x);
            }
            Form::Binary(bop) => {
                let x = self.emit(ops[0], idx)?;
                let y = self.emit(ops[1], idx)?;
                return self.binary(bop, dt, x, y);
            }
            Form::Other(o) => o,
        };
        match other {
            OtherOp::Compare => {
                let odt = self.dtype(ops[0]);
                let x = self.emit(ops[0], idx)?;
                let y = self.emit(ops[1], idx)?;
                let dir = attrs.get("direction").and_then(|a| a.as_str()).unwrap_or("EQ").to_string();
                let b = &self.b;
                Ok(match (x, y) {
                    (BasicValueEnum::FloatValue(x), BasicValueEnum::FloatValue(y)) => {
                        let p = match dir.as_str() {
                            "EQ" => FloatPredicate::OEQ,
                            "NE" => FloatPredicate::UNE,
                            "LT" => FloatPredicate::OLT,
                            "LE" => FloatPredicate::OLE,
                            "GT" => FloatPredicate::OGT,
                            "GE" => FloatPredicate::OGE,
                            d => return Err(format!("unknown compare direction `{d}`")),
                        };
                        b.build_float_compare(p, x, y, "").map_err(le)?.into()
                    }
                    (x, y) => {
                        let u = odt == DType::Bool || odt.mlir_name().starts_with("ui");
                        let p = match (dir.as_str(), u) {
                            ("EQ", _) => IntPredicate::EQ,
                            ("NE", _) => IntPredicate::NE,
                            ("LT", false) => IntPredicate::SLT,
                            ("LE", false) => IntPredicate::SLE,
                            ("GT", false) => IntPredicate::SGT,
                            ("GE", false) => IntPredicate::SGE,
                            ("LT", true) => IntPredicate::ULT,
                            ("LE", true) => IntPredicate::ULE,
                            ("GT", true) => IntPredicate::UGT,
                            ("GE", true) => IntPredicate::UGE,
                            (d, _) => return Err(format!("unknown compare direction `{d}`")),
                        };
                        b.build_int_compare(p, x.into_int_value(), y.into_int_value(), "").map_err(le)?.into()
                    }
                })
            }
            OtherOp::Select => {
                let p = self.emit(ops[0], idx)?.into_int_value();
                let x = self.emit(ops[1], idx)?;
                let y = self.emit(ops[2], idx)?;
                self.b.build_select(p, x, y, "").map_err(le)
            }
            OtherOp::BitcastConvert => {
                let from = self.dtype(ops[0]);
                if !matches!(
                    (from, dt),
                    (DType::F32, DType::I32)
                        | (DType::I32, DType::F32)
                        | (DType::F64, DType::I64)
                        | (DType::I64, DType::F64)
                ) {
                    return Err(format!(
                        "bitcast_convert from {} to {} is not supported",
                        from.torch_name(),
                        dt.torch_name()
                    ));
                }
                let x = self.emit(ops[0], idx)?;
                self.b.build_bit_cast(x, self.reg_type(dt)?, "").map_err(le)
            }
            OtherOp::Convert => {
                let from = self.dtype(ops[0]);
                let x = self.emit(ops[0], idx)?;
                self.convert(x, from, dt)
            }
            OtherOp::Constant => self.constant(attrs.get("value").ok_or("constant without value")?, dt),
            OtherOp::Iota => {
                let d = attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
                let i = *idx.get(d).ok_or("iota dim out of range")?;
                self.convert(i.into(), DType::I64, dt)
            }
            OtherOp::Broadcast => {
                let map = ints("dims");
                let src = self.dims(ops[0]);
                let out = self.dims(v);
                let sidx: Vec<IntValue> = map
                    .iter()
                    .enumerate()
                    .map(|(i, &to)| {
                        if src[i].as_const() == Some(1) && out[to as usize].as_const() != Some(1) {
                            self.i64c(0)
                        } else {
                            idx[to as usize]
                        }
                    })
                    .collect();
                self.emit(ops[0], &sidx)
            }
            OtherOp::Transpose => {
                let perm = ints("dims");
                let mut sidx = vec![self.i64c(0); idx.len()];
                for (i, &p) in perm.iter().enumerate() {
                    sidx[p as usize] = idx[i];
                }
                self.emit(ops[0], &sidx)
            }
            OtherOp::Reshape => {
                let (out, inp) = (self.dims(v), self.dims(ops[0]));
                if self.plan.buf_of.contains_key(&ops[0]) && self.root != Some(ops[0]) {
                    let lin = self.linear(idx, &out)?;
                    return self.emit_linear(ops[0], lin);
                }
                // Dims shared at the end map index to index; only the leading dims are re-split,
                // so the innermost index stays affine (division in the inner loop blocks
                // vectorization).
                let mut k = 0;
                while k < out.len() && k < inp.len() && out[out.len() - 1 - k] == inp[inp.len() - 1 - k] {
                    k += 1;
                }
                let (op, ip) = (out.len() - k, inp.len() - k);
                let pre = self.linear(&idx[..op], &out[..op])?;
                let mut sidx = match ip {
                    0 => vec![],
                    1 => vec![pre],
                    _ => self.delinear(pre, &inp[..ip])?,
                };
                sidx.extend_from_slice(&idx[op..]);
                self.emit(ops[0], &sidx)
            }
            OtherOp::Reverse => {
                let rd = ints("dims");
                let dims = self.dims(v);
                let mut sidx = idx.to_vec();
                for &d in &rd {
                    let n = self.sym(&dims[d as usize])?;
                    let last = b.build_int_sub(n, self.i64c(1), "").map_err(le)?;
                    sidx[d as usize] = b.build_int_sub(last, idx[d as usize], "").map_err(le)?;
                }
                self.emit(ops[0], &sidx)
            }
            OtherOp::Slice => {
                let start = attrs.get("start").and_then(|a| a.as_dims()).ok_or("slice without start")?;
                let step = ints("step");
                let mut sidx = Vec::new();
                for (i, &x) in idx.iter().enumerate() {
                    let s = self.sym(&start[i])?;
                    let st = self.i64c(step.get(i).copied().unwrap_or(1));
                    sidx.push(b.build_int_add(s, b.build_int_mul(x, st, "").map_err(le)?, "").map_err(le)?);
                }
                self.emit(ops[0], &sidx)
            }
            OtherOp::Concat => {
                let d = attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
                let mut offset = self.i64c(0);
                let mut pieces = Vec::new();
                for &o in &ops {
                    let size = self.sym(&self.dims(o)[d])?;
                    let b = &self.b;
                    let local = b.build_int_sub(idx[d], offset, "").map_err(le)?;
                    // Clamp so the branches not taken still read in bounds.
                    let zero = self.i64c(0);
                    let hi = b.build_int_sub(size, self.i64c(1), "").map_err(le)?;
                    let lo_c = b.build_int_compare(IntPredicate::SLT, local, zero, "").map_err(le)?;
                    let l1 = b.build_select(lo_c, zero, local, "").map_err(le)?.into_int_value();
                    let hi_c = b.build_int_compare(IntPredicate::SGT, l1, hi, "").map_err(le)?;
                    let l2 = b.build_select(hi_c, hi, l1, "").map_err(le)?.into_int_value();
                    let mut sidx = idx.to_vec();
                    sidx[d] = l2;
                    let val = self.emit(o, &sidx)?;
                    let b = &self.b;
                    let end = b.build_int_add(offset, size, "").map_err(le)?;
                    pieces.push((end, val));
                    offset = end;
                }
                let mut acc = pieces.last().ok_or("empty concat")?.1;
                for (end, val) in pieces.iter().rev().skip(1) {
                    let c = self.b.build_int_compare(IntPredicate::SLT, idx[d], *end, "").map_err(le)?;
                    acc = self.b.build_select(c, *val, acc, "").map_err(le)?;
                }
                Ok(acc)
            }
            OtherOp::Pad => {
                // In bounds: x[i - low]; else the padding value. The read is clamped in bounds so
                // the select's other side is always safe to compute.
                let low = attrs.get("low").and_then(|a| a.as_dims()).ok_or("pad without low")?;
                let xdims = self.dims(ops[0]);
                let mut sidx = Vec::with_capacity(idx.len());
                let mut inside: Option<IntValue> = None;
                for (i, &x) in idx.iter().enumerate() {
                    if low[i] == SymExpr::Const(0) && self.dims(v)[i] == xdims[i] {
                        sidx.push(x);
                        continue;
                    }
                    let b = &self.b;
                    let src = b.build_int_sub(x, self.sym(&low[i])?, "").map_err(le)?;
                    let n = self.sym(&xdims[i])?;
                    let b = &self.b;
                    let ok = b.build_int_compare(IntPredicate::ULT, src, n, "").map_err(le)?;
                    inside = Some(match inside {
                        Some(p) => b.build_and(p, ok, "").map_err(le)?,
                        None => ok,
                    });
                    let zero = self.i64c(0);
                    let neg = b.build_int_compare(IntPredicate::SLT, src, zero, "").map_err(le)?;
                    let c1 = b.build_select(neg, zero, src, "").map_err(le)?.into_int_value();
                    let hi = b.build_int_sub(n, self.i64c(1), "").map_err(le)?;
                    let over = b.build_int_compare(IntPredicate::SGT, c1, hi, "").map_err(le)?;
                    sidx.push(b.build_select(over, hi, c1, "").map_err(le)?.into_int_value());
                }
                let x = self.emit(ops[0], &sidx)?;
                let Some(inside) = inside else { return Ok(x) };
                let pv = self.constant(attrs.get("value").ok_or("pad without value")?, dt)?;
                self.b.build_select(inside, x, pv, "").map_err(le)
            }
            OtherOp::Windows => {
                // result[.., k_i, o_i] = x[.., o_i*s_i + k_i*d_i]
                let (k, s, dl) = (ints("kernel"), ints("stride"), ints("dilation"));
                let n = k.len();
                let lead = idx.len() - 2 * n;
                let mut sidx = idx[..lead].to_vec();
                for i in 0..n {
                    let (ki, oi) = (idx[lead + i], idx[lead + n + i]);
                    let a = b.build_int_mul(oi, self.i64c(s[i]), "").map_err(le)?;
                    let c = b.build_int_mul(ki, self.i64c(dl[i]), "").map_err(le)?;
                    sidx.push(b.build_int_add(a, c, "").map_err(le)?);
                }
                self.emit(ops[0], &sidx)
            }
            OtherOp::Gather => {
                let d = attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
                let xdims = self.dims(ops[0]);
                let ir = self.dims(ops[1]).len();
                let iv = self.emit(ops[1], &idx[d..d + ir])?;
                let idt = self.dtype(ops[1]);
                let iv = self.convert(iv, idt, DType::I64)?.into_int_value();
                let n = self.sym(&xdims[d])?;
                let b = &self.b;
                // Negative indices count from the end. Any other index outside [0, n) is the error
                // torch raises: it sets the op's flag, which the runtime turns into an error after
                // the kernel; the read goes to index 0 meanwhile, so it stays inside the operand.
                let neg = b.build_int_compare(IntPredicate::SLT, iv, self.i64c(0), "").map_err(le)?;
                let wrapped =
                    b.build_select(neg, b.build_int_add(iv, n, "").map_err(le)?, iv, "").map_err(le)?.into_int_value();
                let bad = b.build_int_compare(IntPredicate::UGE, wrapped, n, "").map_err(le)?;
                self.index_checked(op, bad)?;
                let safe = self.b.build_select(bad, self.i64c(0), wrapped, "").map_err(le)?.into_int_value();
                let mut sidx = idx[..d].to_vec();
                sidx.push(safe);
                sidx.extend_from_slice(&idx[d + ir..]);
                self.emit(ops[0], &sidx)
            }
            OtherOp::Reduce
            | OtherOp::DotGeneral
            | OtherOp::Cumsum
            | OtherOp::Cumprod
            | OtherOp::Scatter
            | OtherOp::Argsort
            | OtherOp::Cholesky
            | OtherOp::Eigh
            | OtherOp::Geqrf
            | OtherOp::HouseholderProduct
            | OtherOp::Lu
            | OtherOp::LuSolve
            | OtherOp::Qr
            | OtherOp::Svd
            | OtherOp::TriangularSolve
            | OtherOp::Special => Err(format!("`{ten}` cannot be inlined into a CPU kernel")),
        }
    }
}
