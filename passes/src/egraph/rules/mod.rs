//! Rewrite rules as tables, one file per theme. A row is a name, the rule in math notation, the
//! left-hand side as an egg pattern over IR op names, and the right-hand side: a pattern variable
//! or a Rust function that builds the replacement (types and attributes need computing) and may
//! decline. Every rule has a `testdata/egraph/` case.
//!
//! Each variable appears once per pattern: egg looks a subterm whose variables are all bound up
//! by exact node, and e-nodes carry types and attributes a pattern leaves out. Where the math
//! repeats a variable (`x·σ(x)`), the pattern names each occurrence (`?x`, `?x1`) and the
//! right-hand side checks that they are one class (`same`).

pub mod algebra;
pub mod fusion;
pub mod layout;

use super::lang::{add, attrs_of, nodes, type_of, ENode, Ember, EG};
use egg::{Id, Pattern, Rewrite, Subst, Symbol, Var};
use ember_ir::{Attr, Attrs, DType, SymExpr, TensorType};

pub type ApplyFn = fn(&mut EG, Id, &Subst) -> Option<Id>;

pub enum Rhs {
    /// The class bound to this variable.
    Var(&'static str),
    Apply(ApplyFn),
}

pub struct Rule {
    pub name: &'static str,
    pub math: &'static str,
    pub lhs: &'static str,
    pub rhs: Rhs,
}

struct RuleApplier {
    rhs: RhsImpl,
}

enum RhsImpl {
    Var(Var),
    Apply(ApplyFn),
}

impl egg::Applier<ENode, Ember> for RuleApplier {
    fn apply_one(
        &self,
        eg: &mut EG,
        eclass: Id,
        subst: &Subst,
        _: Option<&egg::PatternAst<ENode>>,
        rule: Symbol,
    ) -> Vec<Id> {
        let new = match &self.rhs {
            RhsImpl::Var(v) => {
                let id = subst[*v];
                // A rewrite never changes a value's type; a pattern that would is a bug in its row.
                if eg[id].data.ty != eg[eclass].data.ty {
                    return vec![];
                }
                Some(id)
            }
            RhsImpl::Apply(f) => f(eg, eclass, subst),
        };
        match new {
            Some(id) if eg.union(id, eclass) => {
                eg.analysis.fired.push((rule, eclass));
                vec![eclass]
            }
            _ => vec![],
        }
    }
}

/// Every rule of the default set, themes in order.
pub fn all() -> Vec<&'static Rule> {
    algebra::RULES.iter().chain(layout::RULES).chain(fusion::RULES).collect()
}

pub fn rewrites(rules: &[&'static Rule]) -> Vec<Rewrite<ENode, Ember>> {
    rules
        .iter()
        .map(|r| {
            let lhs: Pattern<ENode> = r.lhs.parse().unwrap_or_else(|e| panic!("rule {}: bad pattern: {e}", r.name));
            let rhs = match r.rhs {
                Rhs::Var(v) => RhsImpl::Var(v.parse().expect("pattern variable")),
                Rhs::Apply(f) => RhsImpl::Apply(f),
            };
            Rewrite::new(r.name, lhs, RuleApplier { rhs }).unwrap_or_else(|e| panic!("rule {}: {e}", r.name))
        })
        .collect()
}

// ---- helpers for right-hand sides ---------------------------------------------------------

pub fn var(s: &Subst, name: &str) -> Id {
    s[name.parse::<Var>().expect("pattern variable")]
}

pub fn konst(eg: &EG, id: Id) -> Option<f64> {
    eg[id].data.konst
}

/// The first node of class `id` with operator `op` (rules re-find the nodes a pattern matched to
/// read their attributes).
pub fn node(eg: &EG, id: Id, op: &str) -> Option<ENode> {
    nodes(eg, id, op).into_iter().next()
}

pub fn attr(eg: &EG, n: &ENode, key: &str) -> Option<Attr> {
    attrs_of(eg, n).get(key).cloned()
}

pub fn ints(eg: &EG, n: &ENode, key: &str) -> Vec<i64> {
    attr(eg, n, key).and_then(|a| a.as_ints().map(|v| v.to_vec())).unwrap_or_default()
}

/// A splat constant of type `ty`.
pub fn splat(eg: &mut EG, value: f64, ty: &TensorType) -> Id {
    let mut a = Attrs::new();
    a.insert("dtype".into(), Attr::DType(ty.dtype));
    a.insert("shape".into(), Attr::dims(ty.dims.clone()));
    let v = if ty.dtype.is_float() {
        Attr::Float(value)
    } else if ty.dtype == DType::Bool {
        Attr::Bool(value != 0.0)
    } else {
        Attr::Int(value as i64)
    };
    a.insert("value".into(), v);
    add(eg, "ten.constant", &a, ty, vec![])
}

pub fn op0(eg: &mut EG, op: &str, ty: &TensorType, args: Vec<Id>) -> Id {
    add(eg, op, &Attrs::new(), ty, args)
}

pub fn transpose(eg: &mut EG, x: Id, perm: &[i64]) -> Id {
    let t = type_of(eg, x);
    if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
        return x;
    }
    let ty = TensorType::new(perm.iter().map(|&p| t.dims[p as usize].clone()).collect(), t.dtype);
    let mut a = Attrs::new();
    a.insert("dims".into(), Attr::Ints(perm.to_vec()));
    add(eg, "ten.transpose", &a, &ty, vec![x])
}

pub fn reshape(eg: &mut EG, x: Id, dims: &[SymExpr]) -> Id {
    let t = type_of(eg, x);
    if t.dims == dims {
        return x;
    }
    let mut a = Attrs::new();
    a.insert("shape".into(), Attr::dims(dims.to_vec()));
    add(eg, "ten.reshape", &a, &TensorType::new(dims.to_vec(), t.dtype), vec![x])
}

/// Whether `n` (a `ten.reduce`) reduces exactly the last dim of a rank-`rank` operand.
pub fn reduces_last(eg: &EG, n: &ENode, rank: usize) -> bool {
    ints(eg, n, "dims") == [rank as i64 - 1]
}

/// Whether broadcast `n` maps its operand onto the leading dims (a reduced value spread back
/// along the trailing dims).
pub fn spreads_leading(eg: &EG, n: &ENode) -> bool {
    ints(eg, n, "dims").iter().enumerate().all(|(i, &d)| d == i as i64)
}

/// Whether broadcast `n` maps a rank-1 operand onto the last of `rank` dims.
pub fn spreads_last(eg: &EG, n: &ENode, rank: usize) -> bool {
    ints(eg, n, "dims") == [rank as i64 - 1]
}

pub fn last_dim(t: &TensorType) -> Option<i64> {
    t.dims.last().and_then(|d| d.as_const())
}

/// The first node of class `id` with operator `op` whose first operand is class `child`.
pub fn nodes_with_child(eg: &EG, id: Id, op: &str, child: Id) -> Option<ENode> {
    let child = eg.find(child);
    nodes(eg, id, op).into_iter().find(|n| n.args.first().map(|&a| eg.find(a)) == Some(child))
}

/// A composite node `op{attrs}(args)` with the type of `root`.
pub fn composite(eg: &mut EG, root: Id, op: &str, attrs: Vec<(&str, Attr)>, args: Vec<Id>) -> Id {
    let ty = type_of(eg, root);
    let a: Attrs = attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    add(eg, op, &a, &ty, args)
}

pub fn near(a: Option<f64>, want: f64) -> bool {
    a.is_some_and(|a| (a - want).abs() <= 1e-6 * want.abs().max(1.0))
}

/// The first node of class `id` with operator `op` whose operands are the given classes where
/// `Some` (rules re-find matched nodes this way, so what they read agrees with the match).
pub fn pick(eg: &EG, id: Id, op: &str, want: &[Option<Id>]) -> Option<ENode> {
    nodes(eg, id, op).into_iter().find(|n| {
        n.args.len() == want.len() && n.args.iter().zip(want).all(|(&a, w)| w.is_none_or(|w| eg.find(w) == eg.find(a)))
    })
}

pub fn str_attr(eg: &EG, n: &ENode, key: &str) -> Option<String> {
    attr(eg, n, key).and_then(|a| a.as_str().map(|s| s.to_string()))
}

/// Whether the named variables are bound to one class.
pub fn same(eg: &EG, s: &Subst, names: &[&str]) -> bool {
    let first = eg.find(var(s, names[0]));
    names[1..].iter().all(|n| eg.find(var(s, n)) == first)
}
