//! Rewrite rules as tables, one file per theme. A row is a name, the left-hand side as an egg
//! pattern over IR op names, the result, a condition and the rule in math notation. The result is
//! a pattern variable, a folded splat, or a Rust function that builds the replacement (types and
//! attributes need computing) and may decline; the condition is data (`Cond`), checked first.
//! Every rule has a `testdata/egraph/` case.
//!
//! Each variable appears once per pattern: egg looks a subterm whose variables are all bound up
//! by exact node, and e-nodes carry types and attributes a pattern leaves out. Where the math
//! repeats a variable (`x·σ(x)`), the pattern names each occurrence (`?x`, `?x1`) and the
//! condition checks that they are one class (`same`).

pub mod algebra;
pub mod fusion;
pub mod layout;

use super::lang::{add, attrs_of, nodes, type_of, ENode, Ember, EG};
use egg::{ENodeOrVar, Id, Language, Pattern, PatternAst, Rewrite, Subst, Symbol, Var};
use ember_ir::dialect::ten::TenOp;
use ember_ir::{Attr, Attrs, DType, SymExpr, TensorType};

pub type ApplyFn = fn(&mut EG, Id, &Subst) -> Option<Id>;

/// A right-hand side that also gets the nodes of the match ([`matched`]), so it reads attributes
/// and classes off the very nodes the pattern named instead of walking the pattern again.
pub type BuildFn = fn(&mut EG, Id, &Subst, &[(Id, ENode)]) -> Option<Id>;

pub enum Rhs {
    /// The class bound to this variable.
    Var(&'static str),
    Apply(ApplyFn),
    Build(BuildFn),
    /// The splat constant f(?a) or f(?a, ?b), typed as the matched value.
    Fold1(fn(f64) -> f64),
    Fold2(fn(f64, f64) -> f64),
}

/// A rule's side condition, checked on each match before its right-hand side runs (egg's
/// `if is_splat("?c", 1.0)`). Conditions are data so that a rule table reads as one.
#[derive(Clone, Copy)]
pub enum Cond {
    Always,
    /// The variable is a splat constant of exactly this value.
    Splat(&'static str, f64),
    /// The variable is a splat constant within 1e-6 (relative) of this value.
    NearSplat(&'static str, f64),
    /// Every variable is a splat constant and the matched value is a float tensor.
    FloatSplats(&'static [&'static str]),
    /// The variable's class holds a node with this op.
    Has(&'static str, TenOp),
    /// The variables are bound to one class: the occurrences of one math variable.
    Same(&'static [&'static str]),
    All(&'static [Cond]),
}

/// No condition.
pub const ALWAYS: Cond = Cond::Always;

pub const fn is_splat(v: &'static str, value: f64) -> Cond {
    Cond::Splat(v, value)
}

pub const fn near_splat(v: &'static str, value: f64) -> Cond {
    Cond::NearSplat(v, value)
}

pub const fn float_splats(vars: &'static [&'static str]) -> Cond {
    Cond::FloatSplats(vars)
}

pub const fn has_node(v: &'static str, op: TenOp) -> Cond {
    Cond::Has(v, op)
}

pub const fn same(vars: &'static [&'static str]) -> Cond {
    Cond::Same(vars)
}

pub const fn all_of(conds: &'static [Cond]) -> Cond {
    Cond::All(conds)
}

impl Cond {
    fn holds(&self, eg: &EG, root: Id, s: &Subst) -> bool {
        match *self {
            Cond::Always => true,
            Cond::Splat(v, value) => konst(eg, var(s, v)) == Some(value),
            Cond::NearSplat(v, value) => near(konst(eg, var(s, v)), value),
            Cond::FloatSplats(vars) => {
                vars.iter().all(|v| konst(eg, var(s, v)).is_some()) && type_of(eg, root).dtype.is_float()
            }
            Cond::Has(v, op) => node(eg, var(s, v), op.name()).is_some(),
            Cond::Same(vars) => {
                let first = eg.find(var(s, vars[0]));
                vars[1..].iter().all(|n| eg.find(var(s, n)) == first)
            }
            Cond::All(conds) => conds.iter().all(|c| c.holds(eg, root, s)),
        }
    }
}

impl egg::Condition<ENode, Ember> for Cond {
    fn check(&self, eg: &mut EG, eclass: Id, subst: &Subst) -> bool {
        self.holds(eg, eclass, subst)
    }
}

pub struct Rule {
    pub name: &'static str,
    /// The left-hand side: an egg pattern over IR op names.
    pub lhs: &'static str,
    pub rhs: Rhs,
    pub cond: Cond,
    /// The rule in math notation.
    pub math: &'static str,
}

/// One table row: `rule(name, pattern, result, condition, math)`.
pub const fn rule(name: &'static str, lhs: &'static str, rhs: Rhs, cond: Cond, math: &'static str) -> Rule {
    Rule { name, lhs, rhs, cond, math }
}

struct RuleApplier {
    rhs: RhsImpl,
    /// The left-hand side, for [`matched`].
    lhs: PatternAst<ENode>,
}

enum RhsImpl {
    Var(Var),
    Apply(ApplyFn),
    Build(BuildFn),
    Fold1(fn(f64) -> f64),
    Fold2(fn(f64, f64) -> f64),
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
            RhsImpl::Build(f) => matched(eg, &self.lhs, eclass, subst).and_then(|ns| f(eg, eclass, subst, &ns)),
            RhsImpl::Fold1(f) => fold(eg, eclass, subst, &["?a"], |c| f(c[0])),
            RhsImpl::Fold2(f) => fold(eg, eclass, subst, &["?a", "?b"], |c| f(c[0], c[1])),
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

/// The splat constant f(values of `vars`) typed as the root; folding is limited to floats.
fn fold(eg: &mut EG, root: Id, s: &Subst, vars: &[&str], f: impl Fn(&[f64]) -> f64) -> Option<Id> {
    let ty = type_of(eg, root);
    let values: Option<Vec<f64>> = vars.iter().map(|v| konst(eg, var(s, v))).collect();
    let values = values?;
    ty.dtype.is_float().then(|| splat(eg, f(&values), &ty))
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
                Rhs::Build(f) => RhsImpl::Build(f),
                Rhs::Fold1(f) => RhsImpl::Fold1(f),
                Rhs::Fold2(f) => RhsImpl::Fold2(f),
            };
            let applier =
                egg::ConditionalApplier { condition: r.cond, applier: RuleApplier { rhs, lhs: lhs.ast.clone() } };
            Rewrite::new(r.name, lhs, applier).unwrap_or_else(|e| panic!("rule {}: {e}", r.name))
        })
        .collect()
}

/// The nodes a match of `pattern` at `root` went through, in the order the pattern's text names
/// them, each with its class: in every class the first node (in class order) that agrees with
/// the pattern and `s` all the way down. A rule thus reads what it matched from the match
/// instead of a second hand-written walk of the same pattern.
pub fn matched(eg: &EG, pattern: &PatternAst<ENode>, root: Id, s: &Subst) -> Option<Vec<(Id, ENode)>> {
    fn walk(eg: &EG, ast: &[ENodeOrVar<ENode>], at: Id, class: Id, s: &Subst, out: &mut Vec<(Id, ENode)>) -> bool {
        let class = eg.find(class);
        match &ast[usize::from(at)] {
            ENodeOrVar::Var(v) => eg.find(s[*v]) == class,
            ENodeOrVar::ENode(p) => eg[class].nodes.iter().any(|n| {
                if !p.matches(n) {
                    return false;
                }
                let mark = out.len();
                out.push((class, n.clone()));
                let ok = p.args.iter().zip(&n.args).all(|(&pa, &na)| walk(eg, ast, pa, na, s, out));
                if !ok {
                    out.truncate(mark);
                }
                ok
            }),
        }
    }
    let ast = pattern.as_ref();
    let mut out = Vec::new();
    walk(eg, ast, Id::from(ast.len() - 1), root, s, &mut out).then_some(out)
}

/// The first of the matched nodes with operator `op`.
pub fn first<'a>(ns: &'a [(Id, ENode)], op: &str) -> Option<&'a ENode> {
    ns.iter().map(|(_, n)| n).find(|n| n.op.as_str() == op)
}

// ---- helpers for right-hand sides ---------------------------------------------------------

pub fn var(s: &Subst, name: &str) -> Id {
    s[name.parse::<Var>().expect("pattern variable")]
}

pub fn konst(eg: &EG, id: Id) -> Option<f64> {
    eg[id].data.konst
}

/// The first node of class `id` with operator `op`: for a node under a pattern variable, which
/// [`matched`] does not visit.
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
    add(eg, TenOp::Constant.name(), &a, ty, vec![])
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
    add(eg, TenOp::Transpose.name(), &a, &ty, vec![x])
}

pub fn reshape(eg: &mut EG, x: Id, dims: &[SymExpr]) -> Id {
    let t = type_of(eg, x);
    if t.dims == dims {
        return x;
    }
    let mut a = Attrs::new();
    a.insert("shape".into(), Attr::dims(dims.to_vec()));
    add(eg, TenOp::Reshape.name(), &a, &TensorType::new(dims.to_vec(), t.dtype), vec![x])
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
/// `Some`: for structure a pattern cannot say (either operand order, an optional op).
pub fn pick(eg: &EG, id: Id, op: &str, want: &[Option<Id>]) -> Option<ENode> {
    nodes(eg, id, op).into_iter().find(|n| {
        n.args.len() == want.len() && n.args.iter().zip(want).all(|(&a, w)| w.is_none_or(|w| eg.find(w) == eg.find(a)))
    })
}
