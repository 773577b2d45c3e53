//! Kernel bodies: one root over its loop nest, or a row group (several roots sharing the outer
//! loops, with row-local scratch and reductions stored as their rows complete). Kept apart from the
//! per-element emission because the choice of loop structure is the kernel's performance.

use super::kernel::SINGLE_VECTOR;
use super::{le, Kernel, R};
use crate::cpu::plan::COLUMN_TILE;
use ember_ir::dialect::ten::{Class, TenOp};
use ember_ir::module::Value;
use ember_ir::sym::SymExpr;
use inkwell::types::BasicType;
use inkwell::values::IntValue;

/// The widest row a column reduction accumulates in registers (wider rows stream their
/// accumulator row through memory).
const NARROW_COLUMNS: i64 = 512;

impl<'a, 'ctx> Kernel<'a, 'ctx> {
    pub(super) fn body(&mut self, root: Value, columns: Option<usize>) -> R<()> {
        self.load_table()?;
        let start = self.f.get_nth_param(2).unwrap().into_int_value();
        let end = self.f.get_nth_param(3).unwrap().into_int_value();
        self.root = Some(root);
        let out = self.plan.buf_of[&root];
        let dims = self.dims(root);
        let root_op = self.m.defining_op(root).ok_or("kernel root is an argument")?;
        if self.m.op(root_op).ten().is_some_and(|t| t.class() == Class::Scan) {
            self.cumsum(root_op, out, start, end)?;
            self.ret()?;
            return Ok(());
        }
        if self.m.op(root_op).is(TenOp::Scatter) {
            self.scatter(root_op, out, start)?;
            self.ret()?;
            return Ok(());
        }
        self.interleave = self.interleave_for(root);
        if let Some(oc) = columns {
            self.column_reduce(root, root_op, oc, start, end)?;
            self.ret()?;
            return Ok(());
        }
        if dims.is_empty() {
            // Rank 0: the runtime calls with [0, 1).
            self.store_root(root, &[])?;
        } else if let Some(order) = self.plan.layouts.get(&root).cloned() {
            // Loops in memory order (the kernel's range at the split dim's place in it), the
            // element's index put back in dim order.
            let range_dim = self.range_dim;
            self.range_dim = order.iter().position(|&d| d == range_dim).ok_or("the split dim is not in the layout")?;
            let walk: Vec<SymExpr> = order.iter().map(|&d| dims[d].clone()).collect();
            let mut idx = Vec::new();
            let r = self.nest(&walk, Some((start, end)), &mut idx, &mut |k, pos| {
                let mut at = pos.to_vec();
                for (&d, &i) in order.iter().zip(pos) {
                    at[d] = i;
                }
                k.store_root(root, &at)
            });
            self.range_dim = range_dim;
            r?;
        } else {
            let mut idx = Vec::new();
            self.nest(&dims, Some((start, end)), &mut idx, &mut |k, idx| k.store_root(root, idx))?;
        }
        self.ret()?;
        Ok(())
    }

    /// A reduction that keeps the dim its operand is stored along, output dim `oc` (a bias
    /// gradient, [rows, d] -> [d]; a batch norm's statistics over a channels-last tensor read as
    /// NCHW, [n, c, h, w] -> [c]; the plan decides: `layout::decide`), as column sums: each
    /// operand row is added into an accumulator row by the innermost loop, over the kept columns
    /// (contiguous, vectorized), rather than one strided walk down the rows per output element,
    /// which fetches every cache line once per column it holds (GPT-2's bias gradients ran at
    /// 1/13 of the memory bandwidth). Each column combines its elements in the same order as
    /// `reduce`.
    fn column_reduce(
        &mut self,
        root: Value,
        op: ember_ir::OpId,
        oc: usize,
        start: IntValue<'ctx>,
        end: IntValue<'ctx>,
    ) -> R<()> {
        let d = self.m.op(op);
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("sum").to_string();
        let x = d.operands[0];
        let rdims: Vec<usize> =
            d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
        let xdims = self.dims(x);
        let odims = self.dims(root);
        let dt = self.dtype(root);
        let rank = xdims.len();
        let buf = self.plan.buf_of[&root];
        let init = self.identity(&kind, dt)?;
        let red: Vec<SymExpr> = rdims.iter().map(|&i| xdims[i].clone()).collect();
        let outer_dims: Vec<SymExpr> =
            odims.iter().enumerate().filter(|&(i, _)| i != oc).map(|(_, e)| e.clone()).collect();
        // The kernel's range is over the columns when they are its split dim, else over the
        // split dim among the other kept dims, which the nest below walks.
        let range_dim = self.range_dim;
        let (cols, outer) = if range_dim == oc { (Some((start, end)), None) } else { (None, Some((start, end))) };
        self.range_dim = range_dim - usize::from(oc < range_dim);
        let col_dim = odims[oc].clone();
        let at = |o: &[IntValue<'ctx>], j: IntValue<'ctx>| -> Vec<IntValue<'ctx>> {
            let mut v = o.to_vec();
            v.insert(oc, j);
            v
        };
        // Narrow rows (a batch norm's channels): each thread's share of the columns is a vector
        // or two, and an accumulator row in memory, read and written once per row, is bound by
        // store-to-load forwarding (10x below bandwidth). Tiles of `COLUMN_TILE` columns
        // accumulate in registers instead (one scalar per column; LLVM's SLP vectorizer makes
        // the tile one vector); wide rows keep the accumulator row, whose stores stream.
        let ty = self.reg_type(dt)?;
        let narrow = col_dim.as_const().is_some_and(|n| n <= NARROW_COLUMNS);
        let accs = if narrow {
            (0..COLUMN_TILE).map(|_| self.entry_alloca(ty, "acc")).collect::<R<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let mut oidx = Vec::new();
        let r = self.nest(&outer_dims, outer, &mut oidx, &mut |kn, o| {
            let (mut lo, hi) = match cols {
                Some(r) => r,
                None => (kn.i64c(0), kn.sym(&col_dim)?),
            };
            let o = o.to_vec();
            if narrow {
                let tile = kn.i64c(COLUMN_TILE);
                let n = kn.b.build_int_sub(hi, lo, "").map_err(le)?;
                let tiles = kn.b.build_int_signed_div(n, tile, "").map_err(le)?;
                kn.for_loop(kn.i64c(0), tiles, &mut |kn, t| {
                    let first = kn.b.build_int_add(lo, kn.b.build_int_mul(t, tile, "").map_err(le)?, "").map_err(le)?;
                    let cols: Vec<IntValue<'ctx>> = (0..COLUMN_TILE)
                        .map(|c| kn.b.build_int_add(first, kn.i64c(c), "").map_err(le))
                        .collect::<R<_>>()?;
                    for &acc in &accs {
                        kn.b.build_store(acc, init).map_err(le)?;
                    }
                    let mut ridx = Vec::new();
                    kn.no_vectorize = true;
                    let swept = kn.nest(&red, None, &mut ridx, &mut |kn, r| {
                        for (&acc, &j) in accs.iter().zip(&cols) {
                            let v = kn.emit(x, &super::interleave(rank, &rdims, &at(&o, j), r))?;
                            kn.accumulate(acc, &kind, dt, v)?;
                        }
                        Ok(())
                    });
                    kn.no_vectorize = false;
                    swept?;
                    for (&acc, &j) in accs.iter().zip(&cols) {
                        let lin = kn.linear(&at(&o, j), &odims)?;
                        let a = kn.b.build_load(ty, acc, "a").map_err(le)?;
                        kn.store(buf, lin, dt, a)?;
                    }
                    Ok(())
                })?;
                // The columns past the last whole tile take the accumulator row below.
                let done = kn.b.build_int_mul(tiles, tile, "").map_err(le)?;
                lo = kn.b.build_int_add(lo, done, "").map_err(le)?;
            }
            kn.interleave_next = SINGLE_VECTOR;
            kn.for_loop(lo, hi, &mut |kn, j| {
                let lin = kn.linear(&at(&o, j), &odims)?;
                kn.store(buf, lin, dt, init)
            })?;
            let mut ridx = Vec::new();
            kn.nest(&red, None, &mut ridx, &mut |kn, r| {
                kn.interleave_next = SINGLE_VECTOR;
                kn.for_loop(lo, hi, &mut |kn, j| {
                    kn.cache.clear();
                    let out_idx = at(&o, j);
                    let v = kn.emit(x, &super::interleave(rank, &rdims, &out_idx, r))?;
                    let lin = kn.linear(&out_idx, &odims)?;
                    let a = kn.load(buf, lin, dt)?;
                    let n = kn.combine(&kind, dt, a, v)?;
                    kn.cache.clear();
                    kn.store(buf, lin, dt, n)
                })
            })
        });
        self.range_dim = range_dim;
        r
    }

    /// Several values computed row by row: loops over the shared first `outer` dims, and inside,
    /// each value's own remaining loops in order (later values read earlier ones' rows from cache).
    pub(super) fn group_body(&mut self, roots: &[Value], outer: usize, scratch: &[Value]) -> R<()> {
        self.load_table()?;
        for &v in scratch {
            let n: i64 = self.dims(v)[outer..].iter().map(|d| d.as_const().unwrap_or(1)).product();
            let slot = self.mem_type(self.dtype(v))?.array_type(n.max(1) as u32);
            let p = self.entry_alloca(slot.into(), "row")?;
            self.scratch.insert(v, (p, outer));
        }
        let start = self.f.get_nth_param(2).unwrap().into_int_value();
        let end = self.f.get_nth_param(3).unwrap().into_int_value();
        let prefix: Vec<SymExpr> = self.dims(roots[0])[..outer].to_vec();
        let roots = roots.to_vec();
        let mut idx = Vec::new();
        self.nest(&prefix, Some((start, end)), &mut idx, &mut |k, row| {
            let mut i = 0;
            while i < roots.len() {
                let r = roots[i];
                k.root = Some(r);
                k.interleave = k.interleave_for(r);
                let dims = k.dims(r);
                let mut inner = row.to_vec();
                if let Some(red) = roots.get(i + 1).copied().filter(|&n| k.reduces_row_of(n, r, outer)) {
                    k.store_with_reduce(r, red, row, &dims)?;
                    i += 2;
                    continue;
                }
                k.nest(&dims, None, &mut inner, &mut |k, idx| k.store_root(r, idx))?;
                i += 1;
            }
            Ok(())
        })?;
        self.ret()?;
        Ok(())
    }

    /// Whether root `red` reduces exactly the row of root `r` (dims past `outer`), reading `r`
    /// only at the element it reduces: then both run in one pass over the row.
    pub(super) fn reduces_row_of(&self, red: Value, r: Value, outer: usize) -> bool {
        let m = self.m;
        let Some(op) = m.defining_op(red) else { return false };
        let d = m.op(op);
        if !d.is(TenOp::Reduce) || matches!(d.attrs.get("kind").and_then(|a| a.as_str()), Some("argmax" | "argmin")) {
            return false;
        }
        // A short row's max/min reads the stored row as a tree instead: in the same loop it
        // would be one dependent chain (see `reduce`).
        if self.tree_reduce(op).is_some() {
            return false;
        }
        if m.defining_op(r).is_none_or(|o| m.op(o).is(TenOp::Reduce)) {
            return false;
        }
        let x = d.operands[0];
        let rd: Vec<usize> =
            d.attrs.get("dims").and_then(|a| a.as_ints()).unwrap_or(&[]).iter().map(|&v| v as usize).collect();
        let rank = self.dims(x).len();
        rank > outer
            && self.dims(x) == self.dims(r)
            && rd == (outer..rank).collect::<Vec<_>>()
            && self.reads_pointwise(x, r)
    }

    /// Whether `v`'s expression reads `target` (if at all) only at `v`'s own index.
    pub(super) fn reads_pointwise(&self, v: Value, target: Value) -> bool {
        if v == target {
            return true;
        }
        let m = self.m;
        if self.plan.buf_of.contains_key(&v) || self.scratch.contains_key(&v) {
            return true;
        }
        let Some(op) = m.defining_op(v) else { return true };
        let d = m.op(op);
        let pointwise = d.ten().is_some_and(TenOp::is_elementwise);
        d.operands
            .iter()
            .all(|&o| if pointwise { self.reads_pointwise(o, target) } else { !self.depends_on(o, target) })
    }

    pub(super) fn depends_on(&self, v: Value, target: Value) -> bool {
        if v == target {
            return true;
        }
        if self.plan.buf_of.contains_key(&v) || self.scratch.contains_key(&v) {
            return false;
        }
        self.m.defining_op(v).is_some_and(|op| self.m.op(op).operands.iter().any(|&o| self.depends_on(o, target)))
    }

    /// Computes root `r` over its row and, in the same loop, reduces it (or a pointwise function
    /// of it) into root `red` (the next pass), so the row is traversed once for both.
    pub(super) fn store_with_reduce(
        &mut self,
        r: Value,
        red: Value,
        row: &[IntValue<'ctx>],
        dims: &[SymExpr],
    ) -> R<()> {
        let op = self.m.defining_op(red).ok_or("reduce root is an argument")?;
        let d = self.m.op(op);
        let x = d.operands[0];
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("sum").to_string();
        let dt = self.dtype(x);
        let ty = self.reg_type(dt)?;
        let acc = self.entry_alloca(ty, "acc")?;
        self.b.build_store(acc, self.identity(&kind, dt)?).map_err(le)?;
        let mut inner = row.to_vec();
        self.nest(dims, None, &mut inner, &mut |k, idx| {
            k.root = Some(r);
            let v = k.compute_root(r, idx)?;
            k.cache.insert((r, idx.to_vec()), v);
            k.root = Some(red);
            let xv = k.emit(x, idx)?;
            k.accumulate(acc, &kind, dt, xv)
        })?;
        let total = self.b.build_load(ty, acc, "r").map_err(le)?;
        self.put_root(red, row, self.dtype(red), total)
    }
}
