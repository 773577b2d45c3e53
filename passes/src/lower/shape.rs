//! Layout ops: reshapes, transposes, broadcasts, slices, splits, concatenation and gathers.
//! Result shapes come from the torch op's result types, so symbolic sizes flow through unchanged.

use super::build::{c, norm_dim, Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::infer;
use ember_ir::dialect::ten::TenOp;
use ember_ir::{DType, SymExpr, TensorType, Value};

/// view/_unsafe_view/reshape/unsqueeze/squeeze: `ten.reshape` to the result shape.
pub fn reshape(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    Ok(Some(vec![cx.reshape(x, &t.dims)?]))
}

/// resize (functional `resize_`/`resize_as_`) to as many elements: a reshape. Growing or
/// shrinking the storage is not lowered (torch leaves new elements uninitialized).
pub fn resize(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let numel = |d: &[SymExpr]| d.iter().map(|e| e.as_const()).product::<Option<i64>>();
    match (numel(&cx.tt(x).dims), numel(&t.dims)) {
        (Some(a), Some(b)) if a == b => Ok(Some(vec![cx.reshape(x, &t.dims)?])),
        _ => Ok(None),
    }
}

/// permute and transpose.int: `ten.transpose` (nothing for the identity permutation).
pub fn transpose(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let rank = cx.tt(x).rank();
    let err = |e: String| cx.err(&e);
    let perm: Vec<usize> = if name == "transpose.int" {
        let mut p: Vec<usize> = (0..rank).collect();
        if rank > 0 {
            let (a, b) = (norm_dim(cx.int("dim0")?, rank).map_err(err)?, norm_dim(cx.int("dim1")?, rank).map_err(err)?);
            p.swap(a, b);
        }
        p
    } else {
        let dims = cx
            .attr("dims")
            .and_then(|a| a.as_ints().map(<[i64]>::to_vec))
            .ok_or_else(|| cx.err("attribute `dims` must be a list"))?;
        dims.iter().map(|&d| norm_dim(d, rank).map_err(err)).collect::<Result<_, _>>()?
    };
    if perm.iter().enumerate().all(|(i, &d)| i == d) {
        return Ok(Some(vec![x]));
    }
    let dims = Attr::Ints(perm.iter().map(|&d| d as i64).collect());
    Ok(Some(vec![cx.emit(TenOp::Transpose, vec![x], vec![("dims", dims)])?]))
}

/// expand: a right-aligned `ten.broadcast` to the result shape.
pub fn expand(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    Ok(Some(vec![cx.bcast(x, &t.dims)?]))
}

/// A slice bound as torch normalizes it: negative counts from the end, past-the-end clamps.
pub(super) fn clamp_bound(v: Option<SymExpr>, size: &SymExpr, dflt: SymExpr) -> SymExpr {
    let Some(v) = v else { return dflt };
    match (v.as_const(), size.as_const()) {
        (Some(v), Some(n)) => c(if v < 0 { (v + n).max(0) } else { v.min(n) }),
        (Some(v), None) if v >= i64::MAX / 2 => size.clone(),
        (Some(v), None) if v < 0 => SymExpr::plus(size.clone(), c(v)),
        _ => v,
    }
}

/// `ten.slice` of `x` along `dim` from `start` with `step`, giving `shape`.
pub(super) fn slice_dim(
    cx: &mut Cx,
    x: Value,
    dim: usize,
    start: SymExpr,
    step: i64,
    shape: &[SymExpr],
) -> Result<Value, String> {
    let xt = cx.tt(x);
    if start == c(0) && step == 1 && xt.dims == shape {
        return Ok(x);
    }
    let mut starts = vec![c(0); xt.rank()];
    starts[dim] = start;
    let mut steps = vec![1; xt.rank()];
    steps[dim] = step;
    cx.emit(
        TenOp::Slice,
        vec![x],
        vec![("start", Attr::dims(starts)), ("shape", Attr::dims(shape.to_vec())), ("step", Attr::Ints(steps))],
    )
}

/// slice.Tensor (start/end normalized, length from the result type) and select.int (a
/// one-element slice, then a reshape dropping the dim).
pub fn slice(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let d = norm_dim(cx.int_or("dim", 0)?, xt.rank()).map_err(|e| cx.err(&e))?;
    let sym = |a: Option<Attr>| a.and_then(|a| a.as_sym());
    if name.starts_with("select") {
        let index = sym(cx.attr("index")).ok_or_else(|| cx.err("attribute `index` must be an integer"))?;
        let start = match index.as_const() {
            Some(i) if i < 0 => SymExpr::plus(xt.dims[d].clone(), c(i)),
            _ => index,
        };
        let mut shape = xt.dims.clone();
        shape[d] = c(1);
        let s = slice_dim(cx, x, d, start, 1, &shape)?;
        return Ok(Some(vec![cx.reshape(s, &t.dims)?]));
    }
    let step = cx.int_or("step", 1)?;
    if step <= 0 {
        return Err(cx.err("slice step must be positive"));
    }
    let start = clamp_bound(sym(cx.attr("start")), &xt.dims[d], c(0));
    Ok(Some(vec![slice_dim(cx, x, d, start, step, &t.dims)?]))
}

/// unbind_copy: slice i of the dim, reshaped without it, for each i.
pub fn unbind(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let d = norm_dim(cx.int_or("dim", 0)?, xt.rank()).map_err(|e| cx.err(&e))?;
    let mut shape = xt.dims.clone();
    shape[d] = c(1);
    let n = cx.m.op(cx.op).results.len();
    let mut out = Vec::new();
    for i in 0..n {
        let ti = cx.out(i)?;
        let s = slice_dim(cx, x, d, c(i as i64), 1, &shape)?;
        out.push(cx.reshape(s, &ti.dims)?);
    }
    Ok(Some(out))
}

/// split_with_sizes: one slice per piece at the running offset.
pub fn split(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let rank = cx.tt(x).rank();
    let d = norm_dim(cx.int_or("dim", 0)?, rank).map_err(|e| cx.err(&e))?;
    let n = cx.m.op(cx.op).results.len();
    let mut offset = c(0);
    let mut out = Vec::new();
    for i in 0..n {
        let ti = cx.out(i)?;
        out.push(slice_dim(cx, x, d, offset.clone(), 1, &ti.dims)?);
        offset = SymExpr::plus(offset, ti.dims[d].clone());
    }
    Ok(Some(out))
}

/// cat (inputs converted to the promoted dtype; legacy empty 1-D inputs skipped, as torch does)
/// and stack (each input reshaped with a new size-1 dim first).
pub fn cat(cx: &mut Cx, stack: bool) -> Lowered {
    let t = cx.out(0)?;
    let d = norm_dim(cx.int_or("dim", 0)?, t.rank()).map_err(|e| cx.err(&e))?;
    let mut inputs = Vec::new();
    for v in cx.operand_list("tensors")?.into_iter().flatten() {
        let vt = cx.tt(v);
        if !stack && vt.rank() == 1 && vt.dims[0] == c(0) {
            continue;
        }
        let v = cx.convert(v, t.dtype)?;
        let v = if stack {
            let mut dims = vt.dims.clone();
            dims.insert(d, c(1));
            cx.reshape(v, &dims)?
        } else {
            v
        };
        inputs.push(v);
    }
    match inputs.len() {
        // Every input was a legacy empty [0]: so is the result.
        0 => Ok(Some(vec![cx.constant(&Attr::Int(0), t.dtype, &t.dims)?])),
        1 => Ok(Some(inputs)),
        _ => Ok(Some(vec![cx.emit(TenOp::Concat, inputs, vec![("dim", Attr::Int(d as i64))])?])),
    }
}

/// flip: `ten.reverse` of the listed dims.
pub fn flip(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let rank = cx.tt(x).rank();
    let dims = cx
        .attr("dims")
        .and_then(|a| a.as_ints().map(<[i64]>::to_vec))
        .ok_or_else(|| cx.err("attribute `dims` must be a list"))?;
    let mut dims = dims
        .iter()
        .map(|&d| norm_dim(d, rank).map(|d| d as i64).map_err(|e| cx.err(&e)))
        .collect::<Result<Vec<_>, _>>()?;
    dims.sort();
    dims.dedup();
    if dims.is_empty() {
        return Ok(Some(vec![x]));
    }
    Ok(Some(vec![cx.emit(TenOp::Reverse, vec![x], vec![("dims", Attr::Ints(dims))])?]))
}

/// repeat: broadcast each dim d to [repeat, d] (new dims lead), then merge the pairs.
pub fn repeat(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let reps = cx.dims_attr("repeats")?;
    if reps.len() < xt.rank() {
        return Err(cx.err("repeat needs at least as many repeats as dims"));
    }
    let off = reps.len() - xt.rank();
    let mut shape = reps[..off].to_vec();
    let mut map = Vec::new();
    for (j, d) in xt.dims.iter().enumerate() {
        let r = &reps[off + j];
        if *r != c(1) {
            shape.push(r.clone());
        }
        map.push(shape.len());
        shape.push(d.clone());
    }
    let b = cx.bcast_in_dim(x, &shape, &map)?;
    Ok(Some(vec![cx.reshape(b, &t.dims)?]))
}

/// embedding and index_select as `ten.gather` (whose negative indices wrap, as index.Tensor's;
/// torch raises on these ops' negative indices, so over a static dim they become out of range);
/// index.Tensor with adjacent integer indices over static dims as one gather on the merged
/// indexed dims with a linearized, wrapped index.
pub fn gather(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let (x, index, dim) = match name {
        "embedding" => (cx.arg("weight")?, cx.arg("indices")?, 0),
        "index_select" => {
            let x = cx.arg("self")?;
            let rank = cx.tt(x).rank();
            if rank == 0 {
                // A 0-d input selects along its one element, as torch's kernel does.
                norm_dim(cx.int("dim")?, 1).map_err(|e| cx.err(&e))?;
                (cx.reshape(x, &[c(1)])?, cx.arg("index")?, 0)
            } else {
                (x, cx.arg("index")?, norm_dim(cx.int("dim")?, rank).map_err(|e| cx.err(&e))?)
            }
        }
        _ => return index_tensor(cx),
    };
    let xt = cx.tt(x);
    let index = match (xt.dims[dim].as_const(), xt.static_shape()) {
        (Some(n), Some(shape)) => checked_index(cx, index, n, -2 * shape.iter().product::<i64>())?,
        _ => index,
    };
    let g = cx.emit(TenOp::Gather, vec![x, index], vec![("dim", Attr::Int(dim as i64))])?;
    Ok(Some(vec![cx.reshape(g, &t.dims)?]))
}

fn index_tensor(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let Some(ix) = adjacent_index(cx, &xt)? else { return Ok(None) };
    let mut merged = xt.dims[..ix.first].to_vec();
    merged.push(c(ix.count));
    merged.extend_from_slice(&xt.dims[ix.last + 1..]);
    let xr = cx.reshape(x, &merged)?;
    Ok(Some(vec![cx.emit(TenOp::Gather, vec![xr, ix.linear], vec![("dim", Attr::Int(ix.first as i64))])?]))
}

/// The `indices` of index.Tensor / index_put when Ember can express them: adjacent integer
/// indices over static dims `first..=last`, merged into one row-major index of shape `shape`
/// (the broadcast of the indices; negative entries wrap) into those dims' `count` elements.
pub(super) struct AdjacentIndex {
    pub first: usize,
    pub last: usize,
    pub count: i64,
    pub shape: Vec<SymExpr>,
    pub linear: Value,
}

/// None for what stays a torch op: no index, non-adjacent indices (torch moves the result dims
/// to the front), boolean masks (data-dependent shapes) and symbolic indexed dims.
pub(super) fn adjacent_index(cx: &mut Cx, xt: &TensorType) -> Result<Option<AdjacentIndex>, String> {
    let idx = cx.operand_list("indices")?;
    let present: Vec<(usize, Value)> = idx.iter().enumerate().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
    let adjacent = present.windows(2).all(|w| w[1].0 == w[0].0 + 1);
    let sizes: Option<Vec<i64>> = present.iter().map(|&(k, _)| xt.dims.get(k).and_then(|d| d.as_const())).collect();
    let int_indices = present.iter().all(|&(_, v)| {
        let dt = cx.tt(v).dtype;
        dt.is_int() && dt != DType::U8
    });
    let (Some(sizes), true, true, false) = (sizes, adjacent, int_indices, present.is_empty()) else { return Ok(None) };
    let shapes: Vec<Vec<SymExpr>> = present.iter().map(|&(_, v)| cx.tt(v).dims).collect();
    let refs: Vec<&[SymExpr]> = shapes.iter().map(|s| s.as_slice()).collect();
    let bshape = infer::broadcast(&refs).map_err(|e| cx.err(&e.0))?;
    // linear = sum_k wrap(i_k) * stride_k, strides of the row-major merged dims.
    let mut linear: Option<Value> = None;
    let mut stride = 1i64;
    for (&(_, v), &n) in present.iter().zip(&sizes).rev() {
        let i = cx.coerce(v, DType::I64, &bshape)?;
        let mut i = wrap_index(cx, i, n, sizes.iter().product())?;
        if stride != 1 {
            i = cx.binary_scalar(TenOp::Mul, i, stride as f64)?;
        }
        linear = Some(match linear {
            Some(l) => cx.emit(TenOp::Add, vec![l, i], vec![])?,
            None => i,
        });
        stride *= n;
    }
    Ok(Some(AdjacentIndex {
        first: present[0].0,
        last: present[present.len() - 1].0,
        count: stride,
        shape: bshape,
        linear: linear.expect("at least one index"),
    }))
}

/// An i64 index into a dim of size `n` with negative entries counted from the end. An entry
/// outside [-n, n) (torch raises) becomes -2 * `numel`, the size of the flattened tensor the
/// linear index built from it addresses: whatever the other terms add, that index stays out of
/// range, so the gather reports it (CPU) instead of reading another element; scatters skip it.
fn wrap_index(cx: &mut Cx, i: Value, n: i64, numel: i64) -> Result<Value, String> {
    let zero = cx.splat_like(0.0, i)?;
    let neg = cx.compare("LT", i, zero)?;
    let wrapped = cx.binary_scalar(TenOp::Add, i, n as f64)?;
    let w = cx.select(neg, wrapped, i)?;
    checked_index(cx, w, n, -2 * numel)
}

/// `i` where it is in [0, n), else `poison`, a position outside the flattened operand, which the
/// gather's range check reports.
fn checked_index(cx: &mut Cx, i: Value, n: i64, poison: i64) -> Result<Value, String> {
    let zero = cx.splat_like(0.0, i)?;
    let lo = cx.compare("GE", i, zero)?;
    let top = cx.splat_like(n as f64, i)?;
    let hi = cx.compare("LT", i, top)?;
    let ok = cx.emit(TenOp::And, vec![lo, hi], vec![])?;
    let poison = cx.splat_like(poison as f64, i)?;
    cx.select(ok, i, poison)
}

/// The row-major element strides of static `dims` (None when a dim is symbolic).
fn static_strides(dims: &[SymExpr]) -> Option<Vec<i64>> {
    let sizes: Vec<i64> = dims.iter().map(SymExpr::as_const).collect::<Option<_>>()?;
    let mut strides = vec![1i64; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1];
    }
    Some(strides)
}

/// The row-major element stride of each dim of `dims`: static where every later dim is (a
/// symbolic batch dim in front keeps the others' strides static).
fn trailing_strides(dims: &[SymExpr]) -> Vec<Option<i64>> {
    let mut strides = vec![None; dims.len()];
    let mut acc = Some(1i64);
    for k in (0..dims.len()).rev() {
        strides[k] = acc;
        acc = acc.and_then(|a| dims[k].as_const().map(|d| a * d));
    }
    strides
}

/// The flat (row-major) position in a tensor of shape `xdims` of every element of an index
/// tensor used along `dim` (torch.gather/scatter): sum_k (k == dim ? index : iota_k) times
/// stride_k over the index's shape; an index outside [0, size) is an error, as in torch (which,
/// unlike `index.Tensor`, does not wrap negative ones). Symbolic dims are fine where their
/// strides are not needed: `dim`'s size and the strides of the dims the index spans are static
/// (a symbolic batch in front: cross-entropy's rows). None otherwise.
pub(super) fn linear_along(cx: &mut Cx, xdims: &[SymExpr], index: Value, dim: usize) -> Result<Option<Value>, String> {
    let strides = trailing_strides(xdims);
    let it = cx.tt(index);
    let Some(size) = xdims[dim].as_const() else { return Ok(None) };
    // Outside the flattened operand (below -numel, so no wrapping brings it back in), as small
    // in magnitude as the bounds allow (Neuron narrows it to int32).
    let numel = xdims.iter().cloned().fold(c(1), SymExpr::times);
    let bounds = cx.m.symbol_bounds();
    let bound = |s: &str| bounds.get(s).map(|&(min, max)| ember_ir::sym::Bounds { min, max: Some(max) });
    let poison = -2 * numel.upper_bound(&bound).unwrap_or(1 << 61);
    // Each dim's stride, or None where its iota is all 0; decided before any op is built.
    let mut used = Vec::new();
    for (k, &stride) in strides.iter().enumerate() {
        if k != dim && it.dims[k] == c(1) {
            continue;
        }
        let Some(stride) = stride else { return Ok(None) };
        used.push((k, stride));
    }
    let mut linear: Option<Value> = None;
    for (k, stride) in used {
        let term = if k == dim {
            let i = cx.convert(index, DType::I64)?;
            checked_index(cx, i, size, poison)?
        } else {
            cx.emit(
                TenOp::Iota,
                vec![],
                vec![
                    ("shape", Attr::dims(it.dims.clone())),
                    ("dim", Attr::Int(k as i64)),
                    ("dtype", Attr::DType(DType::I64)),
                ],
            )?
        };
        let term = if stride != 1 { cx.binary_scalar(TenOp::Mul, term, stride as f64)? } else { term };
        linear = Some(match linear {
            Some(l) => cx.emit(TenOp::Add, vec![l, term], vec![])?,
            None => term,
        });
    }
    Ok(linear)
}

/// gather(self, dim, index): out[..i_d..] = self[..index[..]..], one `ten.gather` from the
/// flattened input with the linear index sum_k (k == dim ? index : iota_k) * stride_k over the
/// index's shape (smaller than self's in the other dims, as torch allows). An index outside
/// [0, size), negative ones included, is an error, as in torch. Symbolic input dims stay a torch
/// op.
pub fn gather_dim(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let index = cx.arg("index")?;
    let (xt, it) = (cx.tt(x), cx.tt(index));
    if xt.rank() == 0 {
        // A 0-d input has one element; its index must be 0 (torch checks), so it is every result.
        return Ok(Some(vec![cx.bcast(x, &t.dims)?]));
    }
    if it.dims.iter().any(|d| *d == c(0)) {
        // Nothing to gather (torch accepts an empty index of any rank).
        return Ok(Some(vec![cx.constf(0.0, t.dtype, &t.dims)?]));
    }
    if it.rank() != xt.rank() {
        return Err(cx.err(&format!("index has rank {} but the input has rank {}", it.rank(), xt.rank())));
    }
    let d = norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))?;
    let Some(linear) = linear_along(cx, &xt.dims, index, d)? else { return Ok(None) };
    let flat = cx.reshape(x, &[xt.numel()])?;
    let mut attrs = vec![("dim", Attr::Int(0))];
    if d != 0
        && xt.dims[0].as_const().is_none()
        && it.dims[0] == xt.dims[0]
        && xt.dims[1..].iter().all(|e| e.as_const().is_some())
    {
        // Row r of the result reads row r of `self` only: padded buckets keep real rows real.
        attrs.push((ember_ir::dialect::ten::ROWS_ALIGNED, Attr::Bool(true)));
    }
    Ok(Some(vec![cx.emit(TenOp::Gather, vec![flat, linear], attrs)?]))
}

/// diagonal(self, offset, dim1, dim2): dim1 and dim2 moved last and merged, then a strided
/// `ten.slice` from the first diagonal element with step (size of dim2) + 1. Needs a static dim2.
pub fn diagonal(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let rank = xt.rank();
    let err = |e: String| cx.err(&e);
    let (d1, d2) =
        (norm_dim(cx.int_or("dim1", 0)?, rank).map_err(err)?, norm_dim(cx.int_or("dim2", 1)?, rank).map_err(err)?);
    if d1 == d2 {
        return Err(cx.err("diagonal dimensions cannot be identical"));
    }
    let offset = cx.int_or("offset", 0)?;
    let Some(b) = xt.dims[d2].as_const() else { return Ok(None) };
    let mut perm: Vec<usize> = (0..rank).filter(|&k| k != d1 && k != d2).collect();
    perm.extend([d1, d2]);
    let len = t.dims[rank - 2].clone();
    let mut merged: Vec<SymExpr> = perm[..rank - 2].iter().map(|&k| xt.dims[k].clone()).collect();
    merged.push(SymExpr::times(xt.dims[d1].clone(), c(b)));
    let tx = if perm.iter().enumerate().all(|(i, &k)| i == k) {
        x
    } else {
        cx.emit(TenOp::Transpose, vec![x], vec![("dims", Attr::Ints(perm.iter().map(|&k| k as i64).collect()))])?
    };
    let flat = cx.reshape(tx, &merged)?;
    // An empty diagonal starts at 0 so the slice stays in bounds.
    let start = if len == c(0) {
        0
    } else if offset >= 0 {
        offset
    } else {
        -offset * b
    };
    let mut starts = vec![c(0); rank - 1];
    starts[rank - 2] = c(start);
    let mut steps = vec![1; rank - 1];
    steps[rank - 2] = b + 1;
    let v = cx.emit(
        TenOp::Slice,
        vec![flat],
        vec![("start", Attr::dims(starts)), ("shape", Attr::dims(t.dims.clone())), ("step", Attr::Ints(steps))],
    )?;
    Ok(Some(vec![v]))
}

/// The `stride` and `storage_offset` attributes of an as_strided-style op, when static.
fn static_view(cx: &Cx) -> Option<(Vec<i64>, i64)> {
    let strides = cx.attr("stride")?.as_dims()?.iter().map(SymExpr::as_const).collect::<Option<Vec<i64>>>()?;
    let offset = match cx.attr("storage_offset") {
        Some(a) => a.as_sym()?.as_const()?,
        None => 0,
    };
    Some((strides, offset))
}

/// as_strided(self, size, stride, storage_offset): one `ten.gather` from `self`'s storage at
/// `offset + sum_k iota_k * stride_k`. A function input's storage is its row-major elements
/// (Ember's inputs are dense). A computed value's storage is laid out as eager laid it out, which
/// the frontend records as `ember.self_strides` / `ember.self_offset` (ConvNeXt's and Swin's
/// pooling restride a `mean` this way): when those strides are a dense permutation at offset 0,
/// storage elements `[0, numel)` are exactly the value's, in that order. Reads beyond them (the
/// value is a view of something larger), other layouts and symbolic sizes stay a torch op.
pub fn as_strided(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    if !xt.is_static() || !t.is_static() {
        return Ok(None);
    }
    let Some(storage_order) = storage_order(cx, x) else { return Ok(None) };
    let Some((strides, offset)) = static_view(cx) else { return Ok(None) };
    if strides.len() != t.rank() {
        return Err(cx.err(&format!("{} strides for {} sizes", strides.len(), t.rank())));
    }
    let numel = xt.static_shape().unwrap_or_default().iter().product::<i64>();
    let dims = t.static_shape().unwrap_or_default();
    let last = dims.iter().zip(&strides).fold(0i64, |a, (&d, &s)| a.saturating_add((d - 1).max(0).saturating_mul(s)));
    if t.numel() != c(0) && (offset < 0 || strides.iter().any(|&s| s < 0) || offset.saturating_add(last) >= numel) {
        return Ok(None);
    }
    let stored = in_storage_order(cx, x, &storage_order)?;
    let flat = cx.reshape(stored, &[xt.numel()])?;
    Ok(Some(vec![gather_strided(cx, flat, &t.dims, &strides, offset)?]))
}

/// The order of `x`'s dims in its storage, outermost first: row-major for a function input
/// (Ember's inputs are dense); for a computed value, the layout the frontend recorded
/// (`ember.self_strides` / `ember.self_offset`) when it is a dense permutation at offset 0, so
/// that storage elements `[0, numel)` are exactly the value's. None otherwise.
fn storage_order(cx: &Cx, x: Value) -> Option<Vec<usize>> {
    let xt = cx.tt(x);
    if cx.m.defining_op(x).is_none() {
        return Some((0..xt.rank()).collect());
    }
    let layout = (cx.attr("ember.self_strides"), cx.attr("ember.self_offset").and_then(|a| a.as_int()));
    let (Some(strides), Some(0)) = layout else { return None };
    strides.as_ints().and_then(|s| dense_order(&xt.static_shape().unwrap_or_default(), s))
}

/// `x` with its dims in `order` (a transpose unless the order moves only dims of size 1).
fn in_storage_order(cx: &mut Cx, x: Value, order: &[usize]) -> Result<Value, String> {
    let shape = cx.tt(x).static_shape().unwrap_or_default();
    if order.iter().filter(|&&k| shape[k] != 1).is_sorted() {
        return Ok(x);
    }
    let perm = Attr::Ints(order.iter().map(|&k| k as i64).collect());
    cx.emit(TenOp::Transpose, vec![x], vec![("dims", perm)])
}

/// The elements of `flat` at `offset + sum_k iota_k * strides[k]` over a result of `dims`.
fn gather_strided(cx: &mut Cx, flat: Value, dims: &[SymExpr], strides: &[i64], offset: i64) -> Result<Value, String> {
    let lin = strided_positions(cx, dims, strides, offset)?;
    cx.emit(TenOp::Gather, vec![flat, lin], vec![("dim", Attr::Int(0))])
}

/// `offset + sum_k iota_k * strides[k]` over `dims`: the row-major positions a strided view reads.
fn strided_positions(cx: &mut Cx, dims: &[SymExpr], strides: &[i64], offset: i64) -> Result<Value, String> {
    let mut lin = cx.constf(offset as f64, DType::I64, dims)?;
    for (k, &s) in strides.iter().enumerate() {
        if s == 0 || dims[k] == c(1) {
            continue;
        }
        let io = cx.emit(
            TenOp::Iota,
            vec![],
            vec![
                ("shape", Attr::dims(dims.to_vec())),
                ("dim", Attr::Int(k as i64)),
                ("dtype", Attr::DType(DType::I64)),
            ],
        )?;
        let term = if s != 1 { cx.binary_scalar(TenOp::Mul, io, s as f64)? } else { io };
        lin = cx.emit(TenOp::Add, vec![lin, term], vec![])?;
    }
    Ok(lin)
}

/// as_strided_scatter(self, src, size, stride, storage_offset): `self` with `src` written where
/// as_strided(size, stride, storage_offset) of it reads (`strided_positions` into its storage,
/// in `storage_order`: the result keeps `self`'s layout, as torch's clone does). A computed
/// `self` laid out otherwise than a dense permutation stays a torch op.
pub fn as_strided_scatter(cx: &mut Cx) -> Lowered {
    let (x, src) = (cx.arg("self")?, cx.arg("src")?);
    let (xt, st) = (cx.tt(x), cx.tt(src));
    if !xt.is_static() || !st.is_static() {
        return Ok(None);
    }
    let Some(order) = storage_order(cx, x) else { return Ok(None) };
    let Some((strides, offset)) = static_view(cx) else { return Ok(None) };
    let dims = st.static_shape().unwrap_or_default();
    if strides.len() != dims.len() {
        return Err(cx.err(&format!("{} strides for {} sizes", strides.len(), dims.len())));
    }
    let numel = xt.static_shape().unwrap_or_default().iter().product::<i64>();
    let last = dims.iter().zip(&strides).fold(0i64, |a, (&d, &s)| a.saturating_add((d - 1).max(0).saturating_mul(s)));
    if st.numel() == c(0) {
        return Ok(Some(vec![x]));
    }
    if offset < 0 || strides.iter().any(|&s| s < 0) || offset.saturating_add(last) >= numel {
        return Err(cx.err(&format!("as_strided_scatter reads past the {numel} elements of `self`")));
    }
    let lin = strided_positions(cx, &st.dims, &strides, offset)?;
    let stored = in_storage_order(cx, x, &order)?;
    let stored_dims = cx.tt(stored).dims.clone();
    let flat = cx.reshape(stored, &[c(numel)])?;
    let src = cx.convert(src, xt.dtype)?;
    let r = cx.emit(TenOp::Scatter, vec![flat, lin, src], vec![("kind", Attr::Str("set".into()))])?;
    let r = cx.reshape(r, &stored_dims)?;
    if stored == x {
        return Ok(Some(vec![r]));
    }
    let inverse = Attr::Ints((0..order.len()).map(|d| order.iter().position(|&k| k == d).unwrap() as i64).collect());
    Ok(Some(vec![cx.emit(TenOp::Transpose, vec![r], vec![("dims", inverse)])?]))
}

/// put(self, index, source, accumulate): `source` written (added with `accumulate`) at the
/// elements `index` names in `self`'s row-major order, negative indices from the end.
pub fn put(cx: &mut Cx) -> Lowered {
    let (x, index, source) = (cx.arg("self")?, cx.arg("index")?, cx.arg("source")?);
    let (xt, it) = (cx.tt(x), cx.tt(index));
    if !xt.is_static() || !it.is_static() || !cx.tt(source).is_static() {
        return Ok(None);
    }
    let (numel, n) = (xt.numel(), it.numel());
    if n == c(0) {
        return Ok(Some(vec![x]));
    }
    let flat = cx.reshape(x, std::slice::from_ref(&numel))?;
    let vshape = [n];
    let idx = cx.reshape(index, &vshape)?;
    let idx = cx.convert(idx, DType::I64)?;
    let zero = cx.constf(0.0, DType::I64, &vshape)?;
    let neg = cx.compare("LT", idx, zero)?;
    let size = cx.constant(&Attr::Int(numel.as_const().unwrap_or(0)), DType::I64, &vshape)?;
    let wrapped = cx.binary(TenOp::Add, idx, size)?;
    let idx = cx.select(neg, wrapped, idx)?;
    let src = cx.reshape(source, &vshape)?;
    let src = cx.convert(src, xt.dtype)?;
    let kind = if cx.bool_or("accumulate", false) { "sum" } else { "set" };
    let r = cx.emit(TenOp::Scatter, vec![flat, idx, src], vec![("kind", Attr::Str(kind.into()))])?;
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
}

/// unfold(self, dimension, size, step): windows of `size` every `step` along `dimension`, as
/// one gather from `self`'s row-major elements: the window dim steps by `step` rows of that dim,
/// the new last dim by one. Symbolic sizes stay a torch op.
pub fn unfold(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    if !xt.is_static() || !t.is_static() {
        return Ok(None);
    }
    if xt.rank() == 0 {
        // A scalar's one window of size 1 (torch allows no other).
        return if t.numel() == c(1) { Ok(Some(vec![cx.reshape(x, &t.dims)?])) } else { Ok(None) };
    }
    let dim = norm_dim(cx.int("dimension")?, xt.rank()).map_err(|e| cx.err(&e))?;
    let step = cx.int("step")?;
    if step <= 0 || t.rank() != xt.rank() + 1 {
        return Err(cx.err(&format!("unfold of a rank-{} tensor along dim {dim} with step {step}", xt.rank())));
    }
    let row_major = static_strides(&xt.dims).expect("static");
    let mut strides = row_major.clone();
    strides[dim] *= step;
    strides.push(row_major[dim]);
    let flat = cx.reshape(x, &[xt.numel()])?;
    Ok(Some(vec![gather_strided(cx, flat, &t.dims, &strides, 0)?]))
}

/// The dims of `shape` from outermost to innermost in storage when `strides` lay its elements
/// out densely from offset 0 (a permutation of row-major); `None` for any other layout.
fn dense_order(shape: &[i64], strides: &[i64]) -> Option<Vec<usize>> {
    if shape.len() != strides.len() {
        return None;
    }
    let mut order: Vec<usize> = (0..shape.len()).collect();
    // Size-1 dims take any stride: they go where they were, ahead of equal strides.
    order.sort_by_key(|&k| (std::cmp::Reverse(if shape[k] == 1 { i64::MAX } else { strides[k] }), k));
    let mut expect = 1i64;
    for &k in order.iter().rev() {
        if shape[k] != 1 && strides[k] != expect {
            return None;
        }
        expect = expect.checked_mul(shape[k])?;
    }
    Some(order)
}

/// sort / sort.stable / topk: `ten.argsort` along the dim (stable, NaN last, or first when
/// descending, as torch orders them), the values gathered at those positions; topk keeps the
/// first k positions of a descending (`largest`) or ascending sort. Symbolic input dims stay a
/// torch op.
pub fn sort(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let it = cx.out(1)?;
    if xt.rank() == 0 {
        if it.numel() == c(0) {
            let v = cx.out(0)?;
            return Ok(Some(vec![cx.constf(0.0, v.dtype, &v.dims)?, cx.constf(0.0, DType::I64, &it.dims)?]));
        }
        return Ok(Some(vec![x, cx.constf(0.0, DType::I64, &[])?]));
    }
    if static_strides(&xt.dims).is_none() {
        return Ok(None);
    }
    let d = norm_dim(cx.int_or("dim", -1)?, xt.rank()).map_err(|e| cx.err(&e))?;
    let descending = if name == "topk" { cx.bool_or("largest", true) } else { cx.bool_or("descending", false) };
    let mut idx =
        cx.emit(TenOp::Argsort, vec![x], vec![("dim", Attr::Int(d as i64)), ("descending", Attr::Bool(descending))])?;
    if it.dims != xt.dims {
        let rank = xt.rank();
        idx = cx.emit(
            TenOp::Slice,
            vec![idx],
            vec![
                ("start", Attr::dims(vec![c(0); rank])),
                ("shape", Attr::dims(it.dims.clone())),
                ("step", Attr::Ints(vec![1; rank])),
            ],
        )?;
    }
    let Some(linear) = linear_along(cx, &xt.dims, idx, d)? else { return Ok(None) };
    let flat = cx.reshape(x, &[xt.numel()])?;
    let values = cx.emit(TenOp::Gather, vec![flat, linear], vec![("dim", Attr::Int(0))])?;
    Ok(Some(vec![values, idx]))
}

/// kthvalue, median.dim, nanmedian.dim, and median/nanmedian over every element: one stable
/// ascending `ten.argsort` (NaN last) and each row's element at one position of that order:
/// kthvalue's k - 1; median's (n - 1) / 2, or where the row has a NaN its first NaN (torch gives
/// NaN and that index); nanmedian's (c - 1) / 2 of its c non-NaN values ((n - 1) / 2 when all
/// are NaN). With ties the index is one of the tied elements' (torch's quickselect may pick
/// another: its docs promise no particular one).
pub fn order_statistic(cx: &mut Cx, name: &str) -> Lowered {
    let x0 = cx.arg("self")?;
    let xt0 = cx.tt(x0);
    let per_row = name.ends_with(".dim") || name == "kthvalue";
    let outs: Vec<TensorType> = (0..cx.m.op(cx.op).results.len()).map(|i| cx.out(i)).collect::<Result<_, _>>()?;
    if static_strides(&xt0.dims).is_none() || !xt0.is_static() {
        return Ok(None);
    }
    if xt0.rank() == 0 {
        if name == "kthvalue" && cx.int("k")? != 1 {
            return Err(cx.err("kthvalue of a scalar takes k = 1"));
        }
        let v = cx.reshape(x0, &outs[0].dims)?;
        let mut r = vec![v];
        if per_row {
            r.push(cx.constant(&Attr::Int(0), DType::I64, &outs[1].dims)?);
        }
        return Ok(Some(r));
    }
    let (x, d) = if per_row {
        (x0, norm_dim(cx.int_or("dim", -1)?, xt0.rank()).map_err(|e| cx.err(&e))?)
    } else {
        (cx.reshape(x0, &[xt0.numel()])?, 0)
    };
    let xt = cx.tt(x);
    let n = xt.dims[d].as_const().expect("static");
    if n == 0 {
        return Err(cx.err(&format!("`{name}` of an empty dim: torch raises")));
    }
    let mut kept = xt.dims.clone();
    kept[d] = c(1);
    let pos = if name == "kthvalue" {
        let k = cx.int("k")?;
        if !(1..=n).contains(&k) {
            return Err(cx.err(&format!("kthvalue's k = {k} is outside [1, {n}]: torch raises")));
        }
        cx.constant(&Attr::Int(k - 1), DType::I64, &kept)?
    } else {
        let mid = cx.constant(&Attr::Int((n - 1) / 2), DType::I64, &kept)?;
        if xt.dtype.is_float() {
            // c: the row's non-NaN count.
            let num = cx.compare("EQ", x, x)?;
            let num = cx.convert(num, DType::I64)?;
            let cnt = cx.reduce(num, "sum", &[d])?;
            let cnt = cx.reshape(cnt, &kept)?;
            let full = cx.constant(&Attr::Int(n), DType::I64, &kept)?;
            if name.starts_with("nanmedian") {
                let half = cx.binary_scalar(TenOp::Sub, cnt, 1.0)?;
                let half = cx.binary_scalar(TenOp::Div, half, 2.0)?;
                let zero = cx.constant(&Attr::Int(0), DType::I64, &kept)?;
                let some = cx.compare("GT", cnt, zero)?;
                cx.select(some, half, mid)?
            } else {
                let clean = cx.compare("EQ", cnt, full)?;
                cx.select(clean, mid, cnt)?
            }
        } else {
            mid
        }
    };
    let order =
        cx.emit(TenOp::Argsort, vec![x], vec![("dim", Attr::Int(d as i64)), ("descending", Attr::Bool(false))])?;
    let flat_order = cx.reshape(order, &[xt.numel()])?;
    let Some(at) = linear_along(cx, &xt.dims, pos, d)? else { return Ok(None) };
    let idx = cx.emit(TenOp::Gather, vec![flat_order, at], vec![("dim", Attr::Int(0))])?;
    let Some(src) = linear_along(cx, &xt.dims, idx, d)? else { return Ok(None) };
    let flat = cx.reshape(x, &[xt.numel()])?;
    let values = cx.emit(TenOp::Gather, vec![flat, src], vec![("dim", Attr::Int(0))])?;
    let mut r = vec![cx.reshape(values, &outs[0].dims)?];
    if per_row {
        r.push(cx.reshape(idx, &outs[1].dims)?);
    }
    Ok(Some(r))
}
