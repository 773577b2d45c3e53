//! Composites: the decomposed forms torch-to-ten produces for softmax, normalizations,
//! activations and attention, recognized as one `ember.<kind>` node each. The decomposition stays
//! in the same e-class, so the cost model decides: a target that has a kernel for the composite
//! extracts it (one pass over memory), and the optimizer turns it into an `ember.fusion_group`
//! whose body is the decomposition (see ARCHITECTURE.md, the fusion-group contract).
//!
//! A builder gets the match's nodes in the order its pattern names them (`matched`) and
//! destructures them, so the pattern is written once.

use super::{
    all_of, composite, first, is_splat, konst, last_dim, near_splat, node, pick, reduces_last, rule, same,
    spreads_last, spreads_leading, var, Rhs, Rule, ALWAYS,
};
use crate::egraph::lang::{type_of, ENode, EG};
use egg::{Id, Subst};
use ember_ir::dialect::ten::TenOp;
use ember_ir::Attr;

fn rank(eg: &EG, id: Id) -> usize {
    type_of(eg, id).rank()
}

/// softmax(x) = exp(x − max(x)) / Σ exp(x − max(x)), both reductions over the last dim.
fn softmax(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [_div, (e, _), _sub, (_, bmax), (_, rmax), (_, bsum), (_, rsum)] = ns else { return None };
    let x = var(s, "?x");
    let r = rank(eg, x);
    let ok = eg.find(var(s, "?e")) == *e
        && spreads_leading(eg, bmax)
        && spreads_leading(eg, bsum)
        && reduces_last(eg, rmax, r)
        && reduces_last(eg, rsum, r);
    ok.then(|| composite(eg, root, "ember.softmax", vec![("dim", Attr::Int(r as i64 - 1))], vec![x]))
}

/// (x − mean(x)) · rsqrt(mean((x − mean(x))²) + ε) over the last dim, mean = Σ/n.
fn layer_norm(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [_mul, (d, _), (_, bmean), _mean, (_, red), (_, b), _rsqrt, _add, _var, (_, red2), _square] = ns else {
        return None;
    };
    let (x, n_id) = (var(s, "?x"), var(s, "?n"));
    let tx = type_of(eg, x);
    let n = last_dim(&tx)? as f64;
    let eps = konst(eg, var(s, "?eps"))?;
    let ok = eg.find(var(s, "?d1")) == *d
        && konst(eg, n_id) == Some(n)
        && spreads_leading(eg, b)
        && spreads_leading(eg, bmean)
        && reduces_last(eg, red, tx.rank())
        && reduces_last(eg, red2, tx.rank());
    ok.then(|| composite(eg, root, "ember.layer_norm", vec![("eps", Attr::Float(eps))], vec![x]))
}

/// layer_norm(x)·w + b with w, b over the last dim.
fn layer_norm_affine(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [_add, _mul, (_, ln), (_, bw), (_, bb)] = ns else { return None };
    let (x, w, b) = (var(s, "?x"), var(s, "?w"), var(s, "?b"));
    let r = rank(eg, x);
    let ok = rank(eg, w) == 1 && rank(eg, b) == 1 && spreads_last(eg, bw, r) && spreads_last(eg, bb, r);
    let eps = super::attr(eg, ln, "eps")?;
    ok.then(|| composite(eg, root, "ember.layer_norm", vec![("eps", eps)], vec![x, w, b]))
}

/// x · rsqrt(Σx²/n + ε) over the last dim (with or without a keepdim reshape of the mean).
fn rms_norm(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let (x, n_id) = (var(s, "?x"), var(s, "?n"));
    let tx = type_of(eg, x);
    let n = last_dim(&tx)? as f64;
    let eps = konst(eg, var(s, "?eps"))?;
    let (b, red) = (first(ns, TenOp::Broadcast.name())?, first(ns, TenOp::Reduce.name())?);
    let ok = konst(eg, n_id) == Some(n) && spreads_leading(eg, b) && reduces_last(eg, red, tx.rank());
    ok.then(|| composite(eg, root, "ember.rms_norm", vec![("eps", Attr::Float(eps))], vec![x]))
}

/// rms_norm(x) · w or w · rms_norm(x) with w over the last dim. The pattern is `?a · ?b` (one
/// rule for both orders), so which operand is which is read here.
fn rms_norm_weight(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    let (a, b) = (var(s, "?a"), var(s, "?b"));
    let (bc, rn) = if node(eg, a, "ember.rms_norm").is_some() { (b, a) } else { (a, b) };
    let rn = pick(eg, rn, "ember.rms_norm", &[None])?;
    let x = rn.args[0];
    let bw = pick(eg, bc, TenOp::Broadcast.name(), &[None])?;
    let w = bw.args[0];
    let ok = rank(eg, w) == 1 && spreads_last(eg, &bw, rank(eg, x));
    let eps = super::attr(eg, &rn, "eps")?;
    ok.then(|| composite(eg, root, "ember.rms_norm", vec![("eps", eps)], vec![x, w]))
}

fn gelu_tanh(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    Some(composite(eg, root, "ember.gelu", vec![("approximate", Attr::Str("tanh".into()))], vec![var(s, "?x")]))
}

fn gelu_erf(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    Some(composite(eg, root, "ember.gelu", vec![("approximate", Attr::Str("none".into()))], vec![var(s, "?x")]))
}

fn silu(eg: &mut EG, root: Id, s: &Subst) -> Option<Id> {
    Some(composite(eg, root, "ember.silu", vec![], vec![var(s, "?x")]))
}

/// √(2/π), as `(2.0 / PI).sqrt()` rounds (a `const` cannot call `sqrt`).
const SQRT_2_OVER_PI: f64 = 0.7978845608028654;

/// softmax(q·kᵀ·c [+ mask])·v with batch dims leading: the dot products contract q's and k's
/// last dims, then the softmax's last dim with v's second-to-last. torch.export's SDPA
/// decomposition runs the matmuls on flattened batch dims and the mask and softmax on the
/// unflattened ones (`reshape`s in between, which keep the last two dims): the rule looks
/// through them and builds the composite on the matmuls' rank, with the mask reshaped to it.
/// `k` enters as `[..., Tk, D]` (the contract's layout), so a pre-transposed k is transposed
/// back. Everything is read from the matched nodes; the softmax's `safe` (rows that are all
/// -inf give 0, torch's `_safe_softmax`) carries over.
fn attention(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [(_, outer)] = ns else { return None };
    let (p, v) = (var(s, "?p"), var(s, "?v"));
    let through_reshape = |eg: &EG, c: Id, op: &str| -> Option<(ENode, bool)> {
        if let Some(n) = pick(eg, c, op, &[None]).or_else(|| pick(eg, c, op, &[None, None])) {
            return Some((n, false));
        }
        let r = pick(eg, c, TenOp::Reshape.name(), &[None])?;
        let n = pick(eg, r.args[0], op, &[None]).or_else(|| pick(eg, r.args[0], op, &[None, None]))?;
        Some((n, true))
    };
    let (sm, reshaped) = through_reshape(eg, p, "ember.softmax")?;
    let mut scores = sm.args[0];
    let mut mask = None;
    if let Some(add) = pick(eg, scores, TenOp::Add.name(), &[None, None]) {
        mask = Some(add.args[1]);
        scores = add.args[0];
    }
    // Every way to read the scores as scale · (q·kᵀ) (the scale rules put each splat factor in
    // several places); the one whose q and k carry no splat factor themselves wins, so the
    // composite gets the whole scale and unscaled operands.
    let scaled = |eg: &EG, c: Id| {
        eg[c].nodes.iter().any(|n| n.ten() == Some(TenOp::Mul) && n.args.len() == 2 && konst(eg, n.args[1]).is_some())
    };
    let mut forms: Vec<(f64, Id)> = vec![(1.0, scores)];
    for n in eg[scores].nodes.iter().filter(|n| n.ten() == Some(TenOp::Mul) && n.args.len() == 2) {
        if let Some(c) = konst(eg, n.args[1]) {
            forms.push((c, n.args[0]));
        }
    }
    let mut best: Option<(usize, f64, ENode)> = None;
    for (c, sc) in forms {
        let Some((inner, inner_reshaped)) = through_reshape(eg, sc, TenOp::DotGeneral.name()) else { continue };
        if inner.args.len() != 2 || reshaped != inner_reshaped {
            continue;
        }
        let bad = inner.args.iter().filter(|&&a| scaled(eg, a)).count();
        if best.as_ref().is_none_or(|(b, _, _)| bad < *b) {
            best = Some((bad, c, inner));
        }
    }
    let (_, scale, inner) = best?;
    let (q, kt) = (inner.args[0], inner.args[1]);
    let r = rank(eg, q);
    let pt = type_of(eg, p);
    // The scores the composite sees are the matmul's: same shape as the softmax's input seen
    // through the reshape, whose last two dims it keeps.
    let st = type_of(eg, inner.args[0]);
    let inner_ty = eg.analysis.types[&inner.ty].clone();
    if r < 2 || rank(eg, v) != r || rank(eg, kt) != r || inner_ty != pt || st.dtype != pt.dtype {
        return None;
    }
    let batch: Vec<i64> = (0..r as i64 - 2).collect();
    let last = r as i64 - 1;
    let dims = |n: &ENode, k: &str| super::ints(eg, n, k);
    let std_batch = dims(&inner, "lhs_batch") == batch
        && dims(&inner, "rhs_batch") == batch
        && dims(outer, "lhs_batch") == batch
        && dims(outer, "rhs_batch") == batch;
    let outer_ok = dims(outer, "lhs_contract") == [last] && dims(outer, "rhs_contract") == [last - 1];
    let pre_transposed = match (dims(&inner, "lhs_contract").as_slice(), dims(&inner, "rhs_contract").as_slice()) {
        ([l], [rc]) if *l == last && *rc == last => false,
        ([l], [rc]) if *l == last && *rc == last - 1 => true,
        _ => return None,
    };
    if !(std_batch && outer_ok) {
        return None;
    }
    let k = if pre_transposed {
        let mut perm = batch.clone();
        perm.extend([last, last - 1]);
        super::transpose(eg, kt, &perm)
    } else {
        kt
    };
    let mut args = vec![q, k, v];
    if let Some(m) = mask {
        let mt = type_of(eg, m);
        let m = if mt.dims == pt.dims { m } else { super::reshape(eg, m, &pt.dims) };
        args.push(m);
    }
    let mut attrs = vec![("scale", Attr::Float(scale))];
    if let Some(safe) = super::attr(eg, &sm, "safe") {
        attrs.push(("safe", safe));
    }
    Some(composite(eg, root, "ember.attention", attrs, args))
}

/// select(no row element > -inf, 0, softmax(x)) = safe_softmax(x): torch's `_safe_softmax`,
/// which maps rows that are entirely -inf (fully masked) to 0 instead of NaN.
fn safe_softmax(eg: &mut EG, root: Id, s: &Subst, ns: &[(Id, ENode)]) -> Option<Id> {
    let [_select, (_, b), _not1, _reshape, (_, any), _not2, _compare] = ns else { return None };
    let x = var(s, "?x");
    let sm = pick(eg, var(s, "?sm"), "ember.softmax", &[Some(x)])?;
    if super::attr(eg, &sm, "safe").is_some() {
        return None;
    }
    let r = rank(eg, x);
    let ok = reduces_last(eg, any, r) && super::ints(eg, b, "dims") == (0..r as i64).collect::<Vec<_>>();
    let dim = super::attr(eg, &sm, "dim")?;
    ok.then(|| composite(eg, root, "ember.softmax", vec![("dim", dim), ("safe", Attr::Bool(true))], vec![x]))
}

#[rustfmt::skip]
pub static RULES: &[Rule] = &[
    //   name                 pattern                                                                                                                                                                          result                         condition                                                                                                                                                                  math
    rule("softmax",           "(ten.div (ten.exp (ten.sub ?x (ten.broadcast (ten.reduce{kind=max} ?x1)))) (ten.broadcast (ten.reduce{kind=sum} ?e)))",                                                      Rhs::Build(softmax),           same(&["?x", "?x1"]),                                                                                                                                                      "exp(x − max x) / Σ exp(x − max x) = softmax(x)"),
    rule("layer-norm",        "(ten.mul (ten.sub ?x (ten.broadcast (ten.div (ten.reduce{kind=sum} ?x1) ?n))) (ten.broadcast (ten.rsqrt (ten.add (ten.div (ten.reduce{kind=sum} (ten.mul ?d1 ?d2)) ?n1) ?eps))))", Rhs::Build(layer_norm),        all_of(&[same(&["?x", "?x1"]), same(&["?n", "?n1"]), same(&["?d1", "?d2"])]),                                                                                            "(x − μ)·rsqrt(σ² + ε) = layer_norm(x), μ = Σx/n, σ² = Σ(x − μ)²/n"),
    rule("layer-norm-affine", "(ten.add (ten.mul (ember.layer_norm ?x) (ten.broadcast ?w)) (ten.broadcast ?b))",                                                                                             Rhs::Build(layer_norm_affine), ALWAYS,                                                                                                                                                                    "layer_norm(x)·w + b = layer_norm(x, w, b)"),
    rule("rms-norm",          "(ten.mul ?x (ten.broadcast (ten.rsqrt (ten.add (ten.div (ten.reduce{kind=sum} (ten.mul ?x1 ?x2)) ?n) ?eps))))",                                                               Rhs::Build(rms_norm),          same(&["?x", "?x1", "?x2"]),                                                                                                                                               "x·rsqrt(Σx²/n + ε) = rms_norm(x)"),
    rule("rms-norm-keepdim",  "(ten.mul ?x (ten.broadcast (ten.rsqrt (ten.add (ten.reshape (ten.div (ten.reduce{kind=sum} (ten.mul ?x1 ?x2)) ?n)) ?eps))))",                                                 Rhs::Build(rms_norm),          same(&["?x", "?x1", "?x2"]),                                                                                                                                               "x·rsqrt(reshape(Σx²/n) + ε) = rms_norm(x)"),
    rule("rms-norm-weight",   "(ten.mul ?a ?b)",                                                                                                                                                               Rhs::Apply(rms_norm_weight),   ALWAYS,                                                                                                                                                                    "rms_norm(x)·w = w·rms_norm(x) = rms_norm(x, w)"),
    rule("gelu-tanh",         "(ten.mul (ten.mul ?x ?half) (ten.add (ten.tanh (ten.mul (ten.add ?x1 (ten.mul (ten.mul (ten.mul ?x2 ?x3) ?x4) ?k)) ?s)) ?one))",                                              Rhs::Apply(gelu_tanh),         all_of(&[same(&["?x", "?x1", "?x2", "?x3", "?x4"]), near_splat("?half", 0.5), near_splat("?one", 1.0), near_splat("?k", 0.044715), near_splat("?s", SQRT_2_OVER_PI)]), "½x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) = gelu_tanh(x)"),
    rule("gelu-erf",          "(ten.mul (ten.mul ?x ?half) (ten.add (ten.erf (ten.mul ?x1 ?r)) ?one))",                                                                                                      Rhs::Apply(gelu_erf),          all_of(&[same(&["?x", "?x1"]), near_splat("?half", 0.5), near_splat("?one", 1.0), near_splat("?r", std::f64::consts::FRAC_1_SQRT_2)]),                                  "½x·(1 + erf(x/√2)) = gelu(x)"),
    rule("silu",              "(ten.mul ?x (ten.sigmoid ?x1))",                                                                                                                                                Rhs::Apply(silu),              same(&["?x", "?x1"]),                                                                                                                                                      "x·σ(x) = silu(x)"),
    rule("silu-swapped",      "(ten.mul (ten.sigmoid ?x1) ?x)",                                                                                                                                                Rhs::Apply(silu),              same(&["?x", "?x1"]),                                                                                                                                                      "σ(x)·x = silu(x)"),
    rule("safe-softmax",      "(ten.select (ten.broadcast (ten.not (ten.reshape (ten.reduce{kind=or} (ten.not (ten.compare{direction=EQ} ?x ?ninf)))))) ?zero ?sm)",                                         Rhs::Build(safe_softmax),      all_of(&[is_splat("?zero", 0.0), is_splat("?ninf", f64::NEG_INFINITY)]),                                                                                                   "select(all(x = −inf), 0, softmax(x)) = safe_softmax(x) (rows)"),
    rule("attention",         "(ten.dot_general ?p ?v)",                                                                                                                                                       Rhs::Build(attention),         ALWAYS,                                                                                                                                                                    "softmax(q·kᵀ·c [+ m])·v = attention(q, k, v[, m]; c), also through batch-flattening reshapes"),
];
