//! Compiled artifacts: a directory with `manifest.json` plus target files. The manifest's
//! `format_version` is `MAJOR.MINOR`; readers refuse an unknown major.

use crate::target::Target;
use ember_passes::PassContext;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const FORMAT_MAJOR: u32 = 2;
/// 2.1: `files` (size and SHA-256 of every other file) in every manifest; 2.0 artifacts load
/// without it.
pub const FORMAT_MINOR: u32 = 1;
/// The version of a cpu artifact that computes outputs in their inputs' memory (`in_place`),
/// which a reader of 2.x would not set up: only those artifacts need a reader of major 3.
pub const FORMAT_IN_PLACE: &str = "3.0";
/// The newest major version this Ember reads.
const FORMAT_MAJOR_READ: u32 = 3;

/// The part of a manifest every reader checks before anything else.
#[derive(Debug, Serialize, Deserialize)]
pub struct ManifestHeader {
    pub format_version: String,
    pub target: String,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ArtifactError(pub String);

pub fn read_header(dir: &Path) -> Result<ManifestHeader, ArtifactError> {
    let path: PathBuf = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ArtifactError(format!("`{}` is not an Ember artifact: cannot read {}: {e}", dir.display(), path.display()))
    })?;
    let h: ManifestHeader =
        serde_json::from_str(&text).map_err(|e| ArtifactError(format!("{} is malformed: {e}", path.display())))?;
    let major = h.format_version.split('.').next().and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if (FORMAT_MAJOR..=FORMAT_MAJOR_READ).contains(&m) => Ok(h),
        Some(m) => Err(ArtifactError(format!(
            "{} has format_version {} (major {m}); this Ember reads majors {FORMAT_MAJOR} to {FORMAT_MAJOR_READ}. Recompile the model with this Ember.",
            path.display(),
            h.format_version
        ))),
        None => Err(ArtifactError(format!("{}: format_version `{}` is not MAJOR.MINOR", path.display(), h.format_version))),
    }
}

/// The pass pipeline every target runs before its own lowering.
pub const PIPELINE: &str = "canonicalize,torch-to-ten,cse,dce";

pub fn lower(m: &mut ember_ir::Module, cx: &mut PassContext) -> Result<(), String> {
    let passes = ember_passes::parse_pipeline(PIPELINE).map_err(|e| e.to_string())?;
    ember_passes::run_pipeline(m, &passes, cx, &mut |_, _| {}).map_err(|e| e.to_string())
}

/// The e-graph optimizer with the context's target (after `lower`): rewrites, composites and
/// kernels as `ember.fusion_group`s. Its trace joins the context's (`--trace`, `--report`).
pub fn optimize(m: &mut ember_ir::Module, cx: &mut PassContext) -> Result<(), String> {
    // Only a record: `module.mlir` says whose cost model chose its kernels (and `ember opt` on it
    // optimizes for that target again, `PassContext::for_module`).
    m.attrs.insert("ember.target".into(), ember_ir::Attr::Str(cx.egraph.target.clone()));
    ember_passes::egraph::fuse_pass(m, cx)?;
    ember_ir::verify::verify(m).map_err(|errs| {
        let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        format!(
            "internal error: the IR does not verify after the e-graph optimizer:
  {}",
            lines.join(
                "
  "
            )
        )
    })?;
    Ok(())
}

/// Writes `out/report/` for `module` compiled for `target`: fusion.md, fusion.dot and, with
/// Graphviz, fusion.svg (through a temp dir renamed into place, like every output). The
/// optimizer is deterministic, so this describes exactly the kernels `compile` built. Returns
/// the line that says where it is.
pub fn write_report(
    out: &Path,
    mut module: ember_ir::Module,
    target: &dyn Target,
    model: &str,
) -> Result<String, String> {
    let mut cx = target.pass_context();
    lower(&mut module, &mut cx)?;
    let table = target.cost_table();
    optimize(&mut module, &mut cx)?;
    let trace = cx.traces.last().expect("optimize leaves a trace");
    let f = module.func_by_name("main").ok_or("the module has no @main")?;
    let md = ember_passes::egraph::report::markdown(model, &module, f, table, trace);
    let dot = ember_passes::egraph::report::dot(&module, f, table);
    let dir = out.join("report");
    let tmp = out.join(".report.tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let w = |name: &str, bytes: &[u8]| {
        std::fs::write(tmp.join(name), bytes).map_err(|e| format!("cannot write {name}: {e}"))
    };
    w("fusion.md", md.as_bytes())?;
    w("fusion.dot", dot.as_bytes())?;
    // The picture needs Graphviz; the DOT file is always there.
    if let Ok(o) = std::process::Command::new("dot").arg("-Tsvg").arg(tmp.join("fusion.dot")).output() {
        if o.status.success() {
            w("fusion.svg", &o.stdout)?;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir).map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    Ok(format!("wrote {}", dir.join("fusion.md").display()))
}

/// A user input, weight or output of `@main`, by argument (or result) index.
pub struct Io {
    pub index: usize,
    pub name: String,
    pub dtype: String,
    pub dims: Vec<String>,
    /// For a result that is a functionalized in-place update rather than a user output:
    /// `input NAME` or `buffer NAME`, the value NAME holds after the call.
    pub mutates: Option<String>,
    /// A complex input or output, whose `dtype` and `dims` are those of its real view (a trailing
    /// dim of 2): `.npz` files hold it as complex64/complex128.
    pub complex: bool,
    /// The seed input of the graph's random ops (`torch-to-ten` adds it).
    pub rng_seed: bool,
}

/// The seed `ember run` gives a graph's random ops when its inputs do not: torch's default CPU
/// generator's (`torch.initial_seed()` in a fresh process), so a run is reproducible.
pub const DEFAULT_SEED: i64 = 67280421310721;

/// `@main`'s arguments split into user inputs and weights, with every weight packed into one
/// blob (64-byte aligned, argument order): the `weights.bin` of every target.
pub struct Packed {
    pub inputs: Vec<Io>,
    /// (io, offset, bytes) per weight.
    pub weights: Vec<(Io, u64, u64)>,
    pub outputs: Vec<Io>,
    pub blob: Vec<u8>,
    /// Padded buckets: the argument that receives each symbol's true size.
    pub sizes: BTreeMap<String, usize>,
}

pub fn pack(
    m: &ember_ir::Module,
    f: ember_ir::OpId,
    weights: &[(String, crate::frontend::Weight)],
) -> Result<Packed, String> {
    use ember_ir::attr::Attr;
    let entry = m.entry(f);
    let mut p = Packed { inputs: vec![], weights: vec![], outputs: vec![], blob: vec![], sizes: BTreeMap::new() };
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let attrs = m.arg_attrs(f, i).cloned().unwrap_or_default();
        let t = m.ty(a).tensor().ok_or("non-tensor argument")?;
        let io = |name: &str| Io {
            index: i,
            name: name.to_string(),
            dtype: t.dtype.mlir_name().into(),
            dims: t.dim_strings(),
            mutates: None,
            complex: attrs.contains_key(crate::frontend::COMPLEX_ATTR),
            rng_seed: attrs.contains_key(ember_passes::RNG_SEED),
        };
        if let Some(Attr::Str(name)) = attrs.get("ember.input") {
            p.inputs.push(io(name));
            continue;
        }
        if let Some(Attr::Str(sym)) = attrs.get(ember_targets::tpu::buckets::SIZE_ATTR) {
            p.sizes.insert(sym.clone(), i);
            continue;
        }
        let name = ["ember.param", "ember.buffer", "ember.constant"]
            .iter()
            .find_map(|k| attrs.get(*k).and_then(|a| a.as_str()))
            .ok_or_else(|| {
                format!("argument {i} has no role (ember.input, ember.param, ember.buffer or ember.constant)")
            })?;
        let w = weights
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, w)| w)
            .ok_or_else(|| format!("weight `{name}` is missing"))?;
        let data = w.data.as_ref().ok_or_else(|| {
            format!("weight `{name}` has no data: compile from a .pt2 archive, not a bare model.json")
        })?;
        let n = t.static_shape().map(|s| s.iter().product::<i64>() as usize).unwrap_or(0) * t.dtype.byte_size();
        let bytes = data.bytes().get(..n).ok_or_else(|| format!("weight `{name}` is shorter than its type"))?;
        while !p.blob.len().is_multiple_of(64) {
            p.blob.push(0);
        }
        p.weights.push((io(name), p.blob.len() as u64, bytes.len() as u64));
        p.blob.extend_from_slice(bytes);
    }
    let ret = m.func_return(f).ok_or("no return")?;
    for (i, &v) in m.op(ret).operands.iter().enumerate() {
        let t = m.ty(v).tensor().ok_or("non-tensor result")?;
        let name =
            m.res_attrs(f, i).and_then(|a| a.get("ember.output")).and_then(|a| a.as_str()).unwrap_or("").to_string();
        let ra = m.res_attrs(f, i);
        let of = |k: &str| ra.and_then(|a| a.get(k)).and_then(|a| a.as_str()).map(|s| s.to_string());
        let mutates = of("ember.input_mutation")
            .map(|n| format!("input {n}"))
            .or_else(|| of("ember.buffer_mutation").map(|n| format!("buffer {n}")));
        let complex = ra.is_some_and(|a| a.contains_key(crate::frontend::COMPLEX_ATTR));
        p.outputs.push(Io {
            index: i,
            name,
            dtype: t.dtype.mlir_name().into(),
            dims: t.dim_strings(),
            mutates,
            complex,
            rng_seed: false,
        });
    }
    Ok(p)
}

/// The .npz array name of each output: user outputs are out0, out1, ... in order; an in-place
/// update of an input or buffer is `mutated_input.NAME` / `mutated_buffer.NAME`, so the user
/// outputs keep the numbering torch's own outputs have.
pub fn output_array_names(mutates: &[Option<String>]) -> Vec<String> {
    let mut k = 0;
    mutates
        .iter()
        .map(|m| match m.as_deref().and_then(|m| m.split_once(' ')) {
            Some((kind, name)) => format!("mutated_{kind}.{name}"),
            None => {
                k += 1;
                format!("out{}", k - 1)
            }
        })
        .collect()
}

/// Writes an artifact: `files` must include `manifest.json` (a JSON object), to which this adds
/// `files`, the size and SHA-256 of every other file, which loaders check before reading any
/// (`ember_targets::checksum`). The result is as deterministic as the files.
pub fn write_artifact(out: &Path, files: &[(&str, &[u8])]) -> Result<(), String> {
    let (mi, (_, text)) = files
        .iter()
        .enumerate()
        .find(|(_, (n, _))| *n == "manifest.json")
        .ok_or("internal error: an artifact without manifest.json")?;
    let mut man: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("internal error: manifest.json is not JSON: {e}"))?;
    let sums =
        ember_targets::checksum::sums(files.iter().filter(|(n, _)| *n != "manifest.json").map(|(n, b)| (*n, *b)));
    let obj = man.as_object_mut().ok_or("internal error: manifest.json is not a JSON object")?;
    obj.insert("files".into(), serde_json::to_value(sums).map_err(|e| e.to_string())?);
    let json = serde_json::to_string_pretty(&man).map_err(|e| e.to_string())? + "\n";
    let mut all: Vec<(&str, &[u8])> = files.to_vec();
    all[mi].1 = json.as_bytes();
    write_dir(out, &all)
}

/// Checks the files of the artifact in `dir` against the checksums in its manifest (any target).
pub fn verify(dir: &Path) -> Result<(), String> {
    ember_targets::checksum::verify_dir(dir)
}

/// Writes `files` into a sibling temp dir, then swaps it in for `out`: never a half-written
/// artifact. An existing `out` is replaced only if it is an Ember artifact (or empty).
pub fn write_dir(out: &Path, files: &[(&str, &[u8])]) -> Result<(), String> {
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create `{}`: {e}", parent.display()))?;
    // Another compile into `out` may move it aside between these checks (`swap_in`'s fallback):
    // a directory gone meanwhile is no reason to refuse.
    let holds_files = |d: &Path| match std::fs::read_dir(d) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    };
    if out.exists() && !out.join("manifest.json").exists() && holds_files(out) {
        return Err(format!("`{}` exists and is not an Ember artifact; refusing to overwrite it", out.display()));
    }
    let tmp = crate::scratch::sibling(out, "tmp");
    let result = (|| -> Result<(), String> {
        std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create `{}`: {e}", tmp.display()))?;
        for (name, bytes) in files {
            let path = tmp.join(name);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
            }
            std::fs::write(&path, bytes).map_err(|e| format!("cannot write `{name}`: {e}"))?;
        }
        swap_in(&tmp, out).map_err(|e| format!("cannot move the artifact into `{}`: {e}", out.display()))
    })();
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Puts directory `new` at `out`. An existing `out` is exchanged with `new` in one step where the
/// filesystem can (then `new` holds the old artifact, for the caller to remove), else renamed
/// aside first. Concurrent compiles into one `out` race between those steps; each retries, so
/// `out` always ends as one complete artifact.
fn swap_in(new: &Path, out: &Path) -> std::io::Result<()> {
    use std::io::ErrorKind;
    let mut exchange_works = true;
    for _ in 0..100 {
        if exchange_works {
            match exchange(new, out) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) if e.kind() == ErrorKind::Unsupported => exchange_works = false,
                Err(e) => return Err(e),
            }
        }
        let aside = crate::scratch::sibling(out, "old");
        let moved = match std::fs::rename(out, &aside) {
            Ok(()) => true,
            Err(e) if e.kind() == ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        };
        let r = std::fs::rename(new, out);
        if moved {
            if r.is_err() {
                let _ = std::fs::rename(&aside, out);
            }
            let _ = std::fs::remove_dir_all(&aside);
        }
        match r {
            Ok(()) => return Ok(()),
            // Another compile put its artifact at `out` meanwhile.
            Err(e) if matches!(e.kind(), ErrorKind::DirectoryNotEmpty | ErrorKind::AlreadyExists) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("other processes kept replacing it; try again"))
}

/// Swaps two existing paths atomically (`renameat2(RENAME_EXCHANGE)`); `Unsupported` where the
/// system or filesystem cannot.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(|e| {
        if e == rustix::io::Errno::INVAL {
            std::io::ErrorKind::Unsupported.into()
        } else {
            e.into()
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Ops of an imported model that no target lowering handles (they stay torch ops after the
/// pipeline), by target name (`aten.sort`), each once, in program order. A lowering that fails
/// outright is an error naming its op.
pub fn unlowered_ops(mut m: ember_ir::Module) -> Result<Vec<String>, String> {
    // No pass of the pipeline reads the target: any context will do.
    lower(&mut m, &mut PassContext::new("cpu"))?;
    let mut out: Vec<String> = Vec::new();
    m.walk(m.top, &mut |op| {
        let name = &m.op(op).name;
        if let Some(t) = name.strip_prefix("torch.") {
            if !out.iter().any(|o| o == t) {
                out.push(t.to_string());
            }
        }
    });
    Ok(out)
}
