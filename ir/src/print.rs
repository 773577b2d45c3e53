//! Canonical MLIR text: SSA names renumbered in print order, attributes sorted (BTreeMap), one op
//! per line, generic op form for every op except `module`, `func.func` and `func.return`, so that
//! `mlir-opt --allow-unregistered-dialect` parses every dump.

use crate::attr::{fmt_dict, fmt_key, fmt_str};
use crate::module::{BlockId, Module, OpId, Value, FUNC, RETURN};
use crate::types::Type;
use std::collections::HashMap;
use std::fmt::{self, Write};

struct DictDisplay<'a>(&'a crate::module::Attrs);
impl fmt::Display for DictDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_dict(self.0, f)
    }
}

#[derive(Default)]
struct Names {
    values: HashMap<Value, String>,
    blocks: HashMap<BlockId, String>,
    next_result: usize,
    next_arg: usize,
    next_block: usize,
}

pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    if m.attrs.is_empty() {
        out.push_str("module {\n");
    } else {
        let _ = writeln!(out, "module attributes {} {{", DictDisplay(&m.attrs));
    }
    for &op in &m.block(m.top).ops {
        let mut names = Names::default();
        print_op(m, op, &mut names, 1, &mut out);
    }
    out.push_str("}\n");
    out
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn name_of(names: &Names, v: Value) -> String {
    names.values.get(&v).cloned().unwrap_or_else(|| format!("%<undefined {}>", v.0))
}

fn type_list(ts: impl Iterator<Item = Type>) -> String {
    ts.map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
}

fn print_op(m: &Module, op: OpId, names: &mut Names, level: usize, out: &mut String) {
    let d = m.op(op);
    if d.name == FUNC {
        return print_func(m, op, names, level, out);
    }
    indent(out, level);
    if d.name == RETURN {
        out.push_str("return");
        if !d.operands.is_empty() {
            let ops: Vec<String> = d.operands.iter().map(|&v| name_of(names, v)).collect();
            let _ = write!(out, " {} : {}", ops.join(", "), type_list(d.operands.iter().map(|&v| m.ty(v).clone())));
        }
        print_loc(&d.loc, out);
        out.push('\n');
        return;
    }
    // Operands are named before results so that results get numbers after nested values.
    let operands: Vec<String> = d.operands.iter().map(|&v| name_of(names, v)).collect();
    let result_base = if d.results.is_empty() {
        None
    } else {
        let base = format!("%{}", names.next_result);
        names.next_result += 1;
        Some(base)
    };
    let mut body = String::new();
    let _ = write!(body, "{}({})", fmt_str(&d.name), operands.join(", "));
    if !d.regions.is_empty() {
        body.push_str(" (");
        for (i, &r) in d.regions.iter().enumerate() {
            if i > 0 {
                body.push_str(", ");
            }
            body.push_str("{\n");
            for (bi, &b) in m.region(r).blocks.iter().enumerate() {
                print_block(m, b, names, level + 1, &mut body, bi > 0);
            }
            indent(&mut body, level);
            body.push('}');
        }
        body.push(')');
    }
    if !d.attrs.is_empty() {
        let _ = write!(body, " {}", DictDisplay(&d.attrs));
    }
    let ins = type_list(d.operands.iter().map(|&v| m.ty(v).clone()));
    let outs: Vec<Type> = d.results.iter().map(|&v| m.ty(v).clone()).collect();
    let outs_s = if outs.len() == 1 && !matches!(outs[0], Type::Function(..)) {
        outs[0].to_string()
    } else {
        format!("({})", type_list(outs.into_iter()))
    };
    let _ = write!(body, " : ({ins}) -> {outs_s}");
    if let Some(base) = result_base {
        if d.results.len() == 1 {
            names.values.insert(d.results[0], base.clone());
            let _ = write!(out, "{base} = ");
        } else {
            for (i, &r) in d.results.iter().enumerate() {
                names.values.insert(r, format!("{base}#{i}"));
            }
            let _ = write!(out, "{base}:{} = ", d.results.len());
        }
    }
    out.push_str(&body);
    print_loc(&d.loc, out);
    out.push('\n');
}

fn print_loc(loc: &crate::attr::Loc, out: &mut String) {
    if *loc != crate::attr::Loc::Unknown {
        let _ = write!(out, " {loc}");
    }
}

fn print_block(m: &Module, b: BlockId, names: &mut Names, level: usize, out: &mut String, force_label: bool) {
    let bd = m.block(b);
    let label = format!("^bb{}", names.next_block);
    names.next_block += 1;
    names.blocks.insert(b, label.clone());
    let mut args = Vec::new();
    for &a in &bd.args {
        let n = format!("%arg{}", names.next_arg);
        names.next_arg += 1;
        args.push(format!("{n}: {}", m.ty(a)));
        names.values.insert(a, n);
    }
    if force_label || !args.is_empty() {
        indent(out, level.saturating_sub(1));
        if args.is_empty() {
            let _ = writeln!(out, "{label}:");
        } else {
            let _ = writeln!(out, "{label}({}):", args.join(", "));
        }
    }
    for &op in &bd.ops {
        print_op(m, op, names, level, out);
    }
}

fn print_func(m: &Module, f: OpId, names: &mut Names, level: usize, out: &mut String) {
    let d = m.op(f);
    let (_, results) = m.func_type(f);
    let entry = m.entry(f);
    let bd = m.block(entry);
    names.next_block = 1; // the entry block has no label in custom form
    let mut args = Vec::new();
    for (i, &a) in bd.args.iter().enumerate() {
        let n = format!("%arg{}", names.next_arg);
        names.next_arg += 1;
        let mut s = format!("{n}: {}", m.ty(a));
        if let Some(at) = m.arg_attrs(f, i).filter(|a| !a.is_empty()) {
            let _ = write!(s, " {}", DictDisplay(at));
        }
        args.push(s);
        names.values.insert(a, n);
    }
    indent(out, level);
    let _ = write!(out, "func.func @{}({})", fmt_key(m.func_name(f)), args.join(", "));
    if !results.is_empty() {
        let rs: Vec<String> = results
            .iter()
            .enumerate()
            .map(|(i, t)| match m.res_attrs(f, i).filter(|a| !a.is_empty()) {
                Some(at) => format!("{t} {}", DictDisplay(at)),
                None => t.to_string(),
            })
            .collect();
        let _ = write!(out, " -> ({})", rs.join(", "));
    }
    let extra: crate::module::Attrs = d
        .attrs
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "sym_name" | "function_type" | "arg_attrs" | "res_attrs"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !extra.is_empty() {
        let _ = write!(out, " attributes {}", DictDisplay(&extra));
    }
    out.push_str(" {\n");
    for &op in &bd.ops {
        print_op(m, op, names, level + 1, out);
    }
    indent(out, level);
    out.push_str("}\n");
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&print_module(self))
    }
}
