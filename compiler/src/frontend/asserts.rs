//! Runtime assertions (`torch._check`, a user's `assert x.max().item() <= n`), which torch.export
//! writes as `_assert_scalar` on a symbolic bool. No target checks a condition at run time, so
//! the import proves each one from what it knows, or refuses the graph: an assertion it dropped
//! unproven could let a wrong result through where eager would have raised.
//!
//! What is known: the bounds of the input symbols (`range_constraints` of sizes), and the value
//! range of integer and bool tensors, followed through the few ops that matter (a bool is 0 or
//! 1, a sum of n values in [lo, hi] is in [n·lo, n·hi], max/min, casts and views keep it), which
//! `_local_scalar_dense` (`.item()`) hands to the data-dependent symbol it defines. Torch's own
//! bounds of data-dependent symbols are not used: they assume the assertions hold.

use super::{Importer, Node};
use ember_ir::attr::Attr;
use ember_ir::module::Value;
use ember_ir::sym::{Bounds, SymExpr};
use ember_ir::types::DType;
use serde_json::Value as Json;

type R<T> = Result<T, String>;

impl Importer<'_> {
    /// Records what a sym-bool or `.item()` node means; the node itself becomes nothing.
    pub(super) fn note_symbolic(&mut self, node: &Node) {
        if node.target == "torch.ops.aten._local_scalar_dense.default" {
            let input = node.inputs.first().and_then(|a| a.arg.pointer("/as_tensor/name")).and_then(|n| n.as_str());
            let range = input.and_then(|n| self.values.get(n)).and_then(|v| self.ranges.get(v)).copied();
            let out = node.outputs.first().and_then(|o| o.pointer("/as_sym_int/as_name")).and_then(|n| n.as_str());
            if let (Some((lo, hi)), Some(SymExpr::Sym(u))) = (range, out.and_then(|n| self.syms.get(n))) {
                self.unbacked.insert(u.clone(), (lo, hi));
            }
            return;
        }
        if let Some(name) =
            node.outputs.first().and_then(|o| o.pointer("/as_sym_bool/as_name")).and_then(|n| n.as_str())
        {
            let args = node.inputs.iter().map(|a| a.arg.clone()).collect();
            self.sym_bools.insert(name.to_string(), (node.target.clone(), args));
        }
    }

    /// `_assert_scalar(cond, msg)`: nothing when `cond` is proven, else an error.
    pub(super) fn assert_scalar(&self, node: &Node) -> R<()> {
        let cond = node.inputs.first().map(|a| &a.arg).ok_or("has no condition")?;
        if cond.pointer("/as_sym_bool/as_bool").and_then(|b| b.as_bool()) == Some(true)
            || cond.get("as_bool").and_then(|b| b.as_bool()) == Some(true)
        {
            return Ok(());
        }
        let msg = node.inputs.get(1).and_then(|a| a.arg.get("as_string")).and_then(|s| s.as_str()).unwrap_or("");
        let torch_text = msg.trim_start_matches("Runtime assertion failed for expression ").split(" on node").next();
        let unproven = |what: &str, why: &str| {
            format!(
                "the runtime assertion `{what}` cannot be proven at compile time ({why}); no Ember target checks \
                 conditions at run time, so the graph is refused rather than run unchecked"
            )
        };
        let torch_what = torch_text.unwrap_or("?");
        let comparison = cond
            .pointer("/as_sym_bool/as_name")
            .and_then(|n| n.as_str())
            .and_then(|n| self.sym_bools.get(n))
            .ok_or_else(|| unproven(torch_what, "its condition is not a comparison Ember reads"))?;
        let (target, args) = comparison;
        let sign = match target.as_str() {
            "_operator.le" => "<=",
            "_operator.lt" => "<",
            "_operator.ge" => ">=",
            "_operator.gt" => ">",
            "_operator.eq" => "==",
            "_operator.ne" => "!=",
            _ => return Err(unproven(torch_what, &format!("its condition is `{target}`"))),
        };
        let operands: Option<Vec<SymExpr>> = args.iter().map(|j| self.sym_operand(j)).collect();
        let Some([a, b]) = operands.and_then(|v| <[SymExpr; 2]>::try_from(v).ok()) else {
            return Err(unproven(torch_what, "an operand is not an integer"));
        };
        let what = format!("{a} {sign} {b}");
        let (al, ah) = self.interval(&a).ok_or_else(|| unproven(&what, &format!("`{a}` has no known bounds")))?;
        let (bl, bh) = self.interval(&b).ok_or_else(|| unproven(&what, &format!("`{b}` has no known bounds")))?;
        let holds = match sign {
            "<=" => ah <= bl,
            "<" => ah < bl,
            ">=" => al >= bh,
            ">" => al > bh,
            "==" => al == ah && bl == bh && al == bl,
            _ => ah < bl || bh < al,
        };
        if holds {
            return Ok(());
        }
        Err(unproven(&what, &format!("`{a}` is within [{al}, {ah}] and `{b}` within [{bl}, {bh}]")))
    }

    /// `_assert_async.msg(cond, msg)` (one_hot's checks that classes are in range, written over
    /// the data as `logical_not(any(logical_not(x >= 0)))`): nothing when the value range of
    /// `cond` says it is always true, else an error, as for `_assert_scalar`.
    pub(super) fn assert_async(&self, node: &Node) -> R<()> {
        let name = node.inputs.first().and_then(|a| a.arg.pointer("/as_tensor/name")).and_then(|n| n.as_str());
        let msg = node.inputs.get(1).and_then(|a| a.arg.get("as_string")).and_then(|s| s.as_str()).unwrap_or("?");
        let range = name.and_then(|n| self.values.get(n)).and_then(|v| self.ranges.get(v)).copied();
        if range == Some((1, 1)) {
            return Ok(());
        }
        Err(format!(
            "the runtime assertion `{msg}` cannot be proven at compile time (the value ranges of its \
             operands are not known to satisfy it); no Ember target checks conditions at run time, so the \
             graph is refused rather than run unchecked"
        ))
    }

    fn sym_operand(&self, j: &Json) -> Option<SymExpr> {
        if let Some(i) = j.get("as_int").and_then(|v| v.as_i64()) {
            return Some(SymExpr::Const(i));
        }
        let name = j.pointer("/as_sym_int/as_name").and_then(|n| n.as_str())?;
        self.syms.get(name).cloned()
    }

    /// Inclusive bounds of `e` over its symbols' ranges, for non-negative symbols only (the
    /// bound arithmetic of `SymExpr` assumes sizes).
    fn interval(&self, e: &SymExpr) -> Option<(i64, i64)> {
        let mut names = Vec::new();
        e.symbols(&mut names);
        let bounds = |s: &str| -> Option<Bounds> {
            match self.unbacked.get(s) {
                Some(&(lo, hi)) => Some(Bounds { min: lo, max: Some(hi) }),
                None if s.starts_with('u') => None,
                None => self.bounds.get(s).copied(),
            }
        };
        if names.iter().any(|s| bounds(s).is_none_or(|b| b.min < 0)) || !monotone(e) {
            return None;
        }
        Some((e.lower_bound(&bounds), e.upper_bound(&bounds)?))
    }

    /// The value range of an integer or bool result, where the op keeps one (see the module doc).
    pub(super) fn note_range(&mut self, op: ember_ir::OpId) {
        let o = self.m.op(op).clone();
        for (i, &r) in o.results.iter().enumerate() {
            let Some(t) = self.m.ty(r).tensor() else { continue };
            let range = match t.dtype {
                DType::Bool => Some(self.range_rule(&o.name, &o.operands, &o.attrs, i).unwrap_or((0, 1))),
                d if d.is_int() => self.range_rule(&o.name, &o.operands, &o.attrs, i),
                _ => None,
            };
            // A range the result's dtype cannot hold wraps (a sum of 200 bools cast to int8).
            if let Some(range) = range.filter(|&(lo, hi)| fits(t.dtype, lo, hi)) {
                self.ranges.insert(r, range);
            }
        }
    }

    fn range_rule(
        &self,
        name: &str,
        operands: &[Value],
        attrs: &ember_ir::module::Attrs,
        result: usize,
    ) -> Option<(i64, i64)> {
        let of = |v: &Value| self.ranges.get(v).copied();
        let first = operands.first().and_then(of);
        let op = name.strip_prefix("torch.aten.")?;
        match op {
            "_to_copy" | "clone" | "alias" | "view" | "_unsafe_view" | "reshape" | "expand" | "permute"
            | "slice.Tensor" | "select.int" | "unsqueeze" | "squeeze.dim" | "squeeze.dims" | "max" | "min" | "amax"
            | "amin" => first,
            "max.dim" | "min.dim" if result == 0 => first,
            // A comparison with a constant is constant where the operand's range is on one side.
            "ge.Scalar" | "gt.Scalar" | "le.Scalar" | "lt.Scalar" => {
                let (lo, hi) = first?;
                let k = attrs.get("other").and_then(Attr::as_int)?;
                let (always, never) = match op {
                    "ge.Scalar" => (lo >= k, hi < k),
                    "gt.Scalar" => (lo > k, hi <= k),
                    "le.Scalar" => (hi <= k, lo > k),
                    _ => (hi < k, lo >= k),
                };
                Some(if always {
                    (1, 1)
                } else if never {
                    (0, 0)
                } else {
                    (0, 1)
                })
            }
            "logical_not" => first.map(|(lo, hi)| (1 - hi, 1 - lo)),
            // Over at least one element, any of values all in a range is in that range.
            "any" | "any.dim" | "any.dims" => {
                let t = self.m.ty(operands[0]).tensor()?;
                let n = t.dims.iter().try_fold(1i64, |n, d| n.checked_mul(d.as_const()?))?;
                first.filter(|_| n > 0)
            }
            "argmax" | "argmin" => {
                let t = self.m.ty(operands[0]).tensor()?;
                let n = match attrs.get("dim").and_then(Attr::as_int) {
                    Some(d) => t.dims.get(if d < 0 { d + t.rank() as i64 } else { d } as usize)?.as_const()?,
                    None => t.dims.iter().try_fold(1i64, |n, d| n.checked_mul(d.as_const()?))?,
                };
                (n > 0).then_some((0, n - 1))
            }
            "sum.dim_IntList" => {
                let (lo, hi) = first?;
                let t = self.m.ty(operands[0]).tensor()?;
                let dims: Vec<usize> = match attrs.get("dim").and_then(Attr::as_ints) {
                    Some(d) if !d.is_empty() => {
                        d.iter().map(|&d| if d < 0 { d + t.rank() as i64 } else { d } as usize).collect()
                    }
                    _ => (0..t.rank()).collect(),
                };
                let n = dims.iter().try_fold(1i64, |n, &d| n.checked_mul(t.dims.get(d)?.as_const()?))?;
                Some((lo.checked_mul(n)?, hi.checked_mul(n)?))
            }
            _ => None,
        }
    }
}

/// Whether `SymExpr`'s bounds are exact for `e` (its symbols non-negative): the bound of a sum,
/// product, floor division or remainder by a positive constant, max or min grows with its
/// operands' bounds. A negative factor (`-s0 + s1`) or a symbolic divisor reverses that.
fn monotone(e: &SymExpr) -> bool {
    match e {
        SymExpr::Const(_) | SymExpr::Sym(_) => true,
        SymExpr::Add(v) => v.iter().all(monotone),
        SymExpr::Mul(v) => v.iter().all(|f| monotone(f) && f.as_const().is_none_or(|c| c >= 0)),
        SymExpr::FloorDiv(a, b) | SymExpr::Mod(a, b) => monotone(a) && b.as_const().is_some_and(|c| c > 0),
        SymExpr::Max(a, b) | SymExpr::Min(a, b) => monotone(a) && monotone(b),
    }
}

/// Whether every integer in [lo, hi] is a value of `dtype`.
fn fits(dtype: DType, lo: i64, hi: i64) -> bool {
    let (min, max) = match dtype {
        DType::Bool => (0, 1),
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::U8 => (0, u8::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::U16 => (0, u16::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::U32 => (0, u32::MAX as i64),
        DType::I64 => (i64::MIN, i64::MAX),
        DType::U64 => (0, i64::MAX),
        _ => return false,
    };
    min <= lo && hi <= max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_used_only_where_they_are_exact() {
        let e = |t: &str| SymExpr::parse(t).unwrap();
        assert!(monotone(&e("2*s0 + s1 - 3")));
        assert!(monotone(&e("s0//4")));
        assert!(monotone(&e("Max(s0, 4)")));
        // -s0 + s1 over s0, s1 in [2, 16]: the bounds helpers would say [0, 0].
        assert!(!monotone(&e("-s0 + s1")));
        assert!(!monotone(&e("s1//s0")));
        assert!(fits(DType::I64, -5, 1 << 40) && fits(DType::U8, 0, 255));
        // 200 bools summed and cast to int8 wrap: no range survives the cast.
        assert!(!fits(DType::I8, 0, 200) && !fits(DType::U8, -1, 3) && !fits(DType::F32, 0, 1));
    }
}
