//! `ten` → StableHLO text.
//!
//! One `func.func public @main` with `@main`'s arguments (same order, same `ember.*` argument and
//! result attributes) and one or a few StableHLO ops per `ten` op. The text uses the pretty form
//! MLIR prints for StableHLO (generic form for ops that have none: `gather`, `reduce_window`,
//! variadic `reduce`); SSA names are numbered in print order, so one module always prints the
//! same text.
//!
//! | ten | StableHLO |
//! |---|---|
//! | unary and binary math | `stablehlo.<name>` with the name of the `ten` table's StableHLO column (`Hlo::Op`); the custom ones below |
//! | erf | `chlo.erf` (XLA expands it) |
//! | trunc | select(x < 0, ceil x, floor x) |
//! | compare | compare with `FLOAT`/`SIGNED`/`UNSIGNED` by dtype |
//! | select convert constant iota broadcast reshape transpose reverse concat pad | select convert constant (dense splat) iota broadcast_in_dim reshape transpose reverse concatenate pad |
//! | slice | slice (limit = start + (n-1)*step + 1) |
//! | reduce sum/prod/max/min/and/or | reduce with add/multiply/maximum/minimum/and/or and the identity as init |
//! | reduce argmax/argmin | variadic reduce over (x, row-major index within the dims), first extreme wins, NaN is the extreme |
//! | dot_general | dot_general, `precision = [HIGHEST, HIGHEST]` for floats (TPUs default to bf16 passes; `--precision` sets it for f32); bf16/f16 dots with an f32 result, then convert |
//! | gather | gather with `collapsed_slice_dims = start_index_map = [dim]`, `index_vector_dim = rank(index)` |
//! | scatter | scatter with `inserted_window_dims = scatter_dims_to_operand_dims = [0]`, `index_vector_dim = rank(index)`, the kind's combiner as the update region (set returns the update) |
//! | cumsum cumprod | reduce_window add/multiply, window = the dim's size, padded low by size-1 |
//! | argsort | stable sort of (x, iota), comparator with NaN after numbers (before when descending); the sorted iota |
//! | windows | per window dim: kernel-size strided slices stacked with concatenate, then one transpose |
//! | ember.fusion_group softmax/layer_norm/rms_norm/attention, gemm with an activation | `stablehlo.composite "ember.<kind>"`, parameters in `composite_attributes`, body in `func.func private @ember.<kind>.<n>` |
//! | ember.fusion_group loop, gemm without activation, other kinds | the body, inlined |
//!
//! Integer operands of ops that only have float meaning (floor, ceil, round, trunc, abs of
//! unsigned) are the operand itself.

use super::sharding::{sdy_text, Plan, Spec};
use super::{Options, Precision};
use ember_ir::attr::{fmt_str, Attr};
use ember_ir::module::{Module, OpId, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::{DType, Type};
use std::collections::HashMap;
use std::fmt::Write;

pub(crate) mod lit;
use lit::{lit_text, Lit};
mod composite;
mod ops;

/// A static tensor type.
#[derive(Clone, Debug, PartialEq)]
struct T {
    shape: Vec<i64>,
    dt: DType,
}

impl T {
    fn new(shape: Vec<i64>, dt: DType) -> T {
        T { shape, dt }
    }
    fn scalar(dt: DType) -> T {
        T { shape: vec![], dt }
    }
    fn with_dt(&self, dt: DType) -> T {
        T { shape: self.shape.clone(), dt }
    }
    fn rank(&self) -> usize {
        self.shape.len()
    }
}

impl std::fmt::Display for T {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.dt.mlir_name())
    }
}

fn is_unsigned(dt: DType) -> bool {
    matches!(dt, DType::Bool | DType::U8 | DType::U16 | DType::U32 | DType::U64)
}

/// `compare_type` for operands of `dt`.
fn compare_type(dt: DType) -> &'static str {
    if dt.is_float() {
        "FLOAT"
    } else if is_unsigned(dt) {
        "UNSIGNED"
    } else {
        "SIGNED"
    }
}

fn list(v: &[i64]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn array_i64(v: &[i64]) -> String {
    if v.is_empty() {
        return "array<i64>".into();
    }
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("array<i64: {}>", items.join(", "))
}

struct Emitter<'a> {
    m: &'a Module,
    out: String,
    next: usize,
    names: HashMap<Value, String>,
    indent: usize,
    /// Private functions (composite decompositions), printed after `@main` in emission order.
    funcs: Vec<String>,
    /// Composites emitted so far: numbers the decomposition functions.
    composites: usize,
    precision: Precision,
}

type R<X> = Result<X, String>;

/// Emits StableHLO text for `@main` of a module in the `ten` dialect (static shapes only).
pub fn emit(m: &Module) -> Result<String, String> {
    emit_with(m, &Options::default()).map(|e| e.text)
}

/// StableHLO text and, when sharded, the shardings it carries.
pub struct Emitted {
    pub text: String,
    pub sharding: Option<Plan>,
}

/// [`emit`] with options: Shardy annotations for `opts.shard` (a mesh and sharding rules) when
/// given, and the f32 `dot_general` precision.
pub fn emit_with(m: &Module, opts: &Options) -> Result<Emitted, String> {
    let shard = opts.shard.as_ref();
    let f = m.func_by_name("main").ok_or("the module has no `@main` function")?;
    check_static(m, f)?;
    let plan = shard.map(|o| super::sharding::plan(m, f, o)).transpose()?;
    let sdy = |spec: Option<&Spec>| spec.map(|s| format!("sdy.sharding = {}", sdy_text(s)));
    let mut e = Emitter {
        m,
        out: String::new(),
        next: 0,
        names: HashMap::new(),
        indent: 2,
        funcs: Vec::new(),
        composites: 0,
        precision: opts.precision,
    };
    let parts = shard.map_or(1, |o| o.devices());
    writeln!(e.out, "module @main attributes {{mhlo.num_partitions = {parts} : i32, mhlo.num_replicas = 1 : i32}} {{")
        .unwrap();
    if let Some(o) = shard {
        let axes: Vec<String> = o.mesh.iter().map(|(n, s)| format!("\"{n}\"={s}")).collect();
        writeln!(e.out, "  sdy.mesh @mesh = <[{}]>", axes.join(", ")).unwrap();
    }
    let entry = m.entry(f);
    let mut sig = String::from("  func.func public @main(");
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let name = format!("%arg{i}");
        if i > 0 {
            sig.push_str(", ");
        }
        write!(sig, "{name}: {}", e.t(a)?).unwrap();
        sig.push_str(&ember_attrs(m.arg_attrs(f, i), sdy(plan.as_ref().map(|p| &p.args[i]))));
        e.names.insert(a, name);
    }
    sig.push_str(") -> (");
    let ret = m.func_return(f).ok_or("`@main` has no return")?;
    let results = m.op(ret).operands.clone();
    for (i, &v) in results.iter().enumerate() {
        if i > 0 {
            sig.push_str(", ");
        }
        write!(sig, "{}", e.t(v)?).unwrap();
        sig.push_str(&ember_attrs(m.res_attrs(f, i), sdy(plan.as_ref().map(|p| &p.results[i]))));
    }
    sig.push_str(") {\n");
    e.out.push_str(&sig);
    e.indent = 4;
    for &op in &m.block(entry).ops {
        if op == ret {
            break;
        }
        e.op(op)?;
    }
    let names: Vec<String> = results.iter().map(|v| e.names[v].clone()).collect();
    let types: Vec<String> = results.iter().map(|&v| e.t(v).map(|t| t.to_string())).collect::<R<_>>()?;
    if results.is_empty() {
        e.line("return".into());
    } else {
        e.line(format!("return {} : {}", names.join(", "), types.join(", ")));
    }
    e.out.push_str("  }\n");
    for f in std::mem::take(&mut e.funcs) {
        e.out.push_str(&f);
    }
    e.out.push_str("}\n");
    Ok(Emitted { text: e.out, sharding: plan })
}

/// `{ember.input = "x"}`: the `ember.*` attributes of an argument or result, so the text says
/// which argument is which weight, then `extra` (its sharding).
fn ember_attrs(a: Option<&ember_ir::Attrs>, extra: Option<String>) -> String {
    let mut kv: Vec<String> = a
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match v {
            Attr::Str(s) if k.starts_with("ember.") => Some(format!("{k} = {}", fmt_str(s))),
            _ => None,
        })
        .collect();
    kv.extend(extra);
    if kv.is_empty() {
        String::new()
    } else {
        format!(" {{{}}}", kv.join(", "))
    }
}

/// Symbolic dims are an error here (callers specialize them into buckets first): the message
/// names the symbol, its bounds and the first input or op that has it.
fn check_static(m: &Module, f: OpId) -> R<()> {
    let bounds = |s: &str| -> String {
        match m.attrs.get("ember.symbols") {
            Some(Attr::Dict(d)) => match d.get(s).and_then(|b| b.as_ints()) {
                Some([lo, hi]) => format!(" in [{lo}, {hi}]"),
                Some([lo]) => format!(" >= {lo}"),
                _ => String::new(),
            },
            _ => String::new(),
        }
    };
    let msg = |what: String, d: &SymExpr| {
        let mut syms = Vec::new();
        d.symbols(&mut syms);
        let s = syms.first().cloned().unwrap_or_else(|| d.to_string());
        let dim = if d.to_string() == s {
            format!("`{s}`{}", bounds(&s))
        } else {
            format!("`{d}` (symbol `{s}`{})", bounds(&s))
        };
        format!(
            "the StableHLO emitter needs static shapes, but {what} has the symbolic dim {dim}; \
             specialize the symbols first (`ember compile --target tpu` does, one padded bucket \
             per size: `ember_targets::tpu::emit_buckets`)"
        )
    };
    let entry = m.entry(f);
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        if let Some(t) = m.ty(a).tensor() {
            if let Some(d) = t.dims.iter().find(|d| d.as_const().is_none()) {
                let attrs = m.arg_attrs(f, i);
                let name = ["ember.input", "ember.param", "ember.buffer", "ember.constant"]
                    .iter()
                    .find_map(|k| attrs.and_then(|a| a.get(*k)).and_then(|a| a.as_str()));
                let what = match name {
                    Some(n) => format!("argument {i} (`{n}`)"),
                    None => format!("argument {i}"),
                };
                return Err(msg(what, d));
            }
        }
    }
    let mut err = None;
    m.walk(entry, &mut |op| {
        if err.is_some() {
            return;
        }
        for &r in &m.op(op).results {
            if let Some(d) = m.ty(r).tensor().and_then(|t| t.dims.iter().find(|d| d.as_const().is_none())) {
                let at = m.op(op).loc.describe();
                let what =
                    if at.is_empty() { format!("`{}`", m.op(op).name) } else { format!("`{}` at {at}", m.op(op).name) };
                err = Some(msg(what, d));
                return;
            }
        }
    });
    err.map_or(Ok(()), Err)
}

impl<'a> Emitter<'a> {
    fn t(&self, v: Value) -> R<T> {
        match self.m.ty(v) {
            Type::Tensor(t) => {
                let shape = t.static_shape().ok_or_else(|| format!("symbolic shape {t}"))?;
                Ok(T::new(shape, t.dtype))
            }
            other => Err(format!("the tpu target supports tensor values only, found `{other}`")),
        }
    }

    fn line(&mut self, s: String) {
        for _ in 0..self.indent {
            self.out.push(' ');
        }
        self.out.push_str(&s);
        self.out.push('\n');
    }

    fn fresh(&mut self) -> String {
        let n = format!("%{}", self.next);
        self.next += 1;
        n
    }

    /// `%n = <rhs>`; returns `%n`.
    fn def(&mut self, rhs: String) -> String {
        let n = self.fresh();
        self.line(format!("{n} = {rhs}"));
        n
    }

    fn name(&self, v: Value) -> String {
        self.names[&v].clone()
    }

    // ---- one StableHLO op each ----------------------------------------------------------------

    fn unary(&mut self, op: &str, x: &str, t: &T) -> String {
        self.def(format!("stablehlo.{op} {x} : {t}"))
    }
    fn binary(&mut self, op: &str, a: &str, b: &str, t: &T) -> String {
        self.def(format!("stablehlo.{op} {a}, {b} : {t}"))
    }
    fn compare(&mut self, dir: &str, a: &str, b: &str, t: &T) -> String {
        let r = t.with_dt(DType::Bool);
        self.def(format!("stablehlo.compare {dir}, {a}, {b}, {} : ({t}, {t}) -> {r}", compare_type(t.dt)))
    }
    fn select(&mut self, p: &str, a: &str, b: &str, t: &T) -> String {
        self.def(format!("stablehlo.select {p}, {a}, {b} : {}, {t}", t.with_dt(DType::Bool)))
    }
    fn constant(&mut self, v: Lit, t: &T) -> String {
        self.def(format!("stablehlo.constant dense<{}> : {t}", lit_text(v, t.dt)))
    }
    fn convert(&mut self, x: &str, from: &T, to: &T) -> String {
        self.def(format!("stablehlo.convert {x} : ({from}) -> {to}"))
    }
    fn reshape(&mut self, x: &str, from: &T, to: &T) -> String {
        if from == to {
            return x.to_string();
        }
        self.def(format!("stablehlo.reshape {x} : ({from}) -> {to}"))
    }
    fn slice(&mut self, x: &str, from: &T, start: &[i64], limit: &[i64], stride: &[i64], to: &T) -> String {
        let parts: Vec<String> = (0..start.len())
            .map(|i| {
                if stride[i] == 1 {
                    format!("{}:{}", start[i], limit[i])
                } else {
                    format!("{}:{}:{}", start[i], limit[i], stride[i])
                }
            })
            .collect();
        self.def(format!("stablehlo.slice {x} [{}] : ({from}) -> {to}", parts.join(", ")))
    }
    fn concat(&mut self, xs: &[String], tys: &[T], dim: usize, to: &T) -> String {
        if xs.len() == 1 {
            return xs[0].clone();
        }
        let ts: Vec<String> = tys.iter().map(|t| t.to_string()).collect();
        self.def(format!("stablehlo.concatenate {}, dim = {dim} : ({}) -> {to}", xs.join(", "), ts.join(", ")))
    }
    fn transpose(&mut self, x: &str, from: &T, perm: &[i64], to: &T) -> String {
        if perm.iter().enumerate().all(|(i, &p)| i as i64 == p) {
            return x.to_string();
        }
        self.def(format!("stablehlo.transpose {x}, dims = {} : ({from}) -> {to}", list(perm)))
    }

    /// A region `^bb0(args): body; stablehlo.return` for reduce-like ops, at the current indent.
    fn region_start(&mut self, args: &[(String, T)]) {
        let a: Vec<String> = args.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        self.line(format!("^bb0({}):", a.join(", ")));
        self.indent += 2;
    }
    fn region_end(&mut self, rets: &[(String, T)], close: String) {
        let n: Vec<&str> = rets.iter().map(|(n, _)| n.as_str()).collect();
        let t: Vec<String> = rets.iter().map(|(_, t)| t.to_string()).collect();
        self.line(format!("stablehlo.return {} : {}", n.join(", "), t.join(", ")));
        self.indent -= 2;
        self.line(close);
    }
}
