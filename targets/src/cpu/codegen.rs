//! LLVM code generation for CPU kernels (inkwell).
//!
//! Each kernel computes one materialized value: a loop nest over its dims whose body evaluates the
//! value's expression tree at the current index, reading materialized operands from memory and
//! inlining everything else. The outermost loop runs over `[start, end)` so the runtime can split
//! it across threads. LLVM's O3 pipeline vectorizes the innermost loop for the host CPU.
//!
//! Kernel ABI: `void kN(void **bufs, const int64_t *syms, int64_t start, int64_t end)`; `bufs[i]`
//! is buffer `i` of the plan, `syms[j]` the value of the j-th symbol (sorted by name).

use super::plan::{KernelDef, Plan};
use ember_ir::module::{Module, Value, ValueDef};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use ember_ir::Attr;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Linkage;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::types::{BasicType, BasicTypeEnum};
use inkwell::values::{
    AsValueRef, BasicMetadataValueEnum, BasicValueEnum, FloatValue, FunctionValue, IntValue, PointerValue,
};
use inkwell::{AddressSpace, FloatPredicate, IntPredicate, OptimizationLevel};
use std::collections::HashMap;

/// Least arithmetic per element (plan's `inline_cost`: a transcendental counts 4) and innermost
/// trip count for which a kernel loop interleaves vectors.
const INTERLEAVE_MIN_COST: u32 = 12;
const INTERLEAVE_MIN_TRIP: i64 = 256;

pub struct Object {
    /// Object files, linked together in this order.
    pub objects: Vec<Vec<u8>>,
    pub cpu: String,
    pub features: String,
    pub llvm_ir: String,
}

type R<T> = Result<T, String>;

fn le<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

pub fn host_machine() -> R<(TargetMachine, String, String)> {
    Target::initialize_native(&InitializationConfig::default()).map_err(|e| format!("LLVM native target: {e}"))?;
    machine()
}

/// A target machine for this CPU; LLVM's native target must be initialized (`host_machine`).
fn machine() -> R<(TargetMachine, String, String)> {
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(le)?;
    let cpu = TargetMachine::get_host_cpu_name().to_string();
    let features = TargetMachine::get_host_cpu_features().to_string();
    let tm = target
        .create_target_machine(
            &triple,
            &cpu,
            &features,
            OptimizationLevel::Aggressive,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .ok_or("cannot create an LLVM target machine for this CPU")?;
    Ok((tm, cpu, features))
}

/// Kernels per LLVM module below which one thread compiles them all, and the most modules: a
/// constant (not the host's thread count) so the artifact does not depend on the machine.
const KERNELS_PER_MODULE: usize = 16;
const MAX_MODULES: usize = 4;

/// Compiles the plan's kernels to object code for this CPU. LLVM's O3 pipeline and object
/// emission are ~90 % of a large region's compile and single-threaded per module (514 kernels:
/// 3.1 s and 2.6 s, measured), so the kernels are split into consecutive chunks, one LLVM module
/// per thread, linked in chunk order (514 kernels: 7.3 → 4.8 s on 2 cores; a tiny Qwen2 training
/// step's region: 9.1 → 4.4 s).
pub fn codegen(m: &Module, plan: &Plan, symbols: &[String]) -> R<Object> {
    let (_, cpu, features) = host_machine()?;
    let sym_index: HashMap<String, usize> = symbols.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect();
    let chunks = (plan.kernels.len() / KERNELS_PER_MODULE).clamp(1, MAX_MODULES);
    let per = plan.kernels.len().div_ceil(chunks).max(1);
    let parts: Vec<&[KernelDef]> = plan.kernels.chunks(per).collect();
    let results: Vec<R<ModuleOut>> = if parts.len() <= 1 {
        vec![module_object(m, plan, parts.first().copied().unwrap_or(&[]), &sym_index)]
    } else {
        std::thread::scope(|sc| {
            let handles: Vec<_> = parts.iter().map(|&ks| sc.spawn(|| module_object(m, plan, ks, &sym_index))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("an LLVM codegen thread panicked".into())))
                .collect()
        })
    };
    let (mut objects, mut llvm_ir, mut pre, mut asm) = (Vec::new(), String::new(), String::new(), String::new());
    for r in results {
        let out = r?;
        objects.push(out.object);
        llvm_ir.push_str(&out.llvm_ir);
        pre.push_str(&out.pre);
        asm.push_str(&out.asm);
    }
    if let Ok(path) = std::env::var("EMBER_DUMP_LLVM") {
        let _ = std::fs::write(path, pre);
    }
    if let Ok(path) = std::env::var("EMBER_DUMP_ASM") {
        // The kernels' machine code as the host CPU runs it (to check vector width and what
        // the inline math costs).
        let _ = std::fs::write(path, asm);
    }
    Ok(Object { objects, cpu, features, llvm_ir })
}

/// One LLVM module of `kernels`, optimized and compiled.
fn module_object(m: &Module, plan: &Plan, kernels: &[KernelDef], sym_index: &HashMap<String, usize>) -> R<ModuleOut> {
    let ctx = Context::create();
    let module = ctx.create_module("ember_kernels");
    let (tm, _, _) = machine()?;
    module.set_triple(&tm.get_triple());
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    for kd in kernels {
        let mut k = Kernel::new(&ctx, &module, &kd.name, m, plan, sym_index);
        if kd.roots.len() == 1 {
            k.body(kd.roots[0])?;
        } else {
            k.group_body(&kd.roots, kd.outer, &kd.scratch)?;
        }
    }
    let pre = if std::env::var_os("EMBER_DUMP_LLVM").is_some() {
        module.print_to_string().to_string()
    } else {
        String::new()
    };
    module.verify().map_err(|e| format!("generated LLVM IR does not verify: {e}"))?;
    module
        .run_passes("default<O3>", &tm, inkwell::passes::PassBuilderOptions::create())
        .map_err(|e| format!("LLVM optimization failed: {e}"))?;
    let llvm_ir = module.print_to_string().to_string();
    let asm = if std::env::var_os("EMBER_DUMP_ASM").is_some() {
        let a = tm.write_to_memory_buffer(&module, FileType::Assembly).map_err(le)?;
        String::from_utf8_lossy(a.as_slice()).into_owned()
    } else {
        String::new()
    };
    let buf = tm.write_to_memory_buffer(&module, FileType::Object).map_err(le)?;
    Ok(ModuleOut { object: buf.as_slice().to_vec(), llvm_ir, pre, asm })
}

/// What `module_object` makes of one module: object code, optimized IR, and for the
/// `EMBER_DUMP_LLVM`/`EMBER_DUMP_ASM` dumps the IR before optimization and the assembly.
struct ModuleOut {
    object: Vec<u8>,
    llvm_ir: String,
    pre: String,
    asm: String,
}

struct Kernel<'a, 'ctx> {
    ctx: &'ctx Context,
    b: Builder<'ctx>,
    module: &'a inkwell::module::Module<'ctx>,
    f: FunctionValue<'ctx>,
    m: &'a Module,
    plan: &'a Plan,
    sym_index: &'a HashMap<String, usize>,
    bufs: PointerValue<'ctx>,
    syms: PointerValue<'ctx>,
    cache: HashMap<(Value, Vec<IntValue<'ctx>>), BasicValueEnum<'ctx>>,
    /// The value this kernel computes: materialized, but computed here rather than loaded.
    root: Option<Value>,
    buf_ptrs: Vec<PointerValue<'ctx>>,
    sym_vals: HashMap<String, IntValue<'ctx>>,
    /// Row-local values (`KernelDef::scratch`): their stack slot and the kernel's row prefix.
    scratch: HashMap<Value, (PointerValue<'ctx>, usize)>,
    /// Vectors the innermost loops of the root being generated interleave (1: LLVM decides).
    interleave: u32,
    interleave_next: u32,
    /// Set while emitting a reduction over several dims: its innermost loop must stay a loop.
    /// LLVM fully unrolls a short constant one (64 iterations) and then vectorizes the loop
    /// around it with strided gathers: a [16, 32, 64, 64] -> [32] sum ran at 1/15 of torch's speed.
    rolled_inner: bool,
    rolled_next: bool,
    /// Per gather op of this kernel: a flag set when one of its indices is out of range, and the
    /// message naming the op that `ret` hands to the runtime (see `index_checked`).
    index_checks: Vec<(ember_ir::OpId, PointerValue<'ctx>, PointerValue<'ctx>)>,
}

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    fn new(
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
        if TargetMachine::get_host_cpu_features().to_string().contains("+avx512f") {
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
            sym_vals: HashMap::new(),
            scratch: HashMap::new(),
            interleave: 1,
            interleave_next: 1,
            rolled_inner: false,
            rolled_next: false,
            index_checks: Vec::new(),
        }
    }

    /// A stack slot in the entry block (so LLVM promotes it to registers even when the code that
    /// uses it sits inside loops).
    fn entry_alloca(&self, ty: BasicTypeEnum<'ctx>, name: &str) -> R<PointerValue<'ctx>> {
        let entry = self.f.get_first_basic_block().ok_or("kernel without entry block")?;
        let tmp = self.ctx.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(entry),
        }
        tmp.build_alloca(ty, name).map_err(le)
    }

    fn i64c(&self, v: i64) -> IntValue<'ctx> {
        self.ctx.i64_type().const_int(v as u64, true)
    }

    fn sym(&self, e: &SymExpr) -> R<IntValue<'ctx>> {
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

    fn dims(&self, v: Value) -> Vec<SymExpr> {
        self.m.ty(v).tensor().map(|t| t.dims.clone()).unwrap_or_default()
    }

    fn dtype(&self, v: Value) -> DType {
        self.m.ty(v).tensor().map(|t| t.dtype).unwrap_or(DType::F32)
    }

    /// The type a value has in registers (bool is i1; f16 and bf16 compute in f32).
    fn reg_type(&self, d: DType) -> R<BasicTypeEnum<'ctx>> {
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
    fn mem_type(&self, d: DType) -> R<BasicTypeEnum<'ctx>> {
        Ok(match d {
            DType::Bool => self.ctx.i8_type().into(),
            DType::F16 => self.ctx.f16_type().into(),
            DType::BF16 => self.ctx.bf16_type().into(),
            d => self.reg_type(d)?,
        })
    }

    /// f32 `v` rounded to the nearest `d` (f16/bf16) and widened back: where torch rounds.
    fn round_narrow(&self, v: FloatValue<'ctx>, d: DType) -> R<FloatValue<'ctx>> {
        let BasicTypeEnum::FloatType(nt) = self.mem_type(d)? else {
            return Err("round_narrow of a non-float type".into());
        };
        let n = self.b.build_float_trunc(v, nt, "").map_err(le)?;
        self.b.build_float_ext(n, self.ctx.f32_type(), "").map_err(le)
    }

    fn buf_ptr(&self, buf: usize) -> R<PointerValue<'ctx>> {
        self.buf_ptrs.get(buf).copied().ok_or_else(|| format!("buffer {buf} was not loaded at kernel entry"))
    }

    /// Loads every buffer pointer and symbol once, in the entry block: as SSA values they are
    /// loop-invariant, which the vectorizer needs (stores through a buffer could otherwise
    /// change the pointer table as far as LLVM knows).
    fn load_table(&mut self) -> R<()> {
        let ptr = self.ctx.ptr_type(AddressSpace::default());
        let i64t = self.ctx.i64_type();
        for b in 0..self.plan.buffers.len() {
            let p = unsafe { self.b.build_gep(ptr, self.bufs, &[self.i64c(b as i64)], "bufp") }.map_err(le)?;
            let v = self.b.build_load(ptr, p, "buf").map_err(le)?.into_pointer_value();
            self.buf_ptrs.push(v);
        }
        let mut syms: Vec<(&String, &usize)> = self.sym_index.iter().collect();
        syms.sort_by_key(|(_, &i)| i);
        for (name, &i) in syms {
            let p = unsafe { self.b.build_gep(i64t, self.syms, &[self.i64c(i as i64)], "symp") }.map_err(le)?;
            let v = self.b.build_load(i64t, p, name).map_err(le)?.into_int_value();
            self.sym_vals.insert(name.clone(), v);
        }
        Ok(())
    }

    fn linear(&self, idx: &[IntValue<'ctx>], dims: &[SymExpr]) -> R<IntValue<'ctx>> {
        let mut lin = self.i64c(0);
        for (i, d) in idx.iter().zip(dims) {
            let dv = self.sym(d)?;
            lin = self.b.build_int_add(self.b.build_int_mul(lin, dv, "").map_err(le)?, *i, "").map_err(le)?;
        }
        Ok(lin)
    }

    fn delinear(&self, lin: IntValue<'ctx>, dims: &[SymExpr]) -> R<Vec<IntValue<'ctx>>> {
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
    fn store_root(&mut self, r: Value, idx: &[IntValue<'ctx>]) -> R<()> {
        self.compute_root(r, idx).map(|_| ())
    }

    /// Computes kernel root `r` at `idx`, stores it and returns it.
    fn compute_root(&mut self, r: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let op = self.m.defining_op(r).ok_or("kernel root is an argument")?;
        let dt = self.dtype(r);
        let v = if self.m.op(op).name == "ten.reduce" { self.reduce(op, idx)? } else { self.emit(r, idx)? };
        self.put_root(r, idx, dt, v)?;
        Ok(v)
    }

    /// Stores root `r`'s value at `idx`: into its row slot when it has one, else its buffer.
    fn put_root(&self, r: Value, idx: &[IntValue<'ctx>], dt: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        if let Some((p, lin)) = self.slot(r, idx)? {
            return self.store_at(p, lin, dt, v);
        }
        let lin = self.linear(idx, &self.dims(r))?;
        let buf = *self.plan.buf_of.get(&r).ok_or("a kernel root has neither a row slot nor a buffer")?;
        self.store(buf, lin, dt, v)
    }

    /// The stack slot and in-row offset of a row-local value at `idx`.
    fn slot(&self, v: Value, idx: &[IntValue<'ctx>]) -> R<Option<(PointerValue<'ctx>, IntValue<'ctx>)>> {
        let Some(&(p, outer)) = self.scratch.get(&v) else { return Ok(None) };
        let dims = self.dims(v);
        Ok(Some((p, self.linear(&idx[outer..], &dims[outer..])?)))
    }

    fn load_at(&self, base: PointerValue<'ctx>, lin: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        let mt = self.mem_type(d)?;
        let p = unsafe { self.b.build_gep(mt, base, &[lin], "p") }.map_err(le)?;
        let v = self.b.build_load(mt, p, "").map_err(le)?;
        match d {
            DType::Bool => Ok(self
                .b
                .build_int_compare(IntPredicate::NE, v.into_int_value(), self.ctx.i8_type().const_zero(), "")
                .map_err(le)?
                .into()),
            DType::F16 | DType::BF16 => {
                Ok(self.b.build_float_ext(v.into_float_value(), self.ctx.f32_type(), "").map_err(le)?.into())
            }
            _ => Ok(v),
        }
    }

    fn store_at(&self, base: PointerValue<'ctx>, lin: IntValue<'ctx>, d: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        let mt = self.mem_type(d)?;
        let p = unsafe { self.b.build_gep(mt, base, &[lin], "p") }.map_err(le)?;
        let v: BasicValueEnum = match (d, mt) {
            (DType::Bool, _) => {
                self.b.build_int_z_extend(v.into_int_value(), self.ctx.i8_type(), "").map_err(le)?.into()
            }
            (DType::F16 | DType::BF16, BasicTypeEnum::FloatType(nt)) => {
                self.b.build_float_trunc(v.into_float_value(), nt, "").map_err(le)?.into()
            }
            _ => v,
        };
        self.b.build_store(p, v).map_err(le)?;
        Ok(())
    }

    fn load(&self, buf: usize, lin: IntValue<'ctx>, d: DType) -> R<BasicValueEnum<'ctx>> {
        self.load_at(self.buf_ptr(buf)?, lin, d)
    }

    fn store(&self, buf: usize, lin: IntValue<'ctx>, d: DType, v: BasicValueEnum<'ctx>) -> R<()> {
        self.store_at(self.buf_ptr(buf)?, lin, d, v)
    }

    /// How many vectors the innermost loop computing `r` should interleave. A long chain of
    /// dependent math per element (the inline exp/tanh polynomials) is latency-bound at one
    /// vector per iteration, and LLVM's cost model keeps such large bodies at one; several
    /// independent vectors in flight fill the FMA pipelines (elementwise20: 1.4x on one thread).
    fn interleave_for(&self, r: Value) -> u32 {
        let Some(op) = self.m.defining_op(r) else { return 1 };
        if self.m.op(op).name == "ten.reduce" {
            return 1;
        }
        let inner = self.dims(r).last().map(|d| d.as_const().unwrap_or(i64::MAX)).unwrap_or(0);
        let stop: Vec<Value> =
            self.plan.buf_of.keys().chain(self.scratch.keys()).copied().filter(|&v| v != r).collect();
        let cost = super::plan::inline_cost(self.m, r, &stop, &mut HashMap::new());
        if inner >= INTERLEAVE_MIN_TRIP && cost >= INTERLEAVE_MIN_COST {
            4
        } else {
            1
        }
    }

    /// Loop hints for the loop whose back edge is `br`: interleave `count` vectors per
    /// iteration (`llvm.loop.interleave.count`, when above 1) and never unroll it
    /// (`llvm.loop.unroll.disable`). The loop ID must refer to itself, which the C API builds
    /// through a temporary node.
    fn loop_hints(&self, br: inkwell::values::InstructionValue<'ctx>, count: u32, rolled: bool) {
        use std::ffi::c_void;
        extern "C" {
            fn LLVMTemporaryMDNode(c: *mut c_void, mds: *mut *mut c_void, n: usize) -> *mut c_void;
            fn LLVMMDNodeInContext2(c: *mut c_void, mds: *mut *mut c_void, n: usize) -> *mut c_void;
            fn LLVMMDStringInContext2(c: *mut c_void, s: *const u8, n: usize) -> *mut c_void;
            fn LLVMValueAsMetadata(v: *mut c_void) -> *mut c_void;
            fn LLVMMetadataReplaceAllUsesWith(tmp: *mut c_void, with: *mut c_void);
            fn LLVMMetadataAsValue(c: *mut c_void, md: *mut c_void) -> *mut c_void;
            fn LLVMSetMetadata(inst: *mut c_void, kind: u32, v: *mut c_void);
        }
        if count <= 1 && !rolled {
            return;
        }
        let c = self.ctx.raw() as *mut c_void;
        let kind = self.ctx.get_kind_id("llvm.loop");
        unsafe {
            let tmp = LLVMTemporaryMDNode(c, std::ptr::null_mut(), 0);
            let mut ops = vec![tmp];
            if count > 1 {
                let name = "llvm.loop.interleave.count";
                let n = self.ctx.i32_type().const_int(count as u64, false);
                let mut hint = [
                    LLVMMDStringInContext2(c, name.as_ptr(), name.len()),
                    LLVMValueAsMetadata(n.as_value_ref() as *mut c_void),
                ];
                ops.push(LLVMMDNodeInContext2(c, hint.as_mut_ptr(), 2));
            }
            if rolled {
                let name = "llvm.loop.unroll.disable";
                let mut hint = [LLVMMDStringInContext2(c, name.as_ptr(), name.len())];
                ops.push(LLVMMDNodeInContext2(c, hint.as_mut_ptr(), 1));
            }
            let id = LLVMMDNodeInContext2(c, ops.as_mut_ptr(), ops.len());
            LLVMMetadataReplaceAllUsesWith(tmp, id);
            LLVMSetMetadata(br.as_value_ref() as *mut c_void, kind, LLVMMetadataAsValue(c, id));
        }
    }

    fn for_loop(
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
    fn nest(
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
        let (lo, hi) = match (idx.is_empty(), outer) {
            (true, Some(r)) => r,
            _ => (self.i64c(0), self.sym(&dims[idx.len()])?),
        };
        if idx.len() + 1 == dims.len() {
            self.interleave_next = self.interleave;
            self.rolled_next = self.rolled_inner;
        }
        self.for_loop(lo, hi, &mut |k, i| {
            idx.push(i);
            let r = k.nest(dims, None, idx, body);
            idx.pop();
            r
        })
    }

    /// ORs `bad` into gather `op`'s out-of-range flag: a stack slot that LLVM keeps in a
    /// register, so the check is an or-reduction the vectorizer handles and no branch in the loop.
    fn index_checked(&mut self, op: ember_ir::OpId, bad: IntValue<'ctx>) -> R<()> {
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
    fn ret(&mut self) -> R<()> {
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

    fn body(&mut self, root: Value) -> R<()> {
        self.load_table()?;
        let start = self.f.get_nth_param(2).unwrap().into_int_value();
        let end = self.f.get_nth_param(3).unwrap().into_int_value();
        self.root = Some(root);
        let out = self.plan.buf_of[&root];
        let dims = self.dims(root);
        let root_op = self.m.defining_op(root).ok_or("kernel root is an argument")?;
        if matches!(self.m.op(root_op).name.as_str(), "ten.cumsum" | "ten.cumprod") {
            self.cumsum(root_op, out, start, end)?;
            self.ret()?;
            return Ok(());
        }
        if self.m.op(root_op).name == "ten.scatter" {
            self.scatter(root_op, out, start)?;
            self.ret()?;
            return Ok(());
        }
        self.interleave = self.interleave_for(root);
        if dims.is_empty() {
            // Rank 0: the runtime calls with [0, 1).
            self.store_root(root, &[])?;
        } else {
            let mut idx = Vec::new();
            self.nest(&dims, Some((start, end)), &mut idx, &mut |k, idx| k.store_root(root, idx))?;
        }
        self.ret()?;
        Ok(())
    }

    /// Several values computed row by row: loops over the shared first `outer` dims, and inside,
    /// each value's own remaining loops in order (later values read earlier ones' rows from cache).
    fn group_body(&mut self, roots: &[Value], outer: usize, scratch: &[Value]) -> R<()> {
        self.load_table()?;
        for &v in scratch {
            let n: i64 = self.dims(v)[outer..].iter().map(|d| d.as_const().unwrap_or(1)).product();
            let slot = self.mem_type(self.dtype(v))?.array_type(n.max(1) as u32);
            let p = self.entry_alloca(slot.into(), "row")?;
            self.scratch.insert(v, (p, outer));
        }
        let start = self.f.get_nth_param(2).unwrap().into_int_value();
        let end = self.f.get_nth_param(3).unwrap().into_int_value();
        let prefix: Vec<SymExpr> = self.dims(roots[0])[..outer].to_vec();
        let roots = roots.to_vec();
        let mut idx = Vec::new();
        self.nest(&prefix, Some((start, end)), &mut idx, &mut |k, row| {
            let mut i = 0;
            while i < roots.len() {
                let r = roots[i];
                k.root = Some(r);
                k.interleave = k.interleave_for(r);
                let dims = k.dims(r);
                let mut inner = row.to_vec();
                if let Some(red) = roots.get(i + 1).copied().filter(|&n| k.reduces_row_of(n, r, outer)) {
                    k.store_with_reduce(r, red, row, &dims)?;
                    i += 2;
                    continue;
                }
                k.nest(&dims, None, &mut inner, &mut |k, idx| k.store_root(r, idx))?;
                i += 1;
            }
            Ok(())
        })?;
        self.ret()?;
        Ok(())
    }

    /// Whether root `red` reduces exactly the row of root `r` (dims past `outer`), reading `r`
    /// only at the element it reduces: then both run in one pass over the row.
    fn reduces_row_of(&self, red: Value, r: Value, outer: usize) -> bool {
        let m = self.m;
        let Some(op) = m.defining_op(red) else { return false };
        let d = m.op(op);
        if d.name != "ten.reduce" || matches!(d.attrs.get("kind").and_then(|a| a.as_str()), Some("argmax" | "argmin")) {
            return false;
        }
        if m.defining_op(r).is_none_or(|o| m.op(o).name == "ten.reduce") {
            return false;
        }
        let x = d.operands[0];
        let rd: Vec<usize> =
            d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
        let rank = self.dims(x).len();
        rank > outer
            && self.dims(x) == self.dims(r)
            && rd == (outer..rank).collect::<Vec<_>>()
            && self.reads_pointwise(x, r)
    }

    /// Whether `v`'s expression reads `target` (if at all) only at `v`'s own index.
    fn reads_pointwise(&self, v: Value, target: Value) -> bool {
        if v == target {
            return true;
        }
        let m = self.m;
        if self.plan.buf_of.contains_key(&v) || self.scratch.contains_key(&v) {
            return true;
        }
        let Some(op) = m.defining_op(v) else { return true };
        let d = m.op(op);
        let pointwise = super::plan::is_pointwise(&d.name);
        d.operands
            .iter()
            .all(|&o| if pointwise { self.reads_pointwise(o, target) } else { !self.depends_on(o, target) })
    }

    fn depends_on(&self, v: Value, target: Value) -> bool {
        if v == target {
            return true;
        }
        if self.plan.buf_of.contains_key(&v) || self.scratch.contains_key(&v) {
            return false;
        }
        self.m.defining_op(v).is_some_and(|op| self.m.op(op).operands.iter().any(|&o| self.depends_on(o, target)))
    }

    /// Computes root `r` over its row and, in the same loop, reduces it (or a pointwise function
    /// of it) into root `red` (the next pass), so the row is traversed once for both.
    fn store_with_reduce(&mut self, r: Value, red: Value, row: &[IntValue<'ctx>], dims: &[SymExpr]) -> R<()> {
        let op = self.m.defining_op(red).ok_or("reduce root is an argument")?;
        let d = self.m.op(op);
        let x = d.operands[0];
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("sum").to_string();
        let dt = self.dtype(x);
        let ty = self.reg_type(dt)?;
        let acc = self.entry_alloca(ty, "acc")?;
        self.b.build_store(acc, self.identity(&kind, dt)?).map_err(le)?;
        let mut inner = row.to_vec();
        self.nest(dims, None, &mut inner, &mut |k, idx| {
            k.root = Some(r);
            let v = k.compute_root(r, idx)?;
            k.cache.insert((r, idx.to_vec()), v);
            k.root = Some(red);
            let xv = k.emit(x, idx)?;
            let a = k.b.build_load(ty, acc, "a").map_err(le)?;
            let n = k.combine(&kind, dt, a, xv)?;
            k.b.build_store(acc, n).map_err(le)?;
            Ok(())
        })?;
        let total = self.b.build_load(ty, acc, "r").map_err(le)?;
        self.put_root(red, row, self.dtype(red), total)
    }

    /// A running sum (or product, `ten.cumprod`) along `dim`: loops over the other dims (the
    /// outermost split across threads unless it is the scanned dim; then the first call does all
    /// the work), and a sequential loop over `dim` that stores every prefix. Floats accumulate in
    /// f64, as torch's CPU kernel.
    fn cumsum(&mut self, op: ember_ir::OpId, out: usize, start: IntValue<'ctx>, end: IntValue<'ctx>) -> R<()> {
        let d = self.m.op(op);
        let x = d.operands[0];
        let root = d.results[0];
        let dim = d.attrs.get("dim").and_then(|a| a.as_int()).ok_or("cumsum without dim")? as usize;
        let (kind, op) = if d.name == "ten.cumprod" { ("prod", "mul") } else { ("sum", "add") };
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
    fn scatter(&mut self, op: ember_ir::OpId, out: usize, start: IntValue<'ctx>) -> R<()> {
        let d = self.m.op(op);
        let (x, index, upd) = (d.operands[0], d.operands[1], d.operands[2]);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).ok_or("scatter without kind")?.to_string();
        let binop = match kind.as_str() {
            "set" => None,
            "sum" => Some("add"),
            "prod" => Some("mul"),
            "max" => Some("max"),
            "min" => Some("min"),
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
    fn scan_line(
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
        op: &str,
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
    fn arg_reduce(&mut self, op: ember_ir::OpId, out_idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
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

    fn reduce(&mut self, op: ember_ir::OpId, out_idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
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
        let init = self.identity(&kind, dt)?;
        let acc = self.entry_alloca(ty, "acc")?;
        self.b.build_store(acc, init).map_err(le)?;
        let red: Vec<SymExpr> = rdims.iter().map(|&i| xdims[i].clone()).collect();
        let mut ridx = Vec::new();
        let out_idx = out_idx.to_vec();
        let outer_rolled = std::mem::replace(&mut self.rolled_inner, red.len() > 1);
        let r = self.nest(&red, None, &mut ridx, &mut |k, r| {
            k.rolled_inner = false; // reductions the body emits choose for themselves
            let full = interleave(xdims.len(), &rdims, &out_idx, r);
            let v = k.emit(x, &full)?;
            let a = k.b.build_load(ty, acc, "a").map_err(le)?;
            let n = k.combine(&kind, dt, a, v)?;
            k.b.build_store(acc, n).map_err(le)?;
            Ok(())
        });
        self.rolled_inner = outer_rolled;
        r?;
        self.b.build_load(ty, acc, "r").map_err(le)
    }

    fn identity(&self, kind: &str, dt: DType) -> R<BasicValueEnum<'ctx>> {
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

    fn combine(
        &self,
        kind: &str,
        dt: DType,
        a: BasicValueEnum<'ctx>,
        v: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let name = match kind {
            "sum" => "add",
            "prod" => "mul",
            "or" => "or",
            "and" => "and",
            "max" => "max",
            "min" => "min",
            k => return Err(format!("unknown reduce kind `{k}`")),
        };
        let r = self.binary(name, dt, a, v)?;
        if dt.is_float() && (kind == "sum" || kind == "prod") {
            // Reassociation lets LLVM vectorize the reduction (as torch's own kernels do).
            if let Some(i) = r.into_float_value().as_instruction() {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::AllowReassoc);
            }
        }
        Ok(r)
    }

    fn intrinsic(&self, name: &str, ty: BasicTypeEnum<'ctx>, args: &[BasicValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
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

    fn libm(&self, name: &str, x: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
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

    fn libm2(&self, name: &str, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
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
    fn atan2_f32(&self, y: FloatValue<'ctx>, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
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

    fn unary(&self, name: &str, dt: DType, x: BasicValueEnum<'ctx>) -> R<BasicValueEnum<'ctx>> {
        let dt = compute_dtype(dt);
        let b = &self.b;
        if let BasicValueEnum::FloatValue(f) = x {
            let ty = f.get_type().as_basic_type_enum();
            let one = f.get_type().const_float(1.0);
            return Ok(match name {
                "neg" => b.build_float_neg(f, "").map_err(le)?.into(),
                "abs" => self.intrinsic("llvm.fabs", ty, &[x])?,
                "exp" if dt == DType::F32 => self.exp_f32(f)?.into(),
                "tanh" if dt == DType::F32 => self.tanh_f32(f)?.into(),
                "erf" if dt == DType::F32 => self.erf_f32(f)?.into(),
                "exp" => self.intrinsic("llvm.exp", ty, &[x])?,
                "log" => self.intrinsic("llvm.log", ty, &[x])?,
                "sqrt" => self.intrinsic("llvm.sqrt", ty, &[x])?,
                "sin" => self.intrinsic("llvm.sin", ty, &[x])?,
                "cos" => self.intrinsic("llvm.cos", ty, &[x])?,
                "tan" => self.intrinsic("llvm.tan", ty, &[x])?,
                "floor" => self.intrinsic("llvm.floor", ty, &[x])?,
                "ceil" => self.intrinsic("llvm.ceil", ty, &[x])?,
                "trunc" => self.intrinsic("llvm.trunc", ty, &[x])?,
                "round" => self.intrinsic("llvm.roundeven", ty, &[x])?,
                "rsqrt" => b
                    .build_float_div(one, self.intrinsic("llvm.sqrt", ty, &[x])?.into_float_value(), "")
                    .map_err(le)?
                    .into(),
                "sigmoid" => {
                    let n = b.build_float_neg(f, "").map_err(le)?;
                    let ex = if dt == DType::F32 {
                        self.exp_f32(n)?
                    } else {
                        self.intrinsic("llvm.exp", ty, &[n.into()])?.into_float_value()
                    };
                    b.build_float_div(one, b.build_float_add(one, ex, "").map_err(le)?, "").map_err(le)?.into()
                }
                "tanh" | "erf" | "log1p" => self.libm(name, f)?,
                "sign" => {
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
                n => return Err(format!("`ten.{n}` is not supported for {}", dt.torch_name())),
            });
        }
        let i = x.into_int_value();
        let ty = i.get_type();
        Ok(match name {
            "neg" => b.build_int_neg(i, "").map_err(le)?.into(),
            "not" => b.build_not(i, "").map_err(le)?.into(),
            "abs" => {
                let n = b.build_int_neg(i, "").map_err(le)?;
                let c = b.build_int_compare(IntPredicate::SLT, i, ty.const_zero(), "").map_err(le)?;
                b.build_select(c, n, i, "").map_err(le)?
            }
            "sign" => {
                let gt = b.build_int_compare(IntPredicate::SGT, i, ty.const_zero(), "").map_err(le)?;
                let lt = b.build_int_compare(IntPredicate::SLT, i, ty.const_zero(), "").map_err(le)?;
                let p = b.build_select(gt, ty.const_int(1, false), ty.const_zero(), "").map_err(le)?.into_int_value();
                b.build_select(lt, ty.const_all_ones(), p, "").map_err(le)?
            }
            "floor" | "ceil" | "trunc" | "round" => x,
            n => return Err(format!("`ten.{n}` is not supported for {}", dt.torch_name())),
        })
    }

    // Vectorizable f32 math. LLVM has no vector exp/tanh/erf without a vector math library, and a
    // scalar libm call per element keeps loops from vectorizing, so these are written out inline.

    fn fconst(&self, v: f64) -> FloatValue<'ctx> {
        self.ctx.f32_type().const_float(v)
    }

    /// p[0] + x*(p[1] + x*(p[2] + ...)) by Horner's rule.
    fn horner(&self, x: FloatValue<'ctx>, p: &[f64]) -> R<FloatValue<'ctx>> {
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
    fn fma(&self, a: FloatValue<'ctx>, b: FloatValue<'ctx>, c: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
        let ty = a.get_type().as_basic_type_enum();
        Ok(self.intrinsic("llvm.fmuladd", ty, &[a.into(), b.into(), c.into()])?.into_float_value())
    }

    /// x clamped to [lo, hi] for a non-NaN x (NaN gives lo or hi: callers pass NaN through
    /// themselves). Compare-and-select is one vmaxps/vminps; maxnum/minnum need NaN fix-ups on x86.
    fn fmin_max(&self, x: FloatValue<'ctx>, lo: f64, hi: f64) -> R<FloatValue<'ctx>> {
        let b = &self.b;
        let (lo, hi) = (self.fconst(lo), self.fconst(hi));
        let above = b.build_float_compare(FloatPredicate::OGT, x, lo, "").map_err(le)?;
        let a = b.build_select(above, x, lo, "").map_err(le)?.into_float_value();
        let below = b.build_float_compare(FloatPredicate::OLT, a, hi, "").map_err(le)?;
        Ok(b.build_select(below, a, hi, "").map_err(le)?.into_float_value())
    }

    /// e^x: Cody-Waite range reduction and Cephes' expf polynomial (about 1 ulp); exp(-inf) = 0.
    fn exp_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
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
    fn odd_blend(
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
    fn tanh_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
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
    fn erf_f32(&self, x: FloatValue<'ctx>) -> R<FloatValue<'ctx>> {
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

    /// maximum/minimum (NaN-propagating, -0 < +0) against a constant, as one compare and select
    /// (x86 has no single instruction for llvm.maximum; its expansion is several). `x > c ? x : c`
    /// with an unordered compare returns a NaN x and is exact unless c is -0 (for min: +0), where
    /// the tie x = +0 vs c = -0 must pick x; those constants and NaN keep the intrinsic.
    fn min_max_const(&self, is_max: bool, x: FloatValue<'ctx>, y: FloatValue<'ctx>) -> R<Option<FloatValue<'ctx>>> {
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

    fn binary(
        &self,
        name: &str,
        dt: DType,
        a: BasicValueEnum<'ctx>,
        c: BasicValueEnum<'ctx>,
    ) -> R<BasicValueEnum<'ctx>> {
        let dt = compute_dtype(dt);
        let b = &self.b;
        if let (BasicValueEnum::FloatValue(x), BasicValueEnum::FloatValue(y)) = (a, c) {
            let ty = x.get_type().as_basic_type_enum();
            return Ok(match name {
                "add" => b.build_float_add(x, y, "").map_err(le)?.into(),
                "sub" => b.build_float_sub(x, y, "").map_err(le)?.into(),
                "mul" => b.build_float_mul(x, y, "").map_err(le)?.into(),
                "div" => b.build_float_div(x, y, "").map_err(le)?.into(),
                "rem" => b.build_float_rem(x, y, "").map_err(le)?.into(),
                "max" | "min" => {
                    if let Some(r) = self.min_max_const(name == "max", x, y)? {
                        return Ok(r.into());
                    }
                    self.intrinsic(if name == "max" { "llvm.maximum" } else { "llvm.minimum" }, ty, &[a, c])?
                }
                "pow" => self.intrinsic("llvm.pow", ty, &[a, c])?,
                "atan2" if dt == DType::F32 => self.atan2_f32(x, y)?.into(),
                "atan2" => self.libm2("atan2", x, y)?,
                n => return Err(format!("`ten.{n}` is not supported for {}", dt.torch_name())),
            });
        }
        let (x, y) = (a.into_int_value(), c.into_int_value());
        let unsigned = dt == DType::Bool || dt.mlir_name().starts_with("ui");
        Ok(match name {
            "add" => b.build_int_add(x, y, "").map_err(le)?.into(),
            "sub" => b.build_int_sub(x, y, "").map_err(le)?.into(),
            "mul" => b.build_int_mul(x, y, "").map_err(le)?.into(),
            "div" if unsigned => b.build_int_unsigned_div(x, y, "").map_err(le)?.into(),
            "div" => b.build_int_signed_div(x, y, "").map_err(le)?.into(),
            "rem" if unsigned => b.build_int_unsigned_rem(x, y, "").map_err(le)?.into(),
            "rem" => b.build_int_signed_rem(x, y, "").map_err(le)?.into(),
            "and" => b.build_and(x, y, "").map_err(le)?.into(),
            "or" => b.build_or(x, y, "").map_err(le)?.into(),
            "xor" => b.build_xor(x, y, "").map_err(le)?.into(),
            "max" | "min" => {
                let pred = match (name, unsigned) {
                    ("max", false) => IntPredicate::SGT,
                    ("max", true) => IntPredicate::UGT,
                    ("min", false) => IntPredicate::SLT,
                    _ => IntPredicate::ULT,
                };
                let cnd = b.build_int_compare(pred, x, y, "").map_err(le)?;
                b.build_select(cnd, x, y, "").map_err(le)?
            }
            n => return Err(format!("`ten.{n}` is not supported for {}", dt.torch_name())),
        })
    }

    fn constant(&self, a: &Attr, dt: DType) -> R<BasicValueEnum<'ctx>> {
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

    fn convert(&self, x: BasicValueEnum<'ctx>, from: DType, to: DType) -> R<BasicValueEnum<'ctx>> {
        let wide = self.convert_reg(x, from, to)?;
        if matches!(to, DType::F16 | DType::BF16) && from != to {
            // An explicit conversion rounds, as torch's `.to()` does (and Inductor keeps).
            return Ok(self.round_narrow(wide.into_float_value(), to)?.into());
        }
        Ok(wide)
    }

    /// `convert` between register types (f16/bf16 are f32 there).
    fn convert_reg(&self, x: BasicValueEnum<'ctx>, from: DType, to: DType) -> R<BasicValueEnum<'ctx>> {
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
    fn emit(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let key = (v, idx.to_vec());
        if let Some(&c) = self.cache.get(&key) {
            return Ok(c);
        }
        let r = self.emit_uncached(v, idx)?;
        self.cache.insert(key, r);
        Ok(r)
    }

    fn emit_linear(&mut self, v: Value, lin: IntValue<'ctx>) -> R<BasicValueEnum<'ctx>> {
        if let Some(&buf) = self.plan.buf_of.get(&v).filter(|_| self.root != Some(v)) {
            return self.load(buf, lin, self.dtype(v));
        }
        let idx = self.delinear(lin, &self.dims(v))?;
        self.emit(v, &idx)
    }

    fn emit_uncached(&mut self, v: Value, idx: &[IntValue<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        if self.root != Some(v) {
            if let Some((p, lin)) = self.slot(v, idx)? {
                return self.load_at(p, lin, self.dtype(v));
            }
        }
        if let Some(&buf) = self.plan.buf_of.get(&v).filter(|_| self.root != Some(v)) {
            let lin = self.linear(idx, &self.dims(v))?;
            return self.load(buf, lin, self.dtype(v));
        }
        let ValueDef::Result(op, _) = self.m.value(v).def else { return Err("unmaterialized argument".into()) };
        let d = self.m.op(op);
        let name = d.name.strip_prefix("ten.").unwrap_or(&d.name).to_string();
        let ops = d.operands.clone();
        let attrs = d.attrs.clone();
        let dt = self.dtype(v);
        let ints =
            |k: &str| -> Vec<i64> { attrs.get(k).and_then(|a| a.as_ints()).map(|v| v.to_vec()).unwrap_or_default() };
        let b = &self.b;
        match name.as_str() {
            "abs" | "neg" | "exp" | "log" | "sqrt" | "rsqrt" | "sin" | "cos" | "tan" | "tanh" | "erf" | "log1p"
            | "sigmoid" | "floor" | "ceil" | "trunc" | "round" | "sign" | "not" => {
                let x = self.emit(ops[0], idx)?;
                self.unary(&name, dt, x)
            }
            "add" | "sub" | "mul" | "div" | "rem" | "max" | "min" | "pow" | "atan2" | "and" | "or" | "xor" => {
                let x = self.emit(ops[0], idx)?;
                let y = self.emit(ops[1], idx)?;
                self.binary(&name, dt, x, y)
            }
            "compare" => {
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
            "select" => {
                let p = self.emit(ops[0], idx)?.into_int_value();
                let x = self.emit(ops[1], idx)?;
                let y = self.emit(ops[2], idx)?;
                self.b.build_select(p, x, y, "").map_err(le)
            }
            "convert" => {
                let from = self.dtype(ops[0]);
                let x = self.emit(ops[0], idx)?;
                self.convert(x, from, dt)
            }
            "constant" => self.constant(attrs.get("value").ok_or("constant without value")?, dt),
            "iota" => {
                let d = attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
                let i = *idx.get(d).ok_or("iota dim out of range")?;
                self.convert(i.into(), DType::I64, dt)
            }
            "broadcast" => {
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
            "transpose" => {
                let perm = ints("dims");
                let mut sidx = vec![self.i64c(0); idx.len()];
                for (i, &p) in perm.iter().enumerate() {
                    sidx[p as usize] = idx[i];
                }
                self.emit(ops[0], &sidx)
            }
            "reshape" => {
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
            "reverse" => {
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
            "slice" => {
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
            "concat" => {
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
            "pad" => {
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
            "windows" => {
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
            "gather" => {
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
            n => Err(format!("`ten.{n}` cannot be inlined into a CPU kernel")),
        }
    }
}

/// The operand index of a reduction: reduced dims from `r`, the others from `out`, in dim order.
/// The dtype arithmetic runs in: f16 and bf16 values are f32 in registers (inside one kernel,
/// as Inductor does; they round where they are stored and at explicit conversions).
fn compute_dtype(d: DType) -> DType {
    if matches!(d, DType::F16 | DType::BF16) {
        DType::F32
    } else {
        d
    }
}

fn interleave<'ctx>(rank: usize, rdims: &[usize], out: &[IntValue<'ctx>], r: &[IntValue<'ctx>]) -> Vec<IntValue<'ctx>> {
    let (mut oi, mut ri) = (0, 0);
    (0..rank)
        .map(|i| {
            if rdims.contains(&i) {
                ri += 1;
                r[ri - 1]
            } else {
                oi += 1;
                out[oi - 1]
            }
        })
        .collect()
}
