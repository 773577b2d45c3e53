//! Fusion groups and calls: a named `ember.fusion_group` becomes a `stablehlo.composite` with a
//! private decomposition function, other groups and `func.call`s are inlined. This is the only
//! place that emits more than one function.

use super::{Emitter, R, T};
use ember_ir::attr::{fmt_str, Attr};
use ember_ir::module::OpId;
use std::collections::HashMap;

impl<'a> Emitter<'a> {
    /// `ember.fusion_group`: named kinds become a `stablehlo.composite "ember.<kind>"` (the group's
    /// parameters as `composite_attributes`, the body as the private decomposition function), so
    /// XLA or a TPU kernel library can match the pattern by name and everyone else inlines the
    /// decomposition. `loop` groups, `gemm` groups without an activation and unknown kinds are
    /// inlined here: XLA's own fusion redoes them, and a composite would only hide the ops.
    pub(super) fn fusion_group(&mut self, op: OpId) -> R<()> {
        let m = self.m;
        let d = m.op(op);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).ok_or("missing attribute `kind`")?;
        let body = match d.regions.as_slice() {
            [r] if m.region(*r).blocks.len() == 1 => m.region(*r).blocks[0],
            _ => return Err("a fusion group needs exactly one region with one block".into()),
        };
        let args = &m.block(body).args;
        if args.len() != d.operands.len() {
            return Err(format!("the body takes {} arguments for {} operands", args.len(), d.operands.len()));
        }
        let Some((&yld, inner)) = m.block(body).ops.split_last().filter(|(&y, _)| m.op(y).name == "ember.yield") else {
            return Err("the body does not end with `ember.yield`".into());
        };
        let yielded = &m.op(yld).operands;
        if yielded.len() != d.results.len() {
            return Err(format!("`ember.yield` gives {} values for {} results", yielded.len(), d.results.len()));
        }
        let composite = match kind {
            "softmax" | "layer_norm" | "rms_norm" | "attention" => true,
            "gemm" => d.attrs.get("activation").and_then(|a| a.as_str()).is_some_and(|a| a != "none"),
            _ => false,
        };
        if !composite {
            for (&a, &o) in args.iter().zip(&d.operands) {
                let n = self.name(o);
                self.names.insert(a, n);
            }
            for &o in inner {
                self.op(o)?;
            }
            for (&r, &y) in d.results.iter().zip(yielded) {
                let n = self.name(y);
                self.names.insert(r, n);
            }
            return Ok(());
        }
        if d.results.is_empty() {
            return Err(format!("a `{kind}` group has no results"));
        }
        let fname = format!("ember.{kind}.{}", self.composites);
        self.composites += 1;
        let arg_tys: Vec<T> = args.iter().map(|&a| self.t(a)).collect::<R<_>>()?;
        let res_tys: Vec<T> = d.results.iter().map(|&r| self.t(r)).collect::<R<_>>()?;
        let join = |ts: &[T]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        // The decomposition: a function of its own (SSA names restart, as MLIR prints them).
        let mut sub = Emitter {
            m,
            out: String::new(),
            next: 0,
            names: HashMap::new(),
            indent: 4,
            funcs: std::mem::take(&mut self.funcs),
            composites: self.composites,
            precision: self.precision,
        };
        let params: Vec<String> = args
            .iter()
            .zip(&arg_tys)
            .enumerate()
            .map(|(i, (&a, t))| {
                sub.names.insert(a, format!("%arg{i}"));
                format!("%arg{i}: {t}")
            })
            .collect();
        for &o in inner {
            sub.op(o)?;
        }
        let rets: Vec<String> = yielded.iter().map(|&y| sub.name(y)).collect();
        sub.line(format!("return {} : {}", rets.join(", "), join(&res_tys)));
        let mut f = format!("  func.func private @{fname}({}) -> ({}) {{\n", params.join(", "), join(&res_tys));
        f.push_str(&sub.out);
        f.push_str("  }\n");
        self.funcs = sub.funcs;
        self.composites = sub.composites;
        self.funcs.push(f);
        // The group's parameters (everything but `kind` and the `rules` that formed it).
        let cattrs: Vec<String> = d
            .attrs
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "kind" | "rules") && !k.starts_with("ember."))
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let mut dict = Vec::new();
        if !cattrs.is_empty() {
            dict.push(format!("composite_attributes = {{{}}}", cattrs.join(", ")));
        }
        dict.push(format!("decomposition = @{fname}"));
        let operands: Vec<String> = d.operands.iter().map(|&o| self.name(o)).collect();
        let r = self.fresh();
        let n = d.results.len();
        let lhs = if n == 1 { r.clone() } else { format!("{r}:{n}") };
        let rt = if n == 1 { res_tys[0].to_string() } else { format!("({})", join(&res_tys)) };
        self.line(format!(
            "{lhs} = stablehlo.composite \"ember.{kind}\" {} {{{}}} : ({}) -> {rt}",
            operands.join(", "),
            dict.join(", "),
            join(&arg_tys)
        ));
        for (i, &res) in d.results.iter().enumerate() {
            self.names.insert(res, if n == 1 { r.clone() } else { format!("{r}#{i}") });
        }
        Ok(())
    }

    /// `func.call @callee(...)` with one result (the trainium target's kernel regions); string
    /// attributes named `ember_*` become `mhlo.frontend_attributes`, which XLA keeps on the HLO call.
    pub(super) fn call(&mut self, op: OpId) -> R<()> {
        let d = self.m.op(op);
        let Some(Attr::SymRef(callee)) = d.attrs.get("callee") else {
            return Err("`func.call` without a callee".into());
        };
        let [res] = d.results[..] else { return Err(format!("`func.call @{callee}` must have one result")) };
        let args: Vec<String> = d.operands.iter().map(|&v| self.name(v)).collect();
        let tys: Vec<String> = d.operands.iter().map(|&v| self.t(v).map(|t| t.to_string())).collect::<R<_>>()?;
        let tags: Vec<String> = d
            .attrs
            .iter()
            .filter_map(|(k, a)| {
                a.as_str().filter(|_| k.starts_with("ember_")).map(|s| format!("{k} = {}", fmt_str(s)))
            })
            .collect();
        let rt = self.t(res)?;
        let n = self.def(format!(
            "func.call @{callee}({}) {{mhlo.frontend_attributes = {{{}}}}} : ({}) -> {rt}",
            args.join(", "),
            tags.join(", "),
            tys.join(", ")
        ));
        self.names.insert(res, n);
        Ok(())
    }
}
