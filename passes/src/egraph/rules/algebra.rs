//! Algebra: identities and constant folding. No commutativity or associativity rules: each rule
//! here removes an op or replaces ops by a constant, so saturation cannot blow up. `c` is a
//! splat constant; folding is limited to float tensors, whose arithmetic the folded value
//! reproduces (integer division and overflow are left to run time).

use super::{konst, op0, splat, var, Rhs, Rule};
use crate::egraph::lang::{type_of, EG};
use egg::{Id, Subst};

fn when_const(eg: &EG, s: &Subst, c: &str, want: f64, keep: &str) -> Option<Id> {
    (konst(eg, var(s, c)) == Some(want)).then(|| var(s, keep))
}

fn fold2(eg: &mut EG, root: Id, s: &Subst, f: fn(f64, f64) -> f64) -> Option<Id> {
    let ty = type_of(eg, root);
    let (a, b) = (konst(eg, var(s, "?a"))?, konst(eg, var(s, "?b"))?);
    ty.dtype.is_float().then(|| splat(eg, f(a, b), &ty))
}

fn fold1(eg: &mut EG, root: Id, s: &Subst, f: fn(f64) -> f64) -> Option<Id> {
    let ty = type_of(eg, root);
    let a = konst(eg, var(s, "?a"))?;
    ty.dtype.is_float().then(|| splat(eg, f(a), &ty))
}

/// (x · c1) · c2 = x · (c1·c2), with the product rounded once (exact when either is a power of 2).
fn mul_consts(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let ty = type_of(eg, root);
    let (a, b) = (konst(eg, var(s, "?c1"))?, konst(eg, var(s, "?c2"))?);
    if !ty.dtype.is_float() {
        return None;
    }
    let c = splat(eg, a * b, &ty);
    Some(op0(eg, "ten.mul", &ty, vec![var(s, "?x"), c]))
}

/// convert(convert(x, wide), dtype(x)) = x when the inner conversion loses nothing.
fn convert_round_trip(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let x = var(s, "?x");
    let (tx, mid, out) = (type_of(eg, x), type_of(eg, var(s, "?m")), type_of(eg, root));
    let widening = (tx.dtype.is_float() && mid.dtype.is_float() && mid.dtype.byte_size() > tx.dtype.byte_size())
        || (tx.dtype.is_int() && mid.dtype.is_int() && mid.dtype.byte_size() > tx.dtype.byte_size());
    (widening && tx == out).then_some(x)
}

#[rustfmt::skip]
pub static RULES: &[Rule] = &[
    Rule { name: "mul-one",   math: "x·1 = 1·x = x", lhs: "(ten.mul ?x ?c)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 1.0, "?x")) },
    Rule { name: "one-mul",   math: "1·x = x",       lhs: "(ten.mul ?c ?x)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 1.0, "?x")) },
    Rule { name: "add-zero",  math: "x+0 = x",       lhs: "(ten.add ?x ?c)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 0.0, "?x")) },
    Rule { name: "zero-add",  math: "0+x = x",       lhs: "(ten.add ?c ?x)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 0.0, "?x")) },
    Rule { name: "sub-zero",  math: "x−0 = x",       lhs: "(ten.sub ?x ?c)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 0.0, "?x")) },
    Rule { name: "div-one",   math: "x/1 = x",       lhs: "(ten.div ?x ?c)", rhs: Rhs::Apply(|eg, _, s| when_const(eg, s, "?c", 1.0, "?x")) },
    Rule { name: "neg-neg",   math: "−(−x) = x",     lhs: "(ten.neg (ten.neg ?x))", rhs: Rhs::Var("?x") },
    Rule { name: "fold-add",  math: "c1+c2 = c",     lhs: "(ten.add ?a ?b)", rhs: Rhs::Apply(|eg, r, s| fold2(eg, r, s, |a, b| a + b)) },
    Rule { name: "fold-sub",  math: "c1−c2 = c",     lhs: "(ten.sub ?a ?b)", rhs: Rhs::Apply(|eg, r, s| fold2(eg, r, s, |a, b| a - b)) },
    Rule { name: "fold-mul",  math: "c1·c2 = c",     lhs: "(ten.mul ?a ?b)", rhs: Rhs::Apply(|eg, r, s| fold2(eg, r, s, |a, b| a * b)) },
    Rule { name: "fold-div",  math: "c1/c2 = c",     lhs: "(ten.div ?a ?b)", rhs: Rhs::Apply(|eg, r, s| fold2(eg, r, s, |a, b| a / b)) },
    Rule { name: "fold-neg",  math: "−c1 = c",       lhs: "(ten.neg ?a)",    rhs: Rhs::Apply(|eg, r, s| fold1(eg, r, s, |a| -a)) },
    Rule { name: "fold-sqrt", math: "√c1 = c",       lhs: "(ten.sqrt ?a)",   rhs: Rhs::Apply(|eg, r, s| fold1(eg, r, s, f64::sqrt)) },
    Rule { name: "fold-rsqrt", math: "1/√c1 = c",    lhs: "(ten.rsqrt ?a)",  rhs: Rhs::Apply(|eg, r, s| fold1(eg, r, s, |a| 1.0 / a.sqrt())) },
    Rule { name: "mul-const-const", math: "(x·c1)·c2 = x·(c1·c2)", lhs: "(ten.mul (ten.mul ?x ?c1) ?c2)", rhs: Rhs::Apply(mul_consts) },
    Rule { name: "convert-round-trip", math: "convert(convert(x, wider), type(x)) = x", lhs: "(ten.convert ?m)", rhs: Rhs::Apply(|eg, r, s| {
        let m = var(s, "?m");
        let inner = super::node(eg, m, "ten.convert")?;
        let mut s2 = s.clone();
        s2.insert("?x".parse().unwrap(), inner.args[0]);
        convert_round_trip(eg, r, &s2)
    }) },
];
