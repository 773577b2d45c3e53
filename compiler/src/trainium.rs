//! `ember compile --target trainium`: the whole program as an XLA HLO module for neuronx-cc, plus
//! NKI kernels for the fusion groups the optimizer formed. The artifact directory holds:
//!
//! - `model.hlo_module.pb` + `model.hlo.txt`: the **portable form**. Each kernel group is an HLO
//!   `call` of computation `ember_kernel_<name>` tagged with frontend attributes
//!   `ember_kernel`/`ember_kind`; its body is plain HLO, so XLA CPU runs it (`ember run`).
//! - `model.neuron.hlo_module.pb` + `.txt`: the **Neuron form**: each kernel call is a
//!   `custom-call` to `AwsNeuronCustomNativeKernel` whose `backend_config` is a placeholder naming
//!   the kernel; `build_on_neuron_host.py` replaces it with the config `nki` produces on a Neuron
//!   host (untested here: no Neuron SDK).
//! - `kernels/<name>.py` (NKI source, verified tile plan) and `kernels/<name>.stablehlo.mlir`
//!   (the group's body alone, the reference the kernel is checked against region by region).
//! - `model.stablehlo.mlir` / `model.neuron.stablehlo.mlir` (what was converted), `module.mlir`
//!   (the legalized `ten` module), `weights.bin`, `manifest.json`.
//!
//! HLO comes from XLA's own StableHLO -> HLO converter (jaxlib, through `python -m ember.xla
//! to-hlo`), so the text emitted by the tpu target is reused unchanged. Legalization for Neuron
//! happens on the `ten` module first: no fp64 (an error naming the op unless `--allow-downcast`),
//! int64 narrowed to int32 (constants range-checked here, inputs and weights by the runner) unless
//! `--native-int64`.
//!
//! Neuron compiles static shapes only, so a model with symbolic dims becomes one module per padded
//! bucket (the tpu target's [`ember_targets::tpu::buckets`]: same sizes, same padding checks):
//! `model.b<i>.*` for each bucket but the largest, which is `model.*`, with kernels named
//! `<kind>_<n>_<symbol>_<size>` and the bucket list in the manifest; the runner picks a bucket,
//! pads the inputs and slices the outputs as for tpu artifacts.

use crate::frontend::Imported;
use crate::target::{Options, Ran, Target, TargetOption};
use ember_ir::dialect::ten::TenOp;
use ember_ir::{Attr, Attrs, BlockId, DType, Module, OpId, Type, Value};
use ember_targets::tpu::{buckets, IoInfo, WeightInfo};
use ember_targets::trainium::{self, kernels::Kernel, verify::Mem, Group};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// The trainium target: HLO for neuronx-cc plus NKI kernels for the groups of the kinds that
/// have one.
pub struct Trainium;

const OPTIONS: &[TargetOption] = &[
    // Compute f64 values in f32 instead of refusing them.
    TargetOption { name: "allow-downcast", values: &[], default: None, elsewhere: NOT_TRAINIUM },
    // Keep int64 (neuronx-cc `--native-int64`, trn2+) instead of narrowing to int32.
    TargetOption { name: "native-int64", values: &[], default: None, elsewhere: NOT_TRAINIUM },
    // f32 matmuls in bf16 (neuronx-cc's `--auto-cast matmult`), done by Ember so that the HLO
    // checked on XLA is what Neuron runs; neuronx-cc itself always gets `--auto-cast none`.
    TargetOption { name: "auto-cast", values: &["none", "matmult"], default: Some("none"), elsewhere: NOT_TRAINIUM },
];

const NOT_TRAINIUM: &str =
    "--allow-downcast, --native-int64 and --auto-cast are trainium options; not for the {target} target";

impl Target for Trainium {
    fn name(&self) -> &'static str {
        "trainium"
    }

    fn options(&self) -> &'static [TargetOption] {
        OPTIONS
    }

    // neuronx-cc fuses `loop` groups and lone activations itself.
    fn keeps(&self, kind: &str, _opts: &Options) -> bool {
        trainium::KERNEL_KINDS.contains(&kind)
    }

    fn rewrite(&self, m: &mut Module, opts: &Options) -> R<()> {
        if let Some(f) = m.func_by_name("main") {
            buckets::mask_padding(m, f);
        }
        if opts.value("auto-cast") == Some("matmult") {
            auto_cast_matmuls(m);
        }
        Ok(())
    }

    fn legalize(&self, m: &mut Module, opts: &Options) -> R<BTreeMap<String, String>> {
        legalize(m, opts.flag("allow-downcast"), opts.flag("native-int64"))
    }

    fn compile(&self, model: Imported, out: &Path, opts: &Options) -> R<Vec<String>> {
        let man = compile(self, model, out, opts)?;
        let mut notes: Vec<String> = man.plain_groups.iter().map(|w| format!("warning: {w}")).collect();
        for k in &man.kernels {
            let at = if k.at.is_empty() { String::new() } else { format!(" at {}", k.at) };
            notes.push(format!(
                "kernel {} ({}{at}): {} SBUF bytes/partition, {} PSUM banks",
                k.name, k.kind, k.sbuf_bytes_per_partition, k.psum_banks
            ));
        }
        let buckets = man.buckets.as_ref().map(|b| format!(", {} padded buckets", b.len())).unwrap_or_default();
        notes.push(format!(
            "wrote {} (HLO for neuronx-cc, {} NKI kernels{buckets}); run the portable form on XLA CPU with `ember run`",
            out.display(),
            man.kernels.len()
        ));
        Ok(notes)
    }

    fn run(&self, dir: &Path, inputs: &Path, outputs: &Path, repeat: usize) -> R<Ran> {
        let exit_code = crate::python::run_artifact(self.name(), dir, inputs, outputs, repeat)?;
        Ok(Ran { notes: vec![], exit_code })
    }
}

/// A generated kernel in the artifact.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct KernelInfo {
    pub name: String,
    pub kind: String,
    /// NKI source, relative to the artifact.
    pub file: String,
    /// The group's body alone as StableHLO (`@main` takes the group's operands).
    pub region: String,
    /// Where the group came from (`node `x` (from m.py:3)`).
    pub at: String,
    pub inputs: Vec<Vec<i64>>,
    pub output: Vec<i64>,
    /// Bucketed artifacts: the symbol values of the bucket this kernel was generated for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub symbols: BTreeMap<String, i64>,
    /// From the verified tile plan: SBUF bytes per partition and PSUM banks the kernel allocates.
    pub sbuf_bytes_per_partition: i64,
    pub psum_banks: i64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    pub format_version: String,
    pub target: String,
    pub ember_version: String,
    pub source_hash: String,
    /// The portable HLO module XLA CPU runs (`ember run`).
    pub module: String,
    pub neuron_module: String,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    pub weights: Vec<WeightInfo>,
    /// The HLO dtype of each `@main` argument (`argN`, inputs and weights) and result (`outN`)
    /// whose dtype legalization changed (`i32` for int64, `f32` for f64 with --allow-downcast).
    /// The runner converts inputs and weights to it (integers range-checked) and results back.
    pub narrowed: BTreeMap<String, String>,
    pub kernels: Vec<KernelInfo>,
    /// Kernel-kind groups left as plain HLO, each with the reason (also printed by `ember compile`).
    pub plain_groups: Vec<String>,
    /// Flags for neuronx-cc on the Neuron host.
    pub neuronx_cc_flags: Vec<String>,
    /// `--auto-cast`: `none`, or `matmult` (f32 matmuls computed in bf16, by Ember).
    #[serde(default = "no_auto_cast")]
    pub auto_cast: String,
    /// Models with symbolic dims: the padded buckets, smallest first (`module` and
    /// `neuron_module` are the largest's), as in a tpu manifest; the runner runs the smallest
    /// bucket that fits, padding inputs with zeros at the end of each symbolic dim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<Bucket>>,
    /// Padded buckets: the `@main` argument that receives each symbol's true size (as in a tpu
    /// manifest).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sizes: BTreeMap<String, usize>,
}

/// One padded bucket: the symbol values its modules were compiled for, its portable HLO module
/// (`module`, what the runner runs) and its Neuron form.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Bucket {
    pub symbols: BTreeMap<String, i64>,
    pub module: String,
    pub neuron_module: String,
}

fn no_auto_cast() -> String {
    "none".into()
}

pub const MODULE_FILE: &str = "model.hlo_module.pb";
pub const NEURON_MODULE_FILE: &str = "model.neuron.hlo_module.pb";
pub const KERNEL_TARGET: &str = "AwsNeuronCustomNativeKernel";

type R<T> = Result<T, String>;

fn at(m: &Module, op: OpId) -> String {
    let s = m.op(op).loc.describe();
    if s.is_empty() {
        format!("`{}`", m.op(op).name)
    } else {
        format!("`{}` at {s}", m.op(op).name)
    }
}

/// `--auto-cast matmult`: every f32 `ten.dot_general` multiplies bf16 operands (a bf16
/// `ten` product, which the StableHLO emitter accumulates in f32 and converts, as Neuron's
/// matmul engine accumulates in fp32 PSUM; the hardware side is unchecked here), converted
/// back to f32. Inputs, weights and outputs keep their dtypes.
fn auto_cast_matmuls(m: &mut Module) {
    for f in m.funcs() {
        let b = m.entry(f);
        let mut pos = 0;
        while pos < m.block(b).ops.len() {
            let op = m.block(b).ops[pos];
            let d = m.op(op);
            let f32_of =
                |v: Option<&Value>| v.and_then(|&v| m.ty(v).tensor().filter(|t| t.dtype == DType::F32).cloned());
            let (true, Some(_), Some(_), Some(rt)) = (
                d.is(TenOp::DotGeneral),
                f32_of(d.operands.first()),
                f32_of(d.operands.get(1)),
                f32_of(d.results.first()),
            ) else {
                pos += 1;
                continue;
            };
            let loc = d.loc.clone();
            let bf16 = |t: &Type| match t {
                Type::Tensor(t) => Type::Tensor(ember_ir::TensorType { dtype: DType::BF16, ..t.clone() }),
                t => t.clone(),
            };
            for i in 0..2 {
                let x = m.op(op).operands[i];
                let ty = bf16(m.ty(x));
                let c = m.create_op(
                    TenOp::Convert.name(),
                    vec![x],
                    vec![ty],
                    [("dtype".to_string(), Attr::DType(DType::BF16))].into_iter().collect(),
                    vec![],
                    loc.clone(),
                );
                m.insert_op(b, pos, c);
                pos += 1;
                m.op_mut(op).operands[i] = m.result(c, 0);
            }
            let r = m.result(op, 0);
            m.set_ty(r, bf16(&Type::Tensor(rt.clone())));
            let back = m.create_op(
                TenOp::Convert.name(),
                vec![r],
                vec![Type::Tensor(rt)],
                [("dtype".to_string(), Attr::DType(DType::F32))].into_iter().collect(),
                vec![],
                loc,
            );
            let wide = m.result(back, 0);
            m.replace_all_uses(r, wide);
            m.op_mut(back).operands[0] = r;
            m.insert_op(b, pos + 1, back);
            pos += 2;
        }
    }
}

/// Rewrites dtypes for Neuron in place: f64 -> f32 (only with `allow_downcast`), i64 -> i32
/// (unless `native_int64`). Returns the new dtype of every changed argument (`argN`) and result
/// (`outN`) of `@main`.
fn legalize(m: &mut Module, allow_downcast: bool, native_int64: bool) -> R<BTreeMap<String, String>> {
    let f = m.func_by_name("main").ok_or("the module has no `@main` function")?;
    let ret = m.func_return(f).ok_or("`@main` has no return")?;
    let dtypes = |m: &Module| -> Vec<(String, Option<DType>)> {
        let args = m.block(m.entry(f)).args.iter().enumerate().map(|(i, &v)| (format!("arg{i}"), v));
        let rets = m.op(ret).operands.iter().enumerate().map(|(i, &v)| (format!("out{i}"), v));
        args.chain(rets).map(|(k, v)| (k, m.ty(v).tensor().map(|t| t.dtype))).collect()
    };
    let before = dtypes(m);
    let map = |d: DType| -> Option<DType> {
        match d {
            DType::F64 if allow_downcast => Some(DType::F32),
            DType::I64 if !native_int64 => Some(DType::I32),
            _ => None,
        }
    };
    let fix = |m: &mut Module, v: Value| -> bool {
        if let Type::Tensor(t) = m.ty(v) {
            if let Some(d) = map(t.dtype) {
                let mut t = t.clone();
                t.dtype = d;
                m.set_ty(v, Type::Tensor(t));
                return true;
            }
        }
        false
    };
    let entry = m.entry(f);
    let args = m.block(entry).args.clone();
    // f64 anywhere is an error unless downcasting is allowed: the first place it appears.
    if !allow_downcast {
        for (i, &a) in args.iter().enumerate() {
            if m.ty(a).tensor().is_some_and(|t| t.dtype == DType::F64) {
                return Err(format!(
                    "argument {i} of @main is f64: Neuron devices have no fp64. Export in float32, or pass --allow-downcast to compute it in f32"
                ));
            }
        }
        let mut bad = None;
        m.walk(entry, &mut |op| {
            if bad.is_none()
                && m.op(op).results.iter().any(|&r| m.ty(r).tensor().is_some_and(|t| t.dtype == DType::F64))
            {
                bad = Some(op);
            }
        });
        if let Some(op) = bad {
            return Err(format!("{} produces f64: Neuron devices have no fp64. Export in float32, or pass --allow-downcast to compute it in f32", at(m, op)));
        }
    }
    for &a in &args {
        fix(m, a);
    }
    let mut ops = Vec::new();
    m.walk(entry, &mut |op| ops.push(op));
    for op in ops {
        let i64_result = m.op(op).results.iter().any(|&r| m.ty(r).tensor().is_some_and(|t| t.dtype == DType::I64));
        if i64_result && !native_int64 {
            if let Some(v) = m.op(op).attrs.get("value").and_then(|a| a.as_int()) {
                if i32::try_from(v).is_err() {
                    return Err(format!(
                        "{}: the int64 constant {v} does not fit int32, to which Neuron narrows int64; pass --native-int64 (trn2+)",
                        at(m, op)
                    ));
                }
            }
        }
        for r in m.op(op).results.clone() {
            fix(m, r);
        }
        for reg in m.op(op).regions.clone() {
            for b in m.region(reg).blocks.clone() {
                for a in m.block(b).args.clone() {
                    fix(m, a);
                }
            }
        }
        let attrs: Vec<(String, DType)> = m
            .op(op)
            .attrs
            .iter()
            .filter_map(|(k, a)| a.as_dtype().and_then(|d| map(d).map(|n| (k.clone(), n))))
            .collect();
        for (k, d) in attrs {
            m.op_mut(op).attrs.insert(k, Attr::DType(d));
        }
    }
    let (a, r): (Vec<Type>, Vec<Type>) = (
        args.iter().map(|&v| m.ty(v).clone()).collect(),
        m.op(ret).operands.iter().map(|&v| m.ty(v).clone()).collect(),
    );
    m.op_mut(f).attrs.insert("function_type".into(), Attr::Type(Type::Function(a, r)));
    let changed = before
        .into_iter()
        .zip(dtypes(m))
        .filter(|((_, b), (_, a))| a != b)
        .filter_map(|(_, (k, a))| a.map(|d| (k, d.mlir_name().to_string())))
        .collect();
    Ok(changed)
}

/// Copies `ops` (no nested regions) into `block` of `dst`, mapping operands through `map`.
fn clone_ops(src: &Module, ops: &[OpId], dst: &mut Module, block: BlockId, map: &mut HashMap<Value, Value>) -> R<()> {
    for &op in ops {
        let d = src.op(op);
        if !d.regions.is_empty() {
            return Err(format!("{}: ops with regions inside a kernel group are not supported", at(src, op)));
        }
        let operands = d.operands.iter().map(|v| map[v]).collect();
        let types = d.results.iter().map(|&r| src.ty(r).clone()).collect();
        let new = dst.append_op(block, &d.name, operands, types, d.attrs.clone(), d.loc.clone());
        for (i, &r) in d.results.iter().enumerate() {
            map.insert(r, dst.result(new, i));
        }
    }
    Ok(())
}

/// A group's body as its own module: `@main` takes the group's operands, returns its results.
pub fn region_module(m: &Module, group: OpId) -> R<Module> {
    let body = m.entry(group);
    let args = m.block(body).args.clone();
    let ops = m.block(body).ops.clone();
    let (term, inner) = ops.split_last().ok_or("empty fusion group")?;
    let yields = m.op(*term).operands.clone();
    let mut out = Module::new();
    let (_, entry) = out.add_func(
        "main",
        args.iter().map(|&a| m.ty(a).clone()).collect(),
        yields.iter().map(|&v| m.ty(v).clone()).collect(),
        vec![],
    );
    let mut map: HashMap<Value, Value> = args.iter().copied().zip(out.block(entry).args.clone()).collect();
    clone_ops(m, inner, &mut out, entry, &mut map)?;
    let rets = yields.iter().map(|v| map[v]).collect();
    out.append_op(entry, ember_ir::module::RETURN, rets, vec![], Attrs::new(), ember_ir::Loc::Unknown);
    Ok(out)
}

/// `@main` with every kernel group replaced by `func.call @ember_kernel_<name>` (tagged with
/// `ember_kernel`/`ember_kind`) and every other group inlined.
fn with_calls(m: &Module, kernels: &[Group]) -> R<Module> {
    let f = m.func_by_name("main").ok_or("the module has no `@main` function")?;
    let entry = m.entry(f);
    let (arg_t, res_t) = m.func_type(f);
    let mut out = Module::new();
    out.attrs = m.attrs.clone();
    let (nf, nentry) = out.add_func("main", arg_t, res_t, vec![]);
    out.op_mut(nf).attrs = m.op(f).attrs.clone();
    let mut map: HashMap<Value, Value> =
        m.block(entry).args.iter().copied().zip(out.block(nentry).args.clone()).collect();
    for &op in &m.block(entry).ops {
        let d = m.op(op);
        if d.name == ember_ir::module::RETURN {
            let rets = d.operands.iter().map(|v| map[v]).collect();
            out.append_op(nentry, &d.name, rets, vec![], Attrs::new(), d.loc.clone());
        } else if d.name == trainium::FUSION_GROUP {
            if let Some(g) = kernels.iter().find(|g| g.op == op) {
                let mut attrs = Attrs::new();
                attrs.insert("callee".into(), Attr::SymRef(format!("ember_kernel_{}", g.name)));
                attrs.insert("ember_kernel".into(), Attr::Str(g.name.clone()));
                attrs.insert("ember_kind".into(), Attr::Str(g.kind.clone()));
                let operands = d.operands.iter().map(|v| map[v]).collect();
                let c = out.append_op(
                    nentry,
                    "func.call",
                    operands,
                    vec![m.ty(d.results[0]).clone()],
                    attrs,
                    d.loc.clone(),
                );
                map.insert(d.results[0], out.result(c, 0));
            } else {
                let body = m.entry(op);
                for (a, v) in m.block(body).args.iter().zip(&d.operands) {
                    map.insert(*a, map[v]);
                }
                let ops = m.block(body).ops.clone();
                let (term, inner) = ops.split_last().ok_or("empty fusion group")?;
                clone_ops(m, inner, &mut out, nentry, &mut map)?;
                for (r, y) in d.results.iter().zip(&m.op(*term).operands) {
                    map.insert(*r, map[y]);
                }
            }
        } else {
            clone_ops(m, &[op], &mut out, nentry, &mut map)?;
        }
    }
    Ok(out)
}

/// The group's StableHLO as a private function `@ember_kernel_<name>` (lines of a module body).
fn kernel_func(region_text: &str, name: &str) -> String {
    let lines: Vec<&str> = region_text.lines().collect();
    let body = &lines[1..lines.len() - 1];
    let mut s = String::new();
    for l in body {
        s.push_str(&l.replace("func.func public @main(", &format!("func.func private @ember_kernel_{name}(")));
        s.push('\n');
    }
    s
}

/// Everything the trainium target emits for a lowered, legalized module.
pub struct Emitted {
    pub kernels: Vec<(Kernel, Group, String)>,
    /// Why kernel-kind groups got no kernel (non-strict mode only).
    pub plain: Vec<String>,
    pub portable: String,
    pub neuron: String,
}

/// A message of the tpu emitter or of its bucket checks, naming this target.
fn retarget(e: String) -> String {
    e.replace(
        "the tpu target needs static shapes",
        "the trainium target needs static shapes (neuronx-cc compiles one NEFF per shape; `ember compile --target trainium` compiles one module per padded bucket)",
    )
    .replace("(XLA's CPU client cannot run bounded dynamic shapes)", "(neuronx-cc compiles static shapes only)")
    .replace("the tpu target", "the trainium target")
    .replace("The tpu target", "The trainium target")
}

/// The tpu emitter's text for a module; its messages name this target.
fn stablehlo(m: &Module) -> R<String> {
    ember_targets::tpu::emit(m).map_err(retarget)
}

/// `strict`: a group no kernel fits (unsupported layout or dtype, or a plan the verifier rejects)
/// is an error; otherwise it stays plain HLO and its reason is in [`Emitted::plain`]. `suffix` is
/// appended to every kernel name (a bucket's, so names are unique across an artifact).
pub fn emit(m: &Module, strict: bool, suffix: &str) -> R<Emitted> {
    let mut kernels = Vec::new();
    let mut plain = Vec::new();
    let mut funcs = String::new();
    for g in trainium::groups(m)? {
        let g = g.map(|mut g| {
            g.name.push_str(suffix);
            g
        });
        let generated = g.and_then(|g| trainium::kernels::generate(&g).map(|k| (k, g)));
        let (k, g) = match generated {
            Ok(x) => x,
            Err(e) if !strict => {
                plain.push(format!("{e}; the group stays plain HLO"));
                continue;
            }
            Err(e) => return Err(e),
        };
        let region = stablehlo(&region_module(m, g.op)?).map_err(|e| format!("{}: {e}", g.what()))?;
        funcs.push_str(&kernel_func(&region, &g.name));
        kernels.push((k, g, region));
    }
    let groups: Vec<Group> = kernels.iter().map(|(_, g, _)| g.clone()).collect();
    let main = stablehlo(&with_calls(m, &groups)?)?;
    let (first, rest) = main.split_once('\n').ok_or("empty StableHLO")?;
    let portable = format!("{first}\n{funcs}{rest}");
    let mut neuron = main.clone();
    for g in &groups {
        let config = format!(
            "{{\\22ember_kernel\\22: \\22{}\\22, \\22kernel_file\\22: \\22kernels/{}.py\\22, \\22status\\22: \\22placeholder: build_on_neuron_host.py puts the nki-compiled kernel here\\22}}",
            g.name, g.name
        );
        neuron = neuron.replace(
            &format!("func.call @ember_kernel_{}(", g.name),
            &format!("stablehlo.custom_call @{KERNEL_TARGET}("),
        );
        neuron = neuron.replace(
            &format!("{{mhlo.frontend_attributes = {{ember_kernel = \"{}\"", g.name),
            &format!("{{backend_config = \"{config}\", mhlo.frontend_attributes = {{ember_kernel = \"{}\"", g.name),
        );
    }
    Ok(Emitted { kernels, plain, portable, neuron })
}

/// Converts StableHLO texts to (serialized HloModuleProto, HLO text) with `python -m ember.xla to-hlo`.
fn to_hlo(texts: &[&str]) -> R<Vec<(Vec<u8>, String)>> {
    crate::scratch::with_temp_dir("hlo", |dir| {
        let mut files = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let p = dir.join(format!("m{i}.stablehlo.mlir"));
            std::fs::write(&p, t).map_err(|e| format!("cannot write `{}`: {e}", p.display()))?;
            files.push(p);
        }
        let py = crate::python::find().ok_or(
            "the trainium target converts StableHLO to HLO with XLA's converter in jaxlib: set EMBER_PYTHON to a Python with jax 0.10.2 and the ember package (`make setup` makes ~/.cache/ember/venv)",
        )?;
        crate::python::ember_xla(&py, "to-hlo", &files, "XLA's StableHLO -> HLO conversion failed:\n")?;
        files
            .iter()
            .map(|p| {
                let pb =
                    std::fs::read(p.with_extension("").with_extension("hlo_module.pb")).map_err(|e| e.to_string())?;
                let txt = std::fs::read_to_string(p.with_extension("").with_extension("hlo.txt"))
                    .map_err(|e| e.to_string())?;
                Ok((pb, txt))
            })
            .collect()
    })
}

/// Custom-call targets neuronx-cc accepts (others fail there); Ember emits only the kernel one.
pub const NEURON_CUSTOM_CALLS: [&str; 16] = [
    "AwsNeuronErf",
    "AwsNeuronGelu",
    "AwsNeuronGeluApprxTanh",
    "AwsNeuronGeluBackward",
    "AwsNeuronSilu",
    "AwsNeuronSiluBackward",
    "AwsNeuronRmsNorm",
    "AwsNeuronSoftmax",
    "AwsNeuronSoftmaxBackward",
    "AwsNeuronCollectiveMatmul",
    "AwsNeuronIntMatmult",
    "AwsNeuronArgMax",
    "AwsNeuronArgMin",
    "AwsNeuronTopK",
    "AwsNeuronCustomNativeKernel",
    "AwsNeuronCustomOp",
];

/// Every `custom_call_target` in HLO text must be one neuronx-cc accepts.
fn check_custom_calls(hlo: &str) -> R<()> {
    for part in hlo.split("custom_call_target=\"").skip(1) {
        let target = part.split('"').next().unwrap_or("");
        if !NEURON_CUSTOM_CALLS.contains(&target) {
            return Err(format!("the HLO has a custom call to `{target}`, which neuronx-cc does not accept"));
        }
    }
    Ok(())
}

const BUILD_SCRIPT: &str = include_str!("trainium_build_on_neuron_host.py");

/// What one bucket (or the one static module) emitted, and its files' stem in the artifact.
struct Part {
    symbols: BTreeMap<String, i64>,
    stem: String,
    emitted: Emitted,
}

fn compile(trn: &Trainium, imported: Imported, out: &Path, opts: &Options) -> R<Manifest> {
    let source_hash = format!("{:x}", Sha256::digest(imported.module.to_string().as_bytes()));
    let mut m = imported.module;
    trn.lower(&mut m, opts)?;
    let f = m.func_by_name("main").ok_or("the module has no @main")?;
    // Weights are packed in their model dtype; the runner narrows them (range-checked) like inputs.
    let packed = crate::artifact::pack(&m, f, &imported.weights)?;
    let narrowed = trn.legalize(&mut m, opts)?;
    let dynamic = !buckets::used_symbols(&m, f).is_empty();
    let modules =
        if dynamic { buckets::specialized(&m, f).map_err(retarget)? } else { vec![(BTreeMap::new(), m.clone())] };
    let n = modules.len();
    let mut parts = Vec::new();
    for (i, (symbols, s)) in modules.into_iter().enumerate() {
        // The largest bucket keeps the static artifact's file names, as in tpu artifacts.
        let stem = if i + 1 == n { "model".to_string() } else { format!("model.b{i}") };
        let suffix: String = symbols.iter().map(|(k, v)| format!("_{k}_{v}")).collect();
        let label: Vec<String> = symbols.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut emitted =
            emit(&s, false, &suffix)
                .map_err(|e| if dynamic { format!("bucket {}: {e}", label.join(",")) } else { e })?;
        if dynamic {
            emitted.plain = emitted.plain.into_iter().map(|w| format!("bucket {}: {w}", label.join(","))).collect();
        }
        parts.push(Part { symbols, stem, emitted });
    }
    let texts: Vec<&str> =
        parts.iter().flat_map(|p| [p.emitted.portable.as_str(), p.emitted.neuron.as_str()]).collect();
    let hlo = to_hlo(&texts)?;
    for (_, text) in &hlo {
        check_custom_calls(text)?;
    }
    let io = |x: &crate::artifact::Io| IoInfo {
        name: x.name.clone(),
        arg: x.index,
        dtype: x.dtype.clone(),
        dims: x.dims.clone(),
        sharding: None,
        mutates: x.mutates.clone(),
        complex: x.complex,
        rng_seed: x.rng_seed,
    };
    let manifest = Manifest {
        format_version: format!("{}.{}", crate::artifact::FORMAT_MAJOR, crate::artifact::FORMAT_MINOR),
        target: "trainium".into(),
        ember_version: env!("CARGO_PKG_VERSION").into(),
        source_hash,
        module: MODULE_FILE.into(),
        neuron_module: NEURON_MODULE_FILE.into(),
        inputs: packed.inputs.iter().map(io).collect(),
        outputs: packed.outputs.iter().map(io).collect(),
        weights: packed
            .weights
            .iter()
            .map(|(x, offset, bytes)| WeightInfo {
                name: x.name.clone(),
                arg: x.index,
                offset: *offset,
                bytes: *bytes,
                dtype: x.dtype.clone(),
                dims: x.dims.clone(),
                sharding: None,
            })
            .collect(),
        narrowed,
        kernels: parts
            .iter()
            .flat_map(|p| p.emitted.kernels.iter().map(move |kgr| (p, kgr)))
            .map(|(p, (k, g, _))| KernelInfo {
                name: k.name.clone(),
                kind: k.kind.clone(),
                file: format!("kernels/{}.py", k.name),
                region: format!("kernels/{}.stablehlo.mlir", k.name),
                at: g.at.clone(),
                inputs: g.inputs.clone(),
                output: g.output.clone(),
                symbols: p.symbols.clone(),
                sbuf_bytes_per_partition: k
                    .plan
                    .buffers
                    .iter()
                    .filter(|b| b.mem == Mem::Sbuf)
                    .map(|b| b.bytes_per_partition())
                    .sum(),
                psum_banks: k.plan.buffers.iter().filter(|b| b.mem == Mem::Psum).count() as i64,
            })
            .collect(),
        plain_groups: parts.iter().flat_map(|p| p.emitted.plain.iter().cloned()).collect(),
        auto_cast: opts.value("auto-cast").unwrap_or("none").to_string(),
        neuronx_cc_flags: {
            // `--auto-cast none`: the HLO's dtypes are the ones Ember checked (neuronx-cc's
            // default would cast f32 matmuls to bf16 on its own); `auto_cast` says what Ember cast.
            let mut v: Vec<String> = ["--framework", "XLA", "--target", "trn2", "--auto-cast", "none"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            if opts.flag("native-int64") {
                v.push("--native-int64".into());
            }
            v
        },
        buckets: dynamic.then(|| {
            parts
                .iter()
                .map(|p| Bucket {
                    symbols: p.symbols.clone(),
                    module: format!("{}.hlo_module.pb", p.stem),
                    neuron_module: format!("{}.neuron.hlo_module.pb", p.stem),
                })
                .collect()
        }),
        sizes: packed.sizes.clone(),
    };
    let json = serde_json::to_string_pretty(&manifest).map_err(|e| e.to_string())? + "\n";
    let ten = m.to_string();
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("module.mlir".into(), ten.into_bytes()),
        ("weights.bin".into(), packed.blob),
        ("build_on_neuron_host.py".into(), BUILD_SCRIPT.as_bytes().to_vec()),
        ("manifest.json".into(), json.into_bytes()),
    ];
    for (p, h) in parts.into_iter().zip(hlo.chunks(2)) {
        let stem = &p.stem;
        files.push((format!("{stem}.hlo_module.pb"), h[0].0.clone()));
        files.push((format!("{stem}.hlo.txt"), h[0].1.clone().into_bytes()));
        files.push((format!("{stem}.neuron.hlo_module.pb"), h[1].0.clone()));
        files.push((format!("{stem}.neuron.hlo.txt"), h[1].1.clone().into_bytes()));
        files.push((format!("{stem}.stablehlo.mlir"), p.emitted.portable.into_bytes()));
        files.push((format!("{stem}.neuron.stablehlo.mlir"), p.emitted.neuron.into_bytes()));
        for (k, _, region) in p.emitted.kernels {
            files.push((format!("kernels/{}.py", k.name), k.source.into_bytes()));
            files.push((format!("kernels/{}.stablehlo.mlir", k.name), region.into_bytes()));
        }
    }
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    crate::artifact::write_artifact(out, &refs)?;
    Ok(manifest)
}

/// `ember trainium FILE`: lowers and legalizes a module and emits everything but the HLO
/// conversion (kernels with their regions, portable and Neuron StableHLO); a group without a
/// kernel is an error here, so the snapshot cases show every message.
pub fn inspect(m: &mut Module, opts: &Options) -> R<Emitted> {
    Trainium.lower(m, opts)?;
    Trainium.legalize(m, opts)?;
    emit(m, true, "")
}
