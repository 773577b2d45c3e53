//! Kernel formation after extraction: the remaining top-level `ten` ops become `ember.fusion_group`s
//! of kind `gemm` (a `ten.dot_general` and its epilogue: bias, activation, residual) and `loop`
//! (elementwise, layout and reduction ops that share loops). Composite groups from the e-graph
//! stay as they are, except that a `gelu`/`silu` right after a matmul joins its epilogue.
//!
//! Groups are convex: an op joins a group only when each of its operands is produced inside the
//! group, is a function argument or block-free value, or is produced before the group's first op
//! (program order is topological, so such a producer cannot depend on the group). That check is
//! O(1) per op, which keeps partitioning linear on 100k-op graphs. Constants and iotas join no
//! group: every group that reads one gets its own copy (they cost no memory traffic).

use super::cost::CostTable;
use super::Trace;
use ember_ir::dialect::ten::{Class, TenOp};
use ember_ir::module::{BlockId, OpId, ValueDef};
use ember_ir::{Attr, Attrs, Loc, Module, Type, Value};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

fn is_elementwise(op: Option<TenOp>) -> bool {
    op.is_some_and(TenOp::is_elementwise)
}

fn is_layout(op: Option<TenOp>) -> bool {
    op.is_some_and(|t| t.class() == Class::Layout)
}

fn is_free(op: Option<TenOp>) -> bool {
    op.is_some_and(|t| t.class() == Class::Free)
}

/// Ops a `loop` group may hold.
fn loopable(op: Option<TenOp>) -> bool {
    is_elementwise(op) || is_layout(op) || op.is_some_and(|t| t.class() == Class::Reduction)
}

/// Ops that may follow a matmul inside its `gemm` group.
fn epilogue(op: Option<TenOp>) -> bool {
    is_elementwise(op) || matches!(op, Some(TenOp::Broadcast | TenOp::Reshape))
}

pub fn partition(m: &mut Module, entry: BlockId, table: &CostTable, trace: &mut Trace) -> Result<(), String> {
    let ops: Vec<OpId> = hoisted(m, &m.block(entry).ops);
    let pos: HashMap<OpId, usize> = ops.iter().enumerate().map(|(i, &o)| (o, i)).collect();
    let producer = |m: &Module, v: Value| -> Option<OpId> {
        match m.value(v).def {
            ValueDef::Result(op, _) if pos.contains_key(&op) => Some(op),
            _ => None,
        }
    };
    // The data-flow graph of the body (petgraph), for use counts and the group DAG check.
    let mut g: DiGraph<OpId, ()> = DiGraph::new();
    let idx: HashMap<OpId, NodeIndex> = ops.iter().map(|&o| (o, g.add_node(o))).collect();
    for &o in &ops {
        for &v in &m.op(o).operands {
            if let Some(p) = producer(m, v) {
                g.add_edge(idx[&p], idx[&o], ());
            }
        }
    }
    let mut value_users: HashMap<Value, Vec<OpId>> = HashMap::new();
    for &o in &ops {
        for &v in &m.op(o).operands {
            value_users.entry(v).or_default().push(o);
        }
    }
    let users = |o: OpId| -> Vec<OpId> {
        let mut u: Vec<OpId> = g.neighbors_directed(idx[&o], petgraph::Direction::Outgoing).map(|n| g[n]).collect();
        u.sort_by_key(|x| pos[x]);
        u.dedup();
        u
    };
    let mut group_of: HashMap<OpId, usize> = HashMap::new();
    let mut groups: Vec<(String, Vec<OpId>, Attrs)> = Vec::new();
    // Each gemm group's epilogue chain, in order (its `members` also hold pulled-in views).
    let mut chains: Vec<Vec<OpId>> = Vec::new();
    let kind_of = |m: &Module, o: OpId| -> Option<String> {
        let d = m.op(o);
        (d.name == "ember.fusion_group").then(|| d.attrs.get("kind").and_then(|k| k.as_str()).unwrap_or("").to_string())
    };
    // 1. gemm groups: a matmul, then single-use epilogue ops in a chain.
    for &o in &ops {
        if !m.op(o).is(TenOp::DotGeneral) || group_of.contains_key(&o) {
            continue;
        }
        let gi = groups.len();
        let mut members = vec![o];
        // Layout chains on the operands (a transposed weight, a reshaped activation) are read
        // by the matmul through strides: they join the group when the matmul is their only reader.
        for &v in &m.op(o).operands {
            let mut p = producer(m, v);
            let mut chain = Vec::new();
            while let Some(q) = p.filter(|&q| {
                is_layout(m.op(q).ten())
                    && m.op(q).operands.len() == 1
                    && users(q).len() == 1
                    && !group_of.contains_key(&q)
            }) {
                chain.push(q);
                p = producer(m, m.op(q).operands[0]);
            }
            // A chain that ends at a computed value joins only where the matmul reads views.
            if p.is_none() || table.matmul_reads_views {
                members.extend(chain);
            }
        }
        let mut activation = "none".to_string();
        let mut chain = Vec::new();
        let mut cur = o;
        loop {
            let us = users(cur);
            if us.len() != 1 {
                break;
            }
            let u = us[0];
            let act = kind_of(m, u).filter(|k| (k == "gelu" || k == "silu") && activation == "none");
            if !(epilogue(m.op(u).ten()) || act.is_some()) || group_of.contains_key(&u) {
                break;
            }
            // The epilogue's other operands must not depend on the group (convexity).
            let first = pos[&o];
            let ok = m.op(u).operands.iter().all(|&v| match producer(m, v) {
                None => true,
                Some(p) => {
                    members.contains(&p)
                        || pos[&p] < first
                        || is_free(m.op(p).ten())
                        || single_use_broadcast_of_input(m, p, first, &pos, &users)
                }
            });
            if !ok {
                break;
            }
            // Pull in single-use broadcasts of the bias/residual.
            for &v in &m.op(u).operands.clone() {
                if let Some(p) = producer(m, v) {
                    if !members.contains(&p)
                        && m.op(p).is(TenOp::Broadcast)
                        && users(p).len() == 1
                        && !group_of.contains_key(&p)
                    {
                        members.push(p);
                    }
                }
            }
            if let Some(a) = act {
                activation = match (a.as_str(), m.op(u).attrs.get("approximate").and_then(|x| x.as_str())) {
                    ("gelu", Some("tanh")) => "gelu_tanh".into(),
                    (k, _) => k.to_string(),
                };
            }
            members.push(u);
            chain.push(u);
            cur = u;
        }
        for &mbr in &members {
            group_of.insert(mbr, gi);
        }
        let mut attrs = Attrs::new();
        attrs.insert("activation".into(), Attr::Str(activation));
        groups.push(("gemm".into(), members, attrs));
        chains.push(chain);
    }
    // Where the epilogue is a pass of its own, a tail of one-operand ops (an activation, unary
    // math) whose one reader is a later gemm group's epilogue runs there instead: SwiGLU's
    // silu(gate) is computed in up's `silu(gate) * up` pass rather than written and read back.
    // The tail reads only its own group's product, which is defined before the later group.
    if table.epilogue_pass {
        for gi in 0..groups.len() {
            let chain = &chains[gi];
            let Some(&last) = chain.last() else { continue };
            let tail = chain.len()
                - chain.iter().rev().take_while(|&&u| m.op(u).operands.len() == 1 && !is_layout(m.op(u).ten())).count();
            let reader = match users(last)[..] {
                [u] => group_of.get(&u).copied(),
                _ => None,
            };
            let Some(gj) = reader.filter(|&gj| gj > gi && tail < chain.len()) else { continue };
            let moved: Vec<OpId> = chain[tail..].to_vec();
            groups[gi].1.retain(|x| !moved.contains(x));
            if moved.iter().any(|&u| kind_of(m, u).is_some()) {
                groups[gi].2.insert("activation".into(), Attr::Str("none".into()));
            }
            for &u in &moved {
                group_of.insert(u, gj);
                groups[gj].1.push(u);
            }
        }
    }
    // 2. loop groups, greedily in program order. A layout op of outside values read by one op
    //    (a weight's broadcast or transpose) joins its reader's group instead of starting one.
    let pullable = |m: &Module, o: OpId| -> bool {
        is_layout(m.op(o).ten())
            && users(o).len() == 1
            && m.op(o).operands.iter().all(|&v| producer(m, v).is_none_or(|p| is_free(m.op(p).ten())))
    };
    //    Any other layout op read by one loop op joins its reader's group too, its operands
    //    checked there: a broadcast of a per-channel value computed in one group (a batch norm
    //    backward's mean gradient) does not end the chain of another group that reads it.
    let deferred: std::collections::HashSet<OpId> = ops
        .iter()
        .copied()
        .filter(|&o| {
            is_layout(m.op(o).ten())
                && !group_of.contains_key(&o)
                && !pullable(m, o)
                && matches!(users(o)[..], [u] if loopable(m.op(u).ten()) && !group_of.contains_key(&u))
        })
        .collect();
    // The deferred layout ops `o` reads through (they join its group) and the producers at the
    // ends of those chains. A deferred op is grouped only with its one reader, so none is yet.
    let reads_through = |m: &Module, o: OpId| -> (Vec<OpId>, Vec<OpId>) {
        let (mut chain, mut ends) = (Vec::new(), Vec::new());
        let mut stack: Vec<OpId> = m.op(o).operands.iter().filter_map(|&v| producer(m, v)).collect();
        while let Some(p) = stack.pop() {
            if deferred.contains(&p) {
                if !chain.contains(&p) {
                    chain.push(p);
                    stack.extend(m.op(p).operands.iter().filter_map(|&v| producer(m, v)));
                }
            } else if !ends.contains(&p) {
                ends.push(p);
            }
        }
        (chain, ends)
    };
    for &o in &ops {
        if group_of.contains_key(&o) || !loopable(m.op(o).ten()) || pullable(m, o) || deferred.contains(&o) {
            continue;
        }
        // The loop groups of its operands, latest producer first: a chain whose first operand
        // comes from an older group (BatchNorm's backward, `x - mean` long before the chain
        // that reads it) continues the group of its latest link.
        let (chain, reads) = reads_through(m, o);
        let mut targets: Vec<(usize, usize)> = reads
            .iter()
            .filter_map(|p| group_of.get(p).filter(|&&gi| groups[gi].0 == "loop").map(|&gi| (pos[p], gi)))
            .collect();
        targets.sort_by(|a, b| b.cmp(a));
        // Where a group is emitted: at the op that started it (step 3).
        let emitted_at = |gi: usize| pos[&groups[gi].1[0]];
        let join = targets.into_iter().map(|(_, gi)| gi).find(|&gi| {
            let first = groups[gi].1.iter().map(|x| pos[x]).min().unwrap();
            reads.iter().all(|&p| {
                group_of.get(&p) == Some(&gi)
                    || pos[&p] < first
                    || is_free(m.op(p).ten())
                    || pullable(m, p)
                    || group_of.get(&p).is_some_and(|&g| emitted_at(g) < emitted_at(gi))
                        && independent(m, p, first, &|q| group_of.get(&q) == Some(&gi), &pos, &producer)
            })
        });
        let gi = match join {
            Some(gi) => gi,
            None => {
                groups.push(("loop".into(), vec![], Attrs::new()));
                groups.len() - 1
            }
        };
        groups[gi].1.push(o);
        group_of.insert(o, gi);
        let pulled: Vec<OpId> = reads.into_iter().filter(|&p| !group_of.contains_key(&p) && pullable(m, p)).collect();
        for p in chain.into_iter().chain(pulled) {
            groups[gi].1.push(p);
            group_of.insert(p, gi);
        }
    }
    // Layout ops whose one reader is no kernel (an opaque op, the return) are kernels alone.
    for &o in &ops {
        if !group_of.contains_key(&o) && loopable(m.op(o).ten()) {
            group_of.insert(o, groups.len());
            groups.push(("loop".into(), vec![o], Attrs::new()));
        }
    }
    merge_leaf_groups(m, &mut groups, &mut group_of, &producer, &users);
    // 3. Rewrite each group into an ember.fusion_group at the position of its first member:
    //    every outside value a group reads is defined before that (the convexity rule above).
    let mut new_ops: Vec<OpId> = Vec::new();
    let mut first_of: HashMap<usize, usize> = HashMap::new();
    for (gi, (_, members, _)) in groups.iter().enumerate().filter(|(_, g)| !g.1.is_empty()) {
        // A group sits at its first own op (a gemm at its matmul): ops pulled in (a weight's
        // broadcast or transpose) read only outside values, so they may come earlier.
        let at = pos[&members[0]];
        first_of.insert(gi, at);
    }
    let mut remap: HashMap<Value, Value> = HashMap::new();
    let mut kernels = 0usize;
    for (i, &o) in ops.iter().enumerate() {
        match group_of.get(&o) {
            None => {
                let operands: Vec<Value> = m.op(o).operands.iter().map(|v| *remap.get(v).unwrap_or(v)).collect();
                m.op_mut(o).operands = operands;
                if m.op(o).name == "ember.fusion_group" {
                    kernels += 1;
                }
                new_ops.push(o);
            }
            Some(&gi) if first_of[&gi] == i => {
                let (kind, members, attrs) = &groups[gi];
                let mut members = members.clone();
                members.sort_by_key(|x| pos[x]);
                let gop = build_group(m, kind, &members, attrs, &mut remap, &value_users);
                new_ops.push(gop);
                kernels += 1;
            }
            Some(_) => {}
        }
    }
    // Constants and iotas were copied into the groups that read them; drop the unread originals.
    let read: std::collections::HashSet<Value> = new_ops.iter().flat_map(|&o| m.op(o).operands.clone()).collect();
    new_ops
        .retain(|&o| !(is_free(m.op(o).ten()) && m.op(o).operands.is_empty() && !read.contains(&m.op(o).results[0])));
    m.set_block_ops(entry, new_ops);
    trace.kernels += kernels;
    Ok(())
}

/// Passes of `merge_leaf_groups` (each merges the groups whose readers the previous one merged).
const LEAF_MERGE_PASSES: usize = 4;

/// Moves each `loop` group that reads only the function's arguments and free values, holds no
/// reduction and is read by exactly one other `loop` group into that group. Such a group found
/// no producer group to join (its ops start from arguments: a batch norm backward's
/// `x <= -3` and `x / 3 + 0.5` on a saved activation), so each was a kernel of its own writing
/// a full-size value that its one reader group then read back (MobileNetV3's backward pieces:
/// 11 kernels where 6 do). Its reader group runs later than it, and it reads nothing computed,
/// so the merged group stays convex; the reader's kernels inline its values (or materialize
/// one that several of them read and that costs more to recompute, as for any value).
fn merge_leaf_groups(
    m: &Module,
    groups: &mut [(String, Vec<OpId>, Attrs)],
    group_of: &mut HashMap<OpId, usize>,
    producer: &dyn Fn(&Module, Value) -> Option<OpId>,
    users: &dyn Fn(OpId) -> Vec<OpId>,
) {
    for _ in 0..LEAF_MERGE_PASSES {
        let mut merged = false;
        for gi in (0..groups.len()).rev() {
            let (kind, members, _) = &groups[gi];
            if kind != "loop" || members.is_empty() {
                continue;
            }
            let leaf = members.iter().all(|&o| {
                m.op(o).ten().is_some_and(|t| t.class() != Class::Reduction)
                    && m.op(o).operands.iter().all(|&v| {
                        producer(m, v).is_none_or(|p| group_of.get(&p) == Some(&gi) || is_free(m.op(p).ten()))
                    })
            });
            if !leaf {
                continue;
            }
            let mut reader: Option<usize> = None;
            let one_reader = members.iter().flat_map(|&o| users(o)).all(|u| match group_of.get(&u) {
                Some(&gj) if gj == gi => true,
                Some(&gj) if groups[gj].0 == "loop" && reader.is_none_or(|r| r == gj) => {
                    reader = Some(gj);
                    true
                }
                _ => false,
            });
            let Some(gj) = reader.filter(|_| one_reader) else { continue };
            let moved = std::mem::take(&mut groups[gi].1);
            for &o in &moved {
                group_of.insert(o, gj);
            }
            groups[gj].1.extend(moved);
            merged = true;
        }
        if !merged {
            break;
        }
    }
}

/// Ops `independent` visits before it gives up (and says no).
const INDEPENDENCE_BUDGET: usize = 256;

/// Whether `p` (defined in a group that runs before the one starting at `first`) reads nothing
/// of that group (`in_group`), transitively: the convexity check by position alone refused a
/// per-channel value computed after the group began (a batch norm backward's mean gradient,
/// `sum * 1/n`, read by the chain that started with `x - mean`). Ops before `first` cannot
/// depend on the group; the walk stops there.
fn independent(
    m: &Module,
    p: OpId,
    first: usize,
    in_group: &dyn Fn(OpId) -> bool,
    pos: &HashMap<OpId, usize>,
    producer: &dyn Fn(&Module, Value) -> Option<OpId>,
) -> bool {
    let mut stack = vec![p];
    let mut seen = std::collections::HashSet::new();
    while let Some(q) = stack.pop() {
        if pos[&q] < first || !seen.insert(q) {
            continue;
        }
        if in_group(q) || seen.len() > INDEPENDENCE_BUDGET {
            return false;
        }
        stack.extend(m.op(q).operands.iter().filter_map(|&v| producer(m, v)));
    }
    true
}

/// Elements below which a value computed from the function's arguments alone moves to the front.
const HOIST_MAX_ELEMENTS: i64 = 1 << 16;

/// `ops` with the small loop ops (elementwise, layout, reductions) that read only the function's
/// arguments (and other such ops) first, each part in program order (matmuls stay where they
/// are: a gemm's epilogue joins by position): the convexity check goes by position, and a per-channel
/// value such as a batch norm's `weight * invstd`, computed where torch wrote it (in the middle
/// of the chain that reads it), made that chain two kernels.
fn hoisted(m: &Module, ops: &[OpId]) -> Vec<OpId> {
    let mut early: std::collections::HashSet<Value> = std::collections::HashSet::new();
    let (mut front, mut rest) = (Vec::new(), Vec::new());
    for &o in ops {
        let d = m.op(o);
        let small = d
            .results
            .iter()
            .all(|&r| m.ty(r).tensor().and_then(|t| t.numel().as_const()).is_some_and(|n| n <= HOIST_MAX_ELEMENTS));
        let from_args = (loopable(d.ten()) || is_free(d.ten()))
            && d.regions.is_empty()
            && d.operands
                .iter()
                .all(|v| matches!(m.value(*v).def, ValueDef::Result(..)).then(|| early.contains(v)).unwrap_or(true));
        if small && from_args && !d.results.is_empty() {
            early.extend(d.results.iter().copied());
            front.push(o);
        } else {
            rest.push(o);
        }
    }
    front.extend(rest);
    front
}

/// A broadcast of a value defined before `first`, used once: pulled into the group.
fn single_use_broadcast_of_input(
    m: &Module,
    p: OpId,
    first: usize,
    pos: &HashMap<OpId, usize>,
    users: &dyn Fn(OpId) -> Vec<OpId>,
) -> bool {
    m.op(p).is(TenOp::Broadcast)
        && users(p).len() == 1
        && m.op(p).operands.iter().all(|&v| match m.value(v).def {
            ValueDef::Result(q, _) => pos.get(&q).is_none_or(|&qp| qp < first),
            _ => true,
        })
}

/// Moves `members` (in program order) into a new `ember.fusion_group` region. Values used after
/// the group become its results; values read from outside become block arguments; constants
/// and iotas read from outside are copied in.
fn build_group(
    m: &mut Module,
    kind: &str,
    members: &[OpId],
    attrs: &Attrs,
    remap: &mut HashMap<Value, Value>,
    value_users: &HashMap<Value, Vec<OpId>>,
) -> OpId {
    let inside: std::collections::HashSet<OpId> = members.iter().copied().collect();
    let mut inputs: Vec<Value> = Vec::new();
    let mut copies: Vec<OpId> = Vec::new();
    // Operand order: a gemm reads its matmul's lhs then rhs first (the values under any layout
    // chain pulled in with them), then the epilogue's inputs, as the fusion-group contract says.
    if kind == "gemm" {
        if let Some(&dot) = members.iter().find(|&&o| m.op(o).is(TenOp::DotGeneral)) {
            for &v in &m.op(dot).operands {
                let mut cur = *remap.get(&v).unwrap_or(&v);
                while let ValueDef::Result(p, _) = m.value(cur).def {
                    if !inside.contains(&p) || m.op(p).operands.len() != 1 {
                        break;
                    }
                    cur = *remap.get(&m.op(p).operands[0]).unwrap_or(&m.op(p).operands[0]);
                }
                let outside = match m.value(cur).def {
                    ValueDef::Result(p, _) => !inside.contains(&p) && !is_free(m.op(p).ten()),
                    _ => true,
                };
                if outside && !inputs.contains(&cur) {
                    inputs.push(cur);
                }
            }
        }
    }
    let order: Vec<OpId> = members.to_vec();
    for &o in &order {
        for &v in &m.op(o).operands.clone() {
            let v = *remap.get(&v).unwrap_or(&v);
            let def = match m.value(v).def {
                ValueDef::Result(p, _) => Some(p),
                _ => None,
            };
            if def.is_some_and(|p| inside.contains(&p)) || inputs.contains(&v) {
                continue;
            }
            if let Some(p) = def.filter(|p| is_free(m.op(*p).ten()) && m.op(*p).operands.is_empty()) {
                if !copies.contains(&p) {
                    copies.push(p);
                }
                continue;
            }
            inputs.push(v);
        }
    }
    // Results: member values used by any op outside the group (or by the return).
    let mut results: Vec<Value> = Vec::new();
    for &o in members {
        for &r in &m.op(o).results {
            if value_users.get(&r).is_some_and(|us| us.iter().any(|u| !inside.contains(u))) {
                results.push(r);
            }
        }
    }
    let types: Vec<Type> = inputs.iter().map(|&v| m.ty(v).clone()).collect();
    let block = m.new_block(&types);
    let args = m.block(block).args.clone();
    let mut local: HashMap<Value, Value> = inputs.iter().copied().zip(args).collect();
    let mut body = Vec::new();
    for &c in &copies {
        let d = m.op(c).clone();
        let types: Vec<Type> = d.results.iter().map(|&r| m.ty(r).clone()).collect();
        let n = m.create_op(&d.name, vec![], types, d.attrs.clone(), vec![], d.loc.clone());
        local.insert(d.results[0], m.op(n).results[0]);
        body.push(n);
    }
    let mut locs = Vec::new();
    for &o in members {
        let operands: Vec<Value> = m
            .op(o)
            .operands
            .iter()
            .map(|v| {
                let v = *remap.get(v).unwrap_or(v);
                *local.get(&v).unwrap_or(&v)
            })
            .collect();
        if m.op(o).name == "ember.fusion_group" {
            // A composite absorbed into a gemm epilogue: inline its body.
            let region = m.op(o).regions[0];
            let gb = m.region(region).blocks[0];
            let gargs = m.block(gb).args.clone();
            let mut inner: HashMap<Value, Value> = gargs.into_iter().zip(operands).collect();
            for &io in &m.block(gb).ops.clone() {
                let d = m.op(io).clone();
                if d.name == "ember.yield" {
                    local.insert(m.op(o).results[0], inner[&d.operands[0]]);
                    continue;
                }
                let ops2: Vec<Value> = d.operands.iter().map(|v| *inner.get(v).unwrap_or(v)).collect();
                let types: Vec<Type> = d.results.iter().map(|&r| m.ty(r).clone()).collect();
                let n = m.create_op(&d.name, ops2, types, d.attrs.clone(), vec![], d.loc.clone());
                inner.insert(d.results[0], m.op(n).results[0]);
                body.push(n);
            }
            locs.push(m.op(o).loc.clone());
            continue;
        }
        m.op_mut(o).operands = operands;
        locs.push(m.op(o).loc.clone());
        body.push(o);
    }
    let yields: Vec<Value> = results.iter().map(|r| *local.get(r).unwrap_or(r)).collect();
    let y = m.create_op("ember.yield", yields, vec![], Attrs::new(), vec![], Loc::Unknown);
    body.push(y);
    m.set_block_ops(block, body);
    let region = m.new_region(vec![block]);
    let mut a = attrs.clone();
    a.insert("kind".into(), Attr::Str(kind.into()));
    let rtypes: Vec<Type> = results.iter().map(|&r| m.ty(r).clone()).collect();
    let loc = locs.into_iter().find(|l| !matches!(l, Loc::Unknown)).unwrap_or_default();
    let g = m.create_op("ember.fusion_group", inputs, rtypes, a, vec![region], loc);
    for (i, &r) in results.iter().enumerate() {
        remap.insert(r, m.op(g).results[i]);
    }
    g
}
