//! Ops that loop over a dim inside one element or one line: scans (cumsum/cumprod), scatter,
//! reductions and arg-reductions, with their identities and combiners. These carry loop state,
//! unlike the pointwise expressions of `emit`.

use super::{interleave, le, Kernel, R};
use ember_ir::dialect::ten::{BinaryOp, TenOp};
use ember_ir::module::Value;
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{FloatPredicate, IntPredicate};

/// The longest static row whose float max/min `reduce` emits as a tree of its elements.
const TREE_MAX: i64 = 32;

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    /// A running sum (or product, `ten.cumprod`) along `dim`: loops over the other dims (the
    /// outermost split across threads unless it is the scanned dim; then the first call does all
    /// the work), and a sequential loop over `dim` that stores every prefix. Floats accumulate in
    /// f64, as torch's CPU kernel.
    pub(super) fn cumsum(
        &mut self,
        op: ember_ir::OpId,
        out: usize,
        start: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> R<()> {
        let d = self.m.op(op);
        let x = d.operands[0];
        let root = d.results[0];
        let dim = d.attrs.get("dim").and_then(|a| a.as_int()).ok_or("cumsum without dim")? as usize;
        let (kind, op) = if d.is(TenOp::Cumprod) { ("prod", BinaryOp::Mul) } else { ("sum", BinaryOp::Add) };
        let dims = self.dims(root);
        let dt = self.dtype(root);
        let acc_dt = if dt.is_float() { DType::F64 } else { dt };
        let acc_ty = self.reg_type(acc_dt)?;
        let acc = self.entry_alloca(acc_ty, "acc")?;
        let init = self.identity(kind, acc_dt)?;
        let others: Vec<SymExpr> = dims.iter().enumerate().filter(|(i, _)| *i != dim).map(|(_, e)| e.clone()).collect();
        let outer = if dim == 0 {
            // The scanned dim cannot be split: the call that starts at 0 does everything.
            let go = self.ctx.append_basic_block(self.f, "scan");
            let done = self.ctx.append_basic_block(self.f, "done");
            let first = self.b.build_int_compare(IntPredicate::EQ, start, self.i64c(0), "").map_err(le)?;
            self.b.build_conditional_branch(first, go, done).map_err(le)?;
            self.b.position_at_end(go);
            let mut idx = Vec::new();
            self.nest(&others, None, &mut idx, &mut |k, o| {
                k.scan_line(x, out, dim, &dims, o, acc, acc_ty, init, acc_dt, dt, op)
            })?;
            self.b.build_unconditional_branch(done).map_err(le)?;
            self.b.position_at_end(done);
            return Ok(());
        } else {
            Some((start, end))
        };
        let mut idx = Vec::new();
        self.nest(&others, outer, &mut idx, &mut |k, o| {
            k.scan_line(x, out, dim, &dims, o, acc, acc_ty, init, acc_dt, dt, op)
        })
    }

    /// `ten.scatter`: the call that starts at 0 copies `x` into the result, then applies the
    /// updates one at a time in row-major order (so several updates of one element combine in a
    /// fixed order and the last `set` wins); out-of-range indices are skipped. The other calls
    /// return: the updates cannot be split by output rows.
    pub(super) fn scatter(&mut self, op: ember_ir::OpId, out: usize, start: IntValue<'ctx>) -> R<()> {
        let d = self.m.op(op);
        let (x, index, upd) = (d.operands[0], d.operands[1], d.operands[2]);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).ok_or("scatter without kind")?.to_string();
        let binop = match kind.as_str() {
            "set" => None,
            "sum" => Some(BinaryOp::Add),
            "prod" => Some(BinaryOp::Mul),
            "max" => Some(BinaryOp::Max),
            "min" => Some(BinaryOp::Min),
            k => return Err(format!("unknown scatter kind `{k}`")),
        };
        let dims = self.dims(d.results[0]);
        let udims = self.dims(upd);
        let (dt, idt) = (self.dtype(x), self.dtype(index));
        let go = self.ctx.append_basic_block(self.f, "scatter");
        let done = self.ctx.append_basic_block(self.f, "done");
        let first = self.b.build_int_compare(IntPredicate::EQ, start, self.i64c(0), "").map_err(le)?;
        self.b.build_conditional_branch(first, go, done).map_err(le)?;
        self.b.position_at_end(go);
        let mut idx = Vec::new();
        self.nest(&dims, None, &mut idx, &mut |k, i| {
            let v = k.emit(x, i)?;
            let lin = k.linear(i, &dims)?;
            k.store(out, lin, dt, v)
        })?;
        let n = self.sym(&dims[0])?;
        let mut idx = Vec::new();
        self.nest(&udims, None, &mut idx, &mut |k, s| {
            let iv = k.emit(index, s)?;
            let iv = k.convert(iv, idt, DType::I64)?.into_int_value();
            let u = k.emit(upd, s)?;
            let lo = k.b.build_int_compare(IntPredicate::SGE, iv, k.i64c(0), "").map_err(le)?;
            let hi = k.b.build_int_compare(IntPredicate::SLT, iv, n, "").map_err(le)?;
            let ok = k.b.build_and(lo, hi, "").map_err(le)?;
            let then = k.ctx.append_basic_block(k.f, "update");
            let next = k.ctx.append_basic_block(k.f, "next");
            k.b.build_conditional_branch(ok, then, next).map_err(le)?;
            k.b.position_at_end(then);
            let v = match binop {
                None => u,
                Some(b) => {
                    let a = k.load(out, iv, dt)?;
                    k.binary(b, dt, a, u)?
                }
            };
            k.store(out, iv, dt, v)?;
            k.b.build_unconditional_branch(next).map_err(le)?;
            k.b.position_at_end(next);
            Ok(())
        })?;
        self.b.build_unconditional_branch(done).map_err(le)?;
        self.b.position_at_end(done);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_line(
        &mut self,
        x: Value,
        out: usize,
        dim: usize,
        dims: &[SymExpr],
        others: &[IntValue<'ctx>],
        acc: PointerValue<'ctx>,
        acc_ty: BasicTypeEnum<'ctx>,
        init: BasicValueEnum<'ctx>,
        acc_dt: DType,
        dt: DType,
        op: BinaryOp,
    ) -> R<()> {
        self.b.build_store(acc, init).map_err(le)?;
        let n = self.sym(&dims[dim])?;
        let others = others.to_vec();
        let dims = dims.to_vec();
        self.for_loop(self.i64c(0), n, &mut |k, j| {
            k.cache.clear();
            let mut idx = others.clone();
            idx.insert(dim, j);
            let v = k.emit(x, &idx)?;
            let v = k.convert(v, dt, acc_dt)?;
            let a = k.b.build_load(acc_ty, acc, "a").map_err(le)?;
            let s = k.binary(op, acc_dt, a, v)?;
            k.b.build_store(acc, s).map_err(le)?;
            let r = k.convert(s, acc_dt, dt)?;
            let lin = k.linear(&idx, &dims)?;
            k.store(out, lin, dt, r)?;
            k.cache.clear();
            Ok(())
        })
    }

    /// argmax/argmin: the row-major index within the reduced dims of the first extreme value;
    /// the first NaN wins over everything (torch's semantics).
    pub(super) fn arg_reduce(&mut self, op: ember_ir::OpId, out_idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let d = self.m.op(op);
        let x = d.operands[0];
        let is_max = d.attrs.get("kind").and_then(|a| a.as_str()) == Some("argmax");
        let rdims: Vec<usize> =
            d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
        let xdims = self.dims(x);
        let dt = self.dtype(x);
        let ty = self.reg_type(dt)?;
        let i64t = self.ctx.i64_type();
        let best = self.entry_alloca(ty, "best")?;
        let best_i = self.entry_alloca(i64t.into(), "best_i")?;
        self.b.build_store(best, self.identity(if is_max { "max" } else { "min" }, dt)?).map_err(le)?;
        self.b.build_store(best_i, self.i64c(0)).map_err(le)?;
        let red: Vec<SymExpr> = rdims.iter().map(|&i| xdims[i].clone()).collect();
        let mut ridx = Vec::new();
        let out_idx = out_idx.to_vec();
        let unsigned = dt == DType::Bool || dt.mlir_name().starts_with("ui");
        self.nest(&red, None, &mut ridx, &mut |k, r| {
            let full = interleave(xdims.len(), &rdims, &out_idx, r);
            let v = k.emit(x, &full)?;
            let pos = k.linear(r, &red)?;
            let cur = k.b.build_load(ty, best, "b").map_err(le)?;
            let b = &k.b;
            let better = match (v, cur) {
                (BasicValueEnum::FloatValue(v), BasicValueEnum::FloatValue(c)) => {
                    let p = if is_max { FloatPredicate::OGT } else { FloatPredicate::OLT };
                    let gt = b.build_float_compare(p, v, c, "").map_err(le)?;
                    let v_nan = b.build_float_compare(FloatPredicate::UNO, v, v, "").map_err(le)?;
                    let c_num = b.build_float_compare(FloatPredicate::ORD, c, c, "").map_err(le)?;
                    let nan_first = b.build_and(v_nan, c_num, "").map_err(le)?;
                    b.build_or(gt, nan_first, "").map_err(le)?
                }
                (v, c) => {
                    let p = match (is_max, unsigned) {
                        (true, false) => IntPredicate::SGT,
                        (true, true) => IntPredicate::UGT,
                        (false, false) => IntPredicate::SLT,
                        (false, true) => IntPredicate::ULT,
                    };
                    b.build_int_compare(p, v.into_int_value(), c.into_int_value(), "").map_err(le)?
                }
            };
            let nb = b.build_select(better, v, cur, "").map_err(le)?;
            let ci = b.build_load(i64t, best_i, "bi").map_err(le)?.into_int_value();
            let ni = b.build_select(better, pos, ci, "").map_err(le)?;
            b.build_store(best, nb).map_err(le)?;
            b.build_store(best_i, ni).map_err(le)?;
            Ok(())
        })?;
        self.b.build_load(i64t, best_i, "r").map_err(le)
    }

    /// The row length of a float max/min over one static dim short enough to reduce as a tree.
    pub(super) fn tree_reduce(&self, op: ember_ir::OpId) -> Option<i64> {
        let d = self.m.op(op);
        let rdims = d.attrs.get("dims").and_then(|a| a.as_ints())?;
        let kind = d.attrs.get("kind").and_then(|a| a.as_str());
        let x = *d.operands.first()?;
        match (kind, rdims) {
            (Some("max" | "min"), &[dim]) if self.dtype(x).is_float() => {
                self.dims(x).get(dim as usize)?.as_const().filter(|&n| (2..=TREE_MAX).contains(&n))
            }
            _ => None,
        }
    }

    pub(super) fn reduce(&mut self, op: ember_ir::OpId, out_idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        if matches!(self.m.op(op).attrs.get("kind").and_then(|a| a.as_str()), Some("argmax" | "argmin")) {
            return self.arg_reduce(op, out_idx);
        }
        let d = self.m.op(op);
        let x = d.operands[0];
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("sum").to_string();
        let rdims: Vec<usize> =
            d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
        let xdims = self.dims(x);
        let dt = self.dtype(x);
        let ty = self.reg_type(dt)?;
        let red: Vec<SymExpr> = rdims.iter().map(|&i| xdims[i].clone()).collect();
        let out_idx = out_idx.to_vec();
        if let Some(n) = self.tree_reduce(op) {
            // A short row's max/min as a pairwise tree over its elements: a chain of dependent
            // llvm.maximum expansions (several instructions each on x86) is latency-bound, and
            // LLVM unrolls the row loop before its vectorizer could reassociate it (softmax over
            // 16 keys: 4 µs of a 60 µs model). Exact in any order: NaN propagates, -0 < +0.
            let outer_rolled = std::mem::replace(&mut self.rolled_inner, false);
            let mut vals = Vec::with_capacity(n as usize);
            for i in 0..n {
                self.cache.clear();
                let full = interleave(xdims.len(), &rdims, &out_idx, &[self.i64c(i)]);
                vals.push(self.emit(x, &full));
            }
            self.cache.clear();
            self.rolled_inner = outer_rolled;
            let mut vals = vals.into_iter().collect::<R<Vec<_>>>()?;
            while vals.len() > 1 {
                let mut next = Vec::with_capacity(vals.len().div_ceil(2));
                for pair in vals.chunks(2) {
                    next.push(if let [a, b] = pair { self.combine(&kind, dt, *a, *b)? } else { pair[0] });
                }
                vals = next;
            }
            return Ok(vals[0]);
        }
        let init = self.identity(&kind, dt)?;
        let acc = self.entry_alloca(ty, "acc")?;
        self.b.build_store(acc, init).map_err(le)?;
        let mut ridx = Vec::new();
        let outer_rolled = std::mem::replace(&mut self.rolled_inner, red.len() > 1);
        let r = self.nest(&red, None, &mut ridx, &mut |k, r| {
            k.rolled_inner = false; // reductions the body emits choose for themselves
            let full = interleave(xdims.len(), &rdims, &out_idx, r);
            let v = k.emit(x, &full)?;
            k.accumulate(acc, &kind, dt, v)
        });
        self.rolled_inner = outer_rolled;
        r?;
        self.b.build_load(ty, acc, "r").map_err(le)
    }

    /// `acc ← combine(acc, v)` for a stack accumulator of `dt`'s arithmetic type.
    pub(super) fn accumulate(&self, acc: PointerValue<'ctx>, kind: &str, dt: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        let a = self.b.build_load(self.reg_type(dt)?, acc, "a").map_err(le)?;
        let n = self.combine(kind, dt, a, v)?;
        self.b.build_store(acc, n).map_err(le)?;
        Ok(())
    }

    pub(super) fn identity(&self, kind: &str, dt: DType) -> R<BasicValueEnum<'ctx>> {
        let ty = self.reg_type(dt)?;
        Ok(match (kind, ty) {
            ("sum", BasicTypeEnum::FloatType(t)) => t.const_float(0.0).into(),
            ("prod", BasicTypeEnum::FloatType(t)) => t.const_float(1.0).into(),
            ("max", BasicTypeEnum::FloatType(t)) => t.const_float(f64::NEG_INFINITY).into(),
            ("min", BasicTypeEnum::FloatType(t)) => t.const_float(f64::INFINITY).into(),
            ("sum" | "or", BasicTypeEnum::IntType(t)) => t.const_zero().into(),
            ("prod", BasicTypeEnum::IntType(t)) => t.const_int(1, false).into(),
            ("and", BasicTypeEnum::IntType(t)) => t.const_all_ones().into(),
            ("max", BasicTypeEnum::IntType(t)) => {
                if dt == DType::Bool || dt.mlir_name().starts_with("ui") {
                    t.const_zero().into()
                } else {
                    t.const_int(1u64 << (t.get_bit_width() - 1), false).into()
                }
            }
            ("min", BasicTypeEnum::IntType(t)) => {
                if dt == DType::Bool || dt.mlir_name().starts_with("ui") {
                    t.const_all_ones().into()
                } else {
                    t.const_int((1u64 << (t.get_bit_width() - 1)) - 1, false).into()
                }
            }
            _ => return Err(format!("reduce kind `{kind}` is not supported for {}", dt.torch_name())),
        })
    }

    pub(super) fn combine(
        &self,
        kind: &str,
        dt: DType,
        a: BasicValueEnum<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let op = match kind {
            "sum" => BinaryOp::Add,
            "prod" => BinaryOp::Mul,
            "or" => BinaryOp::Or,
            "and" => BinaryOp::And,
            "max" => BinaryOp::Max,
            "min" => BinaryOp::Min,
            k => return Err(format!("unknown reduce kind `{k}`")),
        };
        let r = self.binary(op, dt, a, v)?;
        if dt.is_float() && (kind == "sum" || kind == "prod") {
            // Reassociation lets LLVM vectorize the reduction (as torch's own kernels do).
            if let Some(i) = r.into_float_value().as_instruction() {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::AllowReassoc);
            }
        }
        Ok(r)
    }
}
