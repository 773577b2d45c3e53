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
use crate::target::{Options, Ran, Target, TargetOption};
use ember_ir::Module;
use ember_targets::tpu::{
    sharding, Bucket, IoInfo, Manifest, MeshAxis, Options as EmitOptions, Precision, Vhlo, WeightInfo,
};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The StableHLO file inside an artifact.
pub const MODULE_FILE: &str = "module.stablehlo.mlir";

/// The TPU target: StableHLO for XLA. The optimizer's named composites (softmax, norms,
/// attention, and matmul epilogues with an activation) stay `ember.fusion_group`s, emitted as
/// `stablehlo.composite`.
pub struct Tpu;

const OPTIONS: &[TargetOption] = &[
    TargetOption {
        name: "mesh",
        values: &[],
        default: None,
        elsewhere: "--mesh is a tpu option; the {target} target runs on one device",
    },
    TargetOption { name: "shard", values: &[], default: None, elsewhere: SHARD_NEEDS_MESH },
    TargetOption { name: "param-inputs", values: &[], default: None, elsewhere: PARAMS_NEED_MESH },
    TargetOption { name: "replicate-outputs", values: &[], default: None, elsewhere: REPLICATE_NEEDS_MESH },
    TargetOption {
        name: "portable",
        values: &[],
        default: None,
        elsewhere: "--portable is a tpu option (VHLO artifacts); not for the {target} target",
    },
    TargetOption {
        name: "precision",
        values: &Precision::NAMES,
        default: None,
        elsewhere: "--precision is a tpu option; the {target} target computes f32 matmuls in f32",
    },
];

const SHARD_NEEDS_MESH: &str = "--shard needs --mesh (e.g. `--mesh x=2,y=4 --shard tp`)";
const PARAMS_NEED_MESH: &str =
    "--param-inputs needs --mesh: it says which inputs the sharding rules treat as parameters";
const REPLICATE_NEEDS_MESH: &str = "--replicate-outputs needs --mesh: without one every output is whole already";

/// The emitter's options from the target options (checked by [`Target::check`]).
fn emit_options(opts: &Options) -> Result<EmitOptions, String> {
    let shard = match opts.value("mesh") {
        Some(mesh) => Some(sharding::Options::parse(
            mesh,
            &opts.values("shard"),
            opts.value("param-inputs"),
            opts.flag("replicate-outputs"),
        )?),
        None if opts.flag("shard") => return Err(SHARD_NEEDS_MESH.into()),
        None if opts.flag("param-inputs") => return Err(PARAMS_NEED_MESH.into()),
        None if opts.flag("replicate-outputs") => return Err(REPLICATE_NEEDS_MESH.into()),
        None => None,
    };
    let precision = opts
        .value("precision")
        .map(|p| Precision::parse(p).expect("checked against Precision::NAMES"))
        .unwrap_or_default();
    Ok(EmitOptions { shard, precision })
}

impl Target for Tpu {
    fn name(&self) -> &'static str {
        "tpu"
    }

    fn options(&self) -> &'static [TargetOption] {
        OPTIONS
    }

    fn check(&self, opts: &Options) -> Result<(), String> {
        emit_options(opts).map(|_| ())
    }

    fn rewrite(&self, m: &mut Module, _opts: &Options) -> Result<(), String> {
        if let Some(f) = m.func_by_name("main") {
            ember_targets::tpu::buckets::mask_padding(m, f);
        }
        Ok(())
    }

    // XLA fuses loops itself; with a mesh, the tensor-parallel rule reads matmuls at the top level.
    fn keeps(&self, kind: &str, opts: &Options) -> bool {
        !(kind == "loop" || (kind == "gemm" && opts.flag("mesh")))
    }

    fn compile(&self, model: Imported, out: &Path, opts: &Options) -> Result<Vec<String>, String> {
        let portable = opts.flag("portable").then(|| {
            crate::python::find().ok_or_else(|| {
                "ember compile --portable needs a Python with jax 0.10.2 and the ember package (`make setup` makes ~/.cache/ember/venv), or EMBER_PYTHON set to one".to_string()
            })
        });
        let python = portable.transpose()?;
        let man = compile(self, model, out, opts, python.as_deref())?;
        Ok(vec![format!(
            "wrote {} (StableHLO for XLA; inputs: {}, weights: {}, outputs: {}); run it with `ember run` or\n  python -m ember.xla run {} --inputs IN.npz --outputs OUT.npz",
            out.display(),
            man.inputs.len(),
            man.weights.len(),
            man.outputs.len(),
            out.display()
        )])
    }

    fn run(&self, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> Result<Ran, String> {
        let exit_code = crate::python::run_artifact(self.name(), dir, inputs, outputs, repeat)?;
        Ok(Ran { notes: vec![], exit_code })
    }
}

/// Lowers a module and returns its StableHLO: one text, or with symbolic dims one per padded
/// bucket, each after a `// bucket s0=4` line.
pub fn stablehlo_buckets(m: &mut Module) -> Result<String, String> {
    Tpu.lower(m, &Options::default())?;
    let all = ember_targets::tpu::emit_buckets(m, &EmitOptions::default())?;
    if all.len() == 1 && all[0].0.is_empty() {
        return Ok(all.into_iter().next().unwrap().1.text);
    }
    Ok(all.into_iter().map(|(env, e)| format!("// bucket {}\n{}", bucket_label(&env), e.text)).collect())
}

fn bucket_label(env: &std::collections::BTreeMap<String, i64>) -> String {
    env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
}

/// The VHLO file next to a StableHLO module file.
pub fn vhlo_file(module: &str) -> String {
    format!("{}.vhlo.mlirbc", module.strip_suffix(".stablehlo.mlir").unwrap_or(module))
}

/// Writes the artifact; with `portable`, the Python that writes a VHLO artifact of every module.
fn compile(
    tpu: &Tpu,
    imported: Imported,
    out: &Path,
    target_opts: &Options,
    portable: Option<&Path>,
) -> Result<Manifest, String> {
    let opts = &emit_options(target_opts)?;
    let shard = opts.shard.as_ref();
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    tpu.lower(&mut m, target_opts)?;
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
    let io = |x: &crate::artifact::Io, sharding| IoInfo {
        name: x.name.clone(),
        arg: x.index,
        dtype: x.dtype.clone(),
        dims: x.dims.clone(),
        sharding,
        mutates: x.mutates.clone(),
        complex: x.complex,
        rng_seed: x.rng_seed,
    };
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
        sizes: packed.sizes.clone(),
        vhlo: None,
    };
    let mut manifest = manifest;
    let mut vhlo_bytes: Vec<(String, Vec<u8>)> = Vec::new();
    if let Some(python) = portable {
        let modules = std::iter::once((MODULE_FILE, text.as_str())).chain(
            buckets.iter().filter(|(b, _)| b.module != MODULE_FILE).map(|(b, t)| (b.module.as_str(), t.as_str())),
        );
        let mut version = String::new();
        let mut files = std::collections::BTreeMap::new();
        for (name, t) in modules {
            let (bytes, v) = vhlo(python, t).map_err(|e| format!("--portable: {name}: {e}"))?;
            version = v;
            files.insert(name.to_string(), vhlo_file(name));
            vhlo_bytes.push((vhlo_file(name), bytes));
        }
        manifest.vhlo = Some(Vhlo { version, files });
    }
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let mut files: Vec<(&str, &[u8])> = vec![
        (MODULE_FILE, text.as_bytes()),
        ("weights.bin", &blob),
        ("module.mlir", ten.as_bytes()),
        ("manifest.json", json.as_bytes()),
    ];
    files.extend(
        buckets.iter().filter(|(b, _)| b.module != MODULE_FILE).map(|(b, t)| (b.module.as_str(), t.as_bytes())),
    );
    files.extend(vhlo_bytes.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    crate::artifact::write_artifact(out, &files)?;
    Ok(manifest)
}

/// `python -m ember.xla portable`: StableHLO text -> (VHLO bytecode, StableHLO version).
fn vhlo(python: &Path, text: &str) -> Result<(Vec<u8>, String), String> {
    crate::scratch::with_temp_dir("vhlo", |dir| {
        let (src, dst) = (dir.join("m.stablehlo.mlir"), dir.join("m.vhlo.mlirbc"));
        std::fs::write(&src, text).map_err(|e| format!("cannot write `{}`: {e}", src.display()))?;
        let version =
            crate::python::ember_xla(python, "portable", [&src, &dst], "`python -m ember.xla portable` failed: ")?;
        let bytes = std::fs::read(&dst).map_err(|e| format!("cannot read `{}`: {e}", dst.display()))?;
        Ok((bytes, version.trim().to_string()))
    })
}
