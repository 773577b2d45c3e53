//! Graph-level clean-ups every target wants before fusion.

use ember_ir::attr::Attr;
use ember_ir::module::{Module, OpId, RETURN};
use std::collections::HashMap;

/// Ops with effects or randomness: never merged or deleted.
fn is_pure(name: &str) -> bool {
    !matches!(
        name,
        "torch.aten._assert_tensor_metadata"
            | "torch.aten._linalg_check_errors"
            | "torch.aten.rand"
            | "torch.aten.randn"
            | "torch.aten.randperm"
            | "torch.aten.native_dropout"
            | "torch.aten.empty.memory_format"
            | "torch.aten.empty_strided"
            | RETURN
    ) && !name.starts_with("ember.")
}

fn all_ops(m: &Module) -> Vec<OpId> {
    let mut v = Vec::new();
    m.walk(m.top, &mut |op| v.push(op));
    v
}

/// x -> x rewrites: the op's single result is replaced by its first operand.
pub fn canonicalize(m: &mut Module) -> Result<(), String> {
    for op in all_ops(m) {
        let d = m.op(op);
        if d.name == "torch.aten._assert_tensor_metadata" {
            m.erase_op(op);
            continue;
        }
        if d.results.len() != 1 || d.operands.is_empty() {
            continue;
        }
        let (src, res) = (d.operands[0], d.results[0]);
        let same_type = m.ty(src) == m.ty(res);
        let identity = match d.name.as_str() {
            // alias(x) == x; clone(x) == x in value semantics.
            "torch.aten.alias" | "torch.aten.detach" | "torch.aten.lift_fresh_copy" | "torch.aten.clone" => true,
            // view/reshape/expand/_to_copy to the type x already has == x.
            "torch.aten.view"
            | "torch.aten._unsafe_view"
            | "torch.aten.reshape"
            | "torch.aten.expand"
            | "torch.aten._to_copy" => same_type,
            // permute(x, [0, 1, ..]) == x.
            "torch.aten.permute" => {
                matches!(d.attrs.get("dims"), Some(Attr::Ints(p)) if p.iter().enumerate().all(|(i, &x)| x == i as i64))
            }
            _ => false,
        };
        if identity && same_type {
            m.replace_all_uses(res, src);
            m.erase_op(op);
        }
    }
    Ok(())
}

/// Merges pure ops computing the same thing; the first one in program order is kept.
pub fn cse(m: &mut Module) -> Result<(), String> {
    let mut seen: HashMap<String, OpId> = HashMap::new();
    for op in all_ops(m) {
        let d = m.op(op);
        if !is_pure(&d.name) || !d.regions.is_empty() || d.results.is_empty() {
            continue;
        }
        let types: Vec<String> = d.results.iter().map(|&r| m.ty(r).to_string()).collect();
        let key = format!("{}|{:?}|{:?}|{:?}|{:?}", d.name, d.operands, d.attrs, types, d.parent);
        match seen.get(&key) {
            Some(&first) => {
                let (old, new) = (m.op(op).results.clone(), m.op(first).results.clone());
                for (o, n) in old.into_iter().zip(new) {
                    m.replace_all_uses(o, n);
                }
                m.erase_op(op);
            }
            None => {
                seen.insert(key, op);
            }
        }
    }
    Ok(())
}

/// Deletes pure ops with no used result, last to first, so chains disappear in one sweep.
pub fn dce(m: &mut Module) -> Result<(), String> {
    let ops = all_ops(m);
    let mut uses: HashMap<ember_ir::Value, usize> = HashMap::new();
    for &op in &ops {
        for &v in &m.op(op).operands {
            *uses.entry(v).or_default() += 1;
        }
    }
    for &op in ops.iter().rev() {
        let d = m.op(op);
        if !is_pure(&d.name) || !d.regions.is_empty() {
            continue;
        }
        if d.results.iter().all(|r| uses.get(r).copied().unwrap_or(0) == 0) {
            for v in d.operands.clone() {
                if let Some(n) = uses.get_mut(&v) {
                    *n -= 1;
                }
            }
            m.erase_op(op);
        }
    }
    Ok(())
}
