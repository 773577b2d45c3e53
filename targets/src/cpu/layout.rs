//! Memory order of the values kernels store for other kernels. A value is stored row-major in its
//! own dims unless most of what it is computed from is stored along another dim (a channels-last
//! activation read as NCHW): then that dim is stored innermost, so the kernel that writes it and
//! the kernels that read it walk memory in order instead of one element per cache line. A
//! reduction that keeps the dim its operand is stored along runs as column sums.

use super::plan::{KernelDef, Step};
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::{Module, Value};
use ember_ir::DType;
use std::collections::HashMap;

/// Per stored value whose memory order is not row-major: its dims, outermost first.
pub(super) type Layouts = HashMap<Value, Vec<usize>>;

/// The dim of `v` along which the memory its value is mostly read from is contiguous: the
/// innermost dim of a stored value (`stored`), moved by the transposes and broadcasts between,
/// through elementwise ops (from an operand that is not a broadcast or constant). None where a
/// reshape or any other op intervenes.
pub(super) fn inner_dim(m: &Module, stored: &dyn Fn(Value) -> Option<usize>, v: Value) -> Option<usize> {
    walk(m, stored, v, 0, &mut HashMap::new())
}

/// `inner_dim` at `depth` hops from where it started, each answer kept (a value an expression
/// reads along several paths, `y * y`, is walked once, not once per path).
fn walk(
    m: &Module,
    stored: &dyn Fn(Value) -> Option<usize>,
    v: Value,
    depth: u32,
    seen: &mut HashMap<(Value, u32), Option<usize>>,
) -> Option<usize> {
    if let Some(&r) = seen.get(&(v, depth)) {
        return r;
    }
    let r = walk_uncached(m, stored, v, depth, seen);
    seen.insert((v, depth), r);
    r
}

fn walk_uncached(
    m: &Module,
    stored: &dyn Fn(Value) -> Option<usize>,
    v: Value,
    depth: u32,
    seen: &mut HashMap<(Value, u32), Option<usize>>,
) -> Option<usize> {
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
            let inner = walk(m, stored, d.operands[0], depth + 1, seen)?;
            ints("dims").iter().position(|&p| p as usize == inner)
        }
        TenOp::Broadcast => {
            let x = d.operands[0];
            let inner = walk(m, stored, x, depth + 1, seen)?;
            let size = m.ty(x).tensor().and_then(|t| t.dims.get(inner).and_then(|s| s.as_const()));
            if size == Some(1) {
                return None;
            }
            ints("dims").get(inner).map(|&o| o as usize)
        }
        _ if t.is_elementwise() => d
            .operands
            .iter()
            .filter(|&&o| {
                m.ty(o).tensor().map(|t| t.dims.len()) == Some(rank)
                    && m.defining_op(o).is_none_or(|p| {
                        !matches!(m.op(p).ten(), Some(TenOp::Broadcast | TenOp::Constant | TenOp::Iota))
                    })
            })
            .find_map(|&o| walk(m, stored, o, depth + 1, seen)),
        _ => None,
    }
}

/// The memory layout (`Plan::layouts`) or column reduction (`KernelDef::columns`,
/// `Step::Kernel::columns`) of kernel `kd`, just planned as `step`, from the layouts of the
/// values it reads (the plan calls it kernel by kernel in program order). A value a one-value
/// kernel stores for other kernels only is laid out with the dim its expression reads along
/// memory innermost, the others in order: only values every reader inlines index by index
/// (elementwise ops, transposes, broadcasts, reductions), never results, GEMM operands or
/// reshapes (which read memory by linear index). A reduction that keeps that dim runs as
/// column sums.
pub(super) fn decide(
    m: &Module,
    buf_of: &HashMap<Value, usize>,
    results: &[Value],
    layouts: &mut Layouts,
    kd: &mut KernelDef,
    step: &mut Step,
) {
    let [r] = kd.roots[..] else { return };
    let Some(op) = m.defining_op(r) else { return };
    let Some(t) = m.op(op).ten() else { return };
    let rank = m.ty(r).tensor().map(|t| t.dims.len()).unwrap_or(0);
    if t == TenOp::Reduce {
        kd.columns = column_dim(m, op, &|v| stored(m, buf_of, layouts, r, v));
        if let Step::Kernel { columns, .. } = step {
            *columns = kd.columns == Some(kd.split);
        }
        return;
    }
    if rank < 2 || !(t.is_elementwise() || matches!(t, TenOp::Transpose | TenOp::Broadcast)) {
        return;
    }
    if results.contains(&r) {
        return;
    }
    let Some(inner) = inner_dim(m, &|v| stored(m, buf_of, layouts, r, v), r).filter(|&i| i + 1 != rank) else {
        return;
    };
    let readers_index = m.uses(r).iter().all(|&(u, _)| {
        m.op(u)
            .ten()
            .is_some_and(|t| t.is_elementwise() || matches!(t, TenOp::Transpose | TenOp::Broadcast | TenOp::Reduce))
    });
    if readers_index {
        layouts.insert(r, (0..rank).filter(|&d| d != inner).chain([inner]).collect());
    }
}

/// For `inner_dim` while value `own` is being computed: the innermost dim of every other value
/// in memory, by its layout.
pub(super) fn stored(
    m: &Module,
    buf_of: &HashMap<Value, usize>,
    layouts: &Layouts,
    own: Value,
    v: Value,
) -> Option<usize> {
    if v == own || !buf_of.contains_key(&v) {
        return None;
    }
    let n = m.ty(v).tensor().map(|t| t.dims.len()).unwrap_or(0);
    Some(layouts.get(&v).map_or(n.saturating_sub(1), |p| p[n - 1]))
}

/// The output dim a reduction runs along as columns: the kept dim its operand is read along
/// in memory, when the accumulator can live in the output (its dtype is the arithmetic type)
/// and the rows are not short.
fn column_dim(m: &Module, op: ember_ir::OpId, stored: &dyn Fn(Value) -> Option<usize>) -> Option<usize> {
    let d = m.op(op);
    let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("sum");
    if !matches!(kind, "sum" | "prod" | "max" | "min") {
        return None;
    }
    let x = d.operands[0];
    let (xt, ot) = (m.ty(x).tensor()?, m.ty(d.results[0]).tensor()?);
    if xt.dtype != ot.dtype || !matches!(xt.dtype, DType::F32 | DType::F64 | DType::I32 | DType::I64) {
        return None;
    }
    let rdims: Vec<usize> =
        d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
    let rank = xt.dims.len();
    if rdims.is_empty() || ot.dims.len() + rdims.len() != rank {
        return None;
    }
    let inner = inner_dim(m, stored, x).unwrap_or(rank - 1);
    if rdims.contains(&inner) {
        return None;
    }
    let oc = inner - rdims.iter().filter(|&&r| r < inner).count();
    ot.dims[oc].as_const().is_none_or(|n| n >= 8).then_some(oc)
}
