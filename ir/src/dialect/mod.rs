//! Dialect tables: every op Ember knows, declared once with a torch-style signature, a result type
//! rule and a doc line. `lookup` finds a definition by IR name; `OpView` reads an op's operands and
//! attributes by parameter name.

pub mod ember;
pub mod infer;
pub mod schema;
pub mod ten;
pub mod torch;

use crate::attr::Attr;
use crate::module::{Module, OpId, Value};
use crate::types::Type;
pub use infer::{InferCtx, InferError, Rule};
pub use schema::{Kind, Param, Signature};
use std::collections::HashMap;
use std::sync::OnceLock;

#[derive(Debug)]
pub struct OpDef {
    /// Full IR name, `dialect.op`.
    pub name: &'static str,
    /// torch schema syntax: `(Tensor self, Scalar other, *, Scalar alpha=1) -> Tensor`.
    pub sig: &'static str,
    pub rule: Rule,
    pub doc: &'static str,
}

/// A table row (for the `OPS` tables of each dialect).
pub(crate) const fn op(name: &'static str, sig: &'static str, rule: Rule, doc: &'static str) -> OpDef {
    OpDef { name, sig, rule, doc }
}

impl OpDef {
    pub fn signature(&self) -> &'static Signature {
        signatures().get(self.name).expect("every table entry has a parsed signature")
    }
    pub fn dialect(&self) -> &'static str {
        self.name.split('.').next().unwrap_or("")
    }
}

fn all_tables() -> impl Iterator<Item = &'static OpDef> {
    torch::OPS.iter().chain(ten::OPS.iter()).chain(ember::OPS.iter())
}

fn signatures() -> &'static HashMap<&'static str, Signature> {
    static SIGS: OnceLock<HashMap<&'static str, Signature>> = OnceLock::new();
    SIGS.get_or_init(|| {
        all_tables()
            .map(|d| {
                (d.name, schema::parse_signature(d.sig).unwrap_or_else(|e| panic!("bad signature for {}: {e}", d.name)))
            })
            .collect()
    })
}

pub fn lookup(name: &str) -> Option<&'static OpDef> {
    let table = match name.split('.').next() {
        Some("torch") => torch::OPS,
        Some("ember") => ember::OPS,
        Some("ten") => ten::OPS,
        _ => return None,
    };
    table.binary_search_by(|d| d.name.cmp(name)).ok().map(|i| &table[i])
}

pub fn all_ops() -> Vec<&'static OpDef> {
    all_tables().collect()
}

/// Ops whose result types are trusted rather than inferred (listed in reports and docs).
pub fn trusted_ops() -> Vec<&'static str> {
    all_tables().filter(|d| d.rule == Rule::Trust && d.dialect() == "torch").map(|d| d.name).collect()
}

/// Each tensor parameter's name and its operands (`None` at an absent `Tensor?[]` position).
pub type OperandGroups = Vec<(&'static str, Vec<Option<Value>>)>;

/// Reads an op through its signature: tensor operands and attributes by parameter name.
pub struct OpView<'m> {
    pub m: &'m Module,
    pub op: OpId,
    pub def: &'static OpDef,
}

impl<'m> OpView<'m> {
    pub fn new(m: &'m Module, op: OpId) -> Option<Self> {
        lookup(&m.op(op).name).map(|def| OpView { m, op, def })
    }

    /// Operand groups per tensor parameter, in signature order. Absent optionals are empty groups;
    /// `Tensor?[]` groups hold `None` at absent positions (from the parameter's mask attribute).
    pub fn operand_groups(&self) -> Result<OperandGroups, String> {
        group_operands(self.def.signature(), &self.m.op(self.op).operands, &self.m.op(self.op).attrs)
    }

    pub fn operand(&self, name: &str) -> Option<Value> {
        self.operand_groups()
            .ok()?
            .into_iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| v.first().copied().flatten())
    }

    pub fn attr(&self, name: &str) -> Option<&'m Attr> {
        self.m.op(self.op).attrs.get(name)
    }

    /// The result types the op's rule gives, or why it cannot.
    pub fn infer(&self) -> Result<Vec<Type>, InferError> {
        let groups = self.operand_groups().map_err(InferError)?;
        let tensors = groups
            .iter()
            .map(|(n, vs)| (*n, vs.iter().map(|v| v.and_then(|v| self.m.ty(v).tensor())).collect()))
            .collect();
        let results = self.m.op(self.op).results.iter().map(|&r| self.m.ty(r).tensor()).collect();
        let cx = InferCtx { sig: self.def.signature(), tensors, attrs: &self.m.op(self.op).attrs, results };
        infer::infer(self.def.rule, &cx)
    }
}

pub const SEGMENTS: &str = "operandSegmentSizes";

/// Splits a flat operand list into per-parameter groups using `operandSegmentSizes`.
pub fn group_operands(
    sig: &'static Signature,
    operands: &[Value],
    attrs: &crate::module::Attrs,
) -> Result<OperandGroups, String> {
    let params: Vec<&'static Param> = sig.tensor_params().collect();
    let sizes: Vec<usize> = if sig.has_segments() {
        match attrs.get(SEGMENTS) {
            Some(Attr::Ints(v)) if v.len() == params.len() && v.iter().all(|&x| x >= 0) => {
                v.iter().map(|&x| x as usize).collect()
            }
            Some(_) => {
                return Err(format!(
                    "`{SEGMENTS}` must have one non-negative entry per tensor parameter ({})",
                    params.len()
                ))
            }
            None => return Err(format!("missing `{SEGMENTS}`")),
        }
    } else if params.len() == 1 {
        vec![operands.len()]
    } else {
        vec![1; params.len()]
    };
    let total: usize = sizes.iter().sum();
    if total != operands.len() {
        return Err(format!("expected {total} operands, found {}", operands.len()));
    }
    let mut out = Vec::new();
    let mut i = 0;
    for (p, &n) in params.iter().zip(&sizes) {
        let vals: Vec<Value> = operands[i..i + n].to_vec();
        i += n;
        if p.kind == Kind::Tensor && n > 1 {
            return Err(format!("parameter `{}` takes one tensor, found {n}", p.name));
        }
        if p.kind == Kind::Tensor && !p.optional && n == 0 {
            return Err(format!("missing required operand `{}`", p.name));
        }
        let group = if p.kind == Kind::OptTensorList {
            let mask = match attrs.get(&p.name) {
                Some(Attr::Ints(m)) => m.clone(),
                _ => vec![1; n],
            };
            if mask.iter().filter(|&&x| x != 0).count() != n {
                return Err(format!("mask `{}` does not match its {n} operands", p.name));
            }
            let mut it = vals.into_iter();
            mask.iter().map(|&x| if x != 0 { it.next() } else { None }).collect()
        } else {
            vals.into_iter().map(Some).collect()
        };
        out.push((p.name.as_str(), group));
    }
    Ok(out)
}

/// Creates a detached op whose result types come from its rule; place it with `Module::insert_op`.
pub fn build_op(
    m: &mut Module,
    name: &str,
    operands: Vec<Value>,
    attrs: crate::module::Attrs,
    loc: crate::attr::Loc,
) -> Result<OpId, String> {
    let def = lookup(name).ok_or_else(|| format!("unknown op `{name}`"))?;
    let probe = m.create_op(name, operands.clone(), vec![], attrs.clone(), vec![], loc.clone());
    let types = OpView { m, op: probe, def }.infer().map_err(|e| format!("`{name}`: {}", e.0))?;
    Ok(m.create_op(name, operands, types, attrs, vec![], loc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_and_parse() {
        for t in [torch::OPS, ten::OPS, ember::OPS] {
            for w in t.windows(2) {
                assert!(w[0].name < w[1].name, "{} must sort before {}", w[0].name, w[1].name);
            }
        }
        for d in all_ops() {
            let _ = d.signature();
            assert!(!d.doc.is_empty());
            assert_eq!(lookup(d.name).map(|x| x.name), Some(d.name));
        }
        assert!(torch::OPS.len() >= 190, "core ATen coverage: {}", torch::OPS.len());
    }
}
