//! The eager scheduler's compiler half: regions of recorded eager ops, compiled once for the CPU
//! target and replayed from a plan cache, or written as another target's artifact (which
//! `ember.eager(target="tpu")` runs on PJRT and caches under the region's key).
//!
//! Python (`ember.eager`) records ATen ops as plain data (a [`Region`]: op, inputs by
//! region-relative value id, result shapes and dtypes, non-tensor arguments) and decides where to
//! cut; this module turns a region into a torch-dialect module through the torch.export
//! frontend's importer, handed the program in memory (so every argument is decoded exactly as
//! for an exported graph, and each op is located at its user's line), compiles it with the
//! CPU driver and caches the loaded program under the region's key. The key holds everything
//! that changes the compiled code (op sequence, relative ids, shapes, dtypes, structural
//! arguments) and nothing else: source lines are left out, and Python numbers that only scale
//! values arrive as rank-0 input buffers, so a changing learning rate or step reuses the plan.

use crate::frontend::export_schema::{
    ExportedProgram, Graph, GraphModule, GraphSignature, NamedArgument, Node, SchemaVersion, TensorMeta,
};
use crate::frontend::{import_program, serde_dtype};
use ember_ir::attr::Loc;
use ember_ir::types::DType;
use ember_targets::cpu::Program;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// A non-tensor or tensor argument of a recorded op. Tensors are region value ids: the region's
/// inputs first, then every op's results in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    None,
    Tensor(usize),
    Tensors(Vec<usize>),
    OptTensors(Vec<Option<usize>>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Ints(Vec<i64>),
    Floats(Vec<f64>),
    Bools(Vec<bool>),
    Str(String),
    DType(DType),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    pub shape: Vec<i64>,
    pub dtype: DType,
}

/// One recorded ATen op: `target` is `aten.<op>.<overload>`; `args` are by schema parameter name.
#[derive(Clone, Debug)]
pub struct QueuedOp {
    pub target: String,
    pub args: Vec<(String, Arg)>,
    pub outs: Vec<Meta>,
    /// The user's line that issued the op (for errors), not part of the key.
    pub file: String,
    pub line: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Region {
    pub inputs: Vec<Meta>,
    pub ops: Vec<QueuedOp>,
    /// Value ids to materialize, in order.
    pub outputs: Vec<usize>,
}

/// Why a region did not run.
#[derive(Debug)]
pub enum RegionError {
    /// Ops without a CPU lowering (`aten.sort`), each once: the caller runs them with torch eager.
    Unsupported(Vec<String>),
    Failed(String),
}

impl std::fmt::Display for RegionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegionError::Unsupported(ops) => write!(f, "no lowering for {}", ops.join(", ")),
            RegionError::Failed(m) => f.write_str(m),
        }
    }
}

fn dtype_code(d: DType) -> i64 {
    (0..64).find(|&c| serde_dtype(c) == Some(d)).unwrap_or(-1)
}

fn meta_text(out: &mut String, m: &Meta) {
    let _ = write!(out, "{:?}{}", m.shape, m.dtype.mlir_name());
}

impl Region {
    /// The plan-cache key: everything that changes the compiled code, nothing else.
    pub fn key(&self) -> String {
        let mut k = String::new();
        for m in &self.inputs {
            meta_text(&mut k, m);
            k.push(',');
        }
        k.push('|');
        for op in &self.ops {
            k.push_str(&op.target);
            k.push('(');
            for (n, a) in &op.args {
                let _ = write!(k, "{n}={a:?};");
            }
            k.push_str(")->");
            for m in &op.outs {
                meta_text(&mut k, m);
            }
            k.push('\n');
        }
        let _ = write!(k, "out{:?}", self.outputs);
        k
    }

    fn value_count(&self) -> usize {
        self.inputs.len() + self.ops.iter().map(|o| o.outs.len()).sum::<usize>()
    }

    /// The region as a torch.export program (schema 8) in memory, for the frontend's importer:
    /// one argument decoder for exported graphs and eager regions, each node at its user's line.
    pub fn to_program(&self) -> Result<ExportedProgram, String> {
        let n = self.value_count();
        let name = |v: usize| format!("v{v}");
        let meta = |m: &Meta| TensorMeta {
            dtype: dtype_code(m.dtype),
            sizes: m.shape.iter().map(|&d| json!({"as_int": d})).collect(),
            strides: vec![],
            storage_offset: None,
        };
        let mut tensor_values = BTreeMap::new();
        let mut input_specs = Vec::new();
        for (i, m) in self.inputs.iter().enumerate() {
            tensor_values.insert(name(i), meta(m));
            input_specs
                .push(BTreeMap::from([("user_input".to_string(), json!({"arg": {"as_tensor": {"name": name(i)}}}))]));
        }
        let check = |v: usize, what: &str| {
            if v < n {
                Ok(())
            } else {
                Err(format!("{what} uses value {v}, but the region has {n}"))
            }
        };
        let mut nodes = Vec::new();
        let mut next = self.inputs.len();
        for (oi, op) in self.ops.iter().enumerate() {
            let what = format!("op {oi} (`{}`)", op.target);
            let mut inputs = Vec::new();
            for (pname, a) in &op.args {
                let arg = match a {
                    Arg::None => json!({"as_none": true}),
                    Arg::Tensor(v) => {
                        check(*v, &what)?;
                        if *v >= next {
                            return Err(format!("{what} reads value {v} before it is defined"));
                        }
                        json!({"as_tensor": {"name": name(*v)}})
                    }
                    Arg::Tensors(vs) => {
                        for v in vs {
                            check(*v, &what)?;
                        }
                        json!({"as_tensors": vs.iter().map(|v| json!({"name": name(*v)})).collect::<Vec<_>>()})
                    }
                    Arg::OptTensors(vs) => json!({"as_optional_tensors": vs
                        .iter()
                        .map(|v| match v {
                            Some(v) => json!({"as_tensor": {"name": name(*v)}}),
                            None => json!({"as_none": true}),
                        })
                        .collect::<Vec<_>>()}),
                    Arg::Int(i) => json!({"as_int": i}),
                    Arg::Float(f) if f.is_finite() => json!({"as_float": f}),
                    Arg::Float(f) => {
                        json!({"as_float": if f.is_nan() { "NaN" } else if *f > 0.0 { "Infinity" } else { "-Infinity" }})
                    }
                    Arg::Bool(b) => json!({"as_bool": b}),
                    Arg::Ints(v) => json!({"as_ints": v}),
                    Arg::Floats(v) => json!({"as_floats": v}),
                    Arg::Bools(v) => json!({"as_bools": v}),
                    Arg::Str(s) => json!({"as_string": s}),
                    Arg::DType(d) => json!({"as_scalar_type": dtype_code(*d)}),
                };
                inputs.push(NamedArgument { name: pname.clone(), arg, kind: Some(2) });
            }
            let mut outs = Vec::new();
            for m in &op.outs {
                tensor_values.insert(name(next), meta(m));
                outs.push(json!({"name": name(next)}));
                next += 1;
            }
            let outputs =
                if outs.len() == 1 { vec![json!({"as_tensor": outs[0]})] } else { vec![json!({"as_tensors": outs})] };
            nodes.push(Node {
                target: format!("torch.ops.{}", op.target),
                name: Some(format!("{}_{oi}", op.target.split('.').nth(1).unwrap_or("op"))),
                inputs,
                outputs,
                metadata: BTreeMap::new(),
                source: Some(Loc::File { file: op.file.clone(), line: op.line, col: 0 }),
            });
        }
        let mut output_specs = Vec::new();
        for &v in &self.outputs {
            check(v, "an output")?;
            output_specs
                .push(BTreeMap::from([("user_output".to_string(), json!({"arg": {"as_tensor": {"name": name(v)}}}))]));
        }
        Ok(ExportedProgram {
            graph_module: GraphModule {
                graph: Graph { nodes, tensor_values, sym_int_values: BTreeMap::new() },
                signature: GraphSignature { input_specs, output_specs },
            },
            range_constraints: BTreeMap::new(),
            schema_version: SchemaVersion { major: crate::frontend::SCHEMA_MAJOR, minor: 0 },
            torch_version: None,
        })
    }
}

/// Whether Ember's torch dialect defines `target` (`aten.add.Tensor`, `aten.relu.default`): a
/// recorder decomposes or runs in torch eager the ops it does not.
pub fn known(target: &str) -> bool {
    let short = target.strip_suffix(".default").unwrap_or(target);
    ember_ir::dialect::lookup(&format!("torch.{short}")).is_some()
}

/// Ops of a region that the pipeline leaves without a lowering (import and lowering only, no
/// code generation): a recorder asks this for the first op of each kind it sees.
pub fn unlowered(region: &Region) -> Result<Vec<String>, String> {
    // Every result is an output, so dead-code elimination keeps the ops to ask about.
    let mut all = region.clone();
    all.outputs = (region.inputs.len()..region.value_count()).collect();
    let m = import_program(all.to_program()?, None, "eager op").map_err(|e| e.msg)?.module;
    crate::artifact::unlowered_ops(m)
}

/// Compiles a region into an artifact of `target` in `dir` (the region's inputs are the
/// artifact's inputs, in order; it has no weights).
pub fn write_region(region: &Region, target: &str, dir: &std::path::Path) -> Result<(), RegionError> {
    let import = || {
        let ep = region.to_program().map_err(RegionError::Failed)?;
        import_program(ep, None, "eager region").map_err(|e| RegionError::Failed(e.msg))
    };
    let missing = crate::artifact::unlowered_ops(import()?.module).map_err(RegionError::Failed)?;
    if !missing.is_empty() {
        return Err(RegionError::Unsupported(missing));
    }
    crate::compile(import()?, &crate::CompileOptions::new(target, dir)).map_err(RegionError::Failed)?;
    Ok(())
}

/// Compiles a region for this CPU. The artifact is written to `dir`, loaded, and removed (the
/// loaded library stays mapped).
pub fn compile_region(region: &Region, dir: &std::path::Path) -> Result<Program, RegionError> {
    write_region(region, "cpu", dir)?;
    let p = Program::load(dir).map_err(RegionError::Failed);
    let _ = std::fs::remove_dir_all(dir);
    p
}

#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub hits: u64,
    pub misses: u64,
    pub compile_seconds: f64,
    pub run_seconds: f64,
}

/// Compiled regions by key, for one process.
pub struct PlanCache {
    dir: PathBuf,
    plans: HashMap<String, Arc<Program>>,
    pub stats: Stats,
    serial: u64,
}

impl PlanCache {
    /// `dir` is a scratch directory for artifacts on their way to being loaded.
    pub fn new(dir: PathBuf) -> Self {
        PlanCache { dir, plans: HashMap::new(), stats: Stats::default(), serial: 0 }
    }

    pub fn len(&self) -> usize {
        self.plans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.plans.is_empty()
    }

    pub fn clear(&mut self) {
        self.plans.clear();
        self.stats = Stats::default();
    }

    /// The program for `region`, compiled on a miss. Returns it and whether it was a hit.
    pub fn get(&mut self, region: &Region) -> Result<(Arc<Program>, bool), RegionError> {
        let key = region.key();
        if let Some(p) = self.plans.get(&key) {
            self.stats.hits += 1;
            return Ok((p.clone(), true));
        }
        let t0 = Instant::now();
        self.serial += 1;
        let dir = self.dir.join(format!("region-{}-{}", std::process::id(), self.serial));
        let p = Arc::new(compile_region(region, &dir)?);
        self.stats.misses += 1;
        self.stats.compile_seconds += t0.elapsed().as_secs_f64();
        self.plans.insert(key, p.clone());
        Ok((p, false))
    }
}

impl Region {
    /// A region as the native recorder (`ember/deferred/native.cpp`) writes it:
    /// `{"inputs": [[shape, dtype]...], "ops": [[target, [[param, tag, value]...], [[shape, dtype]...]]...],
    /// "outputs": [value id...]}` with dtypes by their IR names and the argument tags of
    /// [`Arg`]'s variants (`n t ts ots i f b is fs bs s dt`; a float that is not finite is the string
    /// `nan`, `inf` or `-inf`).
    pub fn from_json(text: &str) -> Result<Region, String> {
        use serde_json::Value;
        let v: Value = serde_json::from_str(text).map_err(|e| format!("native region: {e}"))?;
        let meta = |m: &Value| -> Result<Meta, String> {
            let shape = m[0].as_array().ok_or("native region: a meta without a shape")?;
            let shape =
                shape.iter().map(|d| d.as_i64().ok_or("native region: a non-integer dim")).collect::<Result<_, _>>()?;
            let d = m[1].as_str().ok_or("native region: a meta without a dtype")?;
            let dtype = DType::from_mlir_name(d).ok_or_else(|| format!("native region: unknown dtype `{d}`"))?;
            Ok(Meta { shape, dtype })
        };
        let list = |v: &Value, what: &str| {
            v.as_array().cloned().ok_or_else(|| format!("native region: `{what}` is not a list"))
        };
        let float = |x: &Value| -> Result<f64, String> {
            match x {
                Value::String(s) if s == "nan" => Ok(f64::NAN),
                Value::String(s) if s == "inf" => Ok(f64::INFINITY),
                Value::String(s) if s == "-inf" => Ok(f64::NEG_INFINITY),
                _ => x.as_f64().ok_or_else(|| format!("native region: `{x}` is not a float")),
            }
        };
        let usize_of =
            |x: &Value| x.as_u64().map(|u| u as usize).ok_or_else(|| format!("native region: `{x}` is not a value id"));
        let arg = |tag: &str, x: &Value| -> Result<Arg, String> {
            Ok(match tag {
                "n" => Arg::None,
                "t" => Arg::Tensor(usize_of(x)?),
                "ts" => Arg::Tensors(list(x, "ts")?.iter().map(usize_of).collect::<Result<_, _>>()?),
                "ots" => Arg::OptTensors(
                    list(x, "ots")?
                        .iter()
                        .map(|y| if y.is_null() { Ok(None) } else { usize_of(y).map(Some) })
                        .collect::<Result<_, _>>()?,
                ),
                "i" => Arg::Int(x.as_i64().ok_or("native region: a non-integer `i`")?),
                "f" => Arg::Float(float(x)?),
                "b" => Arg::Bool(x.as_bool().ok_or("native region: a non-bool `b`")?),
                "is" => Arg::Ints(
                    list(x, "is")?
                        .iter()
                        .map(|y| y.as_i64().ok_or("native region: a non-integer in `is`"))
                        .collect::<Result<_, _>>()?,
                ),
                "fs" => Arg::Floats(list(x, "fs")?.iter().map(float).collect::<Result<_, _>>()?),
                "bs" => Arg::Bools(
                    list(x, "bs")?
                        .iter()
                        .map(|y| y.as_bool().ok_or("native region: a non-bool in `bs`"))
                        .collect::<Result<_, _>>()?,
                ),
                "s" => Arg::Str(x.as_str().ok_or("native region: a non-string `s`")?.to_string()),
                "dt" => {
                    let d = x.as_str().ok_or("native region: a non-string `dt`")?;
                    Arg::DType(DType::from_mlir_name(d).ok_or_else(|| format!("native region: unknown dtype `{d}`"))?)
                }
                t => return Err(format!("native region: unknown argument tag `{t}`")),
            })
        };
        let mut region = Region {
            inputs: list(&v["inputs"], "inputs")?.iter().map(meta).collect::<Result<_, _>>()?,
            ops: Vec::new(),
            outputs: list(&v["outputs"], "outputs")?.iter().map(usize_of).collect::<Result<_, _>>()?,
        };
        for op in list(&v["ops"], "ops")? {
            let target = op[0].as_str().ok_or("native region: an op without a target")?.to_string();
            let mut args = Vec::new();
            for a in list(&op[1], "args")? {
                let name = a[0].as_str().ok_or("native region: an argument without a name")?;
                let tag = a[1].as_str().ok_or("native region: an argument without a tag")?;
                args.push((name.to_string(), arg(tag, &a[2])?));
            }
            let outs = list(&op[2], "outs")?.iter().map(meta).collect::<Result<_, _>>()?;
            region.ops.push(QueuedOp { target, args, outs, file: "<ember.eager>".into(), line: 0 });
        }
        Ok(region)
    }
}
