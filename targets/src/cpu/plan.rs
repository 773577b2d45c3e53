//! Which values live in memory, and the steps that compute them.
//!
//! A value is materialized (gets a buffer) when something needs it in memory: function arguments
//! and results, `dot_general` results and operands (the GEMM library reads memory), reductions
//! (inlining one would recompute it per consumer element), and values used more than once unless
//! they are cheap index remaps. Every other value is inlined into the kernels that read it, so a
//! chain of elementwise, broadcast and layout ops becomes one loop nest.
//!
//! A GEMM operand that is a transpose/broadcast/reshape chain over a computed value materializes
//! only that value (e.g. convolution's im2col windows in `[C, K.., N, O..]` order, without the
//! reshape's index arithmetic) and reads it through strides. `ten.cumsum`/`ten.cumprod` results are kernel roots
//! (a running sum per line), so are `ten.scatter` results (a copy, then sequential updates), and so are computed inputs of `ten.windows`, which reads each element
//! up to kernel-size times.

use ember_ir::dialect::ten::{Class, Cost, TenOp, CHECK_ERRORS};
use ember_ir::module::{Module, OpId, Value, ValueDef};
use ember_ir::sym::SymExpr;
use ember_ir::types::DType;
use ember_ir::Attr;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub enum BufKind {
    /// The function's argument with this index (user input or weight).
    Arg(usize),
    Temp,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Buffer {
    pub dtype: String,
    /// Dims as symbolic expressions (text), evaluated at run time.
    pub dims: Vec<String>,
    pub kind: BufKind,
}

/// One operand of a GEMM: a buffer read with explicit strides (in elements) per operand dim.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StridedRef {
    pub buf: usize,
    /// Dims of the operand as the GEMM sees it.
    pub dims: Vec<String>,
    pub strides: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GemmStep {
    pub out: usize,
    pub lhs: StridedRef,
    pub rhs: StridedRef,
    pub lhs_batch: Vec<usize>,
    pub rhs_batch: Vec<usize>,
    pub lhs_contract: usize,
    pub rhs_contract: usize,
    pub lhs_free: usize,
    pub rhs_free: usize,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Step {
    /// Run kernel function `name` over the outermost output dim; `args` are the buffers it reads.
    /// A kernel that computes several values row by row writes `out` and then `also`.
    Kernel {
        name: String,
        out: usize,
        args: Vec<usize>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        also: Vec<usize>,
        /// The dim of `out` the runtime splits across threads (the kernel's range): past the
        /// leading dims of static size 1 (a batch of one), which could not be split.
        #[serde(default, skip_serializing_if = "is_zero")]
        split: usize,
        /// The kernel reduces down the rows of the columns in its range (`KernelDef::columns`
        /// is its split dim): every chunk reads all the rows, so the runtime splits the range
        /// once per thread, in whole tiles of `COLUMN_TILE` columns.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        columns: bool,
    },
    Gemm(GemmStep),
    /// Stable argsort of the dense buffer `src` along `dim` (NaN after every number, before them
    /// when `descending`, as torch orders), int64 positions into `out` (run by the runtime).
    Sort {
        out: usize,
        src: usize,
        dim: usize,
        descending: bool,
    },
    /// A `ten` op of class `Routine` over dense buffers, run by the runtime: a linalg op one
    /// matrix of the batch at a time on faer (a factorization has no loop nest to generate), or
    /// `ten.special` element by element (its loops run a number of steps that is data).
    Routine(RoutineStep),
}

impl Step {
    /// The buffers this step reads.
    pub fn reads(&self) -> Vec<usize> {
        match self {
            Step::Kernel { args, .. } => args.clone(),
            Step::Gemm(g) => vec![g.lhs.buf, g.rhs.buf],
            Step::Sort { src, .. } => vec![*src],
            Step::Routine(r) => r.ins.clone(),
        }
    }

    /// The buffers this step writes.
    pub fn writes(&self) -> Vec<usize> {
        match self {
            Step::Kernel { out, also, .. } => std::iter::once(*out).chain(also.iter().copied()).collect(),
            Step::Gemm(g) => vec![g.out],
            Step::Sort { out, .. } => vec![*out],
            Step::Routine(r) => r.outs.clone(),
        }
    }
}

/// Which factorization or solve a `Step::Routine` runs (the `ten` op and its attributes).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub enum RoutineKind {
    Cholesky {
        upper: bool,
    },
    Lu,
    LuSolve {
        adjoint: bool,
    },
    TriangularSolve {
        upper: bool,
        unitriangular: bool,
    },
    Qr {
        complete: bool,
    },
    Eigh {
        upper: bool,
    },
    Svd {
        full_matrices: bool,
    },
    Geqrf,
    HouseholderProduct,
    /// `ten.special`, element by element.
    Special(SpecialFn),
}

/// The `kind` of a `ten.special`: torch's `special_<family>_polynomial_<letter>` as
/// `<family>_<letter>`, and `igamma`/`igammac`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum SpecialFn {
    ChebyshevT,
    ChebyshevU,
    ChebyshevV,
    ChebyshevW,
    ShiftedChebyshevT,
    ShiftedChebyshevU,
    ShiftedChebyshevV,
    ShiftedChebyshevW,
    HermiteH,
    HermiteHe,
    LaguerreL,
    LegendreP,
    Igamma,
    Igammac,
}

impl SpecialFn {
    pub const ALL: [(&'static str, SpecialFn); 14] = [
        ("chebyshev_t", SpecialFn::ChebyshevT),
        ("chebyshev_u", SpecialFn::ChebyshevU),
        ("chebyshev_v", SpecialFn::ChebyshevV),
        ("chebyshev_w", SpecialFn::ChebyshevW),
        ("shifted_chebyshev_t", SpecialFn::ShiftedChebyshevT),
        ("shifted_chebyshev_u", SpecialFn::ShiftedChebyshevU),
        ("shifted_chebyshev_v", SpecialFn::ShiftedChebyshevV),
        ("shifted_chebyshev_w", SpecialFn::ShiftedChebyshevW),
        ("hermite_h", SpecialFn::HermiteH),
        ("hermite_he", SpecialFn::HermiteHe),
        ("laguerre_l", SpecialFn::LaguerreL),
        ("legendre_p", SpecialFn::LegendreP),
        ("igamma", SpecialFn::Igamma),
        ("igammac", SpecialFn::Igammac),
    ];

    /// The `kind` attribute's spelling.
    pub fn name(self) -> &'static str {
        SpecialFn::ALL.iter().find(|(_, p)| *p == self).map(|(n, _)| *n).unwrap()
    }

    pub fn of_name(name: &str) -> Option<SpecialFn> {
        SpecialFn::ALL.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
    }
}

impl RoutineKind {
    /// The `ten` op's name without its dialect.
    pub fn name(&self) -> &'static str {
        match self {
            RoutineKind::Cholesky { .. } => "cholesky",
            RoutineKind::Lu => "lu",
            RoutineKind::LuSolve { .. } => "lu_solve",
            RoutineKind::TriangularSolve { .. } => "triangular_solve",
            RoutineKind::Qr { .. } => "qr",
            RoutineKind::Eigh { .. } => "eigh",
            RoutineKind::Svd { .. } => "svd",
            RoutineKind::Geqrf => "geqrf",
            RoutineKind::HouseholderProduct => "householder_product",
            RoutineKind::Special(_) => "special",
        }
    }
    fn of(m: &Module, op: OpId) -> Option<RoutineKind> {
        let d = m.op(op);
        let flag = |n: &str| d.attrs.get(n).and_then(|a| a.as_bool()).unwrap_or(false);
        Some(match d.ten()? {
            TenOp::Cholesky => RoutineKind::Cholesky { upper: flag("upper") },
            TenOp::Lu => RoutineKind::Lu,
            TenOp::LuSolve => RoutineKind::LuSolve { adjoint: flag("adjoint") },
            TenOp::TriangularSolve => {
                RoutineKind::TriangularSolve { upper: flag("upper"), unitriangular: flag("unitriangular") }
            }
            TenOp::Qr => RoutineKind::Qr { complete: flag("complete") },
            TenOp::Eigh => RoutineKind::Eigh { upper: flag("upper") },
            TenOp::Svd => RoutineKind::Svd { full_matrices: flag("full_matrices") },
            TenOp::Geqrf => RoutineKind::Geqrf,
            TenOp::HouseholderProduct => RoutineKind::HouseholderProduct,
            TenOp::Special => RoutineKind::Special(SpecialFn::of_name(d.attrs.get("kind")?.as_str()?)?),
            _ => return None,
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RoutineStep {
    pub kind: RoutineKind,
    /// Operand buffers, dense row-major, in the op's operand order.
    pub ins: Vec<usize>,
    /// Result buffers in the op's result order.
    pub outs: Vec<usize>,
    /// Raise torch's error for this API when an `info` result is non-zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
}

pub struct Plan {
    pub buffers: Vec<Buffer>,
    pub steps: Vec<Step>,
    pub outputs: Vec<usize>,
    /// Buffer of every materialized value.
    pub buf_of: HashMap<Value, usize>,
    /// The kernels to generate, in step order.
    pub kernels: Vec<KernelDef>,
    /// Stored values whose memory order is not row-major: their dims, outermost first.
    pub layouts: super::layout::Layouts,
    /// (output buffer, argument buffer): outputs computed in the memory of the argument they
    /// update (`in_place`). The kernel writing one addresses both through the argument's pointer.
    pub in_place: Vec<(usize, usize)>,
}

/// Columns a narrow column reduction accumulates in registers at a time (one 512-bit vector of
/// f32): the runtime splits a column kernel's range in whole tiles.
pub const COLUMN_TILE: i64 = 16;

/// One generated function: its values, computed in order inside shared loops over the first
/// `outer` dims (which every value's dims start with), so values computed row by row stay in
/// cache for the later ones that read the same rows.
#[derive(Clone, Debug)]
pub struct KernelDef {
    pub name: String,
    pub roots: Vec<Value>,
    pub outer: usize,
    /// `Step::Kernel::split`: the dim the kernel's [start, end) range runs over.
    pub split: usize,
    /// Roots only this kernel reads, each one row at a time: they live in a per-row stack slot
    /// (`dims[outer..]`, static and small) instead of their memory buffer, which stays unused.
    pub scratch: Vec<Value>,
    /// A one-reduction kernel that runs as column sums: the output dim its columns are.
    pub columns: Option<usize>,
}

/// Largest per-row slot (elements) a scratch value may take on the kernel's stack.
const SCRATCH_LIMIT: i64 = 16384;

#[derive(Debug)]
pub struct PlanError(pub String);

fn loc_of(m: &Module, op: OpId) -> String {
    let d = m.op(op).loc.describe();
    if d.is_empty() {
        String::new()
    } else {
        format!(" at {d}")
    }
}

/// Ops whose value is an index remap of their operand (or of indices alone): inlining them costs
/// no arithmetic.
fn is_remap(op: Option<TenOp>) -> bool {
    op.is_some_and(|t| t.is_view() || t.class() == Class::Free)
}

pub fn dtype_name(d: DType) -> String {
    d.mlir_name().to_string()
}

/// `boundaries`: values the optimizer's kernel partition wants in memory (group results).
pub fn plan(m: &Module, f: OpId, boundaries: &[Value]) -> Result<Plan, PlanError> {
    let entry = m.entry(f);
    let ret = m.func_return(f).ok_or_else(|| PlanError("function has no return".into()))?;
    let ops: Vec<OpId> = m.block(entry).ops.iter().copied().filter(|&o| o != ret).collect();
    for &op in &ops {
        let name = &m.op(op).name;
        if m.op(op).ten().is_none() {
            return Err(PlanError(format!(
                "op `{name}`{} has no CPU lowering yet (it is not in the ten dialect after torch-to-ten)",
                loc_of(m, op)
            )));
        }
    }
    let mut uses: HashMap<Value, usize> = HashMap::new();
    for &op in &ops {
        for &v in &m.op(op).operands {
            *uses.entry(v).or_default() += 1;
        }
    }
    let mut materialize: Vec<Value> = Vec::new();
    let want = |v: Value, list: &mut Vec<Value>| {
        if !list.contains(&v) {
            list.push(v)
        }
    };
    let ret_vals = m.op(ret).operands.clone();
    for &v in ret_vals.iter().chain(boundaries) {
        if m.defining_op(v).is_some_and(|p| !is_remap(m.op(p).ten())) || ret_vals.contains(&v) {
            want(v, &mut materialize);
        }
    }
    for &op in &ops {
        let d = m.op(op);
        match d.ten().map(TenOp::class) {
            Some(Class::Contraction) => {
                want(d.results[0], &mut materialize);
                for &o in &d.operands {
                    let (base, _) = view_of(m, o, &|v| m.defining_op(v).is_none());
                    if m.defining_op(base).is_some() {
                        want(base, &mut materialize);
                    }
                }
            }
            Some(Class::Reduction | Class::Scan | Class::Scatter) => want(d.results[0], &mut materialize),
            Some(Class::Routine) => {
                for &r in &d.results {
                    want(r, &mut materialize);
                }
                for &o in &d.operands {
                    if m.defining_op(o).is_some() {
                        want(o, &mut materialize);
                    }
                }
            }
            Some(Class::Sort) => {
                want(d.results[0], &mut materialize);
                if m.defining_op(d.operands[0]).is_some() {
                    want(d.operands[0], &mut materialize);
                }
            }
            Some(Class::Window) => {
                let mut src = d.operands[0];
                while let Some(p) = m.defining_op(src).filter(|&p| m.op(p).is(TenOp::Pad)) {
                    src = m.op(p).operands[0];
                }
                if let Some(p) = m.defining_op(src) {
                    if !is_remap(m.op(p).ten()) {
                        want(src, &mut materialize);
                    }
                }
            }
            // A reshape that re-splits the innermost dim reads its operand through a division of
            // the linear index, which a transposed operand turns into a gather per element
            // (attention's head merge, [b, h, t, d] -> [b, t, h * d], into a concat: the q/k/v
            // gradients of GPT-2's backward, 12 ms a step each). The transpose is copied first,
            // the reshape then reads it contiguously.
            Some(Class::Layout) if d.is(TenOp::Reshape) => {
                let src = d.operands[0];
                let innermost = |v: Value| m.ty(v).tensor().and_then(|t| t.dims.last().cloned());
                if m.defining_op(src).is_some_and(|p| m.op(p).is(TenOp::Transpose))
                    && innermost(src) != innermost(d.results[0])
                {
                    want(src, &mut materialize);
                }
            }
            Some(Class::Unary | Class::Binary | Class::Elementwise | Class::Layout | Class::Gather | Class::Free)
            | None => {}
        }
    }
    // A value read more than once is inlined when every reader ends up in one kernel (the
    // kernel evaluates it once per element); otherwise it is materialized rather than
    // recomputed in several kernels. Consumers are decided before producers (reverse order).
    let mut roots: HashMap<Value, Vec<Value>> = HashMap::new();
    let mut cost: HashMap<Value, u32> = HashMap::new();
    let mut users: HashMap<Value, Vec<Value>> = HashMap::new();
    for &op in &ops {
        for &o in &m.op(op).operands {
            users.entry(o).or_default().push(m.op(op).results[0]);
        }
    }
    for &op in ops.iter().rev() {
        let d = m.op(op);
        let r = d.results[0];
        let mut readers: Vec<Value> = Vec::new();
        for u in users.get(&r).into_iter().flatten() {
            let rs = if materialize.contains(u) { vec![*u] } else { roots.get(u).cloned().unwrap_or_default() };
            for x in rs {
                if !readers.contains(&x) {
                    readers.push(x);
                }
            }
        }
        // Reading memory twice costs more than a few flops per element: cheap values are
        // recomputed by each kernel that reads them instead of being written and read back.
        if !materialize.contains(&r)
            && uses.get(&r).copied().unwrap_or(0) > 1
            && !is_remap(d.ten())
            && readers.len() > 1
            && inline_cost(m, r, &materialize, &mut cost) > RECOMPUTE_LIMIT
        {
            want(r, &mut materialize);
        }
        roots.insert(r, if materialize.contains(&r) { vec![r] } else { readers });
    }
    // Buffers: arguments first, then materialized values in program order.
    let mut buffers = Vec::new();
    let mut buf_of = HashMap::new();
    for (i, &a) in m.block(entry).args.iter().enumerate() {
        let t = m.ty(a).tensor().ok_or_else(|| PlanError(format!("argument {i} is not a tensor")))?;
        buf_of.insert(a, buffers.len());
        buffers.push(Buffer { dtype: dtype_name(t.dtype), dims: t.dim_strings(), kind: BufKind::Arg(i) });
    }
    // Materialized values in program order: GEMMs, and runs of kernels grouped row by row.
    let mut steps = Vec::new();
    let mut kernels: Vec<KernelDef> = Vec::new();
    let mut group: Vec<Value> = Vec::new();
    let mut outer = 0usize;
    let mut layouts = super::layout::Layouts::new();
    let flush = |group: &mut Vec<Value>,
                 outer: usize,
                 kernels: &mut Vec<KernelDef>,
                 steps: &mut Vec<Step>,
                 buf_of: &HashMap<Value, usize>,
                 layouts: &mut super::layout::Layouts| {
        if group.is_empty() {
            return;
        }
        let name = format!("k{}", kernels.len());
        let mut args = Vec::new();
        for &r in group.iter() {
            collect_reads(m, r, buf_of, &mut args);
        }
        let outs: Vec<usize> = group.iter().map(|r| buf_of[r]).collect();
        args.retain(|a| !outs.contains(a));
        let split = split_dim(m, group, outer);
        let mut step =
            Step::Kernel { name: name.clone(), out: outs[0], args, also: outs[1..].to_vec(), split, columns: false };
        let mut kd = KernelDef { name, roots: std::mem::take(group), outer, split, scratch: Vec::new(), columns: None };
        super::layout::decide(m, buf_of, &ret_vals, layouts, &mut kd, &mut step);
        steps.push(step);
        kernels.push(kd);
    };
    for &op in &ops {
        if let Some(kind) = RoutineKind::of(m, op) {
            flush(&mut group, outer, &mut kernels, &mut steps, &buf_of, &mut layouts);
            let d = m.op(op);
            let mut outs = Vec::new();
            for &r in &d.results {
                let t = m.ty(r).tensor().unwrap();
                outs.push(buffers.len());
                buf_of.insert(r, buffers.len());
                buffers.push(Buffer { dtype: dtype_name(t.dtype), dims: t.dim_strings(), kind: BufKind::Temp });
            }
            let ins = d.operands.iter().map(|o| buf_of[o]).collect();
            let check = d.attrs.get(CHECK_ERRORS).and_then(|a| a.as_str()).map(str::to_string);
            steps.push(Step::Routine(RoutineStep { kind, ins, outs, check }));
            continue;
        }
        let r = m.op(op).results[0];
        if !materialize.contains(&r) || buf_of.contains_key(&r) {
            continue;
        }
        let t = m.ty(r).tensor().unwrap();
        // A returned reshape of a GEMM result nothing else reads (a language model's logits) is
        // that result's memory under the returned shape: the GEMM writes the output directly,
        // without a copy kernel after it.
        if let Some(x) = returned_reshape_of_gemm(m, op, &ret_vals, &uses) {
            let b: usize = buf_of[&x];
            buffers[b].dims = t.dim_strings();
            buf_of.insert(r, b);
            continue;
        }
        let id = buffers.len();
        buffers.push(Buffer { dtype: dtype_name(t.dtype), dims: t.dim_strings(), kind: BufKind::Temp });
        buf_of.insert(r, id);
        if m.op(op).is(TenOp::DotGeneral) {
            flush(&mut group, outer, &mut kernels, &mut steps, &buf_of, &mut layouts);
            steps.push(Step::Gemm(gemm_step(m, op, id, &buf_of)?));
            continue;
        }
        if m.op(op).is(TenOp::Argsort) {
            flush(&mut group, outer, &mut kernels, &mut steps, &buf_of, &mut layouts);
            let d = m.op(op);
            let dim = d.attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(0) as usize;
            let descending = d.attrs.get("descending").and_then(|a| a.as_bool()).unwrap_or(false);
            steps.push(Step::Sort { out: id, src: buf_of[&d.operands[0]], dim, descending });
            continue;
        }
        let rank = t.rank();
        // A value read along another dim than its last (a channels-last input read as NCHW)
        // is computed on its own, in the memory order `layout::decide` gives it: a row group
        // walks its values' dims in order.
        let along_rows = |v: Value| {
            let stored = |w: Value| super::layout::stored(m, &buf_of, &layouts, v, w);
            super::layout::inner_dim(m, &stored, v).is_none_or(|d| d + 1 == m.ty(v).tensor().map_or(0, |t| t.rank()))
        };
        let joinable =
            !group.is_empty() && groupable(m, r) && groupable(m, group[0]) && along_rows(r) && along_rows(group[0]);
        if joinable {
            let first = m.ty(group[0]).tensor().unwrap().dims.clone();
            let mut p = 0;
            while p < outer.min(rank) && first[p] == t.dims[p] {
                p += 1;
            }
            let mut cand = group.clone();
            cand.push(r);
            if p >= 1 && rows_local(m, &cand, p, &buf_of) {
                group.push(r);
                outer = p;
                continue;
            }
        }
        flush(&mut group, outer, &mut kernels, &mut steps, &buf_of, &mut layouts);
        group.push(r);
        outer = rank;
    }
    flush(&mut group, outer, &mut kernels, &mut steps, &buf_of, &mut layouts);
    let outputs: Vec<usize> = ret_vals.iter().map(|v| buf_of[v]).collect();
    // A row group's intermediate values that no other step reads never need memory: each row
    // of them is produced and consumed inside the kernel's row loop.
    let read_elsewhere: HashSet<usize> = steps.iter().flat_map(Step::reads).collect();
    for k in &mut kernels {
        if k.roots.len() < 2 || k.outer == 0 {
            continue;
        }
        let last = *k.roots.last().unwrap();
        for &r in &k.roots {
            let b = buf_of[&r];
            let t = m.ty(r).tensor().unwrap();
            let row: Option<i64> = t.dims[k.outer.min(t.rank())..].iter().map(|d| d.as_const()).product();
            if r != last
                && !outputs.contains(&b)
                && !read_elsewhere.contains(&b)
                && row.is_some_and(|n| n <= SCRATCH_LIMIT)
            {
                k.scratch.push(r);
            }
        }
    }
    let pos: HashMap<OpId, usize> = ops.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    for k in &mut kernels {
        share_row_values(m, k, &buf_of, &pos);
    }
    Ok(Plan { buffers, steps, outputs, buf_of, kernels, layouts, in_place: Vec::new() })
}

/// Of the functionalized in-place updates `candidates` (a result of `@main`, the argument whose
/// value it replaces: an optimizer's parameters and moments), those whose value can be computed
/// in the argument's memory, recorded in `plan.in_place`: the caller then gets the update
/// without a buffer of its own nor a copy back (three passes over an AdamW state per step). An
/// argument is overwritten only where no read of its old value can follow the write: one kernel
/// writes the result, the only reads of the argument in that kernel are the result's own, at the
/// element being written (a chain of elementwise ops of one shape), and no later step reads it.
pub fn in_place(m: &Module, plan: &mut Plan, candidates: &[(Value, Value)]) {
    for &(v, arg) in candidates {
        let (Some(&out), Some(&x)) = (plan.buf_of.get(&v), plan.buf_of.get(&arg)) else { continue };
        if plan.in_place.iter().any(|&(o, a)| o == out || a == x) {
            continue;
        }
        if overwritable(m, plan, v, arg) {
            plan.in_place.push((out, x));
        }
    }
}

fn overwritable(m: &Module, plan: &Plan, v: Value, arg: Value) -> bool {
    let (out, x) = (plan.buf_of[&v], plan.buf_of[&arg]);
    let (bo, bx) = (&plan.buffers[out], &plan.buffers[x]);
    if bo.kind != BufKind::Temp
        || !matches!(bx.kind, BufKind::Arg(_))
        || bo.dtype != bx.dtype
        || bo.dims != bx.dims
        || plan.layouts.contains_key(&v)
        || plan.outputs.contains(&x)
    {
        return false;
    }
    let writers: Vec<usize> = (0..plan.steps.len()).filter(|&i| plan.steps[i].writes().contains(&out)).collect();
    let [w] = writers[..] else { return false };
    let Step::Kernel { name, columns: false, .. } = &plan.steps[w] else { return false };
    if plan.steps[w + 1..].iter().any(|st| st.reads().contains(&x)) {
        return false;
    }
    let Some(k) = plan.kernels.iter().find(|k| k.name == *name) else { return false };
    if !k.roots.contains(&v) || k.scratch.contains(&v) {
        return false;
    }
    for &r in k.roots.iter().filter(|&&r| r != v) {
        let mut reads = Vec::new();
        collect_reads(m, r, &plan.buf_of, &mut reads);
        if reads.contains(&x) {
            return false;
        }
    }
    reads_own_element(m, &plan.buf_of, v, arg)
}

/// Whether every read of `arg` in the inlined expression of `root` is at the element `root`
/// computes: through elementwise ops whose operands have the result's dims only.
fn reads_own_element(m: &Module, buf_of: &HashMap<Value, usize>, root: Value, arg: Value) -> bool {
    let dims = |v: Value| m.ty(v).tensor().map(|t| t.dims.clone());
    let mut seen: HashSet<(Value, bool)> = HashSet::new();
    let mut stack = vec![(root, true)];
    while let Some((v, aligned)) = stack.pop() {
        if v == arg {
            if !aligned {
                return false;
            }
            continue;
        }
        if (v != root && buf_of.contains_key(&v)) || !seen.insert((v, aligned)) {
            continue;
        }
        let Some(op) = m.defining_op(v) else { continue };
        let d = m.op(op);
        let same = elementwise(d.ten());
        for &o in &d.operands {
            stack.push((o, aligned && same && dims(o) == dims(v)));
        }
    }
    true
}

/// Inlined values that several passes of a row group read (LayerNorm's output is read by the
/// softmax's max, exp-sum and final passes; the exp by the last two) are computed once per row
/// into a stack row (they become scratch roots without a buffer), so later passes re-read them
/// from L1 instead of recomputing the expression. Values cheaper than `SHARE_MIN_COST` are still
/// recomputed: a store and a reload cost about as much as one operation.
fn share_row_values(m: &Module, k: &mut KernelDef, buf_of: &HashMap<Value, usize>, pos: &HashMap<OpId, usize>) {
    if k.outer == 0 || k.roots.len() < 2 {
        return;
    }
    let prefix = m.ty(k.roots[0]).tensor().unwrap().dims[..k.outer].to_vec();
    // The values the kernel's passes evaluate (inlined into some root), and their users there.
    let mut inner: Vec<Value> = Vec::new();
    let mut users: HashMap<Value, Vec<Value>> = HashMap::new();
    let mut stack: Vec<Value> = k.roots.clone();
    let mut seen: Vec<Value> = k.roots.clone();
    while let Some(v) = stack.pop() {
        let Some(op) = m.defining_op(v) else { continue };
        for &o in &m.op(op).operands {
            if buf_of.contains_key(&o) || m.defining_op(o).is_none() {
                continue;
            }
            users.entry(o).or_default().push(v);
            if !seen.contains(&o) {
                seen.push(o);
                inner.push(o);
                stack.push(o);
            }
        }
    }
    // Consumers before producers: a value's passes are its users' passes (a root or shared value
    // is its own pass); `row_ident` says every read of it is at its own index (so a pass over a
    // row reads exactly that row of it).
    let order = |v: &Value| m.defining_op(*v).and_then(|o| pos.get(&o).copied()).unwrap_or(0);
    inner.sort_by_key(|v| std::cmp::Reverse(order(v)));
    let mut passes: HashMap<Value, Vec<Value>> = k.roots.iter().map(|&r| (r, vec![r])).collect();
    let mut row_ident: HashMap<Value, bool> = k.roots.iter().map(|&r| (r, true)).collect();
    let mut shared: Vec<Value> = Vec::new();
    for &v in &inner {
        let mut ps: Vec<Value> = Vec::new();
        let mut ident = true;
        for u in &users[&v] {
            for &p in &passes[u] {
                if !ps.contains(&p) {
                    ps.push(p);
                }
            }
            let un = m.op(m.defining_op(*u).unwrap()).ten();
            let pointwise =
                if un == Some(TenOp::Reduce) { k.roots.contains(u) } else { elementwise(un) && row_ident[u] };
            ident &= pointwise;
        }
        let t = m.ty(v).tensor();
        let row: Option<i64> = t
            .filter(|t| t.rank() >= k.outer && t.dims[..k.outer] == prefix[..])
            .and_then(|t| t.dims[k.outer..].iter().map(|d| d.as_const()).product());
        let expensive =
            || row_cost(m, v, &|x| buf_of.contains_key(&x) || shared.contains(&x), SHARE_MIN_COST) >= SHARE_MIN_COST;
        let op = m.defining_op(v).unwrap();
        if ps.len() >= 2
            && ident
            && !is_remap(m.op(op).ten())
            && row.is_some_and(|n| (1..=SCRATCH_LIMIT).contains(&n))
            && expensive()
        {
            shared.push(v);
            ps = vec![v];
        }
        passes.insert(v, ps);
        row_ident.insert(v, ident);
    }
    if shared.is_empty() {
        return;
    }
    // Each shared value runs as its own pass right before the first pass that reads it.
    let mut roots = Vec::new();
    fn place(m: &Module, v: Value, shared: &[Value], buf_of: &HashMap<Value, usize>, roots: &mut Vec<Value>) {
        let mut reads = Vec::new();
        direct_shared(m, v, true, shared, buf_of, &mut reads, &mut HashSet::new());
        for w in reads {
            if !roots.contains(&w) {
                place(m, w, shared, buf_of, roots);
            }
        }
        roots.push(v);
    }
    for &r in &k.roots.clone() {
        place(m, r, &shared, buf_of, &mut roots);
    }
    k.scratch.extend(roots.iter().filter(|r| shared.contains(r)));
    k.roots = roots;
}

/// Shared values an expression reads directly (not through another shared or materialized value).
/// `visited` keeps the walk linear in the expression's DAG (a value read along several paths is
/// walked once).
fn direct_shared(
    m: &Module,
    v: Value,
    root: bool,
    shared: &[Value],
    buf_of: &HashMap<Value, usize>,
    out: &mut Vec<Value>,
    visited: &mut HashSet<Value>,
) {
    if !visited.insert(v) {
        return;
    }
    if !root && shared.contains(&v) {
        if !out.contains(&v) {
            out.push(v);
        }
        return;
    }
    if !root && buf_of.contains_key(&v) {
        return;
    }
    if let Some(op) = m.defining_op(v) {
        for &o in &m.op(op).operands {
            direct_shared(m, o, false, shared, buf_of, out, visited);
        }
    }
}

/// Arithmetic per element of an inlined expression, down to `stop` values, counted up to `cap`
/// (the walk stops there: it unfolds the expression's DAG into a tree, exponential in the depth
/// of a long select chain); a broadcast's operand varies along fewer dims (LLVM hoists it out of
/// the inner loop), so it counts nothing.
fn row_cost(m: &Module, v: Value, stop: &dyn Fn(Value) -> bool, cap: u32) -> u32 {
    let Some(op) = m.defining_op(v) else { return 0 };
    let d = m.op(op);
    if d.is(TenOp::Broadcast) {
        return 0;
    }
    let mut c = op_cost(d.ten());
    for &o in d.operands.iter().filter(|&&o| !stop(o)) {
        if c >= cap {
            break;
        }
        c = c.saturating_add(row_cost(m, o, stop, cap - c));
    }
    c
}

/// Least inlined arithmetic per element for a value several passes read to get its own row pass.
const SHARE_MIN_COST: u32 = 2;

/// Elementwise ops: their operands are read at the result's own index.
fn elementwise(op: Option<TenOp>) -> bool {
    op.is_some_and(TenOp::is_elementwise)
}

/// Kernel roots that may share loops with others: plain index functions and reductions.
fn groupable(m: &Module, r: Value) -> bool {
    let Some(op) = m.defining_op(r) else { return false };
    !m.op(op).ten().is_some_and(|t| matches!(t.class(), Class::Scan | Class::Scatter))
        && m.ty(r).tensor().is_some_and(|t| t.rank() >= 1)
}

/// Whether every member reads earlier members' values only at its own row (the same index in
/// the first `p` dims), so they can run one row at a time inside shared outer loops.
fn rows_local(m: &Module, members: &[Value], p: usize, buf_of: &HashMap<Value, usize>) -> bool {
    let identity: Vec<Option<usize>> = (0..p).map(Some).collect();
    for (i, &r) in members.iter().enumerate() {
        let seen = &mut HashSet::new();
        let internal = &members[..i];
        let op = m.defining_op(r).unwrap();
        let d = m.op(op);
        if d.is(TenOp::Reduce) {
            // Reduced dims must lie past the row prefix; then the operand's prefix is the row.
            let rd = d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]);
            if rd.iter().any(|&x| (x as usize) < p) || !reads_row(m, d.operands[0], &identity, internal, buf_of, seen) {
                return false;
            }
        } else if !expr_rows(m, r, &identity, internal, buf_of, seen) {
            return false;
        }
    }
    true
}

/// The (value, map) pairs an expression walk has already found row-local: shared
/// subexpressions (a select chain reading its previous value twice per step) are checked once,
/// which keeps the walk linear in the DAG rather than in its unfolded tree.
type Seen = HashSet<(Value, Vec<Option<usize>>)>;

/// `map[k]` is the index position holding outer index k (None once a layout op loses track).
fn reads_row(
    m: &Module,
    v: Value,
    map: &[Option<usize>],
    internal: &[Value],
    buf_of: &HashMap<Value, usize>,
    seen: &mut Seen,
) -> bool {
    if buf_of.contains_key(&v) {
        return !internal.contains(&v) || map.iter().enumerate().all(|(k, &pos)| pos == Some(k));
    }
    expr_rows(m, v, map, internal, buf_of, seen)
}

fn expr_rows(
    m: &Module,
    v: Value,
    map: &[Option<usize>],
    internal: &[Value],
    buf_of: &HashMap<Value, usize>,
    seen: &mut Seen,
) -> bool {
    if seen.contains(&(v, map.to_vec())) {
        return true;
    }
    let Some(op) = m.defining_op(v) else { return true };
    let d = m.op(op);
    let ints = |k: &str| d.attrs.get(k).and_then(|a| a.as_ints()).map(|v| v.to_vec()).unwrap_or_default();
    let same_shape = elementwise(d.ten());
    let child_map: Vec<Option<usize>> = if same_shape {
        map.to_vec()
    } else if d.is(TenOp::Broadcast) {
        let dims = ints("dims");
        let (src, out) = (m.ty(d.operands[0]).tensor().unwrap(), m.ty(v).tensor().unwrap());
        map.iter()
            .map(|pos| {
                let p = (*pos)?;
                let i = dims.iter().position(|&x| x as usize == p)?;
                let squeezed = src.dims[i].as_const() == Some(1) && out.dims[p].as_const() != Some(1);
                (!squeezed).then_some(i)
            })
            .collect()
    } else if d.is(TenOp::Transpose) {
        let perm = ints("dims");
        map.iter().map(|pos| pos.and_then(|p| perm.get(p).map(|&x| x as usize))).collect()
    } else {
        vec![None; map.len()]
    };
    let ok = d.operands.iter().all(|&o| reads_row(m, o, &child_map, internal, buf_of, seen));
    if ok {
        seen.insert((v, map.to_vec()));
    }
    ok
}

/// Most arithmetic per element a value may cost and still be recomputed by several kernels.
const RECOMPUTE_LIMIT: u32 = 12;

/// Arithmetic per element of a value's inlined expression, down to materialized values
/// (transcendentals count 4, index remaps 0).
pub fn inline_cost(m: &Module, v: Value, materialized: &[Value], memo: &mut HashMap<Value, u32>) -> u32 {
    if let Some(&c) = memo.get(&v) {
        return c;
    }
    let Some(op) = m.defining_op(v) else { return 0 };
    let d = m.op(op);
    let own = op_cost(d.ten());
    let operands = d.operands.clone();
    let mut c = own;
    for o in operands {
        if !materialized.contains(&o) {
            c = c.saturating_add(inline_cost(m, o, materialized, memo));
        }
    }
    memo.insert(v, c);
    c
}

/// Arithmetic per element of one op inlined: transcendentals count 4, index remaps 0, ops that
/// cannot be inlined (reductions, matmuls, scans) count as too much to recompute.
fn op_cost(op: Option<TenOp>) -> u32 {
    let Some(t) = op else { return 1 };
    if is_remap(op) {
        return 0;
    }
    match (t.class(), t.cost()) {
        (Class::Reduction | Class::Contraction | Class::Scan | Class::Scatter, _) => u32::MAX / 4,
        (_, Cost::Transcendental) => 4,
        (_, Cost::Simple | Cost::Divide) => 1,
    }
}

/// Buffers an inlined expression reads, in first-visit order (the kernel's argument order).
/// `seen` keeps the walk linear: a value read along several paths (`y * y`) is visited once.
pub fn collect_reads(m: &Module, root: Value, buf_of: &HashMap<Value, usize>, out: &mut Vec<usize>) {
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(v) = stack.pop() {
        if !seen.insert(v) {
            continue;
        }
        if v != root {
            if let Some(&b) = buf_of.get(&v) {
                if !out.contains(&b) {
                    out.push(b);
                }
                continue;
            }
        }
        if let ValueDef::Result(op, _) = m.value(v).def {
            stack.extend(m.op(op).operands.iter().rev());
        }
    }
}

fn c(v: i64) -> SymExpr {
    SymExpr::Const(v)
}

/// Row-major strides of a shape.
pub fn contiguous_strides(dims: &[SymExpr]) -> Vec<SymExpr> {
    let mut s = vec![c(1); dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = SymExpr::times(s[i + 1].clone(), dims[i + 1].clone());
    }
    s
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The dim a kernel computing `group` (sharing its first `outer` dims) splits across threads:
/// the first of its loop dims not of static size 1, before its last one (a row group's before
/// the rows). Scans and scatters read their range themselves: always dim 0.
fn split_dim(m: &Module, group: &[Value], outer: usize) -> usize {
    let dims = &m.ty(group[0]).tensor().unwrap().dims;
    let own = m
        .defining_op(group[0])
        .is_some_and(|o| matches!(m.op(o).ten().map(TenOp::class), Some(Class::Scan | Class::Scatter)));
    let loops = if group.len() == 1 { dims.len() } else { outer };
    if own {
        return 0;
    }
    dims.iter().take(loops.saturating_sub(1)).take_while(|d| d.as_const() == Some(1)).count()
}

/// The GEMM result `op` reshapes, when `op`'s value is returned and is the only reader of it.
fn returned_reshape_of_gemm(m: &Module, op: OpId, ret_vals: &[Value], uses: &HashMap<Value, usize>) -> Option<Value> {
    let d = m.op(op);
    let x = *d.operands.first()?;
    let gemm = m.defining_op(x).is_some_and(|p| m.op(p).is(TenOp::DotGeneral));
    (d.is(TenOp::Reshape)
        && gemm
        && ret_vals.contains(&d.results[0])
        && !ret_vals.contains(&x)
        && uses.get(&x) == Some(&1))
    .then_some(x)
}

/// How a GEMM reads `v`: (the value in memory, strides per dim of `v`). Transposes and
/// broadcasts of a value become strides; a reshape does when its operand is read contiguously,
/// else its operand is the value to materialize. `in_memory` says which values already have
/// buffers; any other op is itself the value to materialize (with contiguous strides).
pub fn view_of(m: &Module, v: Value, in_memory: &dyn Fn(Value) -> bool) -> (Value, Vec<SymExpr>) {
    let own = |x: Value| (x, contiguous_strides(&m.ty(x).tensor().map(|t| t.dims.clone()).unwrap_or_default()));
    if in_memory(v) {
        return own(v);
    }
    let Some(op) = m.defining_op(v) else { return own(v) };
    let d = m.op(op);
    match d.ten() {
        Some(TenOp::Transpose) => {
            let (base, s) = view_of(m, d.operands[0], in_memory);
            let Some(perm) = d.attrs.get("dims").and_then(|a| a.as_ints()) else { return own(v) };
            (base, perm.iter().map(|&p| s[p as usize].clone()).collect())
        }
        Some(TenOp::Broadcast) => {
            let (base, s) = view_of(m, d.operands[0], in_memory);
            let (Some(src), Some(out), Some(map)) =
                (m.ty(d.operands[0]).tensor(), m.ty(v).tensor(), d.attrs.get("dims").and_then(|a| a.as_ints()))
            else {
                return own(v);
            };
            let mut st = vec![c(0); out.rank()];
            for (i, &to) in map.iter().enumerate() {
                let to = to as usize;
                st[to] = if src.dims[i].as_const() == Some(1) && out.dims[to].as_const() != Some(1) {
                    c(0)
                } else {
                    s[i].clone()
                };
            }
            (base, st)
        }
        Some(TenOp::Reshape) => {
            let x = d.operands[0];
            let (base, s) = view_of(m, x, in_memory);
            let xd = m.ty(x).tensor().map(|t| t.dims.clone()).unwrap_or_default();
            let dense = contiguous_strides(&xd);
            let contiguous = xd.iter().zip(s.iter().zip(&dense)).all(|(n, (a, b))| a == b || n.as_const() == Some(1));
            let base = if contiguous { base } else { x };
            (base, own(v).1)
        }
        _ => own(v),
    }
}

fn gemm_step(m: &Module, op: OpId, out: usize, buf_of: &HashMap<Value, usize>) -> Result<GemmStep, PlanError> {
    let d = m.op(op);
    let ints = |k: &str| -> Vec<usize> {
        match d.attrs.get(k) {
            Some(Attr::Ints(v)) => v.iter().map(|&x| x as usize).collect(),
            _ => vec![],
        }
    };
    let (lb, rb, lc, rc) = (ints("lhs_batch"), ints("rhs_batch"), ints("lhs_contract"), ints("rhs_contract"));
    let (lt, rt) = (m.ty(d.operands[0]).tensor().unwrap(), m.ty(d.operands[1]).tensor().unwrap());
    let free = |rank: usize, b: &[usize], c: &[usize]| -> Vec<usize> {
        (0..rank).filter(|i| !b.contains(i) && !c.contains(i)).collect()
    };
    let (lf, rf) = (free(lt.rank(), &lb, &lc), free(rt.rank(), &rb, &rc));
    if lc.len() != 1 || lf.len() != 1 || rf.len() != 1 {
        return Err(PlanError(format!(
            "`ten.dot_general`{}: the CPU GEMM handles one contracting and one free dim per side (got lhs {} free/{} contracting, rhs {} free)",
            loc_of(m, op),
            lf.len(),
            lc.len(),
            rf.len()
        )));
    }
    let sref = |v: Value| -> Result<StridedRef, PlanError> {
        let t = m.ty(v).tensor().unwrap();
        let (b, s) = view_of(m, v, &|x| buf_of.contains_key(&x));
        let buf = *buf_of
            .get(&b)
            .ok_or_else(|| PlanError(format!("`ten.dot_general`{}: an operand is not in memory", loc_of(m, op))))?;
        Ok(StridedRef { buf, dims: t.dim_strings(), strides: s.iter().map(|e| e.to_string()).collect() })
    };
    Ok(GemmStep {
        out,
        lhs: sref(d.operands[0])?,
        rhs: sref(d.operands[1])?,
        lhs_batch: lb,
        rhs_batch: rb,
        lhs_contract: lc[0],
        rhs_contract: rc[0],
        lhs_free: lf[0],
        rhs_free: rf[0],
    })
}
