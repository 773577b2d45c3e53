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
use ember_ir::module::{Module, Value};
use ember_ir::types::DType;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine};
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::OptimizationLevel;
use std::collections::HashMap;

mod emit;
mod kernel;
mod math;
mod rows;
mod scan;

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

/// This CPU's LLVM feature string (`+avx2,+avx512f,...`), read once: the target machine, the
/// vector width kernels prefer and the libmvec variants they may call all follow it.
pub(super) fn host_features() -> &'static str {
    static FEATURES: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FEATURES.get_or_init(|| TargetMachine::get_host_cpu_features().to_string())
}

/// A target machine for this CPU; LLVM's native target must be initialized (`host_machine`).
fn machine() -> R<(TargetMachine, String, String)> {
    let triple = TargetMachine::get_default_triple();
    let target = Target::from_triple(&triple).map_err(le)?;
    let cpu = TargetMachine::get_host_cpu_name().to_string();
    let features = host_features().to_string();
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
/// constant (not the host's thread count) so the artifact does not depend on the machine. Small:
/// torch.compile hands over one graph at a time, often of a few kernels (a ResNet training
/// step's 16 pieces between convolutions, 6 kernels each: 2.35-2.76 s of compile with 16 here,
/// 1.66-1.93 s with 3, on 2 cores).
const KERNELS_PER_MODULE: usize = 3;
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
        k.range_dim = kd.split;
        if kd.roots.len() == 1 {
            k.body(kd.roots[0], kd.columns)?;
        } else {
            k.group_body(&kd.roots, kd.outer, &kd.scratch)?;
        }
    }
    let pre = if std::env::var_os("EMBER_DUMP_LLVM").is_some() {
        module.print_to_string().to_string()
    } else {
        String::new()
    };
    keep_vector_math(&ctx, &module);
    module.verify().map_err(|e| format!("generated LLVM IR does not verify: {e}"))?;
    module
        .run_passes("default<O3>", &tm, inkwell::passes::PassBuilderOptions::create())
        .map_err(|e| format!("LLVM optimization failed: {e}"))?;
    drop_unused_vector_math(&module);
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

/// The vectorizer only calls a vector variant (`math.rs`) whose declaration is in the module, and
/// O3's dead-global elimination removes unused declarations before it runs: `llvm.compiler.used`
/// keeps them (as LLVM's own vector-library mapping does).
fn keep_vector_math<'ctx>(ctx: &'ctx Context, module: &inkwell::module::Module<'ctx>) {
    let fns: Vec<_> = module
        .get_functions()
        .filter(|f| f.get_name().to_bytes().starts_with(math::VECTOR_ABI_PREFIX.as_bytes()))
        .map(|f| f.as_global_value().as_pointer_value())
        .collect();
    if fns.is_empty() {
        return;
    }
    let ptr = ctx.ptr_type(inkwell::AddressSpace::default());
    let init = ptr.const_array(&fns);
    let g = module.add_global(init.get_type(), None, "llvm.compiler.used");
    g.set_linkage(inkwell::module::Linkage::Appending);
    g.set_section(Some("llvm.metadata"));
    g.set_initializer(&init);
}

/// Removes what `keep_vector_math` kept and the variants no loop called, so `kernels.ll` and the
/// object name only the libmvec functions the kernels use.
fn drop_unused_vector_math(module: &inkwell::module::Module) {
    // Looked up again: O3's global optimizer may have rebuilt the array.
    let Some(g) = module.get_global("llvm.compiler.used") else { return };
    // SAFETY: nothing refers to `llvm.compiler.used`, and a declaration without uses is deleted.
    unsafe { g.delete() };
    let dead: Vec<_> = module
        .get_functions()
        .filter(|f| f.get_name().to_bytes().starts_with(math::VECTOR_ABI_PREFIX.as_bytes()))
        .filter(|f| inkwell::values::BasicValue::get_first_use(&f.as_global_value().as_pointer_value()).is_none())
        .collect();
    for f in dead {
        unsafe { f.delete() };
    }
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
    /// Per buffer this kernel's step reads or writes: its `!alias.scope` and `!noalias` nodes
    /// (as LLVM metadata values). Buffers never overlap (the arena never shares a slot within a
    /// step; callers pass disjoint inputs and outputs), and without saying so a loop whose reads
    /// SCEV cannot bound (RoPE's rotated half, gathers) is not vectorized at all.
    alias: HashMap<usize, (inkwell::values::MetadataValue<'ctx>, inkwell::values::MetadataValue<'ctx>)>,
    /// The loop dim the kernel's [start, end) range runs over (`KernelDef::split`).
    range_dim: usize,
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
    /// Loops emitted while set are not loop-vectorized: a tile of register accumulators is one
    /// vector for the SLP vectorizer, where the loop vectorizer would make each column a
    /// strided reduction down the rows.
    no_vectorize: bool,
    /// Per gather op of this kernel: a flag set when one of its indices is out of range, and the
    /// message naming the op that `ret` hands to the runtime (see `index_checked`).
    index_checks: Vec<(ember_ir::OpId, PointerValue<'ctx>, PointerValue<'ctx>)>,
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
