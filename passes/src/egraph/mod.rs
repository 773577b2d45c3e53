//! The e-graph optimizer (`fuse`): rewrite with egg, extract by a target's cost model, and turn
//! the result into kernels.
//!
//! 1. The body of each function is read into an e-graph block by block (`Limits::block_ops` ops
//!    at a time, in program order, so a large graph saturates in pieces of about one layer).
//!    `ten` ops are e-nodes; every other op (unlowered torch ops, effects, regions) is an opaque
//!    node that keeps its place and is re-inserted unchanged.
//! 2. Rules (`rules/`: algebra, layout, fusion) run until saturation or a limit.
//! 3. Extraction picks, per e-class, the node of least estimated time on the target
//!    (`cost.rs`). The chosen graph is written back in program order; each class keeps the
//!    location of the first op that produced it.
//! 4. A chosen composite (`ember.softmax`, ...) becomes an `ember.fusion_group` whose body is the
//!    cheapest decomposition in its e-class, and `partition.rs` groups the remaining ops
//!    into `loop` and `gemm` kernels.

pub mod cost;
pub mod lang;
pub mod partition;
pub mod report;
pub mod rules;

use egg::{Id, Runner};
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::OpId;
use ember_ir::{Attr, Attrs, Loc, Module, TensorType, Type, Value};
use lang::{add, attrs_of, type_of, ENode, Ember, EG};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where saturation stops. Iterations and nodes decide; the time limit is a safety stop and is
/// reported as such when it fires.
#[derive(Clone, Debug)]
pub struct Limits {
    pub iterations: usize,
    /// E-nodes per block, as a multiple of the block's op count (plus a floor).
    pub nodes_per_op: usize,
    pub block_ops: usize,
    pub time_limit: Duration,
}

/// E-nodes every block may grow to regardless of its size.
const NODE_FLOOR: usize = 10_000;

impl Limits {
    fn node_limit(&self, ops: usize) -> usize {
        NODE_FLOOR + self.nodes_per_op * ops
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits { iterations: 8, nodes_per_op: 8, block_ops: 4000, time_limit: Duration::from_secs(60) }
    }
}

pub struct Options {
    pub target: String,
    pub limits: Limits,
}

impl Options {
    pub fn new(target: &str) -> Options {
        Options { target: target.into(), limits: Limits::default() }
    }
}

/// What one block's saturation did.
#[derive(Clone, Debug)]
pub struct BlockTrace {
    pub ops: usize,
    pub iterations: usize,
    pub enodes: usize,
    pub eclasses: usize,
    pub stop: String,
    pub seconds: f64,
}

/// Everything the `--report` and `--trace` print.
#[derive(Default, Debug)]
pub struct Trace {
    pub target: String,
    pub blocks: Vec<BlockTrace>,
    /// Rule name -> times it changed the e-graph.
    pub fired: Vec<(String, usize)>,
    /// Per created fusion group (by result value): the rules that fired inside it.
    pub group_rules: HashMap<OpId, Vec<String>>,
    pub ops_before: usize,
    pub ops_after: usize,
    /// Kernels after partitioning (fusion groups at the top level).
    pub kernels: usize,
}

/// The `fuse` pass with the context's target (its cost model) and limits; the trace joins the
/// context's.
pub fn fuse_pass(m: &mut Module, cx: &mut crate::PassContext) -> Result<(), String> {
    let trace = optimize(m, &cx.egraph)?;
    cx.traces.push(trace);
    Ok(())
}

impl Trace {
    pub fn render(&self, l: &Limits) -> String {
        let mut s = format!(
            "fuse: target {}, {} ops -> {} ops after extraction, {} kernels\n  limits: {} iterations, {} + {}/op e-nodes, blocks of {} ops, {} s time limit (a safety stop)\n",
            self.target, self.ops_before, self.ops_after, self.kernels, l.iterations, NODE_FLOOR, l.nodes_per_op, l.block_ops, l.time_limit.as_secs()
        );
        for (i, b) in self.blocks.iter().enumerate() {
            s += &format!(
                "  block {}: {} ops, {} iterations, {} e-nodes, {} e-classes, stopped: {}\n",
                i + 1,
                b.ops,
                b.iterations,
                b.enodes,
                b.eclasses,
                b.stop
            );
        }
        let fired: Vec<String> = self.fired.iter().map(|(r, n)| format!("{r} x{n}")).collect();
        s += &format!("  rules fired: {}\n", if fired.is_empty() { "none".to_string() } else { fired.join(", ") });
        s
    }
}

pub fn optimize(m: &mut Module, opts: &Options) -> Result<Trace, String> {
    let table = cost::table(&opts.target).ok_or_else(|| {
        let names: Vec<&str> = cost::TABLES.iter().map(|t| t.target).collect();
        format!("no cost model for target `{}` (known: {})", opts.target, names.join(", "))
    })?;
    let mut trace = Trace { target: opts.target.clone(), ..Default::default() };
    let rewrites = rules::rewrites(&rules::all());
    let mut fired: HashMap<String, usize> = HashMap::new();
    for f in m.funcs() {
        let entry = m.entry(f);
        let ret = m.func_return(f);
        let ops: Vec<OpId> = m.block(entry).ops.iter().copied().filter(|&o| Some(o) != ret).collect();
        trace.ops_before += ops.len();
        // Last position at which each value is read (the return counts as after everything).
        let mut last_use: HashMap<Value, usize> = HashMap::new();
        for (i, &op) in ops.iter().enumerate() {
            for &v in &m.op(op).operands {
                last_use.insert(v, i);
            }
        }
        if let Some(r) = ret {
            for &v in &m.op(r).operands {
                last_use.insert(v, usize::MAX);
            }
        }
        let mut remap: HashMap<Value, Value> = HashMap::new();
        let mut out_ops: Vec<OpId> = Vec::new();
        let mut start = 0;
        while start < ops.len() {
            let end = (start + opts.limits.block_ops).min(ops.len());
            let chunk = &ops[start..end];
            let mut b = Block::read(m, chunk, &remap);
            let t0 = Instant::now();
            let node_limit = opts.limits.node_limit(chunk.len());
            let runner = Runner::<ENode, Ember>::new(Ember::default())
                .with_egraph(std::mem::take(&mut b.eg))
                .with_iter_limit(opts.limits.iterations)
                .with_node_limit(node_limit)
                .with_time_limit(opts.limits.time_limit)
                .run(&rewrites);
            let stop = match &runner.stop_reason {
                Some(egg::StopReason::Saturated) => "saturated".to_string(),
                Some(egg::StopReason::IterationLimit(n)) => format!("iteration limit ({n})"),
                Some(egg::StopReason::NodeLimit(n)) => format!("node limit ({n})"),
                Some(egg::StopReason::TimeLimit(s)) => format!("TIME LIMIT (safety stop after {s:.1} s)"),
                Some(egg::StopReason::Other(s)) => s.clone(),
                None => "not run".into(),
            };
            b.eg = runner.egraph;
            for (rule, _) in &b.eg.analysis.fired {
                *fired.entry(rule.to_string()).or_default() += 1;
            }
            trace.blocks.push(BlockTrace {
                ops: chunk.len(),
                iterations: runner.iterations.len(),
                enodes: b.eg.total_number_of_nodes(),
                eclasses: b.eg.number_of_classes(),
                stop,
                seconds: 0.0,
            });
            // Roots: values read after this block, and every opaque op (in program order).
            let mut roots: Vec<Root> = Vec::new();
            for (i, &op) in chunk.iter().enumerate() {
                if b.opaque.contains_key(&op) {
                    roots.push(Root::Opaque(op));
                }
                for &r in &m.op(op).results {
                    if last_use.get(&r).is_some_and(|&u| u >= end) && !b.opaque.contains_key(&op) {
                        roots.push(Root::Value(r, b.class_of[&r]));
                    }
                }
                let _ = i;
            }
            let mut w = Writer::new(&b.eg, table);
            for root in roots {
                match root {
                    Root::Opaque(op) => {
                        w.emit_opaque(m, &b, op, &mut out_ops);
                    }
                    Root::Value(old, class) => {
                        let new = w.emit(m, &b, class, &mut out_ops);
                        if new != old {
                            remap.insert(old, new);
                        }
                    }
                }
            }
            for (op, rules) in w.group_rules.drain() {
                trace.group_rules.insert(op, rules);
            }
            trace.blocks.last_mut().unwrap().seconds = t0.elapsed().as_secs_f64();
            start = end;
        }
        if let Some(r) = ret {
            let operands: Vec<Value> = m.op(r).operands.iter().map(|v| *remap.get(v).unwrap_or(v)).collect();
            m.op_mut(r).operands = operands;
            out_ops.push(r);
        }
        trace.ops_after += out_ops.len() - ret.is_some() as usize;
        m.set_block_ops(entry, out_ops);
        partition::partition(m, entry, table, &mut trace)?;
    }
    let mut fired: Vec<(String, usize)> = fired.into_iter().collect();
    fired.sort();
    trace.fired = fired;
    Ok(trace)
}

enum Root {
    Opaque(OpId),
    Value(Value, Id),
}

/// One block of ops read into an e-graph.
struct Block {
    eg: EG,
    class_of: HashMap<Value, Id>,
    /// Values defined outside the block, by their leaf class.
    inputs: HashMap<Id, Value>,
    opaque: HashMap<OpId, Id>,
}

fn tensor_type(m: &Module, v: Value) -> TensorType {
    match m.ty(v) {
        Type::Tensor(t) => t.clone(),
        // Scalars and other values only flow into opaque ops; a rank-0 stand-in keeps them typed.
        Type::Scalar(d) => TensorType::new(vec![], *d),
        _ => TensorType::new(vec![], ember_ir::DType::I64),
    }
}

fn is_enode(m: &Module, op: OpId) -> bool {
    let d = m.op(op);
    d.ten().is_some() && d.results.len() == 1 && d.regions.is_empty() && matches!(m.ty(d.results[0]), Type::Tensor(_))
}

impl Block {
    fn read(m: &Module, chunk: &[OpId], remap: &HashMap<Value, Value>) -> Block {
        let mut b =
            Block { eg: EG::default(), class_of: HashMap::new(), inputs: HashMap::new(), opaque: HashMap::new() };
        for &op in chunk {
            let d = m.op(op);
            let mut args = Vec::with_capacity(d.operands.len());
            for &v in &d.operands {
                let id = match b.class_of.get(&v) {
                    Some(&id) => id,
                    None => {
                        let outer = *remap.get(&v).unwrap_or(&v);
                        let mut a = Attrs::new();
                        a.insert("value".into(), Attr::Int(outer.0 as i64));
                        let id = add(&mut b.eg, "input", &a, &tensor_type(m, outer), vec![]);
                        b.inputs.insert(id, outer);
                        b.class_of.insert(v, id);
                        id
                    }
                };
                args.push(id);
            }
            if is_enode(m, op) {
                let ty = tensor_type(m, d.results[0]);
                let id = add(&mut b.eg, &d.name, &d.attrs, &ty, args);
                if b.eg[id].data.loc.is_none() {
                    b.eg[id].data.loc = Some(d.loc.clone());
                }
                b.class_of.insert(d.results[0], id);
            } else {
                let mut a = Attrs::new();
                a.insert("op".into(), Attr::Int(op.0 as i64));
                let ty = d
                    .results
                    .first()
                    .map(|&r| tensor_type(m, r))
                    .unwrap_or_else(|| TensorType::new(vec![], ember_ir::DType::Bool));
                let id = add(&mut b.eg, "opaque", &a, &ty, args);
                b.opaque.insert(op, id);
                for (i, &r) in d.results.iter().enumerate() {
                    let mut a = Attrs::new();
                    a.insert("op".into(), Attr::Int(op.0 as i64));
                    a.insert("result".into(), Attr::Int(i as i64));
                    let rid = add(&mut b.eg, "result", &a, &tensor_type(m, r), vec![id]);
                    b.class_of.insert(r, rid);
                }
            }
        }
        b.eg.rebuild();
        b
    }
}

/// Writes the extracted graph back as ops.
struct Writer<'a> {
    best: egg::Extractor<'a, cost::TimeCost<'a>, ENode, Ember>,
    plain: egg::Extractor<'a, cost::TimeCost<'a>, ENode, Ember>,
    done: HashMap<Id, Value>,
    group_rules: HashMap<OpId, Vec<String>>,
    eg: &'a EG,
    table: &'static cost::CostTable,
}

impl<'a> Writer<'a> {
    fn new(eg: &'a EG, table: &'static cost::CostTable) -> Self {
        Writer {
            best: egg::Extractor::new(eg, cost::TimeCost { eg, table, plain: false }),
            plain: egg::Extractor::new(eg, cost::TimeCost { eg, table, plain: true }),
            done: HashMap::new(),
            group_rules: HashMap::new(),
            eg,
            table,
        }
    }

    fn loc(&self, id: Id) -> Loc {
        self.eg[id].data.loc.clone().unwrap_or_default()
    }

    /// Re-inserts an opaque op with its operands rewritten to the emitted values.
    fn emit_opaque(&mut self, m: &mut Module, b: &Block, op: OpId, out: &mut Vec<OpId>) {
        let id = self.eg.find(b.opaque[&op]);
        if self.done.contains_key(&id) {
            return;
        }
        let args: Vec<Id> =
            self.eg[id].nodes.iter().find(|n| n.op.as_str() == "opaque").expect("opaque node").args.clone();
        let vals: Vec<Value> = args.iter().map(|&a| self.emit(m, b, a, out)).collect();
        m.op_mut(op).operands = vals;
        out.push(op);
        let first = m.op(op).results.first().copied().unwrap_or(Value(u32::MAX));
        self.done.insert(id, first);
    }

    fn emit(&mut self, m: &mut Module, b: &Block, id: Id, out: &mut Vec<OpId>) -> Value {
        let id = self.eg.find(id);
        if let Some(&v) = self.done.get(&id) {
            return v;
        }
        let n = self.best.find_best_node(id).clone();
        let v = match n.op.as_str() {
            "input" => b.inputs[&id_of(self.eg, &b.inputs, id)],
            "result" => {
                let op = OpId(attrs_of(self.eg, &n).get("op").and_then(|a| a.as_int()).unwrap() as u32);
                let i = attrs_of(self.eg, &n).get("result").and_then(|a| a.as_int()).unwrap() as usize;
                self.emit_opaque(m, b, op, out);
                m.op(op).results[i]
            }
            "opaque" => unreachable!("opaque ops are emitted as roots"),
            op if op.starts_with("ember.") => self.emit_group(m, b, id, &n, out),
            _ => {
                let vals: Vec<Value> = n.args.iter().map(|&a| self.emit(m, b, a, out)).collect();
                let ty = self.eg.analysis.types[&n.ty].clone();
                let attrs = attrs_of(self.eg, &n).clone();
                let op = m.create_op(n.op.as_str(), vals, vec![ty.into()], attrs, vec![], self.loc(id));
                out.push(op);
                m.op(op).results[0]
            }
        };
        self.done.insert(id, v);
        v
    }

    /// A composite becomes an `ember.fusion_group` whose body is the plain decomposition of its
    /// class, reading the composite's operands (and any other outside value it needs) as block
    /// arguments.
    fn emit_group(&mut self, m: &mut Module, b: &Block, id: Id, n: &ENode, out: &mut Vec<OpId>) -> Value {
        let args: Vec<Id> = n.args.iter().map(|&a| self.eg.find(a)).collect();
        // A composite operand may be a layout view the rule made for the contract (k transposed
        // back to [.., Tk, D], a mask reshaped to the scores' shape) while the decomposition reads
        // the value under it: the body recomputes that value from the operand (the inverse view),
        // so the group's operands stay exactly the contract's.
        let mut derived: Vec<(Id, usize, ENode)> = Vec::new();
        for (i, &a) in args.iter().enumerate() {
            for view in &self.eg[a].nodes {
                if matches!(view.ten(), Some(TenOp::Transpose | TenOp::Reshape)) {
                    let under = self.eg.find(view.args[0]);
                    if !args.contains(&under) && !derived.iter().any(|(u, _, _)| *u == under) {
                        derived.push((under, i, view.clone()));
                    }
                }
            }
        }
        let mut inputs = args.clone();
        let mut stops: Vec<Id> = derived.iter().map(|(u, _, _)| *u).collect();
        // The body: a decomposition of the class that reads only the operands (the cheapest such
        // one, searched within a budget), else the cheapest plain one with its outside reads as
        // extra operands.
        let avail: Vec<Id> = args.iter().chain(&stops).copied().collect();
        let choice = self.constrained_body(id, &avail);
        // Discover the body's outside reads first: they must be emitted before the group.
        let mut body_order: Vec<Id> = Vec::new();
        let mut seen: HashMap<Id, ()> = HashMap::new();
        self.body_walk(id, &choice, &mut inputs, &mut stops, &mut body_order, &mut seen);
        let node_of =
            |c: Id| -> ENode { choice.get(&c).cloned().unwrap_or_else(|| self.plain.find_best_node(c).clone()) };
        let read: Vec<Id> = body_order
            .iter()
            .flat_map(|&c| node_of(c).args.iter().map(|&a| self.eg.find(a)).collect::<Vec<_>>())
            .collect();
        derived.retain(|(u, _, _)| read.contains(u));
        let vals: Vec<Value> = inputs.clone().iter().map(|&a| self.emit(m, b, a, out)).collect();
        let types: Vec<Type> = vals.iter().map(|&v| m.ty(v).clone()).collect();
        let block = m.new_block(&types);
        let block_args = m.block(block).args.clone();
        let mut local: HashMap<Id, Value> = inputs.iter().zip(block_args.iter()).map(|(&i, &v)| (i, v)).collect();
        let mut body_ops = Vec::new();
        for (under, i, view) in &derived {
            let ty = type_of(self.eg, *under);
            let mut attrs = Attrs::new();
            let op = if view.ten() == Some(TenOp::Transpose) {
                let perm = attrs_of(self.eg, view)
                    .get("dims")
                    .and_then(|a| a.as_ints().map(|v| v.to_vec()))
                    .unwrap_or_default();
                let mut inv = vec![0i64; perm.len()];
                for (j, &p) in perm.iter().enumerate() {
                    inv[p as usize] = j as i64;
                }
                attrs.insert("dims".into(), Attr::Ints(inv));
                TenOp::Transpose
            } else {
                attrs.insert("shape".into(), Attr::dims(ty.dims.clone()));
                TenOp::Reshape
            };
            let op = m.create_op(op.name(), vec![block_args[*i]], vec![ty.into()], attrs, vec![], self.loc(*under));
            body_ops.push(op);
            local.insert(*under, m.op(op).results[0]);
        }
        for &c in &body_order {
            let bn = choice.get(&c).cloned().unwrap_or_else(|| self.plain.find_best_node(c).clone());
            let args: Vec<Value> = bn.args.iter().map(|a| local[&self.eg.find(*a)]).collect();
            let ty = self.eg.analysis.types[&bn.ty].clone();
            let op =
                m.create_op(bn.op.as_str(), args, vec![ty.into()], attrs_of(self.eg, &bn).clone(), vec![], self.loc(c));
            body_ops.push(op);
            local.insert(c, m.op(op).results[0]);
        }
        let yielded = local[&id];
        let y = m.create_op("ember.yield", vec![yielded], vec![], Attrs::new(), vec![], Loc::Unknown);
        body_ops.push(y);
        m.set_block_ops(block, body_ops);
        let region = m.new_region(vec![block]);
        let mut attrs = attrs_of(self.eg, n).clone();
        let kind = n.op.as_str().trim_start_matches("ember.").to_string();
        attrs.insert("kind".into(), Attr::Str(kind));
        let rules = self.rules_in(&body_order, id);
        attrs.insert("rules".into(), Attr::Array(rules.iter().map(|r| Attr::Str(r.clone())).collect()));
        let ty = type_of(self.eg, id);
        let op = m.create_op("ember.fusion_group", vals, vec![ty.into()], attrs, vec![region], self.loc(id));
        out.push(op);
        self.group_rules.insert(op, rules);
        m.op(op).results[0]
    }

    /// For each class under `root`, a plain node whose operands all reach `avail` or constants
    /// (cheapest first), or None when the search exceeds its budget or finds no such form.
    fn constrained_body(&self, root: Id, avail: &[Id]) -> HashMap<Id, ENode> {
        struct Search<'s, 'a> {
            w: &'s Writer<'a>,
            avail: &'s [Id],
            memo: HashMap<Id, Option<(f64, ENode)>>,
            active: Vec<Id>,
            budget: usize,
        }
        impl Search<'_, '_> {
            fn go(&mut self, c: Id) -> Option<f64> {
                let c = self.w.eg.find(c);
                if self.avail.contains(&c) {
                    return Some(0.0);
                }
                if let Some(r) = self.memo.get(&c) {
                    return r.as_ref().map(|(t, _)| *t);
                }
                if self.active.contains(&c) || self.budget == 0 {
                    return None;
                }
                self.budget -= 1;
                self.active.push(c);
                let mut best: Option<(f64, ENode)> = None;
                for n in self.w.eg[c].nodes.clone() {
                    let op = n.op.as_str();
                    if op.starts_with("ember.") || matches!(op, "input" | "result" | "opaque") {
                        continue;
                    }
                    let mut t = cost::node_time(self.w.eg, &n, self.w.table);
                    let mut ok = true;
                    for &a in &n.args {
                        match self.go(a) {
                            Some(x) => t += x,
                            None => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    if ok && best.as_ref().is_none_or(|(b, _)| t < *b) {
                        best = Some((t, n));
                    }
                }
                self.active.pop();
                let r = best.as_ref().map(|(t, _)| *t);
                // A failure while a cycle was open may be spurious: only successes and
                // failures at the top of the search are remembered.
                if best.is_some() || self.active.is_empty() {
                    self.memo.insert(c, best);
                }
                r
            }
        }
        let mut s = Search { w: self, avail, memo: HashMap::new(), active: Vec::new(), budget: 4096 };
        if s.go(root).is_none() {
            return HashMap::new();
        }
        s.memo.into_iter().filter_map(|(c, r)| r.map(|(_, n)| (c, n))).collect()
    }

    /// Post-order walk of the body below `id` (nodes from `choice`, else the plain extraction),
    /// stopping at `inputs` and at `stops` (values the body derives from its inputs); classes
    /// that are not cheap leaves and not below the composite become extra inputs.
    fn body_walk(
        &self,
        id: Id,
        choice: &HashMap<Id, ENode>,
        inputs: &mut Vec<Id>,
        stops: &mut Vec<Id>,
        order: &mut Vec<Id>,
        seen: &mut HashMap<Id, ()>,
    ) {
        let id = self.eg.find(id);
        if inputs.contains(&id) || stops.contains(&id) || seen.contains_key(&id) {
            return;
        }
        seen.insert(id, ());
        let n = choice.get(&id).cloned().unwrap_or_else(|| self.plain.find_best_node(id).clone());
        if matches!(n.op.as_str(), "input" | "result" | "opaque") {
            inputs.push(id);
            return;
        }
        for &a in &n.args {
            self.body_walk(a, choice, inputs, stops, order, seen);
        }
        order.push(id);
    }

    /// The rules whose rewrites touched the classes of a group (sorted, unique).
    fn rules_in(&self, body: &[Id], root: Id) -> Vec<String> {
        let mut rules: Vec<String> = self
            .eg
            .analysis
            .fired
            .iter()
            .filter(|(_, c)| {
                let c = self.eg.find(*c);
                c == root || body.contains(&c)
            })
            .map(|(r, _)| r.to_string())
            .collect();
        rules.sort();
        rules.dedup();
        rules
    }
}

fn id_of(eg: &EG, inputs: &HashMap<Id, Value>, id: Id) -> Id {
    inputs.keys().copied().find(|&k| eg.find(k) == id).expect("input leaf")
}

/// Replaces the top-level `ember.fusion_group`s of `f` whose kind `keep` refuses by their body,
/// for codegen that works on plain `ten` ops. Returns the values the inlined groups yielded (the
/// kernel boundaries the optimizer chose), in program order.
pub fn inline_groups(m: &mut Module, f: OpId, keep: &dyn Fn(&str) -> bool) -> Vec<Value> {
    let entry = m.entry(f);
    let mut remap: HashMap<Value, Value> = HashMap::new();
    let mut out: Vec<OpId> = Vec::new();
    let mut boundaries = Vec::new();
    for op in m.block(entry).ops.clone() {
        let operands: Vec<Value> = m.op(op).operands.iter().map(|v| *remap.get(v).unwrap_or(v)).collect();
        m.op_mut(op).operands = operands.clone();
        let kind = m.op(op).attrs.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string();
        if m.op(op).name != "ember.fusion_group" || keep(&kind) {
            out.push(op);
            continue;
        }
        let body = m.region(m.op(op).regions[0]).blocks[0];
        let mut local: HashMap<Value, Value> = m.block(body).args.iter().copied().zip(operands).collect();
        for inner in m.block(body).ops.clone() {
            let ops2: Vec<Value> = m.op(inner).operands.iter().map(|v| *local.get(v).unwrap_or(v)).collect();
            if m.op(inner).name == "ember.yield" {
                for (r, y) in m.op(op).results.clone().into_iter().zip(ops2) {
                    remap.insert(r, y);
                    boundaries.push(y);
                }
                continue;
            }
            m.op_mut(inner).operands = ops2;
            local.insert(m.op(inner).results[0], m.op(inner).results[0]);
            out.push(inner);
        }
    }
    m.set_block_ops(entry, out);
    boundaries
}
