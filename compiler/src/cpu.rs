//! `ember compile --target cpu`: lower, plan, generate code, and write the artifact directory:
//! `manifest.json`, `kernels.so` (linked from LLVM's object by the system C compiler) and
//! `weights.bin` (every weight, 64-byte aligned, in argument order).

use crate::frontend::Imported;
use ember_ir::attr::Attr;
use ember_ir::Module;
use ember_targets::cpu::plan::{self, BufKind};
use ember_targets::cpu::runtime::{IoInfo, Manifest, SymbolInfo, WeightInfo};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The pass pipeline the CPU target runs before planning.
pub const PIPELINE: &str = "canonicalize,torch-to-ten,cse,dce";

pub fn lower(m: &mut Module) -> Result<(), String> {
    let passes = ember_passes::parse_pipeline(PIPELINE).map_err(|e| e.to_string())?;
    ember_passes::run_pipeline(m, &passes, &mut |_, _| {}).map_err(|e| e.to_string())
}

pub fn compile(imported: Imported, out: &Path) -> Result<Manifest, String> {
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    lower(&mut m)?;
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    let plan = plan::plan(&m, f).map_err(|e| e.0)?;
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
    let names: Vec<String> = symbols.iter().map(|s| s.name.clone()).collect();
    let obj = ember_targets::cpu::codegen::codegen(&m, &plan, &names)?;

    // Inputs and weights by argument.
    let entry = m.entry(f);
    let mut inputs = Vec::new();
    let mut weights = Vec::new();
    let mut blob: Vec<u8> = Vec::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let attrs = m.arg_attrs(f, i).cloned().unwrap_or_default();
        let t = m.ty(a).tensor().ok_or("non-tensor argument")?;
        let buf = plan.buf_of[&a];
        debug_assert_eq!(plan.buffers[buf].kind, BufKind::Arg(i));
        if let Some(Attr::Str(name)) = attrs.get("ember.input") {
            inputs.push(IoInfo { name: name.clone(), buf, dtype: t.dtype.mlir_name().into(), dims: plan::dims_text(t) });
            continue;
        }
        let name = ["ember.param", "ember.buffer", "ember.constant"].iter().find_map(|k| attrs.get(*k).and_then(|a| a.as_str())).ok_or("argument without a role")?;
        let w = imported.weights.iter().find(|(n, _)| n == name).map(|(_, w)| w).ok_or_else(|| format!("weight `{name}` is missing"))?;
        let data = w.data.as_ref().ok_or_else(|| format!("weight `{name}` has no data: compile from a .pt2 archive, not a bare model.json"))?;
        let bytes = &data.bytes()[..t.static_shape().map(|s| s.iter().product::<i64>() as usize).unwrap_or(0) * t.dtype.byte_size()];
        while blob.len() % 64 != 0 {
            blob.push(0);
        }
        weights.push(WeightInfo { name: name.to_string(), buf, offset: blob.len() as u64, bytes: bytes.len() as u64 });
        blob.extend_from_slice(bytes);
    }
    let ret = m.func_return(f).ok_or("no return")?;
    let outputs = m
        .op(ret)
        .operands
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let t = m.ty(v).tensor().unwrap();
            let name = m.res_attrs(f, i).and_then(|a| a.get("ember.output")).and_then(|a| a.as_str()).unwrap_or("").to_string();
            IoInfo { name, buf: plan.outputs[i], dtype: t.dtype.mlir_name().into(), dims: plan::dims_text(t) }
        })
        .collect();
    let manifest = Manifest {
        format_version: format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR),
        target: "cpu".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        cpu: obj.cpu.clone(),
        cpu_features: obj.features.split(',').filter(|f| f.starts_with('+')).map(|s| s.to_string()).collect(),
        source_hash,
        symbols,
        inputs,
        outputs,
        weights,
        buffers: plan.buffers.clone(),
        steps: plan.steps.clone(),
    };

    // Write everything into a sibling temp dir, then swap it in: never a half-written artifact.
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    if out.exists() && !out.join("manifest.json").exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(format!("`{}` exists and is not an Ember artifact; refusing to overwrite it", out.display()));
    }
    let tmp = parent.join(format!(".{}.tmp-{}", out.file_name().and_then(|n| n.to_str()).unwrap_or("out"), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| -> Result<(), String> {
        std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("kernels.o"), &obj.bytes).map_err(|e| e.to_string())?;
        let st = std::process::Command::new("cc")
            .args(["-shared", "-o", "kernels.so", "kernels.o", "-lm", "-Wl,--build-id=none"])
            .current_dir(&tmp)
            .output()
            .map_err(|e| format!("cannot run the system C compiler (cc) to link kernels: {e}"))?;
        if !st.status.success() {
            return Err(format!("linking kernels.so failed:\n{}", String::from_utf8_lossy(&st.stderr)));
        }
        std::fs::remove_file(tmp.join("kernels.o")).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("weights.bin"), &blob).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("kernels.ll"), &obj.llvm_ir).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("module.mlir"), m.to_string()).map_err(|e| e.to_string())?;
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("manifest.json"), text + "\n").map_err(|e| e.to_string())?;
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| format!("cannot replace `{}`: {e}", out.display()))?;
        }
        std::fs::rename(&tmp, out).map_err(|e| format!("cannot move the artifact into `{}`: {e}", out.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result.map(|_| manifest)
}
