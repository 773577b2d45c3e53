//! Memory order of the values kernels store for other kernels. A value is stored row-major in its
//! own dims unless most of what it is computed from is stored along another dim (a channels-last
//! activation read as NCHW): then that dim is stored innermost, so the kernel that writes it and
//! the kernels that read it walk memory in order instead of one element per cache line.

use crate::cpu::plan::{KernelDef, Plan};
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::{Module, Value};
use std::collections::HashMap;

/// Per stored value whose memory order is not row-major: its dims, outermost first.
pub(super) type Layouts = HashMap<Value, Vec<usize>>;

/// The dim of `v` along which the memory its value is mostly read from is contiguous: the
/// innermost dim of a stored value (`stored`), moved by the transposes and broadcasts between,
/// through elementwise ops (from an operand that is not a broadcast or constant). None where a
/// reshape or any other op intervenes.
pub(super) fn inner_dim(m: &Module, stored: &dyn Fn(Value) -> Option<usize>, v: Value, depth: u32) -> Option<usize> {
    let rank = m.ty(v).tensor().map(|t| t.dims.len()).unwrap_or(0);
    if rank == 0 || depth > 32 {
        return None;
    }
    if let Some(d) = stored(v) {
        return Some(d);
    }
    let Some(op) = m.defining_op(v) else { return Some(rank - 1) };
    let d = m.op(op);
    let ints = |name: &str| d.attrs.get(name).and_then(|a| a.as_ints()).unwrap_or(&[]).to_vec();
    let t = d.ten()?;
    match t {
        TenOp::Transpose => {
            let inner = inner_dim(m, stored, d.operands[0], depth + 1)?;
            ints("dims").iter().position(|&p| p as usize == inner)
        }
        TenOp::Broadcast => {
            let x = d.operands[0];
            let inner = inner_dim(m, stored, x, depth + 1)?;
            let size = m.ty(x).tensor().and_then(|t| t.dims.get(inner).and_then(|s| s.as_const()));
            if size == Some(1) {
                return None;
            }
            ints("dims").get(inner).map(|&o| o as usize)
        }
        _ if t.is_elementwise() || t == TenOp::Convert => d
            .operands
            .iter()
            .filter(|&&o| {
                m.ty(o).tensor().map(|t| t.dims.len()) == Some(rank)
                    && m.defining_op(o).is_none_or(|p| {
                        !matches!(m.op(p).ten(), Some(TenOp::Broadcast | TenOp::Constant | TenOp::Iota))
                    })
            })
            .find_map(|&o| inner_dim(m, stored, o, depth + 1)),
        _ => None,
    }
}

/// The memory order of each value a one-value kernel stores for other kernels only, where it
/// differs from row-major: the dim its expression reads along memory goes innermost, the others
/// keep their order. Only values every reader inlines index by index (elementwise ops,
/// transposes, broadcasts, reductions), never results, GEMM operands or reshapes (which read
/// memory by linear index).
pub(super) fn assign(m: &Module, plan: &Plan, kernels: &[KernelDef]) -> Layouts {
    let results: std::collections::HashSet<usize> = plan.outputs.iter().copied().collect();
    let mut layouts = Layouts::new();
    for kd in kernels {
        let [r] = kd.roots[..] else { continue };
        let Some(op) = m.defining_op(r) else { continue };
        let Some(t) = m.op(op).ten() else { continue };
        let rank = m.ty(r).tensor().map(|t| t.dims.len()).unwrap_or(0);
        if rank < 2 || !(t.is_elementwise() || matches!(t, TenOp::Convert | TenOp::Transpose | TenOp::Broadcast)) {
            continue;
        }
        if plan.buf_of.get(&r).is_none_or(|b| results.contains(b)) {
            continue;
        }
        let stored = |v: Value| -> Option<usize> {
            if v == r || !plan.buf_of.contains_key(&v) {
                return None;
            }
            let n = m.ty(v).tensor().map(|t| t.dims.len()).unwrap_or(0);
            Some(layouts.get(&v).map_or(n.saturating_sub(1), |p| p[n - 1]))
        };
        let Some(inner) = inner_dim(m, &stored, r, 0).filter(|&i| i + 1 != rank) else { continue };
        let readers_index = m.uses(r).iter().all(|&(u, _)| {
            m.op(u).ten().is_some_and(|t| {
                t.is_elementwise() || matches!(t, TenOp::Convert | TenOp::Transpose | TenOp::Broadcast | TenOp::Reduce)
            })
        });
        if readers_index {
            layouts.insert(r, (0..rank).filter(|&d| d != inner).chain([inner]).collect());
        }
    }
    layouts
}
