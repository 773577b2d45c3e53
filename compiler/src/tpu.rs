//! `ember compile --target tpu`: lower to the `ten` dialect, emit StableHLO, and write the
//! artifact directory atomically:
//!
//! - `module.stablehlo.mlir`: StableHLO text, `func.func public @main` taking every argument of
//!   the imported `@main` in order (weights and user inputs interleaved as torch.export put them);
//! - `weights.bin`: every weight, 64-byte aligned, in argument order (the CPU target's layout);
//! - `manifest.json`: [`ember_targets::tpu::Manifest`] (`format_version`, `target = "tpu"`, inputs,
//!   outputs and weights with their argument index, dtype and dims);
//! - `module.mlir`: the `ten`-dialect module the text was emitted from (for debugging).
//!
//! Running it is `python -m ember.xla run DIR --inputs IN.npz --outputs OUT.npz` (PJRT through
//! jaxlib); `ember run` on a tpu artifact calls that.

use crate::frontend::Imported;
use ember_ir::attr::Attr;
use ember_ir::Module;
use ember_targets::tpu::{IoInfo, Manifest, WeightInfo};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The pass pipeline the TPU target runs before emitting StableHLO (the CPU target's).
pub const PIPELINE: &str = "canonicalize,torch-to-ten,cse,dce";

/// The StableHLO file inside an artifact.
pub const MODULE_FILE: &str = "module.stablehlo.mlir";

pub fn lower(m: &mut Module) -> Result<(), String> {
    let passes = ember_passes::parse_pipeline(PIPELINE).map_err(|e| e.to_string())?;
    ember_passes::run_pipeline(m, &passes, &mut |_, _| {}).map_err(|e| e.to_string())
}

/// Lowers a module (torch or ten dialect) and returns its StableHLO text.
pub fn stablehlo(m: &mut Module) -> Result<String, String> {
    lower(m)?;
    ember_targets::tpu::emit(m)
}

fn dims_text(t: &ember_ir::TensorType) -> Vec<String> {
    t.dims.iter().map(|d| d.to_string()).collect()
}

pub fn compile(imported: Imported, out: &Path) -> Result<Manifest, String> {
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    let text = stablehlo(&mut m)?;
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    let entry = m.entry(f);
    let mut inputs = Vec::new();
    let mut weights = Vec::new();
    let mut blob: Vec<u8> = Vec::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let attrs = m.arg_attrs(f, i).cloned().unwrap_or_default();
        let t = m.ty(a).tensor().ok_or("non-tensor argument")?;
        let (dtype, dims) = (t.dtype.mlir_name().to_string(), dims_text(t));
        if let Some(Attr::Str(name)) = attrs.get("ember.input") {
            inputs.push(IoInfo { name: name.clone(), arg: i, dtype, dims });
            continue;
        }
        let name = ["ember.param", "ember.buffer", "ember.constant"]
            .iter()
            .find_map(|k| attrs.get(*k).and_then(|a| a.as_str()))
            .ok_or_else(|| format!("argument {i} has no role (ember.input, ember.param, ember.buffer or ember.constant)"))?;
        let w = imported.weights.iter().find(|(n, _)| n == name).map(|(_, w)| w).ok_or_else(|| format!("weight `{name}` is missing"))?;
        let data = w.data.as_ref().ok_or_else(|| format!("weight `{name}` has no data: compile from a .pt2 archive, not a bare model.json"))?;
        let n = t.static_shape().map(|s| s.iter().product::<i64>() as usize).unwrap_or(0) * t.dtype.byte_size();
        let bytes = data.bytes().get(..n).ok_or_else(|| format!("weight `{name}` is shorter than its type"))?;
        while blob.len() % 64 != 0 {
            blob.push(0);
        }
        weights.push(WeightInfo { name: name.to_string(), arg: i, offset: blob.len() as u64, bytes: bytes.len() as u64, dtype, dims });
        blob.extend_from_slice(bytes);
    }
    let ret = m.func_return(f).ok_or("no return")?;
    let outputs = m
        .op(ret)
        .operands
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let t = m.ty(v).tensor().ok_or("non-tensor result")?;
            let name = m.res_attrs(f, i).and_then(|a| a.get("ember.output")).and_then(|a| a.as_str()).unwrap_or("").to_string();
            Ok(IoInfo { name, arg: i, dtype: t.dtype.mlir_name().into(), dims: dims_text(t) })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let manifest = Manifest {
        format_version: format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR),
        target: "tpu".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        source_hash,
        module: MODULE_FILE.into(),
        inputs,
        outputs,
        weights,
    };
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let files: [(&str, &[u8]); 4] =
        [(MODULE_FILE, text.as_bytes()), ("weights.bin", &blob), ("module.mlir", ten.as_bytes()), ("manifest.json", json.as_bytes())];
    write_dir(out, &files)?;
    Ok(manifest)
}

/// Writes `files` into a sibling temp dir, then swaps it in for `out`: never a half-written
/// artifact. An existing `out` is replaced only if it is an Ember artifact (or empty).
fn write_dir(out: &Path, files: &[(&str, &[u8])]) -> Result<(), String> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    if out.exists() && !out.join("manifest.json").exists() && std::fs::read_dir(out).map(|mut d| d.next().is_some()).unwrap_or(true) {
        return Err(format!("`{}` exists and is not an Ember artifact; refusing to overwrite it", out.display()));
    }
    let tmp = parent.join(format!(".{}.tmp-{}", out.file_name().and_then(|n| n.to_str()).unwrap_or("out"), std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = (|| -> Result<(), String> {
        std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create `{}`: {e}", tmp.display()))?;
        for (name, bytes) in files {
            std::fs::write(tmp.join(name), bytes).map_err(|e| format!("cannot write `{name}`: {e}"))?;
        }
        if out.exists() {
            std::fs::remove_dir_all(out).map_err(|e| format!("cannot replace `{}`: {e}", out.display()))?;
        }
        std::fs::rename(&tmp, out).map_err(|e| format!("cannot move the artifact into `{}`: {e}", out.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    result
}
