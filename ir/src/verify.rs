//! The verifier: structure (SSA dominance, function signatures, terminators) and, for every op of a
//! known dialect, operands and attributes against its signature and result types against its rule.

use crate::attr::{Attr, Loc};
use crate::dialect::{self, Kind, OpView, Rule};
use crate::module::{Module, OpId, Value, FUNC, RETURN};
use crate::types::Type;
use std::collections::HashSet;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    pub op: String,
    pub loc: Loc,
    pub msg: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.loc.describe();
        if at.is_empty() {
            write!(f, "`{}`: {}", self.op, self.msg)
        } else {
            write!(f, "`{}` at {at}: {}", self.op, self.msg)
        }
    }
}

pub fn verify(m: &Module) -> Result<(), Vec<VerifyError>> {
    let mut v = Verifier { m, errors: Vec::new() };
    for &op in &m.block(m.top).ops {
        if m.op(op).name != FUNC {
            v.error(op, format!("only func.func may appear at module level, found `{}`", m.op(op).name));
            continue;
        }
        v.func(op);
    }
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(v.errors)
    }
}

struct Verifier<'m> {
    m: &'m Module,
    errors: Vec<VerifyError>,
}

impl Verifier<'_> {
    fn error(&mut self, op: OpId, msg: String) {
        let d = self.m.op(op);
        self.errors.push(VerifyError { op: d.name.clone(), loc: d.loc.clone(), msg });
    }

    fn func(&mut self, f: OpId) {
        let m = self.m;
        let (args, results) = m.func_type(f);
        if m.op(f).regions.len() != 1 || m.region(m.op(f).regions[0]).blocks.len() != 1 {
            return self.error(f, "a function needs exactly one region with one block".into());
        }
        let entry = m.entry(f);
        let found: Vec<Type> = m.block(entry).args.iter().map(|&a| m.ty(a).clone()).collect();
        if found != args {
            self.error(f, "entry block arguments do not match the function type".into());
        }
        let mut visible: HashSet<Value> = m.block(entry).args.iter().copied().collect();
        self.block(entry, &mut visible);
        match m.func_return(f) {
            None => self.error(f, format!("function @{} must end with `return`", m.func_name(f))),
            Some(r) => {
                let tys: Vec<Type> = m.op(r).operands.iter().map(|&v| m.ty(v).clone()).collect();
                if tys != results {
                    let fmt = |v: &[Type]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
                    self.error(r, format!("returns ({}) but the function type says ({})", fmt(&tys), fmt(&results)));
                }
            }
        }
    }

    fn block(&mut self, b: crate::module::BlockId, visible: &mut HashSet<Value>) {
        let m = self.m;
        let ops = m.block(b).ops.clone();
        for (i, &op) in ops.iter().enumerate() {
            let d = m.op(op);
            for (k, v) in d.operands.iter().enumerate() {
                if !visible.contains(v) {
                    self.error(op, format!("operand {k} is used before it is defined (or not visible here)"));
                }
            }
            if d.name == RETURN && i + 1 != ops.len() {
                self.error(op, "`return` must be the last op of its block".into());
            }
            for &r in &d.regions {
                for &nb in &m.region(r).blocks {
                    // Nested regions see enclosing values (MLIR's regions are not isolated here).
                    let mut inner = visible.clone();
                    inner.extend(m.block(nb).args.iter().copied());
                    self.block(nb, &mut inner);
                }
            }
            self.op(op);
            visible.extend(d.results.iter().copied());
        }
    }

    fn op(&mut self, op: OpId) {
        let m = self.m;
        let d = m.op(op);
        if d.name == RETURN || d.name == FUNC {
            return;
        }
        let dialect = d.name.split('.').next().unwrap_or("");
        let Some(view) = OpView::new(m, op) else {
            if matches!(dialect, "torch" | "ten" | "ember") {
                self.error(op, format!("unknown op `{}` in the `{dialect}` dialect", d.name));
            } else {
                self.error(op, format!("unknown dialect `{dialect}`"));
            }
            return;
        };
        let sig = view.def.signature();
        let groups = match view.operand_groups() {
            Ok(g) => g,
            Err(e) => return self.error(op, e),
        };
        for (name, vals) in &groups {
            for (j, v) in vals.iter().enumerate() {
                if let Some(v) = v {
                    if m.ty(*v).tensor().is_none() {
                        self.error(op, format!("operand `{name}`[{j}] must be a tensor, found {}", m.ty(*v)));
                    }
                }
            }
        }
        let errors_before = self.errors.len();
        for p in &sig.params {
            if p.kind.is_tensor() || p.kind.is_placement() {
                continue;
            }
            match d.attrs.get(&p.name) {
                None if !p.optional && p.default.is_none() => {
                    self.error(op, format!("missing attribute `{}`", p.name));
                }
                None => {}
                Some(a) if !attr_fits(p.kind, a) => {
                    self.error(op, format!("attribute `{}` should be {:?}, found `{a}`", p.name, p.kind));
                }
                Some(_) => {}
            }
        }
        for k in d.attrs.keys() {
            let known = sig.param(k).is_some() || k == dialect::SEGMENTS || k.starts_with("ember.");
            if !known {
                self.error(op, format!("unknown attribute `{k}` (the signature is {})", view.def.sig));
            }
        }
        match d.name.as_str() {
            "ember.fusion_group" => return self.fusion_group(op),
            "ember.yield" => return,
            _ => {}
        }
        // A rule reading a malformed attribute would only repeat the error above.
        if view.def.rule == Rule::Trust || self.errors.len() > errors_before {
            return;
        }
        match view.infer() {
            Err(e) => self.error(op, e.0),
            Ok(tys) => {
                if tys.len() != d.results.len() {
                    return self
                        .error(op, format!("the rule gives {} results, the op has {}", tys.len(), d.results.len()));
                }
                for (i, (t, &r)) in tys.iter().zip(&d.results).enumerate() {
                    if t != m.ty(r) {
                        self.error(op, format!("result {i}: expected {t}, found {}", m.ty(r)));
                    }
                }
            }
        }
    }

    fn fusion_group(&mut self, op: OpId) {
        let m = self.m;
        let d = m.op(op);
        if d.regions.len() != 1 || m.region(d.regions[0]).blocks.len() != 1 {
            return self.error(op, "needs one region with one block".into());
        }
        let b = m.region(d.regions[0]).blocks[0];
        let args: Vec<&Type> = m.block(b).args.iter().map(|&a| m.ty(a)).collect();
        let ins: Vec<&Type> = d.operands.iter().map(|&v| m.ty(v)).collect();
        if args != ins {
            self.error(op, "block arguments must match the operand types".into());
        }
        match m.block(b).ops.last() {
            Some(&y) if m.op(y).name == "ember.yield" => {
                let ys: Vec<&Type> = m.op(y).operands.iter().map(|&v| m.ty(v)).collect();
                let rs: Vec<&Type> = d.results.iter().map(|&v| m.ty(v)).collect();
                if ys != rs {
                    self.error(op, "ember.yield operand types must match the results".into());
                }
            }
            _ => self.error(op, "region must end with ember.yield".into()),
        }
    }
}

/// Whether an attribute value has the shape a parameter kind needs.
pub fn attr_fits(kind: Kind, a: &Attr) -> bool {
    match kind {
        Kind::Int => matches!(a, Attr::Int(_)),
        Kind::SymInt => matches!(a, Attr::Int(_)) || matches!(a, Attr::Dims(v) if v.len() == 1),
        Kind::Ints => matches!(a, Attr::Ints(_) | Attr::Int(_)),
        Kind::SymInts => matches!(a, Attr::Ints(_) | Attr::Dims(_)),
        Kind::Float => matches!(a, Attr::Float(_) | Attr::Int(_)),
        Kind::Floats => matches!(a, Attr::Floats(_)),
        Kind::Bool => matches!(a, Attr::Bool(_)),
        Kind::Bools => matches!(a, Attr::Array(_)),
        Kind::Strs => matches!(a, Attr::Array(v) if v.iter().all(|x| matches!(x, Attr::Str(_)))),
        // A symbolic int (a dim's size under dynamic shapes) is a one-element `Dims`.
        Kind::Scalar => {
            matches!(a, Attr::Int(_) | Attr::Float(_) | Attr::Bool(_)) || matches!(a, Attr::Dims(v) if v.len() == 1)
        }
        Kind::ScalarType => matches!(a, Attr::DType(_)),
        Kind::Str | Kind::MemoryFormat => matches!(a, Attr::Str(_)),
        Kind::OptTensorList => matches!(a, Attr::Ints(_)),
        _ => true,
    }
}
