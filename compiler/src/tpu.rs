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
use ember_ir::Module;
use ember_targets::tpu::{Bucket, IoInfo, Manifest, MeshAxis, Options, Vhlo, WeightInfo};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The StableHLO file inside an artifact.
pub const MODULE_FILE: &str = "module.stablehlo.mlir";

/// Lowers a module (torch or ten dialect) and runs the e-graph optimizer with the TPU cost model.
/// Its named composites (softmax, norms, attention, and matmul epilogues with an activation)
/// stay `ember.fusion_group`s, emitted as `stablehlo.composite`; `loop` groups are inlined (XLA
/// fuses loops itself), and so are `gemm` groups when `sharded`: the tensor-parallel rule reads
/// matmuls at the top level.
pub fn lower(m: &mut Module, sharded: bool) -> Result<(), String> {
    crate::artifact::lower(m)?;
    crate::artifact::optimize(m, "tpu")?;
    for f in m.funcs() {
        ember_passes::egraph::inline_groups(m, f, &|kind| !(kind == "loop" || (kind == "gemm" && sharded)));
    }
    Ok(())
}

/// Lowers a module (torch or ten dialect) and returns its StableHLO text.
pub fn stablehlo(m: &mut Module) -> Result<String, String> {
    lower(m, false)?;
    ember_targets::tpu::emit(m)
}

/// Lowers a module and returns its StableHLO: one text, or with symbolic dims one per padded
/// bucket, each after a `// bucket s0=4` line.
pub fn stablehlo_buckets(m: &mut Module) -> Result<String, String> {
    lower(m, false)?;
    let all = ember_targets::tpu::emit_buckets(m, &Options::default())?;
    if all.len() == 1 && all[0].0.is_empty() {
        return Ok(all.into_iter().next().unwrap().1.text);
    }
    Ok(all.into_iter().map(|(env, e)| format!("// bucket {}\n{}", bucket_label(&env), e.text)).collect())
}

fn bucket_label(env: &std::collections::BTreeMap<String, i64>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

pub fn compile(imported: Imported, out: &Path) -> Result<Manifest, String> {
    compile_with(imported, out, &Options::default())
}

/// Serializes StableHLO text as a VHLO portable artifact: (bytes, StableHLO version). Ember has
/// no VHLO writer of its own; the CLI passes one that runs `python -m ember.xla portable`.
pub type Portable<'a> = &'a dyn Fn(&str) -> Result<(Vec<u8>, String), String>;

/// The VHLO file next to a StableHLO module file.
pub fn vhlo_file(module: &str) -> String {
    format!("{}.vhlo.mlirbc", module.strip_suffix(".stablehlo.mlir").unwrap_or(module))
}

/// [`compile`] with the tpu flags: sharded over a device mesh when `opts.shard` is given
/// (`--mesh`, `--shard`), and the f32 matmul `--precision`.
pub fn compile_with(imported: Imported, out: &Path, opts: &Options) -> Result<Manifest, String> {
    compile_portable(imported, out, opts, None)
}

/// [`compile_with`], also writing a VHLO portable artifact of every module with `portable`.
pub fn compile_portable(imported: Imported, out: &Path, opts: &Options, portable: Option<Portable>) -> Result<Manifest, String> {
    let shard = opts.shard.as_ref();
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    lower(&mut m, shard.is_some())?;
    let mut all = ember_targets::tpu::emit_buckets(&m, opts)?;
    // The largest bucket is `module`; the others get their own files.
    let (last_env, emitted) = all.pop().expect("at least one module");
    let text = emitted.text;
    let mut buckets: Vec<(Bucket, String)> = all
        .into_iter()
        .enumerate()
        .map(|(i, (symbols, e))| (Bucket { symbols, module: format!("module.b{i}.stablehlo.mlir") }, e.text))
        .collect();
    let dynamic = !last_env.is_empty();
    if dynamic {
        buckets.push((Bucket { symbols: last_env, module: MODULE_FILE.into() }, String::new()));
    }
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    let packed = crate::artifact::pack(&m, f, &imported.weights)?;
    let plan = emitted.sharding.as_ref();
    let arg_spec = |i: usize| plan.map(|p| p.args[i].clone());
    let io = |x: &crate::artifact::Io, sharding| IoInfo { name: x.name.clone(), arg: x.index, dtype: x.dtype.clone(), dims: x.dims.clone(), sharding, mutates: x.mutates.clone() };
    let inputs = packed.inputs.iter().map(|x| io(x, arg_spec(x.index))).collect();
    let outputs = packed.outputs.iter().map(|x| io(x, plan.map(|p| p.results[x.index].clone()))).collect();
    let weights = packed
        .weights
        .iter()
        .map(|(x, offset, bytes)| WeightInfo {
            name: x.name.clone(),
            arg: x.index,
            offset: *offset,
            bytes: *bytes,
            dtype: x.dtype.clone(),
            dims: x.dims.clone(),
            sharding: arg_spec(x.index),
        })
        .collect();
    let blob = packed.blob;
    let manifest = Manifest {
        format_version: format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR),
        target: "tpu".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        source_hash,
        module: MODULE_FILE.into(),
        inputs,
        outputs,
        weights,
        mesh: shard.map(|o| o.mesh.iter().map(|(name, size)| MeshAxis { name: name.clone(), size: *size }).collect()),
        shard: shard.map(|o| o.rules.clone()),
        buckets: dynamic.then(|| buckets.iter().map(|(b, _)| b.clone()).collect()),
        vhlo: None,
    };
    let mut manifest = manifest;
    let mut vhlo_bytes: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(serialize) = portable {
        let modules = std::iter::once((MODULE_FILE, text.as_str())).chain(buckets.iter().filter(|(b, _)| b.module != MODULE_FILE).map(|(b, t)| (b.module.as_str(), t.as_str())));
        let mut version = String::new();
        let mut files = std::collections::BTreeMap::new();
        for (name, t) in modules {
            let (bytes, v) = serialize(t).map_err(|e| format!("--portable: {name}: {e}"))?;
            version = v;
            files.insert(name.to_string(), vhlo_file(name));
            vhlo_bytes.push((vhlo_file(name), bytes));
        }
        manifest.vhlo = Some(Vhlo { version, files });
    }
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let mut files: Vec<(&str, &[u8])> =
        vec![(MODULE_FILE, text.as_bytes()), ("weights.bin", &blob), ("module.mlir", ten.as_bytes()), ("manifest.json", json.as_bytes())];
    files.extend(buckets.iter().filter(|(b, _)| b.module != MODULE_FILE).map(|(b, t)| (b.module.as_str(), t.as_bytes())));
    files.extend(vhlo_bytes.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    crate::artifact::write_dir(out, &files)?;
    Ok(manifest)
}
