//! `ember compile --target cpu`: lower, plan, generate code, and write the artifact directory:
//! `manifest.json`, `kernels.so` (linked from LLVM's objects by the system linker) and
//! `weights.bin` (every weight, 64-byte aligned, in argument order).

use crate::frontend::Imported;
use crate::target::{Options, Ran, Target, TargetOption};
use ember_ir::attr::Attr;
use ember_ir::{DType, Module, Value};
use ember_targets::cpu::plan::{self, BufKind, Step};
use ember_targets::cpu::runtime::{HostTensor, IoInfo, Manifest, SymbolInfo, WeightInfo};
use ember_targets::cpu::Program;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The CPU target: the planner decides which values live in memory, LLVM generates the loops.
pub struct Cpu;

/// `--fusion`: who decides the kernels. `egraph` is the e-graph optimizer with the CPU cost
/// model; `greedy` skips it for the planner's own rule (inline everything cheap, materialize GEMM
/// operands, reductions and values read by several kernels), kept for comparison.
const OPTIONS: &[TargetOption] = &[TargetOption {
    name: "fusion",
    values: &["egraph", "greedy"],
    default: Some("egraph"),
    elsewhere: "--fusion is a cpu option; the {target} target always uses the e-graph optimizer",
}];

impl Target for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn options(&self) -> &'static [TargetOption] {
        OPTIONS
    }

    // The codegen inlines producers into loop nests itself; the optimizer's kernels enter as the
    // values that must live in memory.
    fn keeps(&self, _kind: &str, _opts: &Options) -> bool {
        false
    }

    fn lower(&self, m: &mut Module, opts: &Options) -> Result<Vec<Value>, String> {
        let mut cx = self.pass_context();
        crate::artifact::lower(m, &mut cx)?;
        if opts.value("fusion") != Some("greedy") {
            crate::artifact::optimize(m, &mut cx)?;
        }
        let f = m.func_by_name("main").ok_or("the module has no @main")?;
        Ok(ember_passes::egraph::inline_groups(m, f, &|kind| self.keeps(kind, opts)))
    }

    fn compile(&self, model: Imported, out: &Path, opts: &Options) -> Result<Vec<String>, String> {
        let man = compile(self, model, out, opts)?;
        let count = |p: fn(&Step) -> bool| man.steps.iter().filter(|s| p(s)).count();
        let (kernels, gemms) = (count(|s| matches!(s, Step::Kernel { .. })), count(|s| matches!(s, Step::Gemm(_))));
        Ok(vec![format!("wrote {} ({kernels} kernels, {gemms} GEMMs)", out.display())])
    }

    fn run(&self, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<Ran, String> {
        let prog = Program::load(dir).map_err(|e| format!("`{}`: {e}", dir.display()))?;
        let mut arrays = crate::npz::read_npz(inputs)?;
        let mut args = Vec::new();
        let mut notes = vec![];
        for (i, info) in prog.manifest.inputs.iter().enumerate() {
            let key = format!("arg{i}");
            let t = match arrays.remove(&key) {
                Some(t) => t,
                None if info.rng_seed => {
                    notes.push(format!(
                        "the random ops are seeded with torch's default seed {}: give `{key}` (int64) to choose",
                        crate::artifact::DEFAULT_SEED
                    ));
                    HostTensor {
                        dtype: DType::I64,
                        shape: vec![],
                        data: crate::artifact::DEFAULT_SEED.to_le_bytes().to_vec(),
                    }
                }
                None => {
                    return Err(format!("`{}` has no array `{key}` for input {i} (`{}`)", inputs.display(), info.name))
                }
            };
            if arrays.complex.contains(&key) != info.complex {
                let (want, got) = if info.complex { ("complex", "real") } else { ("real", "complex") };
                return Err(format!(
                    "`{}`: `{key}` is {got}, but input {i} (`{}`) is {want}",
                    inputs.display(),
                    info.name
                ));
            }
            args.push(t);
        }
        let mut outs = prog.run(&args).map_err(|e| format!("`{}`: {e}", inputs.display()))?;
        if repeat > 1 {
            let mut times = Vec::with_capacity(repeat);
            for _ in 0..repeat {
                let t = std::time::Instant::now();
                // Free the previous outputs first, as a caller that drops each result does
                // (torch's benchmark loop): the allocator then reuses their pages instead of
                // faulting in fresh ones.
                drop(std::mem::take(&mut outs));
                outs = prog.run(&args)?;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(|a, b| a.partial_cmp(b).unwrap());
            notes.push(format!(
                "median {:.4} ms over {repeat} runs (min {:.4}, max {:.4})",
                times[repeat / 2],
                times[0],
                times[repeat - 1]
            ));
        }
        let mutates: Vec<Option<String>> = prog.manifest.outputs.iter().map(|o| o.mutates.clone()).collect();
        let named: Vec<(String, _)> = crate::artifact::output_array_names(&mutates).into_iter().zip(outs).collect();
        let complex = named.iter().zip(&prog.manifest.outputs).filter(|(_, o)| o.complex).map(|((n, _), _)| n.clone());
        crate::npz::write_npz(outputs, &named, &complex.collect())?;
        Ok(Ran { notes, exit_code: 0 })
    }
}

fn compile(cpu: &Cpu, imported: Imported, out: &Path, opts: &Options) -> Result<Manifest, String> {
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    let boundaries = cpu.lower(&mut m, opts)?;
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    let mut plan = plan::plan(&m, f, &boundaries).map_err(|e| e.0)?;
    plan::in_place(&m, &mut plan, &input_updates(&m, f));
    let symbols: Vec<SymbolInfo> = match m.attrs.get("ember.symbols") {
        Some(Attr::Dict(d)) => d
            .iter()
            .map(|(k, v)| {
                let b = v.as_ints().unwrap_or(&[]);
                SymbolInfo { name: k.clone(), min: b.first().copied().unwrap_or(0), max: b.get(1).copied() }
            })
            .collect(),
        _ => vec![],
    };
    // Only symbols some buffer's size uses are bound at run time; each must be an input dim.
    let mut used = Vec::new();
    for b in &plan.buffers {
        for d in &b.dims {
            if let Ok(e) = ember_ir::SymExpr::parse(d) {
                e.symbols(&mut used);
            }
        }
    }
    let symbols: Vec<SymbolInfo> = symbols.into_iter().filter(|s| used.contains(&s.name)).collect();
    let entry = m.entry(f);
    for s in &symbols {
        let bindable = m.block(entry).args.iter().any(|&a| {
            m.ty(a).tensor().is_some_and(|t| t.dims.iter().any(|d| *d == ember_ir::SymExpr::Sym(s.name.clone())))
        });
        if !bindable {
            return Err(format!(
                "symbolic size `{}` is not the size of any input dim, so the runtime cannot bind it",
                s.name
            ));
        }
    }
    let names: Vec<String> = symbols.iter().map(|s| s.name.clone()).collect();
    let obj = ember_targets::cpu::codegen::codegen(&m, &plan, &names)?;
    let packed = crate::artifact::pack(&m, f, &imported.weights)?;
    // Arguments are the plan's first buffers, in order, so an argument index is its buffer id.
    debug_assert!(m
        .block(m.entry(f))
        .args
        .iter()
        .enumerate()
        .all(|(i, a)| plan.buf_of[a] == i && plan.buffers[i].kind == BufKind::Arg(i)));
    let io = |x: &crate::artifact::Io, buf: usize| IoInfo {
        name: x.name.clone(),
        buf,
        dtype: x.dtype.clone(),
        dims: x.dims.clone(),
        mutates: x.mutates.clone(),
        complex: x.complex,
        rng_seed: x.rng_seed,
    };
    let mut manifest = Manifest {
        format_version: if plan.in_place.is_empty() {
            format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR)
        } else {
            crate::artifact::FORMAT_IN_PLACE.into()
        },
        target: "cpu".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        cpu: obj.cpu.clone(),
        cpu_features: obj.features.split(',').filter(|f| f.starts_with('+')).map(|s| s.to_string()).collect(),
        source_hash,
        symbols,
        inputs: packed.inputs.iter().map(|x| io(x, x.index)).collect(),
        outputs: packed.outputs.iter().map(|x| io(x, plan.outputs[x.index])).collect(),
        weights: packed
            .weights
            .iter()
            .map(|(x, offset, bytes)| WeightInfo {
                name: x.name.clone(),
                buf: x.index,
                offset: *offset,
                bytes: *bytes,
                transposed: false,
            })
            .collect(),
        buffers: plan.buffers.clone(),
        steps: plan.steps.clone(),
        in_place: plan.in_place.clone(),
        // Added by `write_artifact`, which sees the files' final bytes.
        files: Default::default(),
    };
    let mut blob = packed.blob;
    store_weights_for_gemm(&mut manifest, &mut blob);
    let so = link(&obj.objects)?;
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let files: [(&str, &[u8]); 5] = [
        ("kernels.so", &so),
        ("weights.bin", &blob),
        ("kernels.ll", obj.llvm_ir.as_bytes()),
        ("module.mlir", ten.as_bytes()),
        ("manifest.json", json.as_bytes()),
    ];
    crate::artifact::write_artifact(out, &files)?;
    Ok(manifest)
}

/// (result, argument) of each functionalized in-place update of a user input (`torch.export`'s
/// `user_input_mutation` outputs; the torch.compile backend marks AOT's the same way).
fn input_updates(m: &ember_ir::Module, f: ember_ir::OpId) -> Vec<(ember_ir::Value, ember_ir::Value)> {
    let Some(ret) = m.func_return(f) else { return vec![] };
    let args = &m.block(m.entry(f)).args;
    let named = |i: usize, key: &str| m.arg_attrs(f, i).and_then(|a| a.get(key)).and_then(|a| a.as_str());
    let mut pairs = Vec::new();
    for (i, &v) in m.op(ret).operands.iter().enumerate() {
        let Some(target) = m.res_attrs(f, i).and_then(|a| a.get("ember.input_mutation")).and_then(|a| a.as_str())
        else {
            continue;
        };
        if let Some(j) = (0..args.len()).find(|&j| named(j, "ember.input") == Some(target)) {
            pairs.push((v, args[j]));
        }
    }
    pairs
}

/// The GEMM library packs a row-major rhs (k×n) and lhs (m×k) fastest: measured here, a
/// 512×768×3072 product runs at ~234 GFLOP/s with a row-major rhs and ~170 with its transpose.
/// nn.Linear computes `x @ W.T`, so every Linear reads its weight transposed. A 2-D weight
/// that only GEMMs read, all through that transpose, is stored transposed in weights.bin and
/// its GEMMs read it row-major; the manifest marks it `transposed`.
fn store_weights_for_gemm(man: &mut Manifest, blob: &mut [u8]) {
    use ember_targets::cpu::plan::StridedRef;
    let konst = |v: &[String]| -> Option<Vec<i64>> { v.iter().map(|d| d.parse::<i64>().ok()).collect() };
    for wi in 0..man.weights.len() {
        let b = man.weights[wi].buf;
        let Some(dims) = konst(&man.buffers[b].dims) else { continue };
        let [a, bb] = dims[..] else { continue };
        if a < 2 || bb < 2 || man.outputs.iter().any(|o| o.buf == b) {
            continue;
        }
        // Every reader must be a GEMM operand that reads [a, b] as its transpose: the dim with
        // stride 1 walks b, the dim with stride b walks a, batch dims broadcast.
        // (step, is_rhs, dim of the operand walking b, dim walking a)
        let mut uses = Vec::new();
        let wants = |r: &StridedRef, along_b: usize, along_a: usize, batch: &[usize]| -> bool {
            let (Some(d), Some(s)) = (konst(&r.dims), konst(&r.strides)) else { return false };
            d[along_b] == bb
                && s[along_b] == 1
                && d[along_a] == a
                && s[along_a] == bb
                && batch.iter().all(|&x| s[x] == 0)
        };
        let ok = man.steps.iter().enumerate().all(|(si, st)| match st {
            Step::Kernel { out, args, also, .. } => *out != b && !args.contains(&b) && !also.contains(&b),
            Step::Sort { out, src, .. } => *out != b && *src != b,
            Step::Routine(l) => !l.outs.contains(&b) && !l.ins.contains(&b),
            Step::Gemm(g) => {
                let mut fine = g.out != b;
                // The rhs is fastest with its free dim at stride 1, the lhs with its contracting dim.
                if g.rhs.buf == b {
                    fine &= wants(&g.rhs, g.rhs_contract, g.rhs_free, &g.rhs_batch);
                    uses.push((si, true, g.rhs_contract, g.rhs_free));
                }
                if g.lhs.buf == b {
                    fine &= wants(&g.lhs, g.lhs_free, g.lhs_contract, &g.lhs_batch);
                    uses.push((si, false, g.lhs_free, g.lhs_contract));
                }
                fine
            }
        });
        if !ok || uses.is_empty() {
            continue;
        }
        let es = (man.weights[wi].bytes / (a * bb) as u64) as usize;
        let (off, (a, bb)) = (man.weights[wi].offset as usize, (a as usize, bb as usize));
        let src = blob[off..off + a * bb * es].to_vec();
        for r in 0..a {
            for c in 0..bb {
                let (from, to) = ((r * bb + c) * es, (c * a + r) * es);
                blob[off + to..off + to + es].copy_from_slice(&src[from..from + es]);
            }
        }
        for (si, rhs, along_b, along_a) in uses {
            let Step::Gemm(g) = &mut man.steps[si] else { unreachable!() };
            let r = if rhs { &mut g.rhs } else { &mut g.lhs };
            r.strides[along_b] = a.to_string();
            r.strides[along_a] = "1".into();
        }
        man.weights[wi].transposed = true;
    }
}

/// How `cc` links, asked once per process (`-print-prog-name=ld`, `-print-search-dirs`,
/// `-print-libgcc-file-name`): running its linker directly takes 9 ms where `cc` driving it
/// takes 23 (a ResNet training step's 16 graphs: 0.2 s of the first step).
struct Linker {
    ld: String,
    dirs: Vec<String>,
    /// The compiler's runtime library (libgcc.a): helpers LLVM may call (f16/bf16 conversions).
    builtins: String,
}

fn linker() -> Result<&'static Linker, String> {
    static LINKER: std::sync::OnceLock<Result<Linker, String>> = std::sync::OnceLock::new();
    let ask = |arg: &str| -> Result<String, String> {
        let o = std::process::Command::new("cc")
            .arg(arg)
            .output()
            .map_err(|e| format!("cannot run the system C compiler (cc) to link kernels: {e}"))?;
        if !o.status.success() {
            return Err(format!("`cc {arg}` failed:\n{}", String::from_utf8_lossy(&o.stderr)));
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    LINKER
        .get_or_init(|| {
            let dirs = ask("-print-search-dirs")?
                .lines()
                .find_map(|l| l.strip_prefix("libraries: ="))
                .map(|l| l.split(':').filter(|d| !d.is_empty()).map(str::to_string).collect())
                .unwrap_or_default();
            Ok(Linker { ld: ask("-print-prog-name=ld")?, dirs, builtins: ask("-print-libgcc-file-name")? })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Links LLVM's objects into a shared library with the system linker (in a scratch dir).
fn link(objects: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    let linker = linker()?;
    crate::scratch::with_temp_dir("link", |dir| {
        let mut names = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            let name = format!("kernels{i}.o");
            std::fs::write(dir.join(&name), o).map_err(|e| e.to_string())?;
            names.push(name);
        }
        let st = std::process::Command::new(&linker.ld)
            .args(["-shared", "--eh-frame-hdr", "--build-id=none", "-o", "kernels.so"])
            .args(&names)
            .args(linker.dirs.iter().map(|d| format!("-L{d}")))
            // libmvec: the vector variants of libm's functions that vectorized kernels call;
            // libc: memset and memcpy.
            .args(["--as-needed", "-lmvec", "-lm", "-lc"])
            .arg(&linker.builtins)
            .current_dir(dir)
            .output()
            .map_err(|e| format!("cannot run the linker `{}` to link kernels: {e}", linker.ld))?;
        if !st.status.success() {
            return Err(format!("linking kernels.so failed:\n{}", String::from_utf8_lossy(&st.stderr)));
        }
        std::fs::read(dir.join("kernels.so")).map_err(|e| e.to_string())
    })
}
