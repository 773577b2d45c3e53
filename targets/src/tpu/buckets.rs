//! Symbolic dims as padded buckets.
//!
//! XLA's CPU client cannot take bounded dynamic arguments (`tensor<?x4xf32, #stablehlo.bounds<8, ?>>`
//! at `@main`'s boundary compiles to a `PadToStatic` custom call that the CPU backend does not
//! implement), so a module with symbolic dims is compiled for a few sizes of each symbol (its
//! buckets) into one artifact. The runner picks the smallest bucket that fits, pads the inputs at
//! the end of every symbolic dim and slices the outputs back.
//!
//! That is only sound when no value at a real position depends on a padded one. Reductions and
//! contractions over a symbolic dim are made exact by [`mask_padding`]: their operand's padding
//! becomes the reduction's neutral element, against the symbol's true size, which the runner
//! passes in an `ember.size` argument. [`check_padding`] refuses (naming the op and its line) the
//! ones it could not mask, reshapes
//! that put a symbolic dim after another dim of its group (the valid region is then no longer a
//! prefix of it), slices,
//! concatenations, pads, reversals, cumulative sums, windows and gathers along one, and symbolic
//! sizes used as values. Everything else (elementwise ops, broadcasts, transposes, contractions
//! over static dims, reductions over static dims) keeps each row's values to itself.

use ember_ir::attr::Attr;
use ember_ir::dialect::ten::{Form, OtherOp, TenOp};
use ember_ir::module::{Attrs, Module, OpId, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::{DType, TensorType, Type};
use std::collections::BTreeMap;

/// The `@main` argument attribute naming the symbol whose true size the argument (`tensor<i64>`)
/// carries in a padded bucket.
pub const SIZE_ATTR: &str = "ember.size";
/// Marks a reduction or contraction whose padding [`mask_padding`] replaced.
const MASKED: &str = "ember.masked";

/// Dims of an operand to mask: (dim, (symbol, factor) when the size is a symbol times a
/// constant).
type MaskDims = Vec<(i64, Option<(String, i64)>)>;

/// `s` or `c * s`: a dim whose padded layout keeps its true elements first (the reshapes
/// [`check_padding`] allows merge a symbolic dim only with the static dims after it).
fn scaled_symbol(e: &SymExpr) -> Option<(String, i64)> {
    match e {
        SymExpr::Sym(s) => Some((s.clone(), 1)),
        SymExpr::Mul(f) => match f.as_slice() {
            [SymExpr::Const(c), SymExpr::Sym(s)] if *c > 0 => Some((s.clone(), *c)),
            _ => None,
        },
        _ => None,
    }
}

/// The element a reduction of `kind` ignores, in `dt` (`None`: no such value, e.g. u64's max).
fn neutral(kind: &str, dt: DType) -> Option<Attr> {
    let high = match kind {
        "sum" | "or" => return Some(if dt.is_float() { Attr::Float(0.0) } else { Attr::Int(0) }),
        "prod" | "and" => return Some(if dt.is_float() { Attr::Float(1.0) } else { Attr::Int(1) }),
        "max" | "argmax" => false,
        "min" | "argmin" => true,
        _ => return None,
    };
    if dt.is_float() {
        return Some(Attr::Float(if high { f64::INFINITY } else { f64::NEG_INFINITY }));
    }
    let (lo, hi) = super::stablehlo::lit::int_range(dt);
    i64::try_from(if high { hi } else { lo }).ok().map(Attr::Int)
}

/// Makes reductions (every kind), contractions and combining scatters (sum, prod, max, min: an
/// embedding's gradient) over symbolic dims exact in padded buckets:
/// the operand's elements past the symbol's true size along each such dim become the
/// reduction's neutral element (0 for sums and contractions, both of whose operands are
/// masked, so a padded inf or NaN meets no 0; -inf for max and argmax; ...). The true size is
/// a new `@main` argument per symbol (`tensor<i64>`, attribute [`SIZE_ATTR`]) that the runner
/// fills; a count taken as a sum of ones over the dim (mean, var) is then the true count too.
/// A dim of size `c * s` (a symbolic batch merged with the static dims after it: cross-entropy's
/// `batch * seq` rows) keeps its true elements first too and is masked against `c` times the
/// size; dims of other symbolic expressions are left for [`check_padding`] to refuse.
pub fn mask_padding(m: &mut Module, f: OpId) {
    let entry = m.entry(f);
    let mut ops = Vec::new();
    m.walk(entry, &mut |op| ops.push(op));
    let mut sizes: BTreeMap<String, Value> = BTreeMap::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        if let Some(s) = m.arg_attrs(f, i).and_then(|at| at.get(SIZE_ATTR)).and_then(|a| a.as_str()) {
            sizes.insert(s.to_string(), a);
        }
    }
    for op in ops {
        let d = m.op(op);
        let ints = |k: &str| d.attrs.get(k).and_then(Attr::as_ints).map(|v| v.to_vec()).unwrap_or_default();
        // (operand index, dims to mask, reduction kind)
        let masks: Vec<(usize, Vec<i64>, String)> = match d.ten() {
            Some(TenOp::Reduce) => {
                let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or_default().to_string();
                vec![(0, ints("dims"), kind)]
            }
            Some(TenOp::DotGeneral) => {
                vec![(0, ints("lhs_contract"), "sum".into()), (1, ints("rhs_contract"), "sum".into())]
            }
            // A combining scatter: padded updates become the kind's neutral element, so
            // whichever element their (padded) index names is unchanged.
            Some(TenOp::Scatter) if sym_dims(m, d.operands[0]).iter().all(|&s| !s) => {
                let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or_default().to_string();
                let rank = m.ty(d.operands[2]).tensor().map_or(0, |t| t.rank()) as i64;
                vec![(2, (0..rank).collect(), kind)]
            }
            _ => continue,
        };
        let symbolic = |m: &Module, v: Value, dims: &[i64]| -> MaskDims {
            let t = m.ty(v).tensor().cloned().unwrap_or_else(|| TensorType::new(vec![], DType::F32));
            dims.iter()
                .filter(|&&k| t.dims.get(k as usize).is_some_and(|e| e.as_const().is_none()))
                .map(|&k| (k, scaled_symbol(&t.dims[k as usize])))
                .collect()
        };
        let todo: Vec<(usize, MaskDims, String)> =
            masks.into_iter().map(|(i, dims, kind)| (i, symbolic(m, d.operands[i], &dims), kind)).collect();
        if todo.iter().all(|(_, dims, _)| dims.is_empty()) {
            continue;
        }
        let dtype_of = |m: &Module, v: Value| m.ty(v).tensor().map(|t| t.dtype).unwrap_or(DType::F32);
        let all_plain = todo.iter().all(|(_, dims, _)| dims.iter().all(|(_, s)| s.is_some()));
        let has_neutral = todo.iter().all(|(i, _, kind)| neutral(kind, dtype_of(m, m.op(op).operands[*i])).is_some());
        if !all_plain || !has_neutral {
            continue;
        }
        let block = m.op(op).parent.expect("a walked op is placed");
        let loc = m.op(op).loc.clone();
        let mut pos = m.block(block).ops.iter().position(|&o| o == op).expect("op in its block");
        let mut emit = |m: &mut Module, name: TenOp, operands: Vec<Value>, ty: TensorType, attrs: Vec<(&str, Attr)>| {
            let attrs: Attrs = attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let o = m.create_op(name.name(), operands, vec![Type::Tensor(ty)], attrs, vec![], loc.clone());
            m.insert_op(block, pos, o);
            pos += 1;
            m.result(o, 0)
        };
        for (i, dims, kind) in todo {
            if dims.is_empty() {
                continue;
            }
            let x = m.op(op).operands[i];
            let xt = m.ty(x).tensor().cloned().expect("a tensor operand");
            let shape = Attr::dims(xt.dims.clone());
            let bool_t = TensorType::new(xt.dims.clone(), DType::Bool);
            let i64_t = TensorType::new(xt.dims.clone(), DType::I64);
            let mut keep: Option<Value> = None;
            for (k, sym) in dims {
                let (sym, factor) = sym.expect("checked above");
                let mut size = *sizes.entry(sym.clone()).or_insert_with(|| {
                    let attrs: Attrs = [(SIZE_ATTR.to_string(), Attr::Str(sym.clone()))].into_iter().collect();
                    m.add_arg(f, Type::Tensor(TensorType::new(vec![], DType::I64)), attrs)
                });
                if factor != 1 {
                    let scalar = TensorType::new(vec![], DType::I64);
                    let c = emit(
                        m,
                        TenOp::Constant,
                        vec![],
                        scalar.clone(),
                        vec![
                            ("value", Attr::Int(factor)),
                            ("shape", Attr::Ints(vec![])),
                            ("dtype", Attr::DType(DType::I64)),
                        ],
                    );
                    size = emit(m, TenOp::Mul, vec![size, c], scalar, vec![]);
                }
                let io = emit(
                    m,
                    TenOp::Iota,
                    vec![],
                    i64_t.clone(),
                    vec![("shape", shape.clone()), ("dim", Attr::Int(k)), ("dtype", Attr::DType(DType::I64))],
                );
                let n = emit(
                    m,
                    TenOp::Broadcast,
                    vec![size],
                    i64_t.clone(),
                    vec![("shape", shape.clone()), ("dims", Attr::Ints(vec![]))],
                );
                let lt =
                    emit(m, TenOp::Compare, vec![io, n], bool_t.clone(), vec![("direction", Attr::Str("LT".into()))]);
                keep = Some(match keep {
                    None => lt,
                    Some(prev) => emit(m, TenOp::And, vec![prev, lt], bool_t.clone(), vec![]),
                });
            }
            let value = neutral(&kind, xt.dtype).expect("checked above");
            let fill = emit(
                m,
                TenOp::Constant,
                vec![],
                xt.clone(),
                vec![("value", value), ("shape", shape.clone()), ("dtype", Attr::DType(xt.dtype))],
            );
            let masked = emit(m, TenOp::Select, vec![keep.expect("a masked dim"), x, fill], xt.clone(), vec![]);
            m.op_mut(op).operands[i] = masked;
        }
        m.op_mut(op).attrs.insert(MASKED.into(), Attr::Bool(true));
    }
}

/// At most this many buckets per symbol, and in all.
pub const MAX_PER_SYMBOL: usize = 8;
pub const MAX_BUCKETS: usize = 16;

fn dims_symbolic(t: &TensorType) -> Vec<bool> {
    t.dims.iter().map(|d| d.as_const().is_none()).collect()
}

fn sym_dims(m: &Module, v: Value) -> Vec<bool> {
    m.ty(v).tensor().map(dims_symbolic).unwrap_or_default()
}

/// The symbols used in `@main`'s types.
pub fn used_symbols(m: &Module, f: OpId) -> Vec<String> {
    let mut syms = Vec::new();
    let mut add = |v: Value| {
        if let Some(t) = m.ty(v).tensor() {
            for d in &t.dims {
                d.symbols(&mut syms);
            }
        }
    };
    let entry = m.entry(f);
    m.block(entry).args.iter().for_each(|&a| add(a));
    m.walk(entry, &mut |op| m.op(op).results.iter().for_each(|&r| add(r)));
    syms.sort();
    syms.dedup();
    syms
}

/// The sizes compiled for each symbol: powers of two from the smallest one ≥ min, and max;
/// thinned to at most [`MAX_PER_SYMBOL`] (keeping max) when the range is wide. The bucket list is
/// their product, smallest first.
pub fn choose(m: &Module, f: OpId) -> Result<Vec<BTreeMap<String, i64>>, String> {
    let bounds = m.symbol_bounds();
    let mut lists: Vec<(String, Vec<i64>)> = Vec::new();
    for s in used_symbols(m, f) {
        let &(lo, hi) = bounds.get(&s).ok_or_else(|| {
            format!("symbol `{s}` has no bounds (`ember.symbols`): the tpu target compiles padded buckets up to each symbol's maximum; export with `Dim(..., max=N)`")
        })?;
        if hi < lo || hi <= 0 {
            return Err(format!("symbol `{s}` has bounds [{lo}, {hi}]; the tpu target needs a finite maximum ≥ 1"));
        }
        let mut sizes = Vec::new();
        let mut p = 1i64;
        while p < hi {
            if p >= lo {
                sizes.push(p);
            }
            p *= 2;
        }
        sizes.push(hi);
        while sizes.len() > MAX_PER_SYMBOL {
            // Drop every other size below the maximum, so the spacing doubles.
            let last = sizes.len() - 1;
            sizes = sizes.iter().enumerate().filter(|(i, _)| *i == last || i % 2 == 1).map(|(_, &x)| x).collect();
        }
        lists.push((s, sizes));
    }
    let mut out: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new()];
    for (s, sizes) in &lists {
        out = out
            .into_iter()
            .flat_map(|env| {
                sizes.iter().map(move |&v| {
                    let mut e = env.clone();
                    e.insert(s.clone(), v);
                    e
                })
            })
            .collect();
    }
    if out.len() > MAX_BUCKETS {
        return Err(format!(
            "{} symbols with {} padded buckets in all (more than {MAX_BUCKETS}); narrow the dynamic dims' ranges or export with static shapes",
            lists.len(),
            out.len()
        ));
    }
    Ok(out)
}

/// A bucket's symbol values and the module specialized to them.
pub type Specialized = (BTreeMap<String, i64>, Module);

/// The padded buckets of a module with symbolic dims, smallest first: each bucket's symbol values
/// and the module specialized to them, after [`check_inputs`] and [`check_padding`]. Every target
/// that needs static shapes compiles these.
pub fn specialized(m: &Module, f: OpId) -> Result<Vec<Specialized>, String> {
    check_inputs(m, f)?;
    check_padding(m, f)?;
    choose(m, f)?
        .into_iter()
        .map(|env| {
            let s = specialize(m, &env)?;
            Ok((env, s))
        })
        .collect()
}

/// Every symbol is the whole size of some user-input dim (so the runner can read its value), and
/// weights are static.
pub fn check_inputs(m: &Module, f: OpId) -> Result<(), String> {
    let entry = m.entry(f);
    let mut bare = Vec::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let attrs = m.arg_attrs(f, i);
        let Some(t) = m.ty(a).tensor() else { continue };
        if attrs.and_then(|a| a.get("ember.input")).is_some() {
            bare.extend(t.dims.iter().filter_map(|d| match d {
                SymExpr::Sym(s) => Some(s.clone()),
                _ => None,
            }));
        } else if t.dims.iter().any(|d| d.as_const().is_none()) {
            return Err(format!(
                "weight argument {i} has symbolic dims {:?}; the tpu target needs static weights",
                t.dim_strings()
            ));
        }
    }
    for s in used_symbols(m, f) {
        if !bare.contains(&s) {
            return Err(format!("symbol `{s}` is not the size of any input dim, so its value cannot be read from the inputs at run time"));
        }
    }
    Ok(())
}

fn at(m: &Module, op: OpId) -> String {
    let s = m.op(op).loc.describe();
    if s.is_empty() {
        String::new()
    } else {
        format!(" at {s}")
    }
}

/// Refuses ops for which padding a symbolic dim could change values at real positions.
pub fn check_padding(m: &Module, f: OpId) -> Result<(), String> {
    let mut err: Option<String> = None;
    let entry = m.entry(f);
    m.walk(entry, &mut |op| {
        if err.is_none() {
            err = check_op(m, op).err().map(|why| {
                format!(
                    "`{}`{}: {why}. The tpu target runs symbolic dims as zero-padded buckets (XLA's CPU client cannot run bounded dynamic shapes), which is only exact when no value mixes positions along a symbolic dim; export this dim as static, or compile for cpu",
                    m.op(op).name,
                    at(m, op)
                )
            });
        }
    });
    err.map_or(Ok(()), Err)
}

fn check_op(m: &Module, op: OpId) -> Result<(), String> {
    let d = m.op(op);
    let ints = |k: &str| d.attrs.get(k).and_then(Attr::as_ints).map(|v| v.to_vec()).unwrap_or_default();
    let Some(&x) = d.operands.first() else { return Ok(()) };
    let xs = sym_dims(m, x);
    let size = |v: Value, i: usize| m.ty(v).tensor().map(|t| t.dims[i].to_string()).unwrap_or_default();
    let on = |dims: &[i64], what: &str| -> Result<(), String> {
        match dims.iter().find(|&&i| xs.get(i as usize).copied().unwrap_or(false)) {
            Some(&i) => Err(format!("it {what} dim {i}, of symbolic size `{}`", size(x, i as usize))),
            None => Ok(()),
        }
    };
    for (k, a) in &d.attrs {
        if matches!(a, Attr::Dims(_)) && k != "shape" {
            return Err(format!("its attribute `{k}` = {a} uses a symbolic size as a value"));
        }
    }
    let Some(Form::Other(op)) = d.ten().map(TenOp::form) else { return Ok(()) };
    match op {
        // The emitter refuses these by name, padded or not.
        OtherOp::Cholesky
        | OtherOp::Eigh
        | OtherOp::Geqrf
        | OtherOp::HouseholderProduct
        | OtherOp::Lu
        | OtherOp::LuSolve
        | OtherOp::Qr
        | OtherOp::Svd
        | OtherOp::TriangularSolve
        | OtherOp::Special => Ok(()),
        OtherOp::Reduce | OtherOp::DotGeneral if d.attrs.contains_key(MASKED) => Ok(()),
        OtherOp::Reduce => on(&ints("dims"), "reduces over"),
        OtherOp::DotGeneral => {
            on(&ints("lhs_contract"), "contracts over")?;
            let ys = sym_dims(m, d.operands[1]);
            match ints("rhs_contract").iter().find(|&&i| ys[i as usize]) {
                Some(&i) => Err(format!(
                    "it contracts over dim {i} of its right operand, of symbolic size `{}`",
                    size(d.operands[1], i as usize)
                )),
                None => Ok(()),
            }
        }
        OtherOp::Reshape => {
            let dims = |v: Value| m.ty(v).tensor().map(|t| t.dims.clone()).unwrap_or_default();
            let (from, to) = (dims(x), dims(d.results[0]));
            if reshape_keeps_padding_last(&from, &to) {
                Ok(())
            } else {
                let show = |v: &[SymExpr]| v.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
                Err(format!("it reshapes [{}] to [{}]: a symbolic dim with dims before it, or with another symbolic dim (the padding would interleave with real elements)", show(&from), show(&to)))
            }
        }
        OtherOp::Slice => {
            let (start, step) = (ints("start"), ints("step"));
            let rt = m.ty(d.results[0]).tensor().map(|t| t.dims.clone()).unwrap_or_default();
            let xt = m.ty(x).tensor().map(|t| t.dims.clone()).unwrap_or_default();
            match (0..xs.len()).find(|&i| xs[i] && (start[i] != 0 || step[i] != 1 || rt[i] != xt[i])) {
                Some(i) => Err(format!("it slices dim {i}, of symbolic size `{}`, to a part of it", xt[i])),
                None => Ok(()),
            }
        }
        OtherOp::Concat => {
            let dim = d.attrs.get("dim").and_then(Attr::as_int).unwrap_or(0);
            let rs = sym_dims(m, d.results[0]);
            if rs.get(dim as usize).copied().unwrap_or(false) {
                Err(format!("it concatenates along dim {dim}, of symbolic size `{}`", size(d.results[0], dim as usize)))
            } else {
                Ok(())
            }
        }
        OtherOp::Pad => {
            let (lo, hi) = (ints("low"), ints("high"));
            on(
                &(0..xs.len() as i64).filter(|&i| lo[i as usize] != 0 || hi[i as usize] != 0).collect::<Vec<_>>(),
                "pads",
            )
        }
        OtherOp::Reverse => on(&ints("dims"), "reverses"),
        OtherOp::Cumsum | OtherOp::Cumprod => {
            on(&[d.attrs.get("dim").and_then(Attr::as_int).unwrap_or(0)], "accumulates along")
        }
        OtherOp::Argsort => on(&[d.attrs.get("dim").and_then(Attr::as_int).unwrap_or(0)], "sorts along"),
        OtherOp::Gather if d.attrs.contains_key(ember_ir::dialect::ten::ROWS_ALIGNED) => Ok(()),
        OtherOp::Gather => on(&[d.attrs.get("dim").and_then(Attr::as_int).unwrap_or(0)], "gathers along"),
        // Padded index entries would update real elements (unless their updates were masked).
        OtherOp::Scatter if d.attrs.contains_key(MASKED) => Ok(()),
        OtherOp::Scatter if d.operands.iter().any(|&o| sym_dims(m, o).iter().any(|&s| s)) => {
            Err("it scatters with a symbolic size".into())
        }
        OtherOp::Windows => {
            let n = ints("kernel").len();
            on(&((xs.len() - n) as i64..xs.len() as i64).collect::<Vec<_>>(), "slides windows along")
        }
        // Elementwise ops (and unary/binary ones, above) read every operand at the result's own
        // position; broadcasts and transposes keep positions along each dim.
        OtherOp::Scatter
        | OtherOp::Compare
        | OtherOp::Select
        | OtherOp::Convert
        | OtherOp::BitcastConvert
        | OtherOp::Broadcast
        | OtherOp::Transpose
        | OtherOp::Constant
        | OtherOp::Iota => Ok(()),
    }
}

/// Whether a reshape from `a` to `b` keeps every padded position after the real ones: the dims
/// split into groups of equal size on both sides, and a group with a symbolic dim must have it
/// first on both sides, the group's other dims static (`[s, 64] -> [s, 4, 16]` or `-> [64s]`,
/// not `[4, s] -> [4s]`). Group sizes are compared with each symbol set to a distinct large prime.
/// Dims of size 1 are left out first: they do not move any element (`[s, s] -> [1, 1, s, s]`).
fn reshape_keeps_padding_last(a: &[SymExpr], b: &[SymExpr]) -> bool {
    let one = SymExpr::Const(1);
    let a: Vec<SymExpr> = a.iter().filter(|d| **d != one).cloned().collect();
    let b: Vec<SymExpr> = b.iter().filter(|d| **d != one).cloned().collect();
    let (a, b) = (a.as_slice(), b.as_slice());
    let mut syms = Vec::new();
    a.iter().chain(b).for_each(|d| d.symbols(&mut syms));
    syms.sort();
    syms.dedup();
    const PRIMES: [i64; 6] = [1_000_003, 1_000_033, 1_000_037, 1_000_039, 1_000_081, 1_000_099];
    if syms.len() > PRIMES.len() {
        return false;
    }
    let value = |s: &str| syms.iter().position(|x| x == s).map(|i| PRIMES[i]);
    let eval = |v: &[SymExpr]| v.iter().map(|d| d.eval(&value).map(|x| x as i128)).collect::<Option<Vec<i128>>>();
    let (Some(va), Some(vb)) = (eval(a), eval(b)) else { return false };
    let ok = |dims: &[SymExpr]| dims.iter().skip(1).all(|d| d.as_const().is_some());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let (si, sj) = (i, j);
        let (mut pa, mut pb) = (1i128, 1i128);
        if i < a.len() {
            pa = va[i];
            i += 1;
        }
        if j < b.len() {
            pb = vb[j];
            j += 1;
        }
        while pa != pb {
            if pa < pb && i < a.len() {
                pa = pa.saturating_mul(va[i]);
                i += 1;
            } else if pb < pa && j < b.len() {
                pb = pb.saturating_mul(vb[j]);
                j += 1;
            } else {
                return false;
            }
        }
        let (ga, gb) = (&a[si..i], &b[sj..j]);
        let symbolic = ga.iter().chain(gb).any(|d| d.as_const().is_none());
        let first_sym = |g: &[SymExpr]| g.first().is_some_and(|d| d.as_const().is_none());
        if symbolic && !(first_sym(ga) && first_sym(gb) && ok(ga) && ok(gb)) {
            return false;
        }
    }
    true
}

/// A copy of the module with every symbol replaced by its value in `env`: all types and `shape`
/// attributes become static.
pub fn specialize(m: &Module, env: &BTreeMap<String, i64>) -> Result<Module, String> {
    let mut out = m.clone();
    let lookup = |s: &str| env.get(s).copied();
    let eval = |e: &SymExpr| e.eval(&lookup).ok_or_else(|| format!("cannot evaluate `{e}` with {env:?}"));
    let mut ops = Vec::new();
    m.walk(m.top, &mut |op| ops.push(op));
    let mut values: Vec<Value> = Vec::new();
    for &op in &ops {
        values.extend(m.op(op).results.iter().copied());
        for &r in &m.op(op).regions {
            for &b in &m.region(r).blocks {
                values.extend(m.block(b).args.iter().copied());
            }
        }
    }
    let static_ty = |ty: &Type| -> Result<Type, String> {
        match ty {
            Type::Tensor(t) if t.dims.iter().any(|d| d.as_const().is_none()) => {
                let dims = t.dims.iter().map(|d| eval(d).map(SymExpr::Const)).collect::<Result<Vec<_>, _>>()?;
                Ok(Type::Tensor(TensorType::new(dims, t.dtype)))
            }
            _ => Ok(ty.clone()),
        }
    };
    for v in values {
        out.set_ty(v, static_ty(m.ty(v))?);
    }
    for &op in &ops {
        let fixed: Vec<(String, Attr)> = m
            .op(op)
            .attrs
            .iter()
            .filter_map(|(k, a)| match a {
                Attr::Dims(v) => Some(
                    v.iter()
                        .map(|e| eval(e).map(SymExpr::Const))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|v| (k.clone(), Attr::dims(v))),
                ),
                // A function's signature (`function_type`), which callers may read instead of its block.
                Attr::Type(Type::Function(a, r)) => Some((|| {
                    let a = a.iter().map(&static_ty).collect::<Result<Vec<_>, _>>()?;
                    let r = r.iter().map(&static_ty).collect::<Result<Vec<_>, _>>()?;
                    Ok((k.clone(), Attr::Type(Type::Function(a, r))))
                })()),
                _ => None,
            })
            .collect::<Result<_, _>>()?;
        for (k, a) in fixed {
            out.op_mut(op).attrs.insert(k, a);
        }
    }
    out.attrs.remove("ember.symbols");
    Ok(out)
}
