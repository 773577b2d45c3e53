//! The fusion report (`ember compile --report`): per kernel, what it holds, where it came from in
//! the user's program, the rules that formed it, and the cost model's estimate of bytes moved,
//! FLOPs and time with its ops run one by one ("before") and as one kernel ("after"); plus the
//! kernel graph as Graphviz DOT.

use super::cost::CostTable;
use super::Trace;
use ember_ir::dialect::ten::{Class, TenOp};
use ember_ir::module::{OpData, OpId, ValueDef};
use ember_ir::{Module, TensorType, Type, Value};
use std::collections::HashMap;

fn tensor(m: &Module, v: Value) -> Option<&TensorType> {
    match m.ty(v) {
        Type::Tensor(t) => Some(t),
        _ => None,
    }
}

fn bytes(m: &Module, v: Value) -> f64 {
    tensor(m, v).map(super::cost::bytes).unwrap_or(0.0)
}

fn is_free_op(d: &OpData) -> bool {
    d.ten().is_some_and(|t| t.class() == Class::Free)
}

/// A value that costs no memory traffic to read (computed from indices).
fn is_free_value(m: &Module, v: Value) -> bool {
    match m.value(v).def {
        ValueDef::Result(op, _) => is_free_op(m.op(op)),
        _ => false,
    }
}

/// (matmul FLOPs, other FLOPs, bytes) of one op run alone.
fn op_work(m: &Module, op: OpId) -> (f64, f64, f64) {
    let d = m.op(op);
    let io: f64 = d.operands.iter().filter(|&&v| !is_free_value(m, v)).map(|&v| bytes(m, v)).sum::<f64>()
        + d.results.iter().map(|&r| bytes(m, r)).sum::<f64>();
    let out = d.results.first().and_then(|&r| tensor(m, r));
    match (d.ten(), out, d.operands.first().and_then(|&v| tensor(m, v))) {
        (Some(TenOp::DotGeneral), Some(out), Some(lhs)) => {
            let contract = d.attrs.get("lhs_contract").and_then(|a| a.as_ints()).unwrap_or(&[]);
            (super::cost::dot_flops(out, lhs, contract), 0.0, io)
        }
        (op, out, _) => (0.0, out.map(super::cost::numel).unwrap_or(0.0) * super::cost::flops_per_element(op), io),
    }
}

pub struct KernelReport {
    pub name: String,
    pub kind: String,
    pub ops: Vec<String>,
    pub lines: Vec<String>,
    pub rules: Vec<String>,
    pub bytes_before: f64,
    pub bytes_after: f64,
    pub flops: f64,
    pub est_before: f64,
    pub est_after: f64,
    pub op: OpId,
}

/// One entry per top-level kernel of `f`: each fusion group, and each other op that runs.
pub fn kernels(m: &Module, f: OpId, t: &CostTable) -> Vec<KernelReport> {
    let mut out = Vec::new();
    for op in m.block(m.entry(f)).ops.clone() {
        let d = m.op(op);
        if d.name == "func.return" || is_free_op(d) {
            continue;
        }
        let body: Vec<OpId> = if d.name == "ember.fusion_group" {
            let b = m.region(d.regions[0]).blocks[0];
            m.block(b).ops.iter().copied().filter(|&o| m.op(o).name != "ember.yield" && !is_free_op(m.op(o))).collect()
        } else {
            vec![op]
        };
        let (mut before, mut bytes_before, mut mm, mut other) = (0.0, 0.0, 0.0, 0.0);
        let mut lines: Vec<String> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for &o in &body {
            let (a, b, io) = op_work(m, o);
            before += t.time(a, b, io);
            bytes_before += io;
            mm += a;
            other += b;
            if let Some(l) = m.op(o).loc.source_line() {
                if !lines.contains(&l) {
                    lines.push(l);
                }
            }
            names.push(m.op(o).name.clone());
        }
        let io_after: f64 = d.operands.iter().filter(|&&v| !is_free_value(m, v)).map(|&v| bytes(m, v)).sum::<f64>()
            + d.results.iter().map(|&r| bytes(m, r)).sum::<f64>();
        let kind = d
            .attrs
            .get("kind")
            .and_then(|k| k.as_str())
            .map(|s| s.to_string())
            .unwrap_or_else(|| format!("op {}", d.name));
        let rules = match d.attrs.get("rules") {
            Some(ember_ir::Attr::Array(v)) => v.iter().filter_map(|a| a.as_str().map(|s| s.to_string())).collect(),
            _ => vec![],
        };
        out.push(KernelReport {
            name: format!("k{}", out.len()),
            kind,
            ops: names,
            lines,
            rules,
            bytes_before,
            bytes_after: io_after,
            flops: mm + other,
            est_before: before,
            est_after: t.time(mm, other, io_after),
            op,
        });
    }
    out
}

fn human_bytes(b: f64) -> String {
    if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else {
        format!("{:.1} KB", b / 1e3)
    }
}

fn us(s: f64) -> String {
    format!("{:.2}", s * 1e6)
}

/// Counts of op names, `3×ten.mul, ten.exp`.
fn op_summary(ops: &[String]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for o in ops {
        let short = TenOp::from_name(o).map_or(o.as_str(), |t| t.short()).to_string();
        match counts.iter_mut().find(|(n, _)| *n == short) {
            Some((_, c)) => *c += 1,
            None => counts.push((short, 1)),
        }
    }
    counts.iter().map(|(n, c)| if *c > 1 { format!("{c}×{n}") } else { n.clone() }).collect::<Vec<_>>().join(", ")
}

pub fn markdown(model: &str, m: &Module, f: OpId, t: &CostTable, trace: &Trace) -> String {
    let ks = kernels(m, f, t);
    let mut s = format!("# Fusion report: {model} for {}\n\n", t.target);
    let (bb, ba, eb, ea): (f64, f64, f64, f64) = ks.iter().fold((0.0, 0.0, 0.0, 0.0), |a, k| {
        (a.0 + k.bytes_before, a.1 + k.bytes_after, a.2 + k.est_before, a.3 + k.est_after)
    });
    let ops: usize = ks.iter().map(|k| k.ops.len()).sum();
    s += &format!(
        "{ops} ops in {} kernels. Estimated memory traffic {} → {}, time {} µs → {} µs (ops run one by one → as these kernels).\n\n",
        ks.len(),
        human_bytes(bb),
        human_bytes(ba),
        us(eb),
        us(ea)
    );
    s += "Estimates come from the cost table below (symbolic sizes counted as 64). ";
    s += if t.target == "cpu" {
        "The CPU table is the only one checked against measurement on this machine (tools/bench/results/egraph.md).\n\n"
    } else {
        "There is no such hardware here: these numbers are the model's, unchecked.\n\n"
    };
    s += "| kernel | kind | ops | source lines | rules | bytes before → after | FLOPs | est. µs before → after |\n|---|---|---|---|---|---|---|---|\n";
    for k in &ks {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} → {} | {:.3e} | {} → {} |\n",
            k.name,
            k.kind,
            op_summary(&k.ops),
            k.lines.join("<br>"),
            k.rules.join(", "),
            human_bytes(k.bytes_before),
            human_bytes(k.bytes_after),
            k.flops,
            us(k.est_before),
            us(k.est_after)
        );
    }
    s += &format!("\n## Cost table `{}`\n\n", t.target);
    s += &format!(
        "matmul {:.3e} FLOP/s, vector {:.3e} FLOP/s, memory {:.3e} B/s, {} µs per kernel, on-chip {} MiB.\n\n",
        t.matmul_flops,
        t.vector_flops,
        t.mem_bw,
        us(t.kernel_overhead),
        t.on_chip / (1024.0 * 1024.0)
    );
    for src in t.sources {
        s += &format!("- {src}\n");
    }
    s += "\n## E-graph trace\n\n```\n";
    s += &trace.render(&super::Limits::default());
    s += "```\n";
    s
}

/// The kernel graph: kernels as boxes, user inputs and outputs as ellipses (weights omitted).
pub fn dot(m: &Module, f: OpId, t: &CostTable) -> String {
    let ks = kernels(m, f, t);
    let index: HashMap<OpId, &KernelReport> = ks.iter().map(|k| (k.op, k)).collect();
    let entry = m.entry(f);
    let mut s = String::from("digraph fusion {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
    let mut inputs: HashMap<Value, String> = HashMap::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let user = m.arg_attrs(f, i).is_some_and(|d| d.contains_key("ember.input"));
        if user {
            let name = format!("in{i}");
            let shape = tensor(m, a).map(|t| t.to_string()).unwrap_or_default();
            s += &format!("  {name} [shape=ellipse, label=\"input {i}\\n{}\"];\n", shape.replace('"', "'"));
            inputs.insert(a, name);
        }
    }
    for k in &ks {
        let color = match k.kind.as_str() {
            "gemm" => "lightblue",
            "loop" => "white",
            k if k.starts_with("op ") => "lightgrey",
            _ => "gold",
        };
        s += &format!(
            "  {} [shape=box, style=filled, fillcolor={color}, label=\"{}: {}\\n{} ops\\nest. {} µs\"];\n",
            k.name,
            k.name,
            k.kind.replace('"', "'"),
            k.ops.len(),
            us(k.est_after)
        );
    }
    let producer = |v: Value| -> Option<String> {
        match m.value(v).def {
            ValueDef::Result(op, _) => index.get(&op).map(|k| k.name.clone()),
            ValueDef::Arg(..) => inputs.get(&v).cloned(),
        }
    };
    let mut edges: Vec<(String, String)> = Vec::new();
    for k in &ks {
        for &v in &m.op(k.op).operands {
            if let Some(p) = producer(v) {
                let e = (p, k.name.clone());
                if !edges.contains(&e) {
                    edges.push(e);
                }
            }
        }
    }
    if let Some(r) = m.func_return(f) {
        for (i, &v) in m.op(r).operands.iter().enumerate() {
            s += &format!("  out{i} [shape=ellipse, label=\"output {i}\"];\n");
            if let Some(p) = producer(v) {
                edges.push((p, format!("out{i}")));
            }
        }
    }
    for (a, b) in edges {
        s += &format!("  {a} -> {b};\n");
    }
    s += "}\n";
    s
}
