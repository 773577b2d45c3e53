//! Sharding rules: which dim of which `@main` argument and result is split over which mesh axis.
//! The StableHLO carries them as Shardy annotations (`sdy.mesh`, `sdy.sharding` on arguments and
//! results); XLA's SPMD partitioner propagates them through the body and inserts the collectives.
//! Every argument and result gets an explicit sharding (replicated when no rule applies), so the
//! runner places inputs and assembles outputs from the manifest alone.
//!
//! - `dp` (data parallel): user inputs and results are split along dim 0 (the batch).
//! - `fsdp` (fully sharded data parallel): every parameter is split along its first dim that
//!   divides evenly and is not split already; XLA all-gathers it where it is used.
//!
//! A graph from torch.compile takes its parameters as user inputs; `--param-inputs` names them, and
//! the rules treat those inputs as parameters (not split by `dp`, split by `fsdp` and `tp`).
//! `--replicate-outputs` keeps every result whole on every device (not split by `dp`), so each
//! process of a multi-process run can read them from its own devices.
//! - `tp` (tensor parallel, Megatron-style): linear layers are `ten.dot_general`s with a weight
//!   operand (a parameter seen through transposes and broadcasts). Walking the program in order, a
//!   linear layer whose activation does not depend on a column-parallel layer's output is
//!   column-parallel (its weight split along the output features, its output stays split); one
//!   whose activation does is row-parallel (weight split along the input features; its output is
//!   summed across the axis by an all-reduce and is whole again). So attention's q/k/v (or fused
//!   qkv) projections and an MLP's up/gate projections are column-parallel, the attention output
//!   and MLP down projections row-parallel. Linear layers inside fusion groups are not
//!   considered (the group is opaque here).
//!
//! A dim is only split when the axis size divides it; otherwise the tensor stays replicated on
//! that axis (correct, only slower). Sharding never changes results: XLA keeps the program's
//! semantics whatever the annotations say.

use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::{Module, OpId, Value, ValueDef};
use std::collections::HashMap;

/// A sharding strategy and the mesh axis it uses.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Rule {
    pub strategy: String,
    pub axis: String,
}

/// `--mesh x=2,y=4 --shard tp --shard fsdp=x`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    /// Mesh axes in order (device ids are row-major over them).
    pub mesh: Vec<(String, i64)>,
    pub rules: Vec<Rule>,
    /// User inputs (by name) that are parameters: `--param-inputs`.
    pub param_inputs: Vec<String>,
    /// Every result whole on every device (`--replicate-outputs`): each process of a
    /// multi-process run reads its results from its own devices.
    pub replicate_outputs: bool,
}

pub const STRATEGIES: [&str; 3] = ["dp", "fsdp", "tp"];

impl Options {
    /// Parses `--mesh` (`x=2,y=4`) and `--shard` values (`tp`, `fsdp=x`, ...). Without an axis,
    /// `dp` and `fsdp` use the first mesh axis and `tp` the last (the usual data × model layout).
    pub fn parse(
        mesh: &str,
        shard: &[String],
        param_inputs: Option<&str>,
        replicate_outputs: bool,
    ) -> Result<Options, String> {
        let mut o = Options { replicate_outputs, ..Options::default() };
        o.param_inputs = param_inputs.map(|s| s.split(',').map(|n| n.trim().to_string()).collect()).unwrap_or_default();
        if o.param_inputs.iter().any(|n| n.is_empty()) {
            return Err(format!(
                "--param-inputs `{}`: give input names separated by commas (one is empty)",
                param_inputs.unwrap_or("")
            ));
        }
        for part in mesh.split(',') {
            let (name, size) = part
                .split_once('=')
                .ok_or_else(|| format!("--mesh `{mesh}`: each axis is NAME=SIZE (e.g. `x=2,y=4`), found `{part}`"))?;
            let name = name.trim();
            let size: i64 = size
                .trim()
                .parse()
                .map_err(|_| format!("--mesh `{mesh}`: axis `{name}` has size `{size}`, not an integer"))?;
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                || name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(format!(
                    "--mesh `{mesh}`: axis name `{name}` must be letters, digits and `_`, not starting with a digit"
                ));
            }
            if size < 1 {
                return Err(format!("--mesh `{mesh}`: axis `{name}` has size {size}; sizes are at least 1"));
            }
            if o.mesh.iter().any(|(n, _)| n == name) {
                return Err(format!("--mesh `{mesh}`: axis `{name}` appears twice"));
            }
            o.mesh.push((name.to_string(), size));
        }
        for s in shard {
            for item in s.split(',') {
                let (strategy, axis) = match item.split_once('=') {
                    Some((st, ax)) => (st.trim(), Some(ax.trim())),
                    None => (item.trim(), None),
                };
                if !STRATEGIES.contains(&strategy) {
                    return Err(format!(
                        "--shard `{item}`: unknown strategy `{strategy}` (one of dp, fsdp, tp, optionally `=AXIS`)"
                    ));
                }
                let axis = match axis {
                    Some(a) => {
                        if !o.mesh.iter().any(|(n, _)| n == a) {
                            return Err(format!(
                                "--shard `{item}`: the mesh has no axis `{a}` (axes: {})",
                                o.axis_names()
                            ));
                        }
                        a.to_string()
                    }
                    None if strategy == "tp" => o.mesh.last().unwrap().0.clone(),
                    None => o.mesh[0].0.clone(),
                };
                if o.rules.iter().any(|r| r.strategy == strategy) {
                    return Err(format!("--shard: `{strategy}` is given twice"));
                }
                o.rules.push(Rule { strategy: strategy.to_string(), axis });
            }
        }
        let axis_of = |s: &str| o.rules.iter().find(|r| r.strategy == s).map(|r| r.axis.clone());
        if let (Some(t), Some(f)) = (axis_of("tp"), axis_of("fsdp")) {
            if t == f {
                return Err(format!("--shard: tp and fsdp both use mesh axis `{t}`; give them different axes (e.g. `--shard tp=y --shard fsdp=x`)"));
            }
        }
        Ok(o)
    }

    fn axis_names(&self) -> String {
        self.mesh.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", ")
    }

    pub fn devices(&self) -> i64 {
        self.mesh.iter().map(|(_, s)| s).product()
    }

    fn axis(&self, strategy: &str) -> Option<(&str, i64)> {
        let r = self.rules.iter().find(|r| r.strategy == strategy)?;
        let size = self.mesh.iter().find(|(n, _)| *n == r.axis)?.1;
        Some((r.axis.as_str(), size))
    }
}

/// Per dim, the mesh axis it is split over (`None`: not split).
pub type Spec = Vec<Option<String>>;

/// The decided shardings of `@main`'s arguments and results.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub args: Vec<Spec>,
    pub results: Vec<Spec>,
}

/// `#sdy.sharding<@mesh, [{"x"}, {}]>`.
pub fn sdy_text(spec: &Spec) -> String {
    let dims: Vec<String> =
        spec.iter().map(|d| d.as_ref().map_or("{}".to_string(), |a| format!("{{\"{a}\"}}"))).collect();
    format!("#sdy.sharding<@mesh, [{}]>", dims.join(", "))
}

fn shape(m: &Module, v: Value) -> Vec<i64> {
    m.ty(v).tensor().and_then(|t| t.static_shape()).unwrap_or_default()
}

/// Splits dim `d` of `spec` over `axis` if it is free, the axis is not used by the tensor yet, and
/// the axis size divides the dim. Returns whether it did.
fn split(spec: &mut Spec, dims: &[i64], d: usize, axis: (&str, i64)) -> bool {
    let (name, size) = axis;
    let used = spec.iter().any(|a| a.as_deref() == Some(name));
    if d >= spec.len() || spec[d].is_some() || used || dims[d] % size != 0 {
        return false;
    }
    spec[d] = Some(name.to_string());
    true
}

/// The entry-block argument `v` reads through transposes, broadcasts and converts, with the
/// argument dim behind each dim of `v` (`None` for dims a broadcast created).
fn trace_arg(m: &Module, entry: ember_ir::module::BlockId, v: Value) -> Option<(usize, Vec<Option<usize>>)> {
    let rank = shape(m, v).len();
    let mut map: Vec<Option<usize>> = (0..rank).map(Some).collect();
    let mut cur = v;
    loop {
        match m.value(cur).def {
            ValueDef::Arg(b, i) => return (b == entry).then_some((i as usize, map)),
            ValueDef::Result(op, _) => {
                let d = m.op(op);
                match d.ten() {
                    Some(TenOp::Convert) => {}
                    Some(TenOp::Transpose) => {
                        let perm = d.attrs.get("dims")?.as_ints()?;
                        map = map.iter().map(|k| k.map(|k| perm[k] as usize)).collect();
                    }
                    Some(TenOp::Broadcast) => {
                        let dims = d.attrs.get("dims")?.as_ints()?;
                        let (from, to) = (shape(m, d.operands[0]), shape(m, cur));
                        map = map
                            .iter()
                            .map(|k| {
                                let k = (*k)?;
                                let i = dims.iter().position(|&x| x as usize == k)?;
                                (from[i] == to[k]).then_some(i)
                            })
                            .collect();
                    }
                    _ => return None,
                }
                cur = d.operands[0];
            }
        }
    }
}

/// Decides the shardings of `@main` (function op `f`) for `opts`.
pub fn plan(m: &Module, f: OpId, opts: &Options) -> Result<Plan, String> {
    let entry = m.entry(f);
    let args = m.block(entry).args.clone();
    let inputs: Vec<&str> = (0..args.len())
        .filter_map(|i| m.arg_attrs(f, i).and_then(|a| a.get("ember.input")).and_then(Attr::as_str))
        .collect();
    if let Some(unknown) = opts.param_inputs.iter().find(|p| !inputs.contains(&p.as_str())) {
        return Err(format!("--param-inputs: the model has no input `{unknown}` (inputs: {})", inputs.join(", ")));
    }
    let role = |i: usize, k: &str| m.arg_attrs(f, i).is_some_and(|a| a.contains_key(k));
    let param_input = |i: usize| {
        m.arg_attrs(f, i)
            .and_then(|a| a.get("ember.input"))
            .and_then(Attr::as_str)
            .is_some_and(|name| opts.param_inputs.iter().any(|p| p == name))
    };
    let is_param = |i: usize| role(i, "ember.param") || param_input(i);
    let is_weight = |i: usize| !role(i, "ember.input") || param_input(i);
    let mut specs: Vec<Spec> = args.iter().map(|&a| vec![None; shape(m, a).len()]).collect();
    let ret = m.func_return(f);
    let results: Vec<Value> = ret.map(|r| m.op(r).operands.clone()).unwrap_or_default();
    let mut res_specs: Vec<Spec> = results.iter().map(|&v| vec![None; shape(m, v).len()]).collect();

    if let Some(tp) = opts.axis("tp") {
        // Values that depend on a column-parallel layer's output not yet closed by a row-parallel one.
        let mut open: HashMap<Value, bool> = HashMap::new();
        for &op in &m.block(entry).ops {
            let d = m.op(op);
            let any_open = d.operands.iter().any(|v| open.get(v).copied().unwrap_or(false));
            let mut out_open = any_open;
            if d.is(TenOp::DotGeneral) {
                if let Some(col) = linear(m, entry, op, &is_weight) {
                    let w = &col;
                    let act_open = open.get(&d.operands[w.act]).copied().unwrap_or(false);
                    let wdims = shape(m, args[w.arg]);
                    if act_open {
                        split(&mut specs[w.arg], &wdims, w.in_dim, tp);
                        out_open = false;
                    } else {
                        out_open = split(&mut specs[w.arg], &wdims, w.out_dim, tp)
                            || specs[w.arg][w.out_dim].as_deref() == Some(tp.0);
                    }
                }
            }
            for &r in &d.results {
                open.insert(r, out_open);
            }
        }
    }
    if let Some(fsdp) = opts.axis("fsdp") {
        for (i, &a) in args.iter().enumerate() {
            if is_param(i) {
                let dims = shape(m, a);
                for d in 0..dims.len() {
                    if split(&mut specs[i], &dims, d, fsdp) {
                        break;
                    }
                }
            }
        }
    }
    if let Some(dp) = opts.axis("dp") {
        for (i, &a) in args.iter().enumerate() {
            if role(i, "ember.input") && !param_input(i) && !specs[i].is_empty() {
                split(&mut specs[i], &shape(m, a), 0, dp);
            }
        }
        for (spec, &v) in res_specs.iter_mut().zip(&results) {
            if !spec.is_empty() && !opts.replicate_outputs {
                split(spec, &shape(m, v), 0, dp);
            }
        }
    }
    Ok(Plan { args: specs, results: res_specs })
}

/// A linear layer: operand `act` is the activation, the other a weight argument `arg` whose
/// `in_dim` is contracted and `out_dim` is the output feature dim.
struct Linear {
    act: usize,
    arg: usize,
    in_dim: usize,
    out_dim: usize,
}

fn linear(m: &Module, entry: ember_ir::module::BlockId, op: OpId, is_weight: &dyn Fn(usize) -> bool) -> Option<Linear> {
    let d = m.op(op);
    let ints = |k: &str| d.attrs.get(k).and_then(Attr::as_ints).map(|v| v.to_vec());
    for (w, batch, contract) in [(1, "rhs_batch", "rhs_contract"), (0, "lhs_batch", "lhs_contract")] {
        let Some((arg, map)) = trace_arg(m, entry, d.operands[w]) else { continue };
        if !is_weight(arg) {
            continue;
        }
        let (batch, contract) = (ints(batch)?, ints(contract)?);
        let free: Vec<usize> =
            (0..map.len()).filter(|&i| !batch.contains(&(i as i64)) && !contract.contains(&(i as i64))).collect();
        if contract.len() != 1 || free.len() != 1 {
            return None;
        }
        let (in_dim, out_dim) = (map[contract[0] as usize]?, map[free[0]]?);
        return Some(Linear { act: 1 - w, arg, in_dim, out_dim });
    }
    None
}
