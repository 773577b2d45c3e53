//! torch.export frontend: reads a `.pt2` archive (or a bare `model.json`) into a `torch`-dialect
//! module, with weights memory-mapped from the archive.
//!
//! Every node becomes one op named after its ATen target, located at the user's Python line from
//! the node's `stack_trace`, so later errors can point there. Symbolic-int nodes (`sym_size.int`,
//! `operator.mul`) become no ops: their values are symbolic expressions from `sym_int_values`,
//! carried in types and attributes, which every target can evaluate from the input shapes.

pub mod archive;
mod asserts;
mod complex;
pub mod export_schema;

use archive::{Archive, Blob};
use ember_ir::attr::{Attr, Loc};
use ember_ir::dialect::{self, Kind, OpView, Param};
use ember_ir::module::{Attrs, Module, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::{DType, TensorType, Type};
use export_schema::*;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// A user-facing import error: one paragraph naming what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg}")]
pub struct ImportError {
    pub msg: String,
}

impl ImportError {
    pub fn new(msg: impl Into<String>) -> Self {
        ImportError { msg: msg.into() }
    }
}

type R<T> = Result<T, ImportError>;

pub const SCHEMA_MAJOR: i64 = 8;

/// The most bytes an expanded (overlapping-stride) weight may take once copied dense: 1 GiB.
pub const MAX_EXPANDED_WEIGHT_BYTES: u128 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightKind {
    Parameter,
    Buffer,
    Constant,
}

impl WeightKind {
    pub fn attr_key(self) -> &'static str {
        match self {
            WeightKind::Parameter => "ember.param",
            WeightKind::Buffer => "ember.buffer",
            WeightKind::Constant => "ember.constant",
        }
    }
}

/// A parameter, buffer or lifted constant: its type and, from an archive, its raw bytes.
pub struct Weight {
    pub kind: WeightKind,
    pub ty: TensorType,
    pub data: Option<Blob>,
}

/// The argument or result attribute of a complex user input or output: its type is the real
/// view, (real, imaginary) pairs in a trailing dim of 2, which is how torch and numpy store it.
pub const COMPLEX_ATTR: &str = "ember.complex";

pub struct Imported {
    pub module: Module,
    /// By fully qualified name (`fc1.weight`), in argument order of `@main`.
    pub weights: Vec<(String, Weight)>,
}

/// Imports a `.pt2` archive, or a bare `model.json` (then weights are not available).
pub fn import_path(path: &Path) -> R<Imported> {
    let is_json = path.extension().is_some_and(|e| e == "json");
    if is_json {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ImportError::new(format!("cannot read `{}`: {e}", path.display())))?;
        return import_json(&text, None, &path.display().to_string());
    }
    let ar = Archive::open(path)?;
    let model = ar.get("models/model.json").ok_or_else(|| {
        ImportError::new(format!(
            "`{}` has no `models/model.json`; is it a torch.export archive (torch.export.save)? Entries: {}",
            path.display(),
            ar.names().take(8).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let text = std::str::from_utf8(model.bytes())
        .map_err(|_| ImportError::new(format!("`{}`: models/model.json is not UTF-8", path.display())))?;
    import_json(text, Some(&ar), &path.display().to_string())
}

pub fn import_json(text: &str, ar: Option<&Archive>, shown: &str) -> R<Imported> {
    let raw: Json = serde_json::from_str(text)
        .map_err(|e| ImportError::new(format!("`{shown}`: model.json is not valid JSON: {e}")))?;
    let major = raw.pointer("/schema_version/major").and_then(|v| v.as_i64());
    match major {
        Some(SCHEMA_MAJOR) => {}
        Some(m) => {
            return Err(ImportError::new(format!(
                "`{shown}` uses torch.export schema major version {m}; Ember reads major {SCHEMA_MAJOR} (torch 2.5 to 2.15). \
                 Re-export the model with a torch release that writes schema {SCHEMA_MAJOR}.x."
            )))
        }
        None => return Err(ImportError::new(format!("`{shown}`: model.json has no `schema_version.major`; is it a torch.export graph?"))),
    }
    let ep: ExportedProgram = serde_json::from_value(raw)
        .map_err(|e| ImportError::new(format!("`{shown}`: model.json does not match the torch.export schema: {e}")))?;
    import_program(ep, ar, shown)
}

/// Imports a program already in the schema's form (an eager region builds one in memory).
pub fn import_program(ep: ExportedProgram, ar: Option<&Archive>, shown: &str) -> R<Imported> {
    Importer::new(ep, ar, shown).run()
}

/// The serialized ScalarType enum of `torch/_export/serde/schema.py`.
pub fn serde_dtype(n: i64) -> Option<DType> {
    Some(match n {
        1 => DType::U8,
        2 => DType::I8,
        3 => DType::I16,
        4 => DType::I32,
        5 => DType::I64,
        6 => DType::F16,
        7 => DType::F32,
        8 => DType::F64,
        12 => DType::Bool,
        13 => DType::BF16,
        28 => DType::U16,
        29 => DType::F8E4M3FN,
        30 => DType::F8E5M2,
        34 => DType::U32,
        35 => DType::U64,
        _ => return None,
    })
}

fn memory_format_name(n: i64) -> &'static str {
    match n {
        1 => "contiguous_format",
        2 => "channels_last",
        3 => "channels_last_3d",
        4 => "preserve_format",
        _ => "unknown",
    }
}

/// The user's line from a node's `stack_trace`: the innermost frame outside torch itself.
pub fn source_loc(stack: &str) -> Loc {
    let mut frames = Vec::new();
    for line in stack.lines() {
        let l = line.trim();
        let Some(rest) = l.strip_prefix("File \"") else { continue };
        let Some(q) = rest.find('"') else { continue };
        let file = &rest[..q];
        let after = &rest[q + 1..];
        let line_no = after
            .split("line ")
            .nth(1)
            .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|s| s.parse::<u32>().ok());
        if let Some(n) = line_no {
            frames.push((file.to_string(), n));
        }
    }
    let inside_torch = |f: &str| f.starts_with("torch/") || f.contains("/torch/") || f.contains("\\torch\\");
    let pick = frames.iter().rev().find(|(f, _)| !inside_torch(f)).or(frames.last());
    match pick {
        Some((file, line)) => Loc::File { file: file.clone(), line: *line, col: 0 },
        None => Loc::Unknown,
    }
}

/// JSON floats; torch writes non-finite values as the strings "Infinity", "-Infinity", "NaN".
fn json_f64(v: &Json) -> Option<f64> {
    match v {
        Json::String(s) => match s.as_str() {
            "Infinity" | "inf" => Some(f64::INFINITY),
            "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
            "NaN" | "nan" => Some(f64::NAN),
            _ => None,
        },
        v => v.as_f64(),
    }
}

struct Importer<'a> {
    ep: ExportedProgram,
    ar: Option<&'a Archive>,
    shown: String,
    m: Module,
    syms: HashMap<String, SymExpr>,
    values: HashMap<String, Value>,
    /// Values holding complex numbers as (real, imaginary) pairs (complex.rs).
    complex: HashSet<Value>,
    /// What runtime assertions are proven from (asserts.rs): input symbols' bounds, value ranges
    /// of integer tensors, data-dependent symbols' ranges and the comparisons sym-bools name.
    bounds: HashMap<String, ember_ir::sym::Bounds>,
    ranges: HashMap<Value, (i64, i64)>,
    unbacked: HashMap<String, (i64, i64)>,
    sym_bools: HashMap<String, (String, Vec<Json>)>,
}

impl<'a> Importer<'a> {
    fn new(ep: ExportedProgram, ar: Option<&'a Archive>, shown: &str) -> Self {
        Importer {
            ep,
            ar,
            shown: shown.to_string(),
            m: Module::new(),
            syms: HashMap::new(),
            values: HashMap::new(),
            complex: HashSet::new(),
            bounds: HashMap::new(),
            ranges: HashMap::new(),
            unbacked: HashMap::new(),
            sym_bools: HashMap::new(),
        }
    }

    fn err(&self, msg: impl Into<String>) -> ImportError {
        ImportError::new(format!("`{}`: {}", self.shown, msg.into()))
    }

    fn sym_expr(&self, v: &Json, what: &str) -> R<SymExpr> {
        if let Some(i) = v.get("as_int").and_then(|x| x.as_i64()) {
            return Ok(SymExpr::Const(i));
        }
        if let Some(e) = v.pointer("/as_expr/expr_str").and_then(|x| x.as_str()) {
            return SymExpr::parse(e).map_err(|e| self.err(format!("{what}: {e}")));
        }
        if let Some(n) = v.get("as_name").and_then(|x| x.as_str()) {
            return self
                .syms
                .get(n)
                .cloned()
                .ok_or_else(|| self.err(format!("{what}: symbolic int `{n}` is not defined in sym_int_values")));
        }
        Err(self.err(format!("{what}: unreadable size `{v}`")))
    }

    /// The type of a node's result that must be real (complex nodes are complex.rs's).
    fn tensor_type(&self, meta: &TensorMeta, what: &str) -> R<TensorType> {
        match self.value_type(meta, what)? {
            (_, true) => Err(self.err(format!(
                "{what} is complex, which this op does not produce in Ember (an Ember bug: please report it with the model)"
            ))),
            (t, false) => Ok(t),
        }
    }

    /// The type of a value, and whether it is complex (then (real, imaginary) pairs: complex.rs).
    fn value_type(&self, meta: &TensorMeta, what: &str) -> R<(TensorType, bool)> {
        let part = complex::complex_part(meta.dtype);
        let dtype = part
            .or_else(|| serde_dtype(meta.dtype))
            .ok_or_else(|| self.err(format!("{what} has dtype code {}, a type Ember does not support", meta.dtype)))?;
        let dims = meta.sizes.iter().map(|s| self.sym_expr(s, what)).collect::<R<Vec<_>>>()?;
        let mut n: i64 = 1;
        for d in &dims {
            if let Some(c) = d.as_const() {
                if c < 0 {
                    return Err(self.err(format!("{what} has a negative size {c}")));
                }
                n = n.checked_mul(c).ok_or_else(|| {
                    let shape: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                    self.err(format!("{what}: the element count of shape [{}] overflows 64 bits", shape.join(", ")))
                })?;
            }
        }
        n.checked_mul(dtype.byte_size() as i64 * if part.is_some() { 2 } else { 1 })
            .ok_or_else(|| self.err(format!("{what}: the byte size overflows 64 bits")))?;
        Ok(match part {
            Some(part) => (complex::pair_type(dims, part), true),
            None => (TensorType::new(dims, dtype), false),
        })
    }

    fn run(mut self) -> R<Imported> {
        // Symbols and their bounds.
        let mut symbols = Attrs::new();
        for (name, rc) in &self.ep.range_constraints {
            let min = rc.min_val.as_ref().and_then(|v| v.as_i64()).unwrap_or(0);
            let max = rc.max_val.as_ref().and_then(|v| v.as_i64()).filter(|&m| m < i64::MAX / 2);
            self.bounds.insert(name.clone(), ember_ir::sym::Bounds { min, max });
            symbols.insert(
                name.clone(),
                Attr::Ints(match max {
                    Some(mx) => vec![min, mx],
                    None => vec![min],
                }),
            );
        }
        if !symbols.is_empty() {
            self.m.attrs.insert("ember.symbols".into(), Attr::Dict(symbols));
        }
        let sv = &self.ep.schema_version;
        self.m.attrs.insert("torch.schema".into(), Attr::Str(format!("{}.{}", sv.major, sv.minor)));
        if let Some(v) = &self.ep.torch_version {
            self.m.attrs.insert("torch.version".into(), Attr::Str(v.clone()));
        }
        let sym_ints: Vec<(String, Json)> =
            self.ep.graph_module.graph.sym_int_values.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        for (name, v) in sym_ints {
            let e = self.sym_expr(&v, &format!("symbolic int `{name}`"))?;
            self.syms.insert(name, e);
        }

        // Inputs, in signature order.
        let specs = std::mem::take(&mut self.ep.graph_module.signature.input_specs);
        let mut arg_types = Vec::new();
        let mut arg_attrs = Vec::new();
        let mut arg_names = Vec::new();
        let mut weights = Vec::new();
        let mut complex_args = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let (kind, body) = spec.iter().next().ok_or_else(|| self.err(format!("input spec {i} is empty")))?;
            let (wkind, fq_key) = match kind.as_str() {
                "parameter" => (Some(WeightKind::Parameter), "parameter_name"),
                "buffer" => (Some(WeightKind::Buffer), "buffer_name"),
                "tensor_constant" => (Some(WeightKind::Constant), "tensor_constant_name"),
                "user_input" => (None, ""),
                // An effect token orders `with_effects` calls (torch.export threads one through
                // `_linalg_check_errors`): the graph is pure apart from those calls, which stay in
                // program order, so the token carries nothing a target needs.
                "token" => continue,
                other => {
                    return Err(
                        self.err(format!("input {i} is a `{other}` input, which Ember does not support (only tensors, parameters, buffers and constants)"))
                    )
                }
            };
            let arg = body.get("arg").ok_or_else(|| self.err(format!("input spec {i} has no `arg`")))?;
            let name = arg
                .get("name")
                .or_else(|| arg.pointer("/as_tensor/name"))
                .and_then(|n| n.as_str())
                .ok_or_else(|| {
                    self.err(format!("input {i} is not a tensor (`{arg}`); Ember supports tensor inputs only"))
                })?
                .to_string();
            let meta = self
                .ep
                .graph_module
                .graph
                .tensor_values
                .get(&name)
                .cloned()
                .ok_or_else(|| self.err(format!("input `{name}` has no entry in tensor_values")))?;
            let (ty, pairs) = self.value_type(&meta, &format!("input `{name}`"))?;
            let mut attrs = Attrs::new();
            if pairs {
                complex_args.push(arg_types.len());
                // A complex user input arrives as its real view (view_as_real's pairs, the same bytes).
                if wkind.is_none() {
                    attrs.insert(COMPLEX_ATTR.into(), Attr::Bool(true));
                }
            }
            match wkind {
                Some(k) => {
                    let fq = body.get(fq_key).and_then(|v| v.as_str()).unwrap_or(&name).to_string();
                    attrs.insert(k.attr_key().into(), Attr::Str(fq.clone()));
                    let data = self.weight_data(&fq, &ty, pairs)?;
                    weights.push((fq, Weight { kind: k, ty: ty.clone(), data }));
                }
                None => {
                    attrs.insert("ember.input".into(), Attr::Str(name.clone()));
                }
            }
            arg_types.push(Type::Tensor(ty));
            arg_attrs.push(attrs);
            arg_names.push(name);
        }

        // Outputs: types are known from tensor_values up front, so the function is built once.
        let out_specs = std::mem::take(&mut self.ep.graph_module.signature.output_specs);
        let mut out_names = Vec::new();
        let mut res_attrs = Vec::new();
        for (i, spec) in out_specs.iter().enumerate() {
            let (kind, body) = spec.iter().next().ok_or_else(|| self.err(format!("output spec {i} is empty")))?;
            if kind == "token" {
                continue;
            }
            let arg = body.get("arg").ok_or_else(|| self.err(format!("output spec {i} has no `arg`")))?;
            let name = arg
                .pointer("/as_tensor/name")
                .or_else(|| arg.get("name"))
                .and_then(|n| n.as_str())
                .ok_or_else(|| {
                    self.err(format!("output {i} is not a tensor (`{arg}`); Ember supports tensor outputs only"))
                })?
                .to_string();
            let mut attrs = Attrs::new();
            match kind.as_str() {
                "user_output" => {
                    attrs.insert("ember.output".into(), Attr::Str(name.clone()));
                }
                "loss_output" => {
                    attrs.insert("ember.loss".into(), Attr::Str(name.clone()));
                }
                "buffer_mutation" => {
                    let target = body.get("buffer_name").and_then(|v| v.as_str()).unwrap_or("");
                    attrs.insert("ember.buffer_mutation".into(), Attr::Str(target.to_string()));
                }
                "user_input_mutation" => {
                    let target = body.get("user_input_name").and_then(|v| v.as_str()).unwrap_or("");
                    attrs.insert("ember.input_mutation".into(), Attr::Str(target.to_string()));
                }
                other => {
                    return Err(self.err(format!("output {i} is a `{other}` output, which Ember does not support")))
                }
            }
            out_names.push(name);
            res_attrs.push(attrs);
        }
        let mut out_types = Vec::new();
        for name in &out_names {
            let meta = self
                .ep
                .graph_module
                .graph
                .tensor_values
                .get(name)
                .cloned()
                .ok_or_else(|| self.err(format!("output `{name}` has no entry in tensor_values")))?;
            let (ty, pairs) = self.value_type(&meta, &format!("output `{name}`"))?;
            if pairs {
                res_attrs[out_types.len()].insert(COMPLEX_ATTR.into(), Attr::Bool(true));
            }
            out_types.push(Type::Tensor(ty));
        }
        let (f, entry) = self.m.add_func("main", arg_types, out_types, arg_attrs);
        if res_attrs.iter().any(|a| !a.is_empty()) {
            self.m
                .op_mut(f)
                .attrs
                .insert("res_attrs".into(), Attr::Array(res_attrs.into_iter().map(Attr::Dict).collect()));
        }
        let args = self.m.block(entry).args.clone();
        self.complex.extend(complex_args.into_iter().map(|i| args[i]));
        for (n, v) in arg_names.into_iter().zip(args) {
            self.values.insert(n, v);
        }

        let nodes = std::mem::take(&mut self.ep.graph_module.graph.nodes);
        for node in &nodes {
            self.node(entry, node)?;
        }

        let mut rets = Vec::new();
        for name in &out_names {
            rets.push(
                *self
                    .values
                    .get(name)
                    .ok_or_else(|| self.err(format!("output `{name}` is not produced by any node or input")))?,
            );
        }
        self.m.append_op(entry, ember_ir::module::RETURN, rets, vec![], Attrs::new(), Loc::Unknown);

        if let Err(errs) = ember_ir::verify::verify(&self.m) {
            // The first disagreement leads: it names the node and the user's line.
            let more: Vec<String> = errs.iter().skip(1).take(9).map(|e| format!("\n  {e}")).collect();
            let and =
                if more.is_empty() { String::new() } else { format!("\n{} more:{}", errs.len() - 1, more.concat()) };
            return Err(self.err(format!(
                "{}: Ember's type rule disagrees with the types torch.export recorded (an Ember bug: please report it with the model){and}",
                errs[0]
            )));
        }
        Ok(Imported { module: self.m, weights })
    }

    fn weight_data(&self, fq: &str, ty: &TensorType, pairs: bool) -> R<Option<Blob>> {
        let Some(ar) = self.ar else { return Ok(None) };
        let mut entry = None;
        for (cfg, dir) in [
            ("data/weights/model_weights_config.json", "data/weights"),
            ("data/constants/model_constants_config.json", "data/constants"),
        ] {
            let Some(b) = ar.get(cfg) else { continue };
            let c: WeightsConfig =
                serde_json::from_slice(b.bytes()).map_err(|e| self.err(format!("{cfg} is malformed: {e}")))?;
            if let Some(e) = c.config.get(fq) {
                entry = Some((format!("{dir}/{}", e.path_name), e.use_pickle, e.tensor_meta.clone()));
                break;
            }
        }
        let (path, pickled, meta) = entry.ok_or_else(|| {
            self.err(format!("weight `{fq}` is missing: neither weights nor constants config lists it"))
        })?;
        if pickled {
            return Err(self.err(format!("weight `{fq}` is stored as a pickle; Ember reads raw tensor storage only")));
        }
        let blob =
            ar.get(&path).ok_or_else(|| self.err(format!("weight `{fq}` is missing: the archive has no `{path}`")))?;
        let shape = ty.static_shape().ok_or_else(|| self.err(format!("weight `{fq}` has a symbolic shape")))?;
        let dtype = ty.dtype.torch_name();
        let bad = |why: String| self.err(format!("weight `{fq}` ({path}): {why}"));
        // The file holds the tensor's whole storage; the tensor is the elements at `offset` +
        // sum(index * stride). Every number here comes from the file, so all of it is checked.
        let int = |j: &Json| j.get("as_int").and_then(|v| v.as_i64());
        let mut strides: Vec<i64> = if meta.strides.is_empty() {
            row_major_strides(&shape)
        } else {
            meta.strides
                .iter()
                .map(int)
                .collect::<Option<_>>()
                .ok_or_else(|| bad(format!("strides {:?} are not all integers", meta.strides)))?
        };
        let mut offset = match &meta.storage_offset {
            None => 0,
            Some(o) => int(o).ok_or_else(|| bad(format!("storage_offset `{o}` is not an integer")))?,
        };
        // A complex tensor's strides and offset count complex elements: each is two parts.
        if pairs && !meta.strides.is_empty() {
            strides = strides.iter().map(|s| s.saturating_mul(2)).chain([1]).collect();
            offset = offset.saturating_mul(2);
        }
        if strides.len() != shape.len() {
            return Err(bad(format!("has {} strides for a rank-{} tensor", strides.len(), shape.len())));
        }
        if offset < 0 || strides.iter().any(|&s| s < 0) {
            return Err(bad(format!("storage_offset {offset} and strides {strides:?} must be non-negative (torch never writes negative ones)")));
        }
        let too_big = || {
            bad(format!(
                "shape {shape:?} with strides {strides:?} at offset {offset} spans more elements than fit in 64 bits"
            ))
        };
        let numel = shape.iter().try_fold(1i64, |n, &d| n.checked_mul(d)).ok_or_else(too_big)?;
        let span = if numel == 0 {
            0
        } else {
            let last = shape
                .iter()
                .zip(&strides)
                .try_fold(offset, |acc, (&d, &s)| (d - 1).checked_mul(s).and_then(|x| acc.checked_add(x)));
            last.and_then(|l| l.checked_add(1)).ok_or_else(too_big)?
        };
        let need = span as u128 * ty.dtype.byte_size() as u128;
        let have = blob.bytes().len() as u128;
        if have < need {
            return Err(self.err(format!(
                "weight `{fq}` ({path}) has {have} bytes, but a {dtype} tensor of shape {shape:?} needs {need}"
            )));
        }
        // Overlapping strides (stride 0: an expanded tensor) read some stored elements at several
        // indices, so the dense copy is larger than what the file holds: up to numel elements
        // from a single stored one. Capped, since such a copy from a small file is far more
        // likely a crafted archive than a model, and copying it could exhaust memory.
        let dense = numel as u128 * ty.dtype.byte_size() as u128;
        if numel > span && dense > MAX_EXPANDED_WEIGHT_BYTES {
            return Err(bad(format!(
                "strides {strides:?} read {numel} elements of shape {shape:?} from {span} stored ones (an expanded tensor); \
                 its dense copy would take {dense} bytes, over Ember's limit of {MAX_EXPANDED_WEIGHT_BYTES} for expanded weights. \
                 Save the tensor contiguous (`.contiguous()`) before exporting"
            )));
        }
        // Everything fits in the blob (or under the cap) now, so the usize conversions and the
        // dense copy's size below are exact.
        let (shape, strides): (Vec<usize>, Vec<usize>) =
            shape.iter().zip(&strides).map(|(&d, &s)| (d as usize, s as usize)).unzip();
        Ok(Some(blob.dense(&shape, &strides, offset as usize, ty.dtype.byte_size())))
    }

    fn node(&mut self, block: ember_ir::BlockId, node: &Node) -> R<()> {
        let node_name = node.name.clone().unwrap_or_else(|| node.target.clone());
        let at_line = node.source.clone().or_else(|| node.metadata.get("stack_trace").map(|s| source_loc(s)));
        let loc = Loc::named(&node_name, at_line.unwrap_or_default());
        let shown = self.shown.clone();
        let at = |msg: String| -> ImportError { ImportError::new(format!("`{shown}`: {}: {msg}", loc.describe())) };
        // Symbolic-int arithmetic: the values are already known as expressions.
        let sym_outputs = !node.outputs.is_empty()
            && node.outputs.iter().all(|o| {
                o.get("as_sym_int").is_some() || o.get("as_sym_float").is_some() || o.get("as_sym_bool").is_some()
            });
        if sym_outputs {
            self.note_symbolic(node);
            for o in &node.outputs {
                if let Some(n) = o.pointer("/as_sym_int/as_name").and_then(|n| n.as_str()) {
                    if !self.syms.contains_key(n) {
                        return Err(at(format!("symbolic int `{n}` has no expression in sym_int_values")));
                    }
                }
            }
            return Ok(());
        }
        if node.target == "torch.ops.aten._assert_scalar.default" {
            return self.assert_scalar(node).map_err(at);
        }
        if node.target == "torch.ops.aten._assert_async.msg" {
            return self.assert_async(node).map_err(at);
        }
        if node.target == "torch.ops.higher_order.with_effects" {
            let inner =
                effect_call(node).ok_or_else(|| at("`with_effects` without an operator and a token output".into()))?;
            return self.node(block, &inner);
        }
        let short = node.target.strip_prefix("torch.ops.").unwrap_or(&node.target);
        let short = short.strip_suffix(".default").unwrap_or(short);
        let ir_name = format!("torch.{short}");
        let def = dialect::lookup(&ir_name).ok_or_else(|| {
            at(format!(
                "unknown op `{}`: Ember's torch dialect has no definition for it, so this graph cannot be imported",
                node.target
            ))
        })?;
        let sig = def.signature();
        let mut given: BTreeMap<&str, &Json> = BTreeMap::new();
        for (i, a) in node.inputs.iter().enumerate() {
            let name = if a.name.is_empty() || a.kind == Some(1) && sig.param(&a.name).is_none() {
                sig.params.get(i).map(|p| p.name.as_str()).unwrap_or(&a.name)
            } else {
                a.name.as_str()
            };
            if sig.param(name).is_none() {
                return Err(at(format!("`{}` has no parameter `{name}` (signature {})", def.name, def.sig)));
            }
            given.insert(sig.param(name).map(|p| p.name.as_str()).unwrap(), &a.arg);
        }
        if self.touches_complex(node) {
            return self.complex_node(block, &loc, def, &given, node).map_err(at);
        }
        let mut operands = Vec::new();
        let mut segments = Vec::new();
        let mut attrs = Attrs::new();
        for p in &sig.params {
            let arg = given.get(p.name.as_str()).copied().filter(|a| a.get("as_none").is_none());
            if p.kind.is_tensor() {
                let before = operands.len();
                match arg {
                    None if !p.optional && p.kind == Kind::Tensor => {
                        return Err(at(format!("missing tensor argument `{}`", p.name)))
                    }
                    None => {}
                    Some(a) => self.tensor_arg(block, &loc, p, a, &mut operands, &mut attrs).map_err(&at)?,
                }
                segments.push((operands.len() - before) as i64);
                continue;
            }
            if p.kind.is_placement() || p.name == "pin_memory" || p.name == "non_blocking" {
                continue;
            }
            match arg {
                Some(a) => {
                    let v = self.attr_arg(p, a).map_err(at)?;
                    if !ember_ir::verify::attr_fits(p.kind, &v) {
                        return Err(at(format!(
                            "argument `{}` of `{}` should be {:?}, found `{a}`",
                            p.name, def.name, p.kind
                        )));
                    }
                    attrs.insert(p.name.clone(), v);
                }
                None => {
                    if let Some(d) = &p.default {
                        attrs.insert(p.name.clone(), d.clone());
                    } else if !p.optional && !p.default_none {
                        return Err(at(format!("missing argument `{}` of `{}`", p.name, def.name)));
                    }
                }
            }
        }
        if sig.has_segments() {
            attrs.insert(dialect::SEGMENTS.into(), Attr::Ints(segments));
        }
        // as_strided reads (as_strided_scatter writes) its operand's storage, laid out as eager
        // laid it out: the lowering needs that layout, which only the export records.
        if def.name == "torch.aten.as_strided" || def.name == "torch.aten.as_strided_scatter" {
            let operand = given.get("self").and_then(|a| a.pointer("/as_tensor/name")).and_then(|n| n.as_str());
            if let Some(meta) = operand.and_then(|n| self.ep.graph_module.graph.tensor_values.get(n)) {
                let int = |j: &Json| j.get("as_int").and_then(|v| v.as_i64());
                let strides: Option<Vec<i64>> = meta.strides.iter().map(int).collect();
                let offset = meta.storage_offset.as_ref().map_or(Some(0), int);
                if let (Some(strides), Some(offset)) = (strides, offset) {
                    attrs.insert("ember.self_strides".into(), Attr::Ints(strides));
                    attrs.insert("ember.self_offset".into(), Attr::Int(offset));
                }
            }
        }
        // Results.
        let mut out_names: Vec<Option<String>> = Vec::new();
        for o in &node.outputs {
            if let Some(n) = o.pointer("/as_tensor/name").and_then(|n| n.as_str()) {
                out_names.push(Some(n.to_string()));
            } else if let Some(list) = o.get("as_tensors").and_then(|l| l.as_array()) {
                for t in list {
                    out_names.push(t.get("name").and_then(|n| n.as_str()).map(|s| s.to_string()));
                }
            } else if o.get("as_none").is_some() {
                out_names.push(None);
            } else {
                return Err(at(format!("unsupported output `{o}`")));
            }
        }
        let op = self.m.create_op(def.name, operands, vec![], attrs, vec![], loc.clone());
        // Result types come from the export metadata; the rule fills unrecorded ones (unused outputs).
        let inferred = OpView::new(&self.m, op).and_then(|v| v.infer().ok());
        let mut types = Vec::new();
        for (i, n) in out_names.iter().enumerate() {
            let meta = n.as_ref().and_then(|n| self.ep.graph_module.graph.tensor_values.get(n)).cloned();
            let ty = match meta {
                Some(meta) => Type::Tensor(
                    self.tensor_type(&meta, &format!("{} result {i}", loc.describe()))
                        .map_err(|e| ImportError::new(e.msg))?,
                ),
                None => inferred
                    .as_ref()
                    .and_then(|v| v.get(i).cloned())
                    .ok_or_else(|| at(format!("result {i} has no recorded type and none can be inferred")))?,
            };
            types.push(ty);
        }
        let data = self.m.op(op).clone();
        let new = self.m.create_op(&data.name, data.operands, types, data.attrs, vec![], data.loc);
        let pos = self.m.block(block).ops.len();
        self.m.insert_op(block, pos, new);
        self.note_range(new);
        let results = self.m.op(new).results.clone();
        for (n, v) in out_names.into_iter().zip(results) {
            if let Some(n) = n {
                if self.values.insert(n.clone(), v).is_some() {
                    return Err(at(format!("defines `{n}`, which an earlier node or input already defines")));
                }
            }
        }
        Ok(())
    }

    fn lookup_tensor(&self, name: &str) -> Result<Value, String> {
        self.values.get(name).copied().ok_or_else(|| {
            format!("uses `{name}`, which no earlier node or input defines (a dangling or cyclic reference)")
        })
    }

    fn tensor_arg(
        &mut self,
        block: ember_ir::BlockId,
        loc: &Loc,
        p: &Param,
        a: &Json,
        operands: &mut Vec<Value>,
        attrs: &mut Attrs,
    ) -> Result<(), String> {
        match p.kind {
            Kind::Tensor => {
                let n = a
                    .pointer("/as_tensor/name")
                    .or_else(|| a.pointer("/as_optional_tensor/as_tensor/name"))
                    .and_then(|n| n.as_str());
                match n {
                    Some(n) => operands.push(self.lookup_tensor(n)?),
                    None if a.pointer("/as_optional_tensor/as_none").is_some() => {}
                    None => {
                        // A Python number where the schema wants a tensor (`x + 0` traced as add.Tensor):
                        // torch wraps it; a rank-0 tensor promotes the same way.
                        let (s, dtype) = match a.as_object().and_then(|o| o.iter().next()) {
                            Some((t, v)) if t == "as_int" => (Attr::Int(v.as_i64().unwrap_or(0)), DType::I64),
                            Some((t, v)) if t == "as_float" => (Attr::Float(json_f64(v).unwrap_or(0.0)), DType::F32),
                            Some((t, v)) if t == "as_bool" => (Attr::Bool(v.as_bool().unwrap_or(false)), DType::Bool),
                            _ => return Err(format!("argument `{}` should be a tensor, found `{a}`", p.name)),
                        };
                        let mut at = Attrs::new();
                        at.insert("s".into(), s);
                        at.insert("dtype".into(), Attr::DType(dtype));
                        let op = self.m.append_op(
                            block,
                            "torch.aten.scalar_tensor",
                            vec![],
                            vec![Type::Tensor(TensorType::new(vec![], dtype))],
                            at,
                            loc.clone(),
                        );
                        operands.push(self.m.result(op, 0));
                    }
                }
            }
            Kind::TensorList => {
                let list = a
                    .get("as_tensors")
                    .and_then(|l| l.as_array())
                    .ok_or_else(|| format!("argument `{}` should be a tensor list, found `{a}`", p.name))?;
                for t in list {
                    let n =
                        t.get("name").and_then(|n| n.as_str()).ok_or_else(|| format!("bad tensor in `{}`", p.name))?;
                    operands.push(self.lookup_tensor(n)?);
                }
            }
            Kind::OptTensorList => {
                let list = a
                    .get("as_optional_tensors")
                    .or_else(|| a.get("as_tensors"))
                    .and_then(|l| l.as_array())
                    .ok_or_else(|| {
                        format!("argument `{}` should be a list of optional tensors, found `{a}`", p.name)
                    })?;
                let mut mask = Vec::new();
                for t in list {
                    match t.pointer("/as_tensor/name").or_else(|| t.get("name")).and_then(|n| n.as_str()) {
                        Some(n) => {
                            operands.push(self.lookup_tensor(n)?);
                            mask.push(1);
                        }
                        None => mask.push(0),
                    }
                }
                attrs.insert(p.name.clone(), Attr::Ints(mask));
            }
            _ => unreachable!("tensor kinds only"),
        }
        Ok(())
    }

    fn sym_arg(&self, v: &Json) -> Result<SymExpr, String> {
        if let Some(i) = v.get("as_int").and_then(|x| x.as_i64()) {
            return Ok(SymExpr::Const(i));
        }
        if let Some(n) = v.get("as_name").and_then(|x| x.as_str()) {
            return self.syms.get(n).cloned().ok_or_else(|| format!("symbolic int `{n}` is not defined"));
        }
        Err(format!("unreadable symbolic int `{v}`"))
    }

    fn attr_arg(&self, p: &Param, a: &Json) -> Result<Attr, String> {
        let bad = || format!("argument `{}` ({:?}) has an unexpected value `{a}`", p.name, p.kind);
        let (tag, v) = a.as_object().and_then(|o| o.iter().next()).ok_or_else(bad)?;
        Ok(match (p.kind, tag.as_str()) {
            (_, "as_int") => Attr::Int(v.as_i64().ok_or_else(bad)?),
            (_, "as_float") => Attr::Float(json_f64(v).ok_or_else(bad)?),
            (_, "as_bool") => Attr::Bool(v.as_bool().ok_or_else(bad)?),
            (_, "as_string") => Attr::Str(v.as_str().ok_or_else(bad)?.to_string()),
            (_, "as_ints") => Attr::Ints(
                v.as_array().ok_or_else(bad)?.iter().map(|x| x.as_i64().ok_or_else(bad)).collect::<Result<_, _>>()?,
            ),
            (_, "as_floats") => Attr::Floats(
                v.as_array().ok_or_else(bad)?.iter().map(|x| json_f64(x).ok_or_else(bad)).collect::<Result<_, _>>()?,
            ),
            (_, "as_bools") => Attr::Array(
                v.as_array()
                    .ok_or_else(bad)?
                    .iter()
                    .map(|x| x.as_bool().map(Attr::Bool).ok_or_else(bad))
                    .collect::<Result<_, _>>()?,
            ),
            (_, "as_sym_int") => Attr::sym(self.sym_arg(v)?),
            (_, "as_sym_ints") => {
                Attr::dims(v.as_array().ok_or_else(bad)?.iter().map(|x| self.sym_arg(x)).collect::<Result<_, _>>()?)
            }
            (_, "as_scalar_type") => {
                let code = v.as_i64().ok_or_else(bad)?;
                Attr::DType(serde_dtype(code).ok_or_else(|| {
                    format!("argument `{}` names dtype code {code}, which Ember does not support", p.name)
                })?)
            }
            (_, "as_memory_format") => Attr::Str(memory_format_name(v.as_i64().unwrap_or(0)).to_string()),
            (_, "as_sym_float") => match v.get("as_float").and_then(|x| x.as_f64()) {
                Some(f) => Attr::Float(f),
                None => return Err(format!("argument `{}` is a symbolic float, which Ember does not support", p.name)),
            },
            (_, "as_sym_bool") => match v.get("as_bool").and_then(|x| x.as_bool()) {
                Some(b) => Attr::Bool(b),
                None => return Err(format!("argument `{}` is a symbolic bool, which Ember does not support", p.name)),
            },
            _ => return Err(bad()),
        })
    }
}

fn row_major_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
    }
    strides
}

/// `with_effects(token, op, args..)` → (token, op's results..) is the call of `op` itself, in
/// program order (an op without results is effectful to every pass), its token dropped.
fn effect_call(node: &Node) -> Option<Node> {
    let op = node.inputs.get(1)?.arg.get("as_operator")?.as_str()?;
    if node.outputs.is_empty() || node.inputs.len() < 2 {
        return None;
    }
    Some(Node {
        target: op.to_string(),
        inputs: node.inputs[2..]
            .iter()
            .map(|a| NamedArgument { name: a.name.clone(), arg: a.arg.clone(), kind: a.kind })
            .collect(),
        outputs: node.outputs[1..].iter().filter(|o| o.get("as_none").is_none()).cloned().collect(),
        metadata: node.metadata.clone(),
        name: node.name.clone(),
        source: node.source.clone(),
    })
}
