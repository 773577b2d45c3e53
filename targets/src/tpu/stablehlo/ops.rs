//! Op emission: one `ten` op to one or a few StableHLO ops (the `match` of the table in the
//! parent module), with the multi-op forms (reductions, argsort, arg-reductions, windows) next to
//! it. Adding a `ten` op means adding an arm here.

use super::lit::{int_range, Lit};
use super::{array_i64, is_unsigned, list, Emitter, R, T};
use ember_ir::dialect::ten::{Form, Hlo, OtherOp, TenOp, UnaryOp};
use ember_ir::module::OpId;
use ember_ir::types::DType;
use std::fmt::Write;

impl<'a> Emitter<'a> {
    // ---- ten ops ------------------------------------------------------------------------------

    pub(super) fn op(&mut self, op: OpId) -> R<()> {
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
        let Some(ten) = d.ten() else {
            return Err(format!(
                "the tpu target cannot compile `{name}`{at}: it has no lowering to the ten dialect yet (see `ember opt --passes=torch-to-ten`)"
            ));
        };
        let r = self.emit_ten(op, ten).map_err(|e| format!("`{name}`{at}: {e}"))?;
        let res = self.m.op(op).results[0];
        self.names.insert(res, r);
        Ok(())
    }

    pub(super) fn emit_ten(&mut self, op: OpId, ten: TenOp) -> R<String> {
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
        // Unary and binary math is the table's `stablehlo.<name>`, except where the operand's
        // dtype has no such op: rounding and |x| of integers are x itself.
        let other = match ten.form() {
            Form::Binary(_) => {
                let Hlo::Op(b) = ten.hlo() else { return Err(format!("`{ten}` has no StableHLO op in the table")) };
                if b == "divide" && matches!(rt.dt, DType::F16 | DType::BF16) {
                    // XLA rewrites a / broadcast(b) as a * broadcast(1 / b), which in f16 rounds
                    // twice (a quarter of the quotients one ulp off, measured on XLA CPU); in f32
                    // and rounded once, the quotient is torch's.
                    let wide = rt.with_dt(DType::F32);
                    let (a, b) = (self.convert(&ops[0], &tys[0], &wide), self.convert(&ops[1], &tys[1], &wide));
                    let q = self.binary("divide", &a, &b, &wide);
                    return Ok(self.convert(&q, &wide, &rt));
                }
                return Ok(self.binary(b, &ops[0], &ops[1], &rt));
            }
            Form::Unary(u) => {
                let as_table = match u {
                    UnaryOp::Abs | UnaryOp::Sign => !is_unsigned(xt.dt),
                    UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => float,
                    _ => true,
                };
                if let (true, Hlo::Op(name)) = (as_table, ten.hlo()) {
                    return Ok(self.unary(name, &x, &rt));
                }
                return Ok(match u {
                    UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc if !float => x,
                    UnaryOp::Sign => {
                        // Unsigned: x != 0.
                        let z = self.constant(Lit::I(0), &xt);
                        let ne = self.compare("NE", &x, &z, &xt);
                        if rt.dt == DType::Bool {
                            ne
                        } else {
                            self.convert(&ne, &xt.with_dt(DType::Bool), &rt)
                        }
                    }
                    UnaryOp::Trunc => {
                        let z = self.constant(Lit::F(0.0), &xt);
                        let neg = self.compare("LT", &x, &z, &xt);
                        let c = self.unary("ceil", &x, &xt);
                        let f = self.unary("floor", &x, &xt);
                        self.select(&neg, &c, &f, &rt)
                    }
                    UnaryOp::Erf => {
                        if !float {
                            return Err("erf needs a float operand".into());
                        }
                        self.def(format!("chlo.erf {x} : {xt} -> {rt}"))
                    }
                    _ => return Err(format!("`{ten}` has no StableHLO form (the table says custom)")),
                });
            }
            Form::Other(o) => o,
        };
        Ok(match other {
            OtherOp::Cholesky
            | OtherOp::Eigh
            | OtherOp::Geqrf
            | OtherOp::HouseholderProduct
            | OtherOp::Lu
            | OtherOp::LuSolve
            | OtherOp::Qr
            | OtherOp::Svd
            | OtherOp::TriangularSolve => {
                return Err(format!(
                    "`{ten}` has no StableHLO form yet: the tpu target does not run linalg factorizations (the cpu target does)"
                ))
            }
            OtherOp::Special => {
                return Err(format!(
                    "`{ten}` has no StableHLO form yet: its recurrence runs a number of steps that is data (the cpu target runs it)"
                ))
            }
            OtherOp::Compare => {
                let dir = attrs.get("direction").and_then(|a| a.as_str()).ok_or("missing attribute `direction`")?;
                if !matches!(dir, "EQ" | "NE" | "LT" | "LE" | "GT" | "GE") {
                    return Err(format!("unknown direction `{dir}`"));
                }
                self.compare(dir, &ops[0], &ops[1], &xt)
            }
            OtherOp::Select => self.select(&ops[0], &ops[1], &ops[2], &rt),
            OtherOp::BitcastConvert => self.def(format!("stablehlo.bitcast_convert {x} : ({xt}) -> {rt}")),
            OtherOp::Convert => {
                if xt.dt == rt.dt {
                    x
                } else {
                    self.convert(&x, &xt, &rt)
                }
            }
            OtherOp::Constant => {
                let v = attrs.get("value").and_then(Lit::from_attr).ok_or("`value` must be a number or a boolean")?;
                self.constant(v, &rt)
            }
            OtherOp::Iota => {
                let dim = int("dim")?;
                if rt.rank() == 0 {
                    self.constant(Lit::I(0), &rt)
                } else {
                    self.def(format!("stablehlo.iota dim = {dim} : {rt}"))
                }
            }
            OtherOp::Broadcast => {
                let dims = ints("dims")?;
                if xt == rt && dims.iter().enumerate().all(|(i, &d)| i as i64 == d) {
                    x
                } else {
                    self.def(format!("stablehlo.broadcast_in_dim {x}, dims = {} : ({xt}) -> {rt}", list(&dims)))
                }
            }
            OtherOp::Reshape => self.reshape(&x, &xt, &rt),
            OtherOp::Transpose => self.transpose(&x, &xt, &ints("dims")?, &rt),
            OtherOp::Reverse => {
                let dims = ints("dims")?;
                if dims.is_empty() {
                    x
                } else {
                    self.def(format!("stablehlo.reverse {x}, dims = {} : {rt}", list(&dims)))
                }
            }
            OtherOp::Slice => {
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
            OtherOp::Concat => {
                let dim = int("dim")?;
                self.concat(&ops, &tys, dim as usize, &rt)
            }
            OtherOp::Pad => {
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
            OtherOp::DotGeneral => {
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
            OtherOp::Gather if rt.shape.contains(&0) => self.constant(Lit::I(0), &rt),
            OtherOp::Gather => {
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
            OtherOp::Scatter if tys[2].shape.contains(&0) => x,
            OtherOp::Scatter => {
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
            OtherOp::Reduce => self.reduce(op, &x, &xt, &rt)?,
            OtherOp::Cumsum | OtherOp::Cumprod => {
                let dim = int("dim")? as usize;
                let n = xt.shape[dim];
                let (init, body) = if other == OtherOp::Cumprod { (Lit::I(1), "multiply") } else { (Lit::I(0), "add") };
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
            OtherOp::Argsort => {
                let dim = int("dim")?;
                let desc = self.m.op(op).attrs.get("descending").and_then(|a| a.as_bool()).unwrap_or(false);
                self.argsort(&x, &xt, dim, desc, &rt)
            }
            OtherOp::Windows => {
                let (k, s, dl) = (ints("kernel")?, ints("stride")?, ints("dilation")?);
                self.windows(&x, &xt, &k, &s, &dl, &rt)
            }
        })
    }

    /// `ten.reduce`: one `stablehlo.reduce`; arg reductions reduce (value, index) pairs.
    pub(super) fn reduce(&mut self, op: OpId, x: &str, xt: &T, rt: &T) -> R<String> {
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

    /// `ten.argsort`: a stable `stablehlo.sort` of (x, iota) whose comparator puts NaN after
    /// every number (before them when descending); the result is the sorted iota.
    pub(super) fn argsort(&mut self, x: &str, xt: &T, dim: i64, descending: bool, rt: &T) -> String {
        let io = self.def(format!("stablehlo.iota dim = {dim} : {rt}"));
        let (sv, si, bt) = (T::scalar(xt.dt), T::scalar(rt.dt), T::scalar(DType::Bool));
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

    /// argmax/argmin over `dims`: reduces (x, linear index within `dims`) pairs; the better value
    /// wins, NaN beats numbers, ties (and two NaNs) keep the smaller index. The init pair is
    /// (the dtype's worst value, 0): it can only tie when every element equals it, and then index
    /// 0 is the answer anyway.
    pub(super) fn arg_reduce(&mut self, is_max: bool, x: &str, xt: &T, dims: &[i64], worst: Lit, rt: &T) -> String {
        // The index dtype is the result's: int64, or int32 where the target narrows int64 (trainium).
        let it = xt.with_dt(rt.dt);
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
        let (sv, si) = (T::scalar(xt.dt), T::scalar(rt.dt));
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
    pub(super) fn windows(&mut self, x: &str, xt: &T, k: &[i64], s: &[i64], dl: &[i64], rt: &T) -> String {
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
