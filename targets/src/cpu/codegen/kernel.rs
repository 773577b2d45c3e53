//! The kernel builder's plumbing: the function and its entry block, symbol and buffer tables,
//! index arithmetic, typed loads and stores, loop nests with their vectorization hints, and the
//! out-of-range index check. Everything that emits a body builds on these.

use super::{le, Kernel, INTERLEAVE_MIN_COST, INTERLEAVE_MIN_TRIP, R};
use crate::cpu::plan::{Plan, Step};
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::{Module, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use inkwell::context::Context;
use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FloatValue, IntValue, PointerValue};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate};
use std::collections::HashMap;
use std::ffi::c_void;

// LLVM's C metadata API, for what inkwell does not wrap: nodes that refer to themselves.
extern "C" {
    fn LLVMTemporaryMDNode(c: *mut c_void, mds: *mut *mut c_void, n: usize) -> *mut c_void;
    fn LLVMMDNodeInContext2(c: *mut c_void, mds: *mut *mut c_void, n: usize) -> *mut c_void;
    fn LLVMMDStringInContext2(c: *mut c_void, s: *const u8, n: usize) -> *mut c_void;
    fn LLVMValueAsMetadata(v: *mut c_void) -> *mut c_void;
    fn LLVMMetadataReplaceAllUsesWith(tmp: *mut c_void, with: *mut c_void);
    fn LLVMMetadataAsValue(c: *mut c_void, md: *mut c_void) -> *mut c_void;
    fn LLVMSetMetadata(inst: *mut c_void, kind: u32, v: *mut c_void);
}

unsafe fn md_string(c: *mut c_void, s: &str) -> *mut c_void {
    unsafe { LLVMMDStringInContext2(c, s.as_ptr(), s.len()) }
}

/// `!{self, ops...}`: loop IDs, alias domains and alias scopes must refer to themselves, which the
/// C API builds through a temporary node replaced by the finished one.
unsafe fn self_referential(c: *mut c_void, ops: &[*mut c_void]) -> *mut c_void {
    unsafe {
        let tmp = LLVMTemporaryMDNode(c, std::ptr::null_mut(), 0);
        let mut all = vec![tmp];
        all.extend_from_slice(ops);
        let node = LLVMMDNodeInContext2(c, all.as_mut_ptr(), all.len());
        LLVMMetadataReplaceAllUsesWith(tmp, node);
        node
    }
}

/// `loop_hints`' count for a loop that vectorizes one vector per iteration: a column loop,
/// whose trip count is the kernel's share of the columns, often a single vector (32 channels
/// over 2 threads); LLVM's default of 4 vectors per iteration left such a loop entirely to its
/// scalar remainder.
pub(super) const SINGLE_VECTOR: u32 = u32::MAX;

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    pub(super) fn new(
        ctx: &'ctx Context,
        module: &'a inkwell::module::Module<'ctx>,
        name: &str,
        m: &'a Module,
        plan: &'a Plan,
        sym_index: &'a HashMap<String, usize>,
    ) -> Self {
        let ptr = ctx.ptr_type(AddressSpace::default());
        let i64t = ctx.i64_type();
        let fty = ctx.void_type().fn_type(&[ptr.into(), ptr.into(), i64t.into(), i64t.into()], false);
        let f = module.add_function(name, fty, Some(Linkage::External));
        let b = ctx.create_builder();
        let entry = ctx.append_basic_block(f, "entry");
        b.position_at_end(entry);
        let bufs = f.get_nth_param(0).unwrap().into_pointer_value();
        let syms = f.get_nth_param(1).unwrap().into_pointer_value();
        if super::host_features().contains("+avx512f") {
            // LLVM defaults to 256-bit vectors on these CPUs; the kernels are short, math-heavy
            // loops where 512-bit vectors pay off.
            f.add_attribute(
                inkwell::attributes::AttributeLoc::Function,
                ctx.create_string_attribute("prefer-vector-width", "512"),
            );
        }
        for i in 0..2 {
            // Buffers never alias each other; the vectorizer needs to know.
            let kind = inkwell::attributes::Attribute::get_named_enum_kind_id("noalias");
            f.add_attribute(inkwell::attributes::AttributeLoc::Param(i), ctx.create_enum_attribute(kind, 0));
        }
        Kernel {
            ctx,
            b,
            module,
            f,
            m,
            plan,
            sym_index,
            bufs,
            syms,
            cache: HashMap::new(),
            root: None,
            buf_ptrs: Vec::new(),
            alias: HashMap::new(),
            range_dim: 0,
            sym_vals: HashMap::new(),
            scratch: HashMap::new(),
            interleave: 1,
            interleave_next: 1,
            rolled_inner: false,
            rolled_next: false,
            no_vectorize: false,
            index_checks: Vec::new(),
        }
    }

    /// A stack slot in the entry block (so LLVM promotes it to registers even when the code that
    /// uses it sits inside loops).
    pub(super) fn entry_alloca(&self, ty: BasicTypeEnum<'ctx>, name: &str) -> R<PointerValue<'ctx>> {
        let entry = self.f.get_first_basic_block().ok_or("kernel without entry block")?;
        let tmp = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(entry),
        }
        tmp.build_alloca(ty, name).map_err(le)
    }

    pub(super) fn i64c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i64_type().const_int(v as u64, true)
    }

    pub(super) fn sym(&self, e: &SymExpr) -> R<IntValue<'ctx>> {
        let b = &self.b;
        Ok(match e {
            SymExpr::Const(c) => self.i64c(*c),
            SymExpr::Sym(s) => *self.sym_vals.get(s).ok_or_else(|| format!("symbol `{s}` has no bounds entry"))?,
            SymExpr::Add(v) => {
                let mut acc = self.sym(&v[0])?;
                for x in &v[1..] {
                    acc = b.build_int_add(acc, self.sym(x)?, "").map_err(le)?;
                }
                acc
            }
            SymExpr::Mul(v) => {
                let mut acc = self.sym(&v[0])?;
                for x in &v[1..] {
                    acc = b.build_int_mul(acc, self.sym(x)?, "").map_err(le)?;
                }
                acc
            }
            SymExpr::FloorDiv(x, y) | SymExpr::Mod(x, y) => {
                let (x, y) = (self.sym(x)?, self.sym(y)?);
                // Sizes are non-negative, so truncating division is floor division.
                if matches!(e, SymExpr::FloorDiv(..)) {
                    b.build_int_signed_div(x, y, "").map_err(le)?
                } else {
                    b.build_int_signed_rem(x, y, "").map_err(le)?
                }
            }
            SymExpr::Max(x, y) | SymExpr::Min(x, y) => {
                let (x, y) = (self.sym(x)?, self.sym(y)?);
                let pred = if matches!(e, SymExpr::Max(..)) { IntPredicate::SGT } else { IntPredicate::SLT };
                let c = b.build_int_compare(pred, x, y, "").map_err(le)?;
                b.build_select(c, x, y, "").map_err(le)?.into_int_value()
            }
        })
    }

    pub(super) fn dims(&self, v: Value) -> Vec<SymExpr> {
        self.m.ty(v).tensor().map(|t| t.dims.clone()).unwrap_or_default()
    }

    pub(super) fn dtype(&self, v: Value) -> DType {
        self.m.ty(v).tensor().map(|t| t.dtype).unwrap_or(DType::F32)
    }

    /// The type a value has in registers (bool is i1; f16 and bf16 compute in f32).
    pub(super) fn reg_type(&self, d: DType) -> R<BasicTypeEnum<'ctx>> {
        Ok(match d {
            DType::F32 | DType::F16 | DType::BF16 => self.ctx.f32_type().into(),
            DType::F64 => self.ctx.f64_type().into(),
            DType::I64 | DType::U64 => self.ctx.i64_type().into(),
            DType::I32 | DType::U32 => self.ctx.i32_type().into(),
            DType::I16 | DType::U16 => self.ctx.i16_type().into(),
            DType::I8 | DType::U8 => self.ctx.i8_type().into(),
            DType::Bool => self.ctx.bool_type().into(),
            d => return Err(format!("dtype {} is not supported by the CPU target yet", d.torch_name())),
        })
    }

    /// The type a value has in memory (bool is one byte, as in torch).
    pub(super) fn mem_type(&self, d: DType) -> R<BasicTypeEnum<'ctx>> {
        Ok(match d {
            DType::Bool => self.ctx.i8_type().into(),
            DType::F16 => self.ctx.f16_type().into(),
            // Its bits: see `bf16_bits`.
            DType::BF16 => self.ctx.i16_type().into(),
            d => self.reg_type(d)?,
        })
    }

    /// f32 `v` rounded to the nearest `d` (f16/bf16) and widened back: where torch rounds.
    pub(super) fn round_narrow(&self, v: FloatValue<'ctx>, d: DType) -> R<FloatValue<'ctx>> {
        if d == DType::BF16 {
            return self.widen_bf16(self.bf16_bits(v)?);
        }
        let BasicTypeEnum::FloatType(nt) = self.mem_type(d)? else {
            return Err("round_narrow of a non-float type".into());
        };
        let n = self.b.build_float_trunc(v, nt, "").map_err(le)?;
        self.b.build_float_ext(n, self.ctx.f32_type(), "").map_err(le)
    }

    /// The f32 of bf16 bits (exact: the bits are the f32's high half).
    fn widen_bf16(&self, bits: IntValue<'ctx>) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let i32t = self.ctx.i32_type();
        let w = b.build_int_z_extend(bits, i32t, "").map_err(le)?;
        let w = b.build_left_shift(w, i32t.const_int(16, false), "").map_err(le)?;
        Ok(b.build_bit_cast(w, self.ctx.f32_type(), "").map_err(le)?.into_float_value())
    }

    /// The bf16 nearest f32 `v`, as its 16 bits: torch's `round_to_nearest_even` (NaN to
    /// 0x7FC0), in integer arithmetic. bf16 is i16 in memory and f32 in registers, never LLVM's
    /// `bfloat`: without AVX512-BF16, LLVM legalizes a `bfloat` value to f32 and rounds it back
    /// with a call to `__truncsfbf2`, which libgcc before GCC 13 (Debian 12's) does not have,
    /// so kernels.so would not load.
    fn bf16_bits(&self, v: FloatValue<'ctx>) -> R<IntValue<'ctx>> {
        let b = &self.b;
        let i32t = self.ctx.i32_type();
        let bits = b.build_bit_cast(v, i32t, "").map_err(le)?.into_int_value();
        let hi = b.build_right_shift(bits, i32t.const_int(16, false), false, "").map_err(le)?;
        let lsb = b.build_and(hi, i32t.const_int(1, false), "").map_err(le)?;
        let bias = b.build_int_add(lsb, i32t.const_int(0x7FFF, false), "").map_err(le)?;
        let r = b.build_int_add(bits, bias, "").map_err(le)?;
        let r = b.build_right_shift(r, i32t.const_int(16, false), false, "").map_err(le)?;
        let nan = b.build_float_compare(FloatPredicate::UNO, v, v, "").map_err(le)?;
        let r = b.build_select(nan, i32t.const_int(0x7FC0, false), r, "").map_err(le)?.into_int_value();
        b.build_int_truncate(r, self.ctx.i16_type(), "").map_err(le)
    }

    pub(super) fn buf_ptr(&self, buf: usize) -> R<PointerValue<'ctx>> {
        self.buf_ptrs.get(buf).copied().ok_or_else(|| format!("buffer {buf} was not loaded at kernel entry"))
    }

    /// Loads every buffer pointer and symbol once, in the entry block: as SSA values they are
    /// loop-invariant, which the vectorizer needs (stores through a buffer could otherwise
    /// change the pointer table as far as LLVM knows).
    pub(super) fn load_table(&mut self) -> R<()> {
        let ptr = self.ctx.ptr_type(AddressSpace::default());
        let i64t = self.ctx.i64_type();
        for b in 0..self.plan.buffers.len() {
            let p = unsafe { self.b.build_gep(ptr, self.bufs, &[self.i64c(b as i64)], "bufp") }.map_err(le)?;
            let v = self.b.build_load(ptr, p, "buf").map_err(le)?.into_pointer_value();
            self.buf_ptrs.push(v);
        }
        // An output computed over its argument (`plan::in_place`) is the same memory: one pointer,
        // so LLVM sees each element read before it is written (a dependence at distance zero)
        // instead of two buffers it would have to check for overlap.
        for &(out, arg) in &self.plan.in_place {
            self.buf_ptrs[out] = self.buf_ptrs[arg];
        }
        self.alias_scopes();
        let mut syms: Vec<(&String, &usize)> = self.sym_index.iter().collect();
        syms.sort_by_key(|(_, &i)| i);
        for (name, &i) in syms {
            let p = unsafe { self.b.build_gep(i64t, self.syms, &[self.i64c(i as i64)], "symp") }.map_err(le)?;
            let v = self.b.build_load(i64t, p, name).map_err(le)?.into_int_value();
            self.sym_vals.insert(name.clone(), v);
        }
        Ok(())
    }

    /// One alias scope per buffer of this kernel's step, in a domain of this kernel's own.
    fn alias_scopes(&mut self) {
        let name = self.f.get_name().to_string_lossy().into_owned();
        let Some(bufs) = self.plan.steps.iter().find_map(|st| match st {
            Step::Kernel { name: n, out, args, also, .. } if *n == name => {
                let canonical = |b: usize| self.plan.in_place.iter().find(|p| p.0 == b).map_or(b, |p| p.1);
                let mut bufs: Vec<usize> = Vec::new();
                for b in std::iter::once(out).chain(args).chain(also).map(|&b| canonical(b)) {
                    if !bufs.contains(&b) {
                        bufs.push(b);
                    }
                }
                Some(bufs)
            }
            _ => None,
        }) else {
            return;
        };
        let c = self.ctx.raw() as *mut c_void;
        // SAFETY: nodes of this kernel's context, built from nodes and strings of it.
        unsafe {
            let domain = self_referential(c, &[md_string(c, &name)]);
            let scopes: Vec<*mut c_void> =
                bufs.iter().map(|b| self_referential(c, &[domain, md_string(c, &format!("{name} buf {b}"))])).collect();
            let list = |mut mds: Vec<*mut c_void>| {
                let node = LLVMMDNodeInContext2(c, mds.as_mut_ptr(), mds.len());
                inkwell::values::MetadataValue::new(LLVMMetadataAsValue(c, node) as _)
            };
            for (i, &b) in bufs.iter().enumerate() {
                let others: Vec<*mut c_void> =
                    scopes.iter().enumerate().filter(|&(j, _)| bufs[j] != b).map(|(_, &s)| s).collect();
                self.alias.insert(b, (list(vec![scopes[i]]), list(others)));
            }
        }
    }

    /// Tags a load or store through buffer `base` with the buffer's alias scopes.
    fn tag_access(&self, base: PointerValue<'ctx>, inst: Option<inkwell::values::InstructionValue<'ctx>>) {
        let (Some(inst), Some(b)) = (inst, self.buf_ptrs.iter().position(|&p| p == base)) else { return };
        if let Some(&(scope, noalias)) = self.alias.get(&b) {
            let _ = inst.set_metadata(scope, self.ctx.get_kind_id("alias.scope"));
            let _ = inst.set_metadata(noalias, self.ctx.get_kind_id("noalias"));
        }
    }

    pub(super) fn linear(&self, idx: &[IntValue<'ctx>], dims: &[SymExpr]) -> R<IntValue<'ctx>> {
        let mut lin = self.i64c(0);
        for (i, d) in idx.iter().zip(dims) {
            let dv = self.sym(d)?;
            lin = self.b.build_int_add(self.b.build_int_mul(lin, dv, "").map_err(le)?, *i, "").map_err(le)?;
        }
        Ok(lin)
    }

    /// The linear position of stored value `v`'s element `idx` in its memory order.
    pub(super) fn stored_at(&self, v: Value, idx: &[IntValue<'ctx>]) -> R<IntValue<'ctx>> {
        let dims = self.dims(v);
        match self.plan.layouts.get(&v) {
            Some(order) => self.linear(
                &order.iter().map(|&d| idx[d]).collect::<Vec<_>>(),
                &order.iter().map(|&d| dims[d].clone()).collect::<Vec<_>>(),
            ),
            None => self.linear(idx, &dims),
        }
    }

    pub(super) fn delinear(&self, lin: IntValue<'ctx>, dims: &[SymExpr]) -> R<Vec<IntValue<'ctx>>> {
        let mut out = vec![self.i64c(0); dims.len()];
        let mut rest = lin;
        for i in (0..dims.len()).rev() {
            let dv = self.sym(&dims[i])?;
            out[i] = self.b.build_int_signed_rem(rest, dv, "").map_err(le)?;
            rest = self.b.build_int_signed_div(rest, dv, "").map_err(le)?;
        }
        Ok(out)
    }

    /// Computes kernel root `r` at `idx` and stores it: into its row slot when it has one,
    /// else into its buffer.
    pub(super) fn store_root(&mut self, r: Value, idx: &[IntValue<'ctx>]) -> R<()> {
        self.compute_root(r, idx).map(|_| ())
    }

    /// Computes kernel root `r` at `idx`, stores it and returns it.
    pub(super) fn compute_root(&mut self, r: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let op = self.m.defining_op(r).ok_or("kernel root is an argument")?;
        let dt = self.dtype(r);
        let v = if self.m.op(op).is(TenOp::Reduce) { self.reduce(op, idx)? } else { self.emit(r, idx)? };
        self.put_root(r, idx, dt, v)?;
        Ok(v)
    }

    /// Stores root `r`'s value at `idx`: into its row slot when it has one, else its buffer.
    pub(super) fn put_root(&self, r: Value, idx: &[IntValue<'ctx>], dt: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        if let Some((p, lin)) = self.slot(r, idx)? {
            return self.store_at(p, lin, dt, v);
        }
        let lin = self.stored_at(r, idx)?;
        let buf = *self.plan.buf_of.get(&r).ok_or("a kernel root has neither a row slot nor a buffer")?;
        self.store(buf, lin, dt, v)
    }

    /// The stack slot and in-row offset of a row-local value at `idx`.
    pub(super) fn slot(&self, v: Value, idx: &[IntValue<'ctx>]) -> R<Option<(PointerValue<'ctx>, IntValue<'ctx>)>> {
        let Some(&(p, outer)) = self.scratch.get(&v) else { return Ok(None) };
        let dims = self.dims(v);
        Ok(Some((p, self.linear(&idx[outer..], &dims[outer..])?)))
    }

    pub(super) fn load_at(&self, base: PointerValue<'ctx>, lin: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let mt = self.mem_type(d)?;
        let p = unsafe { self.b.build_gep(mt, base, &[lin], "p") }.map_err(le)?;
        let v = self.b.build_load(mt, p, "").map_err(le)?;
        self.tag_access(base, v.as_instruction_value());
        match d {
            DType::Bool => Ok(self
                .b
                .build_int_compare(IntPredicate::NE, v.into_int_value(), self.ctx.i8_type().const_zero(), "")
                .map_err(le)?
                .into()),
            DType::BF16 => Ok(self.widen_bf16(v.into_int_value())?.into()),
            DType::F16 => Ok(self.b.build_float_ext(v.into_float_value(), self.ctx.f32_type(), "").map_err(le)?.into()),
            _ => Ok(v),
        }
    }

    pub(super) fn store_at(
        &self,
        base: PointerValue<'ctx>,
        lin: IntValue<'ctx>,
        d: DType,
        v: BasicValueEnum<'ctx>,
    ) -> R<()> {
        let mt = self.mem_type(d)?;
        let p = unsafe { self.b.build_gep(mt, base, &[lin], "p") }.map_err(le)?;
        let v: BasicValueEnum = match (d, mt) {
            (DType::Bool, _) => {
                self.b.build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "").map_err(le)?.into()
            }
            // Stored as its bits, through the same pointer: see `bf16_bits`.
            (DType::BF16, _) => self.bf16_bits(v.into_float_value())?.into(),
            (DType::F16, BasicTypeEnum::FloatType(nt)) => {
                self.b.build_float_trunc(v.into_float_value(), nt, "").map_err(le)?.into()
            }
            _ => v,
        };
        let st = self.b.build_store(p, v).map_err(le)?;
        self.tag_access(base, Some(st));
        Ok(())
    }

    pub(super) fn load(&self, buf: usize, lin: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        self.load_at(self.buf_ptr(buf)?, lin, d)
    }

    pub(super) fn store(&self, buf: usize, lin: IntValue<'ctx>, d: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        self.store_at(self.buf_ptr(buf)?, lin, d, v)
    }

    /// How many vectors the innermost loop computing `r` should interleave. A long chain of
    /// dependent math per element (the inline exp/tanh polynomials) is latency-bound at one
    /// vector per iteration, and LLVM's cost model keeps such large bodies at one; several
    /// independent vectors in flight fill the FMA pipelines (elementwise20: 1.4x on one thread).
    pub(super) fn interleave_for(&self, r: Value) -> u32 {
        let Some(op) = self.m.defining_op(r) else { return 1 };
        if self.m.op(op).is(TenOp::Reduce) {
            return 1;
        }
        let inner = self.dims(r).last().map(|d| d.as_const().unwrap_or(i64::MAX)).unwrap_or(0);
        let stop: Vec<Value> =
            self.plan.buf_of.keys().chain(self.scratch.keys()).copied().filter(|&v| v != r).collect();
        let cost = super::super::plan::inline_cost(self.m, r, &stop, &mut HashMap::new());
        if inner >= INTERLEAVE_MIN_TRIP && cost >= INTERLEAVE_MIN_COST {
            4
        } else {
            1
        }
    }

    /// Loop hints for the loop whose back edge is `br`: interleave `count` vectors per
    /// iteration (`llvm.loop.interleave.count`, when above 1; `SINGLE_VECTOR`: exactly one) and
    /// never unroll it (`llvm.loop.unroll.disable`).
    pub(super) fn loop_hints(&self, br: inkwell::values::InstructionValue<'ctx>, count: u32, rolled: bool) {
        if count <= 1 && !rolled && !self.no_vectorize {
            return;
        }
        let c = self.ctx.raw() as *mut c_void;
        let kind = self.ctx.get_kind_id("llvm.loop");
        // SAFETY: nodes of this kernel's context; `br` is one of its instructions.
        unsafe {
            let mut hints = Vec::new();
            if count > 1 {
                let n = self.ctx.i32_type().const_int(if count == SINGLE_VECTOR { 1 } else { count as u64 }, false);
                let mut hint =
                    [md_string(c, "llvm.loop.interleave.count"), LLVMValueAsMetadata(n.as_value_ref() as *mut c_void)];
                hints.push(LLVMMDNodeInContext2(c, hint.as_mut_ptr(), 2));
            }
            if rolled {
                let mut hint = [md_string(c, "llvm.loop.unroll.disable")];
                hints.push(LLVMMDNodeInContext2(c, hint.as_mut_ptr(), 1));
            }
            if self.no_vectorize {
                let off = self.ctx.bool_type().const_zero();
                let mut hint = [
                    md_string(c, "llvm.loop.vectorize.enable"),
                    LLVMValueAsMetadata(off.as_value_ref() as *mut c_void),
                ];
                hints.push(LLVMMDNodeInContext2(c, hint.as_mut_ptr(), 2));
            }
            let id = self_referential(c, &hints);
            LLVMSetMetadata(br.as_value_ref() as *mut c_void, kind, LLVMMetadataAsValue(c, id));
        }
    }

    pub(super) fn for_loop(
        &mut self,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        body: &mut dyn FnMut(&mut Self, IntValue<'ctx>) -> R<()>,
    ) -> R<()> {
        let pre = self.b.get_insert_block().unwrap();
        let header = self.ctx.append_basic_block(self.f, "loop");
        let bodyb = self.ctx.append_basic_block(self.f, "body");
        let exit = self.ctx.append_basic_block(self.f, "exit");
        self.b.build_unconditional_branch(header).map_err(le)?;
        self.b.position_at_end(header);
        let phi = self.b.build_phi(self.ctx.i64_type(), "i").map_err(le)?;
        phi.add_incoming(&[(&lo, pre)]);
        let i = phi.as_basic_value().into_int_value();
        let cond = self.b.build_int_compare(IntPredicate::SLT, i, hi, "").map_err(le)?;
        self.b.build_conditional_branch(cond, bodyb, exit).map_err(le)?;
        self.b.position_at_end(bodyb);
        let interleave = std::mem::take(&mut self.interleave_next);
        let rolled = std::mem::take(&mut self.rolled_next);
        body(self, i)?;
        let next = self.b.build_int_add(i, self.i64c(1), "").map_err(le)?;
        let latch = self.b.get_insert_block().unwrap();
        let br = self.b.build_unconditional_branch(header).map_err(le)?;
        self.loop_hints(br, interleave, rolled);
        phi.add_incoming(&[(&next, latch)]);
        self.b.position_at_end(exit);
        Ok(())
    }

    /// Loops over `dims` (the first from `start` to `end` when `outer` is given).
    pub(super) fn nest(
        &mut self,
        dims: &[SymExpr],
        outer: Option<(IntValue<'ctx>, IntValue<'ctx>)>,
        idx: &mut Vec<IntValue<'ctx>>,
        body: &mut dyn FnMut(&mut Self, &[IntValue<'ctx>]) -> R<()>,
    ) -> R<()> {
        if idx.len() == dims.len() {
            self.cache.clear();
            let r = body(self, idx);
            self.cache.clear();
            return r;
        }
        // The kernel's [start, end) range applies at dim `range_dim` (past leading 1s); the
        // loops above it run once.
        let here = idx.len() == self.range_dim;
        let (lo, hi) = match (here, outer) {
            (true, Some(r)) => r,
            _ => (self.i64c(0), self.sym(&dims[idx.len()])?),
        };
        let outer = outer.filter(|_| !here);
        if idx.len() + 1 == dims.len() {
            self.interleave_next = self.interleave;
            // A short static row (8 to 64 elements: a head's 16 dims, 16 keys) stays a loop for
            // the loop vectorizer: LLVM fully unrolls it first otherwise, and the unrolled
            // scalar code is rarely re-vectorized (masked softmax scores, RoPE's sin/cos).
            let short = dims[idx.len()].as_const().is_some_and(|n| (8..=64).contains(&n));
            self.rolled_next = self.rolled_inner || short;
        } else {
            // Nor are the loops around it unrolled: once the short row inside is vectorized and
            // unrolled, LLVM fully unrolls each static outer loop in turn (a ResNet's batch norm
            // backward over [16, 128, 16, 16]: 3,200-instruction blocks whose scheduling took 2 s
            // of a 2.2 s compile; its training graphs 8.2 -> 2.7 s, the kernels as fast).
            self.rolled_next = true;
        }
        self.for_loop(lo, hi, &mut |k, i| {
            idx.push(i);
            let r = k.nest(dims, outer, idx, body);
            idx.pop();
            r
        })
    }

    /// ORs `bad` into gather `op`'s out-of-range flag: a stack slot that LLVM keeps in a
    /// register, so the check is an or-reduction the vectorizer handles and no branch in the loop.
    pub(super) fn index_checked(&mut self, op: ember_ir::OpId, bad: IntValue<'ctx>) -> R<()> {
        let bool_t = self.ctx.bool_type();
        let flag = match self.index_checks.iter().find(|c| c.0 == op) {
            Some(c) => c.1,
            None => {
                let entry = self.f.get_first_basic_block().ok_or("kernel without entry block")?;
                let tmp = self.ctx.create_builder();
                match entry.get_first_instruction() {
                    Some(i) => tmp.position_before(&i),
                    None => tmp.position_at_end(entry),
                }
                let flag = tmp.build_alloca(bool_t, "oob").map_err(le)?;
                tmp.build_store(flag, bool_t.const_zero()).map_err(le)?;
                let what = self.m.op(op).loc.describe();
                let what = if what.is_empty() { "a gather (`ten.gather`)".to_string() } else { what };
                let msg =
                    format!("{what}: an index is out of range for the dim it indexes (torch raises IndexError here)");
                let msg = self.b.build_global_string_ptr(&msg, "oob_msg").map_err(le)?.as_pointer_value();
                self.index_checks.push((op, flag, msg));
                flag
            }
        };
        let old = self.b.build_load(bool_t, flag, "").map_err(le)?.into_int_value();
        let new = self.b.build_or(old, bad, "").map_err(le)?;
        self.b.build_store(flag, new).map_err(le)?;
        Ok(())
    }

    /// Returns from the kernel. A gather whose flag is set first stores its message into the
    /// status slot the runtime passes after the buffers (`bufs[buffers.len()]`), atomically: the
    /// kernel runs on several threads at once.
    pub(super) fn ret(&mut self) -> R<()> {
        let ptr = self.ctx.ptr_type(AddressSpace::default());
        let checks = self.index_checks.clone();
        if !checks.is_empty() {
            let at =
                unsafe { self.b.build_gep(ptr, self.bufs, &[self.i64c(self.plan.buffers.len() as i64)], "statusp") }
                    .map_err(le)?;
            let slot = self.b.build_load(ptr, at, "status").map_err(le)?.into_pointer_value();
            for (_, flag, msg) in checks {
                let set = self.b.build_load(self.ctx.bool_type(), flag, "").map_err(le)?.into_int_value();
                let report = self.ctx.append_basic_block(self.f, "index_error");
                let next = self.ctx.append_basic_block(self.f, "checked");
                self.b.build_conditional_branch(set, report, next).map_err(le)?;
                self.b.position_at_end(report);
                let st = self.b.build_store(slot, msg).map_err(le)?;
                st.set_alignment(8).map_err(le)?;
                st.set_atomic_ordering(inkwell::AtomicOrdering::Monotonic).map_err(le)?;
                self.b.build_unconditional_branch(next).map_err(le)?;
                self.b.position_at_end(next);
            }
        }
        self.b.build_return(None).map_err(le)?;
        Ok(())
    }
}
