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
//! | add sub mul div max min pow atan2 rem and or xor | add subtract multiply divide maximum minimum power atan2 remainder and or xor |
//! | abs neg exp log log1p sqrt rsqrt tanh sin cos tan floor ceil round sign sigmoid not | abs negate exponential log log_plus_one sqrt rsqrt tanh sine cosine tan floor ceil round_nearest_even sign logistic not |
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
use ember_ir::attr::{fmt_f64, fmt_str, Attr};
use ember_ir::module::{Module, OpId, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::{DType, Type};
use std::collections::HashMap;
use std::fmt::Write;

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

/// A scalar value for `dense<..>` of element type `dt`.
#[derive(Clone, Copy, Debug)]
enum Lit {
    F(f64),
    I(i128),
    B(bool),
}

impl Lit {
    fn from_attr(a: &Attr) -> Option<Lit> {
        match a {
            Attr::Bool(b) => Some(Lit::B(*b)),
            Attr::Int(i) => Some(Lit::I(*i as i128)),
            Attr::Float(f) => Some(Lit::F(*f)),
            _ => None,
        }
    }
}

/// Integer range of an integer dtype.
fn int_range(dt: DType) -> (i128, i128) {
    match dt {
        DType::Bool => (0, 1),
        DType::U8 => (0, u8::MAX as i128),
        DType::U16 => (0, u16::MAX as i128),
        DType::U32 => (0, u32::MAX as i128),
        DType::U64 => (0, u64::MAX as i128),
        DType::I8 => (i8::MIN as i128, i8::MAX as i128),
        DType::I16 => (i16::MIN as i128, i16::MAX as i128),
        DType::I32 => (i32::MIN as i128, i32::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

/// Bits of +inf, -inf and NaN in a float dtype (E4M3FN has no infinity: its NaN stands in).
fn special_bits(dt: DType) -> Option<(u64, u64, u64, usize)> {
    Some(match dt {
        DType::F64 => (0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 16),
        DType::F32 => (0x7F800000, 0xFF800000, 0x7FC00000, 8),
        DType::F16 => (0x7C00, 0xFC00, 0x7E00, 4),
        DType::BF16 => (0x7F80, 0xFF80, 0x7FC0, 4),
        DType::F8E5M2 => (0x7C, 0xFC, 0x7E, 2),
        DType::F8E4M3FN => (0x7F, 0xFF, 0x7F, 2),
        _ => return None,
    })
}

/// Largest finite value of a float dtype, and the magnitude from which a value rounds to infinity.
fn overflow_at(dt: DType) -> f64 {
    match dt {
        DType::F16 => 65520.0,
        DType::BF16 => 3.396_177_6e38,
        DType::F8E5M2 => 61440.0,
        DType::F8E4M3FN => 464.0,
        _ => f64::INFINITY,
    }
}

/// The `dense<..>` payload of `v` as an element of `dt`: ints wrap/saturate like a C cast of the
/// value, floats round to `dt` (MLIR rounds the decimal; non-finite values are hex bit patterns).
fn lit_text(v: Lit, dt: DType) -> String {
    if dt == DType::Bool {
        let b = match v {
            Lit::B(b) => b,
            Lit::I(i) => i != 0,
            Lit::F(f) => f != 0.0,
        };
        return b.to_string();
    }
    if dt.is_float() {
        let mut f = match v {
            Lit::B(b) => b as i64 as f64,
            Lit::I(i) => i as f64,
            Lit::F(f) => f,
        };
        if dt == DType::F32 {
            f = f as f32 as f64;
        }
        if f.is_finite() && f.abs() >= overflow_at(dt) {
            f = f64::INFINITY.copysign(f);
        }
        if !f.is_finite() {
            let (pinf, ninf, nan, w) = special_bits(dt).expect("float dtype");
            let bits = if f.is_nan() {
                nan
            } else if f > 0.0 {
                pinf
            } else {
                ninf
            };
            return format!("0x{bits:0w$X}");
        }
        return fmt_f64(f);
    }
    let (lo, hi) = int_range(dt);
    let i = match v {
        Lit::B(b) => b as i128,
        Lit::I(i) => i,
        Lit::F(f) if f.is_nan() => 0,
        Lit::F(f) => (f.trunc().clamp(lo as f64, hi as f64)) as i128,
    };
    // Wrap into the dtype's range (two's complement), like torch's cast of an int scalar.
    let bits = 8 * dt.byte_size() as u32;
    let m = 1i128 << bits;
    let mut w = i.rem_euclid(m);
    if w > hi {
        w -= m;
    }
    w.to_string()
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
    let plan = shard.map(|o| super::sharding::plan(m, f, o));
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

    // ---- ten ops ------------------------------------------------------------------------------

    fn op(&mut self, op: OpId) -> R<()> {
        let d = self.m.op(op);
        let name = d.name.as_str();
        let at = {
            let s = d.loc.describe();
            if s.is_empty() {
                String::new()
            } else {
                format!(" at {s}")
            }
        };
        if name == "ember.fusion_group" {
            return self.fusion_group(op).map_err(|e| format!("`{name}`{at}: {e}"));
        }
        if name == "func.call" {
            return self.call(op);
        }
        let Some(short) = name.strip_prefix("ten.") else {
            return Err(format!(
                "the tpu target cannot compile `{name}`{at}: it has no lowering to the ten dialect yet (see `ember opt --passes=torch-to-ten`)"
            ));
        };
        let r = self.emit_ten(op, short).map_err(|e| format!("`{name}`{at}: {e}"))?;
        let res = self.m.op(op).results[0];
        self.names.insert(res, r);
        Ok(())
    }

    /// `ember.fusion_group`: named kinds become a `stablehlo.composite "ember.<kind>"` (the group's
    /// parameters as `composite_attributes`, the body as the private decomposition function), so
    /// XLA or a TPU kernel library can match the pattern by name and everyone else inlines the
    /// decomposition. `loop` groups, `gemm` groups without an activation and unknown kinds are
    /// inlined here: XLA's own fusion redoes them, and a composite would only hide the ops.
    fn fusion_group(&mut self, op: OpId) -> R<()> {
        let m = self.m;
        let d = m.op(op);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).ok_or("missing attribute `kind`")?;
        let body = match d.regions.as_slice() {
            [r] if m.region(*r).blocks.len() == 1 => m.region(*r).blocks[0],
            _ => return Err("a fusion group needs exactly one region with one block".into()),
        };
        let args = &m.block(body).args;
        if args.len() != d.operands.len() {
            return Err(format!("the body takes {} arguments for {} operands", args.len(), d.operands.len()));
        }
        let Some((&yld, inner)) = m.block(body).ops.split_last().filter(|(&y, _)| m.op(y).name == "ember.yield") else {
            return Err("the body does not end with `ember.yield`".into());
        };
        let yielded = &m.op(yld).operands;
        if yielded.len() != d.results.len() {
            return Err(format!("`ember.yield` gives {} values for {} results", yielded.len(), d.results.len()));
        }
        let composite = match kind {
            "softmax" | "layer_norm" | "rms_norm" | "attention" => true,
            "gemm" => d.attrs.get("activation").and_then(|a| a.as_str()).is_some_and(|a| a != "none"),
            _ => false,
        };
        if !composite {
            for (&a, &o) in args.iter().zip(&d.operands) {
                let n = self.name(o);
                self.names.insert(a, n);
            }
            for &o in inner {
                self.op(o)?;
            }
            for (&r, &y) in d.results.iter().zip(yielded) {
                let n = self.name(y);
                self.names.insert(r, n);
            }
            return Ok(());
        }
        if d.results.is_empty() {
            return Err(format!("a `{kind}` group has no results"));
        }
        let fname = format!("ember.{kind}.{}", self.composites);
        self.composites += 1;
        let arg_tys: Vec<T> = args.iter().map(|&a| self.t(a)).collect::<R<_>>()?;
        let res_tys: Vec<T> = d.results.iter().map(|&r| self.t(r)).collect::<R<_>>()?;
        let join = |ts: &[T]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        // The decomposition: a function of its own (SSA names restart, as MLIR prints them).
        let mut sub = Emitter {
            m,
            out: String::new(),
            next: 0,
            names: HashMap::new(),
            indent: 4,
            funcs: std::mem::take(&mut self.funcs),
            composites: self.composites,
            precision: self.precision,
        };
        let params: Vec<String> = args
            .iter()
            .zip(&arg_tys)
            .enumerate()
            .map(|(i, (&a, t))| {
                sub.names.insert(a, format!("%arg{i}"));
                format!("%arg{i}: {t}")
            })
            .collect();
        for &o in inner {
            sub.op(o)?;
        }
        let rets: Vec<String> = yielded.iter().map(|&y| sub.name(y)).collect();
        sub.line(format!("return {} : {}", rets.join(", "), join(&res_tys)));
        let mut f = format!("  func.func private @{fname}({}) -> ({}) {{\n", params.join(", "), join(&res_tys));
        f.push_str(&sub.out);
        f.push_str("  }\n");
        self.funcs = sub.funcs;
        self.composites = sub.composites;
        self.funcs.push(f);
        // The group's parameters (everything but `kind` and the `rules` that formed it).
        let cattrs: Vec<String> = d
            .attrs
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "kind" | "rules") && !k.starts_with("ember."))
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let mut dict = Vec::new();
        if !cattrs.is_empty() {
            dict.push(format!("composite_attributes = {{{}}}", cattrs.join(", ")));
        }
        dict.push(format!("decomposition = @{fname}"));
        let operands: Vec<String> = d.operands.iter().map(|&o| self.name(o)).collect();
        let r = self.fresh();
        let n = d.results.len();
        let lhs = if n == 1 { r.clone() } else { format!("{r}:{n}") };
        let rt = if n == 1 { res_tys[0].to_string() } else { format!("({})", join(&res_tys)) };
        self.line(format!(
            "{lhs} = stablehlo.composite \"ember.{kind}\" {} {{{}}} : ({}) -> {rt}",
            operands.join(", "),
            dict.join(", "),
            join(&arg_tys)
        ));
        for (i, &res) in d.results.iter().enumerate() {
            self.names.insert(res, if n == 1 { r.clone() } else { format!("{r}#{i}") });
        }
        Ok(())
    }

    /// `func.call @callee(...)` with one result (the trainium target's kernel regions); string
    /// attributes named `ember_*` become `mhlo.frontend_attributes`, which XLA keeps on the HLO call.
    fn call(&mut self, op: OpId) -> R<()> {
        let d = self.m.op(op);
        let Some(Attr::SymRef(callee)) = d.attrs.get("callee") else {
            return Err("`func.call` without a callee".into());
        };
        let [res] = d.results[..] else { return Err(format!("`func.call @{callee}` must have one result")) };
        let args: Vec<String> = d.operands.iter().map(|&v| self.name(v)).collect();
        let tys: Vec<String> = d.operands.iter().map(|&v| self.t(v).map(|t| t.to_string())).collect::<R<_>>()?;
        let tags: Vec<String> = d
            .attrs
            .iter()
            .filter_map(|(k, a)| {
                a.as_str().filter(|_| k.starts_with("ember_")).map(|s| format!("{k} = {}", fmt_str(s)))
            })
            .collect();
        let rt = self.t(res)?;
        let n = self.def(format!(
            "func.call @{callee}({}) {{mhlo.frontend_attributes = {{{}}}}} : ({}) -> {rt}",
            args.join(", "),
            tags.join(", "),
            tys.join(", ")
        ));
        self.names.insert(res, n);
        Ok(())
    }

    fn emit_ten(&mut self, op: OpId, short: &str) -> R<String> {
        let d = self.m.op(op);
        let attrs = &d.attrs;
        let ints = |k: &str| -> R<Vec<i64>> {
            match attrs.get(k) {
                Some(a) => a
                    .as_dims()
                    .and_then(|v| v.iter().map(|e| e.as_const()).collect())
                    .ok_or_else(|| format!("attribute `{k}` must be a static list of integers")),
                None => Err(format!("missing attribute `{k}`")),
            }
        };
        let int = |k: &str| -> R<i64> {
            attrs.get(k).and_then(|a| a.as_int()).ok_or_else(|| format!("missing integer attribute `{k}`"))
        };
        let ops: Vec<String> = d.operands.iter().map(|&v| self.name(v)).collect();
        let tys: Vec<T> = d.operands.iter().map(|&v| self.t(v)).collect::<R<_>>()?;
        let rt = self.t(d.results[0])?;
        let x = ops.first().cloned().unwrap_or_default();
        let xt = tys.first().cloned().unwrap_or_else(|| rt.clone());
        let float = xt.dt.is_float();
        let binop = match short {
            "add" => Some("add"),
            "sub" => Some("subtract"),
            "mul" => Some("multiply"),
            "div" => Some("divide"),
            "max" => Some("maximum"),
            "min" => Some("minimum"),
            "pow" => Some("power"),
            "atan2" => Some("atan2"),
            "rem" => Some("remainder"),
            "and" => Some("and"),
            "or" => Some("or"),
            "xor" => Some("xor"),
            _ => None,
        };
        if let Some(b) = binop {
            return Ok(self.binary(b, &ops[0], &ops[1], &rt));
        }
        let unop = match short {
            "neg" => Some("negate"),
            "exp" => Some("exponential"),
            "log" => Some("log"),
            "log1p" => Some("log_plus_one"),
            "sqrt" => Some("sqrt"),
            "rsqrt" => Some("rsqrt"),
            "tanh" => Some("tanh"),
            "sin" => Some("sine"),
            "cos" => Some("cosine"),
            "tan" => Some("tan"),
            "sigmoid" => Some("logistic"),
            "not" => Some("not"),
            "abs" if !is_unsigned(xt.dt) => Some("abs"),
            "sign" if !is_unsigned(xt.dt) => Some("sign"),
            "floor" | "ceil" | "round" if float => Some(match short {
                "floor" => "floor",
                "ceil" => "ceil",
                _ => "round_nearest_even",
            }),
            _ => None,
        };
        if let Some(u) = unop {
            return Ok(self.unary(u, &x, &rt));
        }
        Ok(match short {
            // Integer rounding and |unsigned| are the operand itself.
            "abs" | "floor" | "ceil" | "round" | "trunc" if !float => x,
            "sign" => {
                // Unsigned: x != 0.
                let z = self.constant(Lit::I(0), &xt);
                let ne = self.compare("NE", &x, &z, &xt);
                if rt.dt == DType::Bool {
                    ne
                } else {
                    self.convert(&ne, &xt.with_dt(DType::Bool), &rt)
                }
            }
            "trunc" => {
                let z = self.constant(Lit::F(0.0), &xt);
                let neg = self.compare("LT", &x, &z, &xt);
                let c = self.unary("ceil", &x, &xt);
                let f = self.unary("floor", &x, &xt);
                self.select(&neg, &c, &f, &rt)
            }
            "erf" => {
                if !float {
                    return Err("erf needs a float operand".into());
                }
                self.def(format!("chlo.erf {x} : {xt} -> {rt}"))
            }
            "compare" => {
                let dir = attrs.get("direction").and_then(|a| a.as_str()).ok_or("missing attribute `direction`")?;
                if !matches!(dir, "EQ" | "NE" | "LT" | "LE" | "GT" | "GE") {
                    return Err(format!("unknown direction `{dir}`"));
                }
                self.compare(dir, &ops[0], &ops[1], &xt)
            }
            "select" => self.select(&ops[0], &ops[1], &ops[2], &rt),
            "convert" => {
                if xt.dt == rt.dt {
                    x
                } else {
                    self.convert(&x, &xt, &rt)
                }
            }
            "constant" => {
                let v = attrs.get("value").and_then(Lit::from_attr).ok_or("`value` must be a number or a boolean")?;
                self.constant(v, &rt)
            }
            "iota" => {
                let dim = int("dim")?;
                if rt.rank() == 0 {
                    self.constant(Lit::I(0), &rt)
                } else {
                    self.def(format!("stablehlo.iota dim = {dim} : {rt}"))
                }
            }
            "broadcast" => {
                let dims = ints("dims")?;
                if xt == rt && dims.iter().enumerate().all(|(i, &d)| i as i64 == d) {
                    x
                } else {
                    self.def(format!("stablehlo.broadcast_in_dim {x}, dims = {} : ({xt}) -> {rt}", list(&dims)))
                }
            }
            "reshape" => self.reshape(&x, &xt, &rt),
            "transpose" => self.transpose(&x, &xt, &ints("dims")?, &rt),
            "reverse" => {
                let dims = ints("dims")?;
                if dims.is_empty() {
                    x
                } else {
                    self.def(format!("stablehlo.reverse {x}, dims = {} : {rt}", list(&dims)))
                }
            }
            "slice" => {
                let (start, step) = (ints("start")?, ints("step")?);
                if xt == rt && start.iter().all(|&s| s == 0) && step.iter().all(|&s| s == 1) {
                    x
                } else {
                    let limit: Vec<i64> = (0..start.len())
                        .map(|i| if rt.shape[i] == 0 { start[i] } else { start[i] + (rt.shape[i] - 1) * step[i] + 1 })
                        .collect();
                    self.slice(&x, &xt, &start, &limit, &step, &rt)
                }
            }
            "concat" => {
                let dim = int("dim")?;
                self.concat(&ops, &tys, dim as usize, &rt)
            }
            "pad" => {
                let (low, high) = (ints("low")?, ints("high")?);
                let v = attrs.get("value").and_then(Lit::from_attr).ok_or("`value` must be a number or a boolean")?;
                let st = T::scalar(xt.dt);
                let c = self.constant(v, &st);
                let interior = vec![0; low.len()];
                self.def(format!(
                    "stablehlo.pad {x}, {c}, low = {}, high = {}, interior = {} : ({xt}, {st}) -> {rt}",
                    list(&low),
                    list(&high),
                    list(&interior)
                ))
            }
            "dot_general" => {
                let (lb, rb, lc, rc) =
                    (ints("lhs_batch")?, ints("rhs_batch")?, ints("lhs_contract")?, ints("rhs_contract")?);
                let mut s = format!("stablehlo.dot_general {}, {}", ops[0], ops[1]);
                if !lb.is_empty() {
                    write!(s, ", batching_dims = {} x {}", list(&lb), list(&rb)).unwrap();
                }
                write!(s, ", contracting_dims = {} x {}", list(&lc), list(&rc)).unwrap();
                if float {
                    let p = if xt.dt == DType::F32 { self.precision.attr() } else { "HIGHEST" };
                    write!(s, ", precision = [{p}, {p}]").unwrap();
                }
                // Half-float dots accumulate in f32 and round once, as torch's CPU GEMMs (and a
                // TPU's MXU) do: a bf16 result type lets XLA's CPU backend accumulate in bf16.
                if matches!(rt.dt, DType::BF16 | DType::F16) {
                    let wide = rt.with_dt(DType::F32);
                    write!(s, " : ({}, {}) -> {wide}", tys[0], tys[1]).unwrap();
                    let y = self.def(s);
                    return Ok(self.convert(&y, &wide, &rt));
                }
                write!(s, " : ({}, {}) -> {rt}", tys[0], tys[1]).unwrap();
                self.def(s)
            }
            // Nothing to gather (an empty index): a zero-size operand dim would make the size-1
            // slice invalid, and the result has no elements anyway.
            "gather" if rt.shape.contains(&0) => self.constant(Lit::I(0), &rt),
            "gather" => {
                let dim = int("dim")? as usize;
                let it = &tys[1];
                let r = it.rank();
                let offset: Vec<i64> = (0..dim).chain(dim + r..rt.rank()).map(|i| i as i64).collect();
                let mut sizes = xt.shape.clone();
                sizes[dim] = 1;
                let mut dn = String::from("#stablehlo.gather<");
                if !offset.is_empty() {
                    write!(dn, "offset_dims = {}, ", list(&offset)).unwrap();
                }
                write!(dn, "collapsed_slice_dims = [{dim}], start_index_map = [{dim}], index_vector_dim = {r}>")
                    .unwrap();
                self.def(format!(
                    "\"stablehlo.gather\"({x}, {}) <{{dimension_numbers = {dn}, indices_are_sorted = false, slice_sizes = {}}}> : ({xt}, {it}) -> {rt}",
                    ops[1],
                    array_i64(&sizes)
                ))
            }
            // No updates: the operand itself (a zero-size update tensor gains nothing from XLA).
            "scatter" if tys[2].shape.contains(&0) => x,
            "scatter" => {
                let kind = attrs.get("kind").and_then(|a| a.as_str()).ok_or("missing attribute `kind`")?;
                let body = match kind {
                    "set" => None,
                    "sum" => Some("add"),
                    "prod" => Some("multiply"),
                    "max" => Some("maximum"),
                    "min" => Some("minimum"),
                    k => return Err(format!("unknown scatter kind `{k}`")),
                };
                let (it, ut) = (&tys[1], &tys[2]);
                let r = self.fresh();
                self.line(format!(
                    "{r} = \"stablehlo.scatter\"({x}, {}, {}) <{{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = {}>, unique_indices = false}}> ({{",
                    ops[1],
                    ops[2],
                    it.rank()
                ));
                let st = T::scalar(xt.dt);
                let (a, b) = (self.fresh(), self.fresh());
                self.region_start(&[(a.clone(), st.clone()), (b.clone(), st.clone())]);
                let v = match body {
                    None => b,
                    Some(f) => self.binary(f, &a, &b, &st),
                };
                self.region_end(&[(v, st.clone())], format!("}}) : ({xt}, {it}, {ut}) -> {rt}"));
                r
            }
            "reduce" => self.reduce(op, &x, &xt, &rt)?,
            "cumsum" | "cumprod" => {
                let dim = int("dim")? as usize;
                let n = xt.shape[dim];
                let (init, body) = if short == "cumprod" { (Lit::I(1), "multiply") } else { (Lit::I(0), "add") };
                if n <= 1 {
                    x
                } else {
                    let st = T::scalar(xt.dt);
                    let z = self.constant(init, &st);
                    let mut window = vec![1; xt.rank()];
                    window[dim] = n;
                    let pads: Vec<String> = (0..xt.rank())
                        .map(|i| if i == dim { format!("[{}, 0]", n - 1) } else { "[0, 0]".into() })
                        .collect();
                    let r = self.fresh();
                    self.line(format!(
                        "{r} = \"stablehlo.reduce_window\"({x}, {z}) <{{padding = dense<[{}]> : tensor<{}x2xi64>, window_dimensions = {}}}> ({{",
                        pads.join(", "),
                        xt.rank(),
                        array_i64(&window)
                    ));
                    let (a, b) = (self.fresh(), self.fresh());
                    self.region_start(&[(a.clone(), st.clone()), (b.clone(), st.clone())]);
                    let s = self.binary(body, &a, &b, &st);
                    self.region_end(&[(s, st.clone())], format!("}}) : ({xt}, {st}) -> {rt}"));
                    r
                }
            }
            "argsort" => {
                let dim = int("dim")?;
                let desc = self.m.op(op).attrs.get("descending").and_then(|a| a.as_bool()).unwrap_or(false);
                self.argsort(&x, &xt, dim, desc, &rt)
            }
            "windows" => {
                let (k, s, dl) = (ints("kernel")?, ints("stride")?, ints("dilation")?);
                self.windows(&x, &xt, &k, &s, &dl, &rt)
            }
            other => return Err(format!("the tpu target has no StableHLO mapping for `ten.{other}` yet")),
        })
    }

    /// `ten.reduce`: one `stablehlo.reduce`; arg reductions reduce (value, index) pairs.
    fn reduce(&mut self, op: OpId, x: &str, xt: &T, rt: &T) -> R<String> {
        let d = self.m.op(op);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).ok_or("missing attribute `kind`")?.to_string();
        let dims: Vec<i64> = d.attrs.get("dims").and_then(|a| a.as_ints()).ok_or("missing attribute `dims`")?.to_vec();
        let st = T::scalar(xt.dt);
        let (lo, hi) = if xt.dt.is_float() {
            (Lit::F(f64::NEG_INFINITY), Lit::F(f64::INFINITY))
        } else {
            let (lo, hi) = int_range(xt.dt);
            (Lit::I(lo), Lit::I(hi))
        };
        if kind == "argmax" || kind == "argmin" {
            return Ok(self.arg_reduce(kind == "argmax", x, xt, &dims, if kind == "argmax" { lo } else { hi }, rt));
        }
        let (body, init) = match (kind.as_str(), xt.dt == DType::Bool) {
            ("sum", _) => ("add", Lit::I(0)),
            ("prod", _) => ("multiply", Lit::I(1)),
            ("max", false) => ("maximum", lo),
            ("min", false) => ("minimum", hi),
            ("or", _) | ("max", true) => ("or", Lit::I(0)),
            ("and", _) | ("min", true) => ("and", Lit::I(if is_unsigned(xt.dt) { int_range(xt.dt).1 } else { -1 })),
            (k, _) => return Err(format!("unknown reduce kind `{k}`")),
        };
        if matches!(body, "and" | "or") && xt.dt.is_float() {
            return Err(format!("`{kind}` reduce of a float tensor"));
        }
        let c = self.constant(init, &st);
        Ok(self.def(format!(
            "stablehlo.reduce({x} init: {c}) applies stablehlo.{body} across dimensions = {} : ({xt}, {st}) -> {rt}",
            list(&dims)
        )))
    }

    /// argmax/argmin over `dims`: reduces (x, linear index within `dims`) pairs; the better value
    /// wins, NaN beats numbers, ties (and two NaNs) keep the smaller index. The init pair is
    /// (the dtype's worst value, 0): it can only tie when every element equals it, and then index
    /// 0 is the answer anyway.
    /// `ten.argsort`: a stable `stablehlo.sort` of (x, iota) whose comparator puts NaN after
    /// every number (before them when descending); the result is the sorted iota.
    fn argsort(&mut self, x: &str, xt: &T, dim: i64, descending: bool, rt: &T) -> String {
        let io = self.def(format!("stablehlo.iota dim = {dim} : {rt}"));
        let (sv, si, bt) = (T::scalar(xt.dt), T::scalar(DType::I64), T::scalar(DType::Bool));
        let r = self.fresh();
        self.line(format!("{r}:2 = \"stablehlo.sort\"({x}, {io}) <{{dimension = {dim} : i64, is_stable = true}}> ({{"));
        let (a, b, ia, ib) = (self.fresh(), self.fresh(), self.fresh(), self.fresh());
        self.region_start(&[(a.clone(), sv.clone()), (b.clone(), sv.clone()), (ia, si.clone()), (ib, si.clone())]);
        // "a goes first": ascending a < b, descending b < a; a NaN is larger than any number.
        let (lo, hi) = if descending { (&b, &a) } else { (&a, &b) };
        let less = self.compare("LT", lo, hi, &sv);
        let first = if xt.dt.is_float() {
            let lo_num = self.compare("EQ", lo, lo, &sv);
            let hi_nan = self.compare("NE", hi, hi, &sv);
            let nan_after = self.binary("and", &lo_num, &hi_nan, &bt);
            self.binary("or", &less, &nan_after, &bt)
        } else {
            less
        };
        self.region_end(&[(first, bt)], format!("}}) : ({xt}, {rt}) -> ({xt}, {rt})"));
        format!("{r}#1")
    }

    fn arg_reduce(&mut self, is_max: bool, x: &str, xt: &T, dims: &[i64], worst: Lit, rt: &T) -> String {
        let it = xt.with_dt(DType::I64);
        // Row-major index within `dims` (in the attribute's order).
        let mut idx: Option<String> = None;
        let mut stride = 1i64;
        for &dim in dims.iter().rev() {
            let io = self.def(format!("stablehlo.iota dim = {dim} : {it}"));
            let term = if stride == 1 {
                io
            } else {
                let c = self.constant(Lit::I(stride as i128), &it);
                self.binary("multiply", &io, &c, &it)
            };
            idx = Some(match idx {
                None => term,
                Some(prev) => self.binary("add", &prev, &term, &it),
            });
            stride *= xt.shape[dim as usize];
        }
        let idx = match idx {
            Some(i) => i,
            None => self.constant(Lit::I(0), &it),
        };
        let (sv, si) = (T::scalar(xt.dt), T::scalar(DType::I64));
        let v0 = self.constant(worst, &sv);
        let i0 = self.constant(Lit::I(0), &si);
        let r = self.fresh();
        self.line(format!(
            "{r}:2 = \"stablehlo.reduce\"({x}, {idx}, {v0}, {i0}) <{{dimensions = {}}}> ({{",
            array_i64(dims)
        ));
        let (a, ai, b, bi) = (self.fresh(), self.fresh(), self.fresh(), self.fresh());
        self.region_start(&[
            (a.clone(), sv.clone()),
            (ai.clone(), si.clone()),
            (b.clone(), sv.clone()),
            (bi.clone(), si.clone()),
        ]);
        let bt = T::scalar(DType::Bool);
        let wins = self.compare(if is_max { "GT" } else { "LT" }, &a, &b, &sv);
        let eq = self.compare("EQ", &a, &b, &sv);
        let (better, tie) = if xt.dt.is_float() {
            let an = self.compare("NE", &a, &a, &sv);
            let bn = self.compare("NE", &b, &b, &sv);
            let bnum = self.unary("not", &bn, &bt);
            let nan_first = self.binary("and", &an, &bnum, &bt);
            let better = self.binary("or", &wins, &nan_first, &bt);
            let both = self.binary("and", &an, &bn, &bt);
            (better, self.binary("or", &eq, &both, &bt))
        } else {
            (wins, eq)
        };
        let first = self.compare("LT", &ai, &bi, &si);
        let keep = self.binary("and", &tie, &first, &bt);
        let pick = self.binary("or", &better, &keep, &bt);
        let v = self.select(&pick, &a, &b, &sv);
        let i = self.select(&pick, &ai, &bi, &si);
        let vt = xt.with_dt(xt.dt);
        let rv = T::new(rt.shape.clone(), xt.dt);
        self.region_end(&[(v, sv.clone()), (i, si.clone())], format!("}}) : ({vt}, {it}, {sv}, {si}) -> ({rv}, {rt})"));
        format!("{r}#1")
    }

    /// `ten.windows`: for each window dim in turn, `K` strided slices (start `k*dilation`, step
    /// `stride`, `O` elements) stacked on a new dim in front of it; `[.., K1, O1, K2, O2]` is then
    /// transposed to `[.., K1, K2, O1, O2]`.
    fn windows(&mut self, x: &str, xt: &T, k: &[i64], s: &[i64], dl: &[i64], rt: &T) -> String {
        let n = k.len();
        let lead = xt.rank() - n;
        let mut cur = x.to_string();
        let mut ct = xt.clone();
        for i in 0..n {
            let pos = lead + 2 * i;
            let o = rt.shape[lead + n + i];
            let mut parts = Vec::new();
            let mut ptys = Vec::new();
            let mut sliced = ct.clone();
            sliced.shape[pos] = o;
            let mut one = sliced.clone();
            one.shape.insert(pos, 1);
            for kk in 0..k[i] {
                let mut start = vec![0; ct.rank()];
                let mut limit = ct.shape.clone();
                let mut stride = vec![1; ct.rank()];
                start[pos] = kk * dl[i];
                limit[pos] = if o == 0 { start[pos] } else { start[pos] + (o - 1) * s[i] + 1 };
                stride[pos] = s[i];
                let full = start[pos] == 0 && limit[pos] == ct.shape[pos] && stride[pos] == 1;
                let sl = if full { cur.clone() } else { self.slice(&cur, &ct, &start, &limit, &stride, &sliced) };
                parts.push(self.reshape(&sl, &sliced, &one));
                ptys.push(one.clone());
            }
            let mut stacked = one.clone();
            stacked.shape[pos] = k[i];
            cur = self.concat(&parts, &ptys, pos, &stacked);
            ct = stacked;
        }
        let mut perm: Vec<i64> = (0..lead as i64).collect();
        perm.extend((0..n).map(|i| (lead + 2 * i) as i64));
        perm.extend((0..n).map(|i| (lead + 2 * i + 1) as i64));
        self.transpose(&cur, &ct, &perm, rt)
    }
}
