//! `ember compile --target cpu`: lower, plan, generate code, and write the artifact directory:
//! `manifest.json`, `kernels.so` (linked from LLVM's object by the system C compiler) and
//! `weights.bin` (every weight, 64-byte aligned, in argument order).

use crate::frontend::Imported;
use ember_ir::attr::Attr;
use ember_targets::cpu::plan::{self, BufKind};
use ember_targets::cpu::runtime::{IoInfo, Manifest, SymbolInfo, WeightInfo};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Who decides the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fusion {
    /// The e-graph optimizer with the CPU cost model (`fuse`).
    #[default]
    Egraph,
    /// No e-graph: the CPU planner's own greedy rule (inline everything cheap, materialize
    /// GEMM operands, reductions and values read by several kernels). Kept for comparison.
    Greedy,
}

pub fn compile(imported: Imported, out: &Path) -> Result<Manifest, String> {
    compile_with(imported, out, Fusion::default())
}

pub fn compile_with(imported: Imported, out: &Path, fusion: Fusion) -> Result<Manifest, String> {
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    crate::artifact::lower(&mut m)?;
    if fusion == Fusion::Egraph {
        crate::artifact::optimize(&mut m, "cpu")?;
    }
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    // The CPU codegen inlines producers into loop nests itself; the optimizer's kernels enter as
    // the values that must live in memory.
    let boundaries = ember_passes::egraph::inline_groups(&mut m, f, &|_| false);
    let plan = plan::plan(&m, f, &boundaries).map_err(|e| e.0)?;
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
        let bindable = m.block(entry).args.iter().any(|&a| m.ty(a).tensor().is_some_and(|t| t.dims.iter().any(|d| *d == ember_ir::SymExpr::Sym(s.name.clone()))));
        if !bindable {
            return Err(format!("symbolic size `{}` is not the size of any input dim, so the runtime cannot bind it", s.name));
        }
    }
    let names: Vec<String> = symbols.iter().map(|s| s.name.clone()).collect();
    let obj = ember_targets::cpu::codegen::codegen(&m, &plan, &names)?;
    let packed = crate::artifact::pack(&m, f, &imported.weights)?;
    // Arguments are the plan's first buffers, in order, so an argument index is its buffer id.
    debug_assert!(m.block(m.entry(f)).args.iter().enumerate().all(|(i, a)| plan.buf_of[a] == i && plan.buffers[i].kind == BufKind::Arg(i)));
    let io = |x: &crate::artifact::Io, buf: usize| IoInfo { name: x.name.clone(), buf, dtype: x.dtype.clone(), dims: x.dims.clone() };
    let manifest = Manifest {
        format_version: format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR),
        target: "cpu".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        cpu: obj.cpu.clone(),
        cpu_features: obj.features.split(',').filter(|f| f.starts_with('+')).map(|s| s.to_string()).collect(),
        source_hash,
        symbols,
        inputs: packed.inputs.iter().map(|x| io(x, x.index)).collect(),
        outputs: packed.outputs.iter().map(|x| io(x, plan.outputs[x.index])).collect(),
        weights: packed.weights.iter().map(|(x, offset, bytes)| WeightInfo { name: x.name.clone(), buf: x.index, offset: *offset, bytes: *bytes }).collect(),
        buffers: plan.buffers.clone(),
        steps: plan.steps.clone(),
    };
    let so = link(&obj.bytes)?;
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let files: [(&str, &[u8]); 5] = [
        ("kernels.so", &so),
        ("weights.bin", &packed.blob),
        ("kernels.ll", obj.llvm_ir.as_bytes()),
        ("module.mlir", ten.as_bytes()),
        ("manifest.json", json.as_bytes()),
    ];
    crate::artifact::write_dir(out, &files)?;
    Ok(manifest)
}

/// Links LLVM's object into a shared library with the system C compiler (in a scratch dir).
fn link(object: &[u8]) -> Result<Vec<u8>, String> {
    let dir = std::env::temp_dir().join(format!("ember-link-{}-{:?}", std::process::id(), std::thread::current().id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    let r = (|| {
        std::fs::write(dir.join("kernels.o"), object).map_err(|e| e.to_string())?;
        let st = std::process::Command::new("cc")
            .args(["-shared", "-o", "kernels.so", "kernels.o", "-lm", "-Wl,--build-id=none"])
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("cannot run the system C compiler (cc) to link kernels: {e}"))?;
        if !st.status.success() {
            return Err(format!("linking kernels.so failed:\n{}", String::from_utf8_lossy(&st.stderr)));
        }
        std::fs::read(dir.join("kernels.so")).map_err(|e| e.to_string())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    r
}
