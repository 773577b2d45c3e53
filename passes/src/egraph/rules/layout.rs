//! Layout: transposes, reshapes and broadcasts composed, cancelled, and moved past scalar
//! scaling so that the ops that do arithmetic meet (a matmul and its scale, a softmax and its
//! input). Each rule removes a layout op or moves a splat multiply toward the root, once.

use super::{
    float_splats, has_node, ints, konst, node, op0, reshape, rule, splat, spreads_leading, transpose, var, Rhs, Rule,
    ALWAYS,
};
use crate::egraph::lang::{attrs_of, nodes, type_of, ENode, EG};
use egg::{Id, Subst};
use ember_ir::dialect::ten::{Class, TenOp};

/// transpose(transpose(x, p), q) = transpose(x, r) with r[i] = p[q[i]] (x when r is the identity).
fn compose_transposes(eg: &mut EG, _: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [(_, outer)] = ns else { return None };
    let inner = node(eg, var(s, "?t"), TenOp::Transpose.name())?;
    let (p, q) = (ints(eg, &inner, "dims"), ints(eg, outer, "dims"));
    let r: Vec<i64> = q.iter().map(|&i| p[i as usize]).collect();
    Some(transpose(eg, inner.args[0], &r))
}

/// reshape(reshape(x)) = reshape(x) to the outer shape (x when that is x's shape).
fn compose_reshapes(eg: &mut EG, root: Id, _: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [_outer, (t, _)] = ns else { return None };
    // The first reshape of the inner class, which need not be the matched one: all of them are
    // the same value.
    let inner = node(eg, *t, TenOp::Reshape.name())?;
    let dims = type_of(eg, root).dims;
    Some(reshape(eg, inner.args[0], &dims))
}

fn same_type_as_root(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let x = var(s, "?x");
    (type_of(eg, x) == type_of(eg, root)).then_some(x)
}

/// layout(x · c) = layout(x) · c for a splat c: the scale moves toward the consumer (a matmul
/// folds it into its result, see `dot-scale`).
fn sink_scale(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [(_, layout)] = ns else { return None };
    // Of the `ten.mul`s in `?m`, the first whose second operand is a splat constant.
    let mul = nodes(eg, var(s, "?m"), TenOp::Mul.name()).into_iter().find(|n| konst(eg, n.args[1]).is_some())?;
    let (x, c) = (mul.args[0], konst(eg, mul.args[1])?);
    let ty = type_of(eg, root);
    let moved = match layout.ten() {
        Some(TenOp::Transpose) => transpose(eg, x, &ints(eg, layout, "dims")),
        _ => reshape(eg, x, &ty.dims),
    };
    let c = splat(eg, c, &ty);
    Some(op0(eg, TenOp::Mul.name(), &ty, vec![moved, c]))
}

/// dot(x · c, y) = dot(x, y) · c and dot(x, y · c) = dot(x, y) · c: scale the (usually smaller)
/// result once instead of an operand.
fn dot_scale(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)], side: usize) -> Option<Id> {
    let [(_, dot), _mul] = ns else { return None };
    let (c, x) = (konst(eg, var(s, "?c"))?, var(s, "?x"));
    let ty = type_of(eg, root);
    let mut args = dot.args.clone();
    args[side] = x;
    let attrs = attrs_of(eg, dot).clone();
    let unscaled = crate::egraph::lang::add(eg, TenOp::DotGeneral.name(), &attrs, &ty, args);
    let c = splat(eg, c, &ty);
    Some(op0(eg, TenOp::Mul.name(), &ty, vec![unscaled, c]))
}

/// transpose(f(x)) = f(transpose(x)) for elementwise unary f: transposes move toward the inputs,
/// where they cancel against other transposes or become strided reads.
fn transpose_through_unary(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [(_, t)] = ns else { return None };
    let u = var(s, "?u");
    let f = eg[u].nodes.iter().find(|n| n.ten().is_some_and(|op| op.class() == Class::Unary)).cloned()?;
    let x = transpose(eg, f.args[0], &ints(eg, t, "dims"));
    let ty = type_of(eg, root);
    let attrs = crate::egraph::lang::attrs_of(eg, &f).clone();
    Some(crate::egraph::lang::add(eg, f.op.as_str(), &attrs, &ty, vec![x]))
}

/// dot(reshape(a), reshape(b)) = reshape(dot(a, b)) when both reshapes only merge the same
/// leading dims into the dot's single batch dim (torch.export flattens heads into the batch
/// for `bmm`). The batched product then reads a and b in their own layouts, e.g. q, k and v as
/// strided head views of one projection, instead of materialized flattened copies.
fn dot_unflatten_batch(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    use ember_ir::Attr;
    let [(_, dot), _, _] = ns else { return None };
    let (a, b) = (var(s, "?a"), var(s, "?b"));
    if ints(eg, dot, "lhs_batch") != [0] || ints(eg, dot, "rhs_batch") != [0] {
        return None;
    }
    let (ta, tb) = (type_of(eg, a), type_of(eg, b));
    let (tl, tr, out) = (type_of(eg, dot.args[0]), type_of(eg, dot.args[1]), type_of(eg, root));
    let j = ta.rank().checked_sub(tl.rank() - 1)?;
    let merges = |t: &ember_ir::TensorType, flat: &ember_ir::TensorType| {
        t.rank() == j + flat.rank() - 1 && t.dims[j..] == flat.dims[1..]
    };
    if j < 2 || !merges(&ta, &tl) || !merges(&tb, &tr) || ta.dims[..j] != tb.dims[..j] {
        return None;
    }
    let mut attrs = attrs_of(eg, dot).clone();
    let batch: Vec<i64> = (0..j as i64).collect();
    let shift = |k: &str| -> Vec<i64> { ints(eg, dot, k).iter().map(|&c| c + j as i64 - 1).collect() };
    let (lc, rc) = (shift("lhs_contract"), shift("rhs_contract"));
    attrs.insert("lhs_batch".into(), Attr::Ints(batch.clone()));
    attrs.insert("rhs_batch".into(), Attr::Ints(batch));
    attrs.insert("lhs_contract".into(), Attr::Ints(lc));
    attrs.insert("rhs_contract".into(), Attr::Ints(rc));
    let dims: Vec<_> = ta.dims[..j].iter().chain(&out.dims[1..]).cloned().collect();
    let ty = ember_ir::TensorType::new(dims, out.dtype);
    let full = crate::egraph::lang::add(eg, TenOp::DotGeneral.name(), &attrs, &ty, vec![a, b]);
    Some(reshape(eg, full, &out.dims))
}

/// broadcast(c) = c' for a splat constant c: a constant of the broadcast's shape.
fn broadcast_const(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let c = konst(eg, var(s, "?c"))?;
    let ty = type_of(eg, root);
    Some(splat(eg, c, &ty))
}

fn dot_scale_lhs(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    dot_scale(eg, root, s, ns, 0)
}

fn dot_scale_rhs(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    dot_scale(eg, root, s, ns, 1)
}

/// broadcast(x) = x when it maps x onto the leading dims with equal types (it copies nothing).
fn broadcast_noop(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [(_, b)] = ns else { return None };
    if spreads_leading(eg, b) {
        same_type_as_root(eg, root, s)
    } else {
        None
    }
}

#[rustfmt::skip]
pub static RULES: &[Rule] = &[
    //   name                   pattern                                                  result                               condition                          math
    rule("transpose-transpose", "(ten.transpose ?t)",                                    Rhs::Build(compose_transposes),      has_node("?t", TenOp::Transpose),"(xᵖ)^q = x^(p∘q)"),
    rule("reshape-reshape",     "(ten.reshape (ten.reshape ?y))",                        Rhs::Build(compose_reshapes),        ALWAYS,                            "reshape(reshape(x, s1), s2) = reshape(x, s2)"),
    rule("reshape-noop",        "(ten.reshape ?x)",                                      Rhs::Apply(same_type_as_root),       ALWAYS,                            "reshape(x, shape(x)) = x"),
    rule("broadcast-noop",      "(ten.broadcast ?x)",                                    Rhs::Build(broadcast_noop),          ALWAYS,                            "broadcast(x, shape(x), id) = x"),
    rule("transpose-scale",     "(ten.transpose ?m)",                                    Rhs::Build(sink_scale),              ALWAYS,                            "(x·c)ᵖ = xᵖ·c"),
    rule("reshape-scale",       "(ten.reshape ?m)",                                      Rhs::Build(sink_scale),              ALWAYS,                            "reshape(x·c) = reshape(x)·c"),
    rule("transpose-unary",     "(ten.transpose ?u)",                                    Rhs::Build(transpose_through_unary), ALWAYS,                            "f(x)ᵖ = f(xᵖ) for elementwise unary f"),
    rule("broadcast-const",     "(ten.broadcast ?c)",                                    Rhs::Apply(broadcast_const),         ALWAYS,                            "broadcast(c) = c (splat constants of any shape)"),
    rule("dot-scale-lhs",       "(ten.dot_general (ten.mul ?x ?c) ?y)",                  Rhs::Build(dot_scale_lhs),           float_splats(&["?c"]),             "(x·c)·y = (x·y)·c"),
    rule("dot-unflatten-batch", "(ten.dot_general (ten.reshape ?a) (ten.reshape ?b))",   Rhs::Build(dot_unflatten_batch),     ALWAYS,                            "reshape(a)·reshape(b) = reshape(a·b) when both merge the same leading batch dims"),
    rule("dot-scale-rhs",       "(ten.dot_general ?y (ten.mul ?x ?c))",                  Rhs::Build(dot_scale_rhs),           float_splats(&["?c"]),             "x·(y·c) = (x·y)·c"),
];
