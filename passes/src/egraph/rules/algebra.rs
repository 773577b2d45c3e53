//! Algebra: identities and constant folding. No commutativity or associativity rules: each rule
//! here removes an op or replaces ops by a constant, so saturation cannot blow up. `c` is a
//! splat constant; folding is limited to float tensors, whose arithmetic the folded value
//! reproduces (integer division and overflow are left to run time).

use super::{float_splats, has_node, is_splat, konst, node, op0, rule, splat, var, Rhs, Rule, ALWAYS};
use crate::egraph::lang::{type_of, EG};
use egg::{Id, Subst};
use ember_ir::dialect::ten::TenOp;
use std::ops::{Add, Div, Mul, Neg, Sub};

fn rsqrt(a: f64) -> f64 {
    1.0 / a.sqrt()
}

/// (x · c1) · c2 = x · (c1·c2), with the product rounded once (exact when either is a power of 2).
fn mul_consts(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let ty = type_of(eg, root);
    let (a, b) = (konst(eg, var(s, "?c1"))?, konst(eg, var(s, "?c2"))?);
    if !ty.dtype.is_float() {
        return None;
    }
    let c = splat(eg, a * b, &ty);
    Some(op0(eg, TenOp::Mul.name(), &ty, vec![var(s, "?x"), c]))
}

/// convert(convert(x, wide), dtype(x)) = x when the inner conversion loses nothing.
fn convert_round_trip(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    // The first inner convert of `?m`'s class is the one read (a pattern `(ten.convert
    // (ten.convert ?x))` would try each).
    let x = node(eg, var(s, "?m"), TenOp::Convert.name())?.args[0];
    let (tx, mid, out) = (type_of(eg, x), type_of(eg, var(s, "?m")), type_of(eg, root));
    let widening = (tx.dtype.is_float() && mid.dtype.is_float() && mid.dtype.byte_size() > tx.dtype.byte_size())
        || (tx.dtype.is_int() && mid.dtype.is_int() && mid.dtype.byte_size() > tx.dtype.byte_size());
    (widening && tx == out).then_some(x)
}

#[rustfmt::skip]
pub static RULES: &[Rule] = &[
    //   name                  pattern                            result                           condition                        math
    rule("mul-one",            "(ten.mul ?x ?c)",                 Rhs::Var("?x"),                  is_splat("?c", 1.0),             "x·1 = 1·x = x"),
    rule("one-mul",            "(ten.mul ?c ?x)",                 Rhs::Var("?x"),                  is_splat("?c", 1.0),             "1·x = x"),
    rule("add-zero",           "(ten.add ?x ?c)",                 Rhs::Var("?x"),                  is_splat("?c", 0.0),             "x+0 = x"),
    rule("zero-add",           "(ten.add ?c ?x)",                 Rhs::Var("?x"),                  is_splat("?c", 0.0),             "0+x = x"),
    rule("sub-zero",           "(ten.sub ?x ?c)",                 Rhs::Var("?x"),                  is_splat("?c", 0.0),             "x−0 = x"),
    rule("div-one",            "(ten.div ?x ?c)",                 Rhs::Var("?x"),                  is_splat("?c", 1.0),             "x/1 = x"),
    rule("neg-neg",            "(ten.neg (ten.neg ?x))",          Rhs::Var("?x"),                  ALWAYS,                          "−(−x) = x"),
    rule("fold-add",           "(ten.add ?a ?b)",                 Rhs::Fold2(f64::add),            float_splats(&["?a", "?b"]),     "c1+c2 = c"),
    rule("fold-sub",           "(ten.sub ?a ?b)",                 Rhs::Fold2(f64::sub),            float_splats(&["?a", "?b"]),     "c1−c2 = c"),
    rule("fold-mul",           "(ten.mul ?a ?b)",                 Rhs::Fold2(f64::mul),            float_splats(&["?a", "?b"]),     "c1·c2 = c"),
    rule("fold-div",           "(ten.div ?a ?b)",                 Rhs::Fold2(f64::div),            float_splats(&["?a", "?b"]),     "c1/c2 = c"),
    rule("fold-neg",           "(ten.neg ?a)",                    Rhs::Fold1(f64::neg),            float_splats(&["?a"]),           "−c1 = c"),
    rule("fold-sqrt",          "(ten.sqrt ?a)",                   Rhs::Fold1(f64::sqrt),           float_splats(&["?a"]),           "√c1 = c"),
    rule("fold-rsqrt",         "(ten.rsqrt ?a)",                  Rhs::Fold1(rsqrt),               float_splats(&["?a"]),           "1/√c1 = c"),
    rule("mul-const-const",    "(ten.mul (ten.mul ?x ?c1) ?c2)",  Rhs::Apply(mul_consts),          float_splats(&["?c1", "?c2"]),   "(x·c1)·c2 = x·(c1·c2)"),
    rule("convert-round-trip", "(ten.convert ?m)",                Rhs::Apply(convert_round_trip),  has_node("?m", TenOp::Convert),"convert(convert(x, wider), type(x)) = x"),
];
