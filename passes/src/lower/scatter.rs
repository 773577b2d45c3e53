//! Scatters: every torch scatter becomes `ten.scatter` into the flattened input at row-major
//! positions computed like the gathers' (`shape::linear_along`, `shape::adjacent_index`), then a
//! reshape back. Inputs with symbolic dims stay torch ops (the positions need static strides).

use super::build::{self, c, norm_dim, Cx, Lowered};
use super::shape::{adjacent_index, linear_along};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::{DType, SymExpr, TensorType, Value};

/// The identity of a scatter kind as a splat of `dtype` (what an excluded `self` is replaced by).
fn identity(kind: &str, dtype: DType) -> Attr {
    match (kind, dtype.is_float()) {
        ("prod", _) => Attr::Int(1),
        ("max", true) => Attr::Float(f64::NEG_INFINITY),
        ("min", true) => Attr::Float(f64::INFINITY),
        ("max", false) => Attr::Int(int_bounds(dtype).0),
        ("min", false) => Attr::Int(int_bounds(dtype).1),
        _ => Attr::Int(0),
    }
}

fn int_bounds(dtype: DType) -> (i64, i64) {
    match dtype {
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        DType::U8 => (0, u8::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn scatter(cx: &mut Cx, x: Value, index: Value, updates: Value, kind: &str) -> Result<Value, String> {
    cx.emit(TenOp::Scatter, vec![x, index, updates], vec![("kind", Attr::Str(kind.into()))])
}

/// scatter.src/.value (set), scatter_add (sum), scatter.reduce (add/multiply) and
/// scatter_reduce.two (sum/prod/mean/amax/amin, `include_self`). An excluded `self` is first
/// overwritten with the kind's identity where updates land; mean divides the sum by the number
/// of contributions (self included), untouched elements keep their value, as torch computes it.
/// Not lowered: symbolic shapes, bool accumulation, integer mean (torch floors).
pub fn scatter_dim(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let index = cx.arg("index")?;
    let (xt, it) = (cx.tt(x), cx.tt(index));
    if it.dims.iter().any(|d| *d == c(0)) {
        return Ok(Some(vec![x]));
    }
    if xt.rank() == 0 || !it.is_static() {
        return Ok(None);
    }
    if it.rank() != xt.rank() {
        return Err(cx.err(&format!("index has rank {} but the input has rank {}", it.rank(), xt.rank())));
    }
    let d = norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))?;
    let (kind, include_self) = match name {
        "scatter.src" | "scatter.value" => ("set", true),
        "scatter_add" => ("sum", true),
        "scatter.reduce" => match cx.str_attr("reduce").as_deref() {
            Some("add") => ("sum", true),
            Some("multiply") => ("prod", true),
            r => return Err(cx.err(&format!("unknown reduce `{}`", r.unwrap_or("")))),
        },
        _ => {
            let k = match cx.str_attr("reduce").as_deref() {
                Some("sum") => "sum",
                Some("prod") => "prod",
                Some("mean") => "mean",
                Some("amax") => "max",
                Some("amin") => "min",
                r => return Err(cx.err(&format!("unknown reduce `{}`", r.unwrap_or("")))),
            };
            (k, cx.bool_or("include_self", true))
        }
    };
    if (t.dtype == DType::Bool && kind != "set") || (kind == "mean" && !t.dtype.is_float()) {
        return Ok(None);
    }
    let src = if name == "scatter.value" {
        let v = cx.attr("value").ok_or_else(|| cx.err("missing attribute `value`"))?;
        cx.constant(&v, t.dtype, &it.dims)?
    } else {
        // src may be larger than index in every dim; only its leading index-shaped part is used.
        let s = cx.arg("src")?;
        let st = cx.tt(s);
        let s = if st.dims == it.dims {
            s
        } else {
            let start = Attr::dims(vec![c(0); st.rank()]);
            cx.emit(
                TenOp::Slice,
                vec![s],
                vec![
                    ("start", start),
                    ("shape", Attr::dims(it.dims.clone())),
                    ("step", Attr::Ints(vec![1; st.rank()])),
                ],
            )?
        };
        cx.convert(s, t.dtype)?
    };
    scatter_along(cx, x, index, src, d, kind, include_self)
}

/// `x` with `src` combined (`kind`) at the positions `index` names along dim `d` (index and
/// src of one shape): scatter_dim's and index_reduce's common part.
fn scatter_along(cx: &mut Cx, x: Value, index: Value, src: Value, d: usize, kind: &str, include_self: bool) -> Lowered {
    let (xt, it) = (cx.tt(x), cx.tt(index));
    let t = xt.clone();
    let Some(lin) = linear_along(cx, &xt.dims, index, d)? else { return Ok(None) };
    let flat_shape = [xt.numel()];
    let flat = cx.reshape(x, &flat_shape)?;
    let combine = if kind == "mean" { "sum" } else { kind };
    let base = if include_self || kind == "set" {
        flat
    } else {
        let id = cx.constant(&identity(combine, t.dtype), t.dtype, &it.dims)?;
        scatter(cx, flat, lin, id, "set")?
    };
    let mut r = scatter(cx, base, lin, src, combine)?;
    if kind == "mean" {
        let start = cx.constf(if include_self { 1.0 } else { 0.0 }, t.dtype, &flat_shape)?;
        let ones = cx.constf(1.0, t.dtype, &it.dims)?;
        let count = scatter(cx, start, lin, ones, "sum")?;
        let one = cx.splat_like(1.0, count)?;
        let count = cx.emit(TenOp::Max, vec![count, one], vec![])?;
        r = cx.emit(TenOp::Div, vec![r, count], vec![])?;
    }
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
}

/// segment_reduce(data, reduce, lengths | offsets, axis, initial): each position along `axis`
/// scattered into its segment, the count of segment ends at or before it (positions before the
/// first offset or past the last end are out of range, which the scatter skips: torch raises
/// for lengths that do not cover the axis unless `unsafe`, and no target checks values at run
/// time). The base is `initial` (or the reduction's identity); mean is the base plus the sum
/// over the count, and `initial` (or NaN) where a segment is empty, as torch computes it.
/// Not lowered: per-row (rank > 1) lengths or offsets, `indices`, integer data.
pub fn segment_reduce(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let data = cx.arg("data")?;
    let dt = cx.tt(data);
    if !t.dtype.is_float() || !dt.is_static() || !t.is_static() {
        return Ok(None);
    }
    let axis = norm_dim(cx.int_or("axis", 0)?, dt.rank()).map_err(|e| cx.err(&e))?;
    let kind = match cx.str_attr("reduce").as_deref() {
        Some(k @ ("sum" | "prod" | "max" | "min" | "mean")) => k.to_string(),
        r => return Err(cx.err(&format!("unknown reduce `{}`", r.unwrap_or("")))),
    };
    if cx.operand("indices").is_some() {
        return Err(cx.err("segment_reduce by `indices` is not supported"));
    }
    let (ends, first) = match (cx.operand("lengths"), cx.operand("offsets")) {
        (Some(l), None) if cx.tt(l).rank() == 1 => {
            let l = cx.convert(l, DType::I64)?;
            (cx.emit(TenOp::Cumsum, vec![l], vec![("dim", Attr::Int(0))])?, None)
        }
        (None, Some(o)) if cx.tt(o).rank() == 1 => {
            let o = cx.convert(o, DType::I64)?;
            let n = cx.tt(o).dims[0].as_const().unwrap_or(0);
            if n < 1 {
                return Err(cx.err("segment_reduce's offsets must hold at least one entry"));
            }
            let slice = |cx: &mut Cx, start: i64, len: i64| {
                cx.emit(
                    TenOp::Slice,
                    vec![o],
                    vec![
                        ("start", Attr::dims(vec![c(start)])),
                        ("shape", Attr::dims(vec![c(len)])),
                        ("step", Attr::Ints(vec![1])),
                    ],
                )
            };
            (slice(cx, 1, n - 1)?, Some(slice(cx, 0, 1)?))
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(cx.err("segment_reduce with per-row (rank > 1) lengths or offsets is not supported"))
        }
        _ => return Err(cx.err("segment_reduce takes exactly one of `lengths` and `offsets`")),
    };
    let segs = t.dims[axis].as_const().expect("static");
    let n = dt.dims[axis].as_const().expect("static");
    let grid = [c(n), c(segs)];
    let i = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(grid.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let ends_b = cx.bcast_in_dim(ends, &grid, &[1])?;
    let done = cx.compare("LE", ends_b, i)?;
    let done = cx.convert(done, DType::I64)?;
    let mut seg = cx.reduce(done, "sum", &[1])?;
    if let Some(first) = first {
        let pos = cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(vec![c(n)])), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
        )?;
        let first = cx.bcast_in_dim(first, &[c(n)], &[0])?;
        let before = cx.compare("LT", pos, first)?;
        let out = cx.constant(&Attr::Int(segs), DType::I64, &[c(n)])?;
        seg = cx.select(before, out, seg)?;
    }
    let index = cx.bcast_in_dim(seg, &dt.dims, &[axis])?;
    let data = cx.convert(data, t.dtype)?;
    let initial = cx.attr("initial").and_then(|a| a.as_float());
    let combine = if kind == "mean" { "sum" } else { kind.as_str() };
    let base_value = initial.map(Attr::Float).unwrap_or_else(|| identity(combine, t.dtype));
    let base = cx.constant(&base_value, t.dtype, &t.dims)?;
    let Some(r) = scatter_along(cx, base, index, data, axis, combine, true)? else { return Ok(None) };
    if kind != "mean" {
        return Ok(Some(r));
    }
    let zeros = cx.constf(0.0, t.dtype, &t.dims)?;
    let ones = cx.constf(1.0, t.dtype, &dt.dims)?;
    let Some(count) = scatter_along(cx, zeros, index, ones, axis, "sum", true)? else { return Ok(None) };
    let mean = cx.emit(TenOp::Div, vec![r[0], count[0]], vec![])?;
    let zero = cx.splat_like(0.0, count[0])?;
    let empty = cx.compare("EQ", count[0], zero)?;
    let fill = cx.constf(initial.unwrap_or(f64::NAN), t.dtype, &t.dims)?;
    Ok(Some(vec![cx.select(empty, fill, mean)?]))
}

/// max_pool{2,3}d_with_indices_backward(grad_output, self, ..., indices): each output's gradient
/// added at its window's argmax, which `indices` holds as a flat position in the input plane, so
/// one scatter-add into the input's shape with its pooled dims flattened (overlapping windows
/// whose argmax coincides add up, as torch's kernel accumulates).
pub fn max_pool_backward(cx: &mut Cx, spatial: usize) -> Lowered {
    let grad = cx.arg("grad_output")?;
    let x = cx.arg("self")?;
    let indices = cx.arg("indices")?;
    let (xt, gt) = (cx.tt(x), cx.tt(grad));
    if !xt.is_static() || !gt.is_static() || xt.rank() < spatial || gt.rank() != xt.rank() {
        return Ok(None);
    }
    let lead = xt.rank() - spatial;
    let plane = |cx: &Cx, dims: &[SymExpr]| -> Result<Vec<SymExpr>, String> {
        let n = dims[lead..].iter().try_fold(1i64, |a, d| a.checked_mul(d.as_const()?));
        let n = n.ok_or_else(|| cx.err("the pooled planes' size overflows"))?;
        Ok(dims[..lead].iter().cloned().chain([c(n)]).collect())
    };
    let (xp, gp) = (plane(cx, &xt.dims)?, plane(cx, &gt.dims)?);
    let zeros = cx.constf(0.0, xt.dtype, &xp)?;
    let index = cx.reshape(indices, &gp)?;
    let src = cx.reshape(grad, &gp)?;
    let src = cx.convert(src, xt.dtype)?;
    let Some(r) = scatter_along(cx, zeros, index, src, lead, "sum", true)? else { return Ok(None) };
    Ok(Some(vec![cx.reshape(r[0], &xt.dims)?]))
}

/// index_reduce(self, dim, index, source, reduce, include_self): `source`'s slice i along `dim`
/// combined into `self`'s slice index[i] (prod, mean, amax, amin), as scatter_reduce with the
/// 1-D index broadcast over `source`'s other dims. A scalar `self` is a 1-element vector.
pub fn index_reduce(cx: &mut Cx) -> Lowered {
    let x = cx.arg("self")?;
    let index = cx.arg("index")?;
    let source = cx.arg("source")?;
    let (xt, st) = (cx.tt(x), cx.tt(source));
    if !st.is_static() || !xt.is_static() || cx.tt(index).rank() != 1 || st.rank() != xt.rank() {
        return Ok(None);
    }
    let kind = match cx.str_attr("reduce").as_deref() {
        Some("prod") => "prod",
        Some("mean") => "mean",
        Some("amax") => "max",
        Some("amin") => "min",
        r => return Err(cx.err(&format!("unknown reduce `{}`", r.unwrap_or("")))),
    };
    if xt.dtype == DType::Bool || (kind == "mean" && !xt.dtype.is_float()) {
        return Ok(None);
    }
    if st.dims.iter().any(|d| *d == c(0)) {
        return Ok(Some(vec![x]));
    }
    let scalar = xt.rank() == 0;
    let (x, source) = if scalar { (cx.reshape(x, &[c(1)])?, cx.reshape(source, &[c(1)])?) } else { (x, source) };
    let d = if scalar { 0 } else { norm_dim(cx.int("dim")?, xt.rank()).map_err(|e| cx.err(&e))? };
    let dims = cx.tt(source).dims;
    let index = cx.bcast_in_dim(index, &dims, &[d])?;
    let source = cx.convert(source, xt.dtype)?;
    let Some(r) = scatter_along(cx, x, index, source, d, kind, cx.bool_or("include_self", true))? else {
        return Ok(None);
    };
    Ok(Some(vec![cx.reshape(r[0], &xt.dims)?]))
}

/// index_put(self, indices, values, accumulate): `values` broadcast to the shape of
/// self[indices] and written (or, with `accumulate`, added) at the positions that indexing
/// reads. The same index forms as index.Tensor (adjacent integer indices over static dims).
pub fn index_put(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let accumulate = cx.bool_or("accumulate", false);
    if !xt.is_static() || (accumulate && t.dtype == DType::Bool) {
        return Ok(None);
    }
    let Some(ix) = adjacent_index(cx, &xt)? else { return Ok(None) };
    let k = ix.shape.len();
    let mut rshape = xt.dims[..ix.first].to_vec();
    rshape.extend(ix.shape.iter().cloned());
    rshape.extend_from_slice(&xt.dims[ix.last + 1..]);
    if rshape.iter().any(|d| *d == c(0)) {
        return Ok(Some(vec![x]));
    }
    let sizes: Vec<i64> = xt.dims.iter().map(|d| d.as_const().expect("static")).collect();
    let stride = |k: usize| sizes[k + 1..].iter().product::<i64>();
    // Row-major position: leading dims' iotas, the merged index, trailing dims' iotas.
    let map: Vec<usize> = (ix.first..ix.first + k).collect();
    let merged = cx.bcast_in_dim(ix.linear, &rshape, &map)?;
    let mut lin =
        if stride(ix.last) != 1 { cx.binary_scalar(TenOp::Mul, merged, stride(ix.last) as f64)? } else { merged };
    let other: Vec<(usize, usize)> = (0..ix.first)
        .map(|j| (j, j))
        .chain((ix.last + 1..xt.rank()).map(|j| (j, j - ix.last - 1 + ix.first + k)))
        .collect();
    for (xdim, rdim) in other {
        let io = cx.emit(
            TenOp::Iota,
            vec![],
            vec![
                ("shape", Attr::dims(rshape.clone())),
                ("dim", Attr::Int(rdim as i64)),
                ("dtype", Attr::DType(DType::I64)),
            ],
        )?;
        let term = if stride(xdim) != 1 { cx.binary_scalar(TenOp::Mul, io, stride(xdim) as f64)? } else { io };
        lin = cx.emit(TenOp::Add, vec![lin, term], vec![])?;
    }
    let values = cx.arg("values")?;
    let values = cx.coerce(values, t.dtype, &rshape)?;
    let flat_shape: [SymExpr; 1] = [xt.numel()];
    let flat = cx.reshape(x, &flat_shape)?;
    let r = scatter(cx, flat, lin, values, if accumulate { "sum" } else { "set" })?;
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
}

/// The row-major position in a static tensor of shape `xdims` of elements whose coordinate
/// along x dim k is `coords[k]` (i64 tensors of one shape).
fn positions(cx: &mut Cx, xdims: &[SymExpr], coords: Vec<Value>) -> Result<Value, String> {
    let sizes: Vec<i64> = xdims.iter().map(|d| d.as_const().expect("static")).collect();
    let mut lin: Option<Value> = None;
    for (k, coord) in coords.into_iter().enumerate() {
        let stride: i64 = sizes[k + 1..].iter().product();
        let term = if stride != 1 { cx.binary_scalar(TenOp::Mul, coord, stride as f64)? } else { coord };
        lin = Some(match lin {
            Some(l) => cx.emit(TenOp::Add, vec![l, term], vec![])?,
            None => term,
        });
    }
    Ok(lin.expect("rank >= 1"))
}

fn iota(cx: &mut Cx, shape: &[SymExpr], dim: usize) -> Result<Value, String> {
    cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(shape.to_vec())), ("dim", Attr::Int(dim as i64)), ("dtype", Attr::DType(DType::I64))],
    )
}

/// slice_scatter with step 1 and a static start: `src` padded out to `self`'s extent along the
/// dim, selected where the slice lies. Elementwise apart from the pad, so other dims may be
/// symbolic (a sliced sequence's gradient, `logits[:, :-1]`, under a dynamic batch), and the
/// sliced dim too when what the slice leaves after it is static (T5's shift right,
/// `y[..., 1:] = x[..., :-1]`). None otherwise (before building anything).
fn slice_scatter_padded(cx: &mut Cx, x: Value) -> Result<Option<Value>, String> {
    let xt = cx.tt(x);
    let src = cx.arg("src")?;
    let st = cx.tt(src);
    if xt.rank() == 0 || cx.int_or("step", 1)? != 1 || st.rank() != xt.rank() {
        return Ok(None);
    }
    let d = norm_dim(cx.int_or("dim", 0)?, xt.rank()).map_err(|e| cx.err(&e))?;
    let start = super::shape::clamp_bound(cx.attr("start").and_then(|a| a.as_sym()), &xt.dims[d], c(0));
    if start == c(0) && st.dims == xt.dims {
        // The whole of `self` (a full slice's gradient, even along a symbolic dim).
        return Ok(Some(cx.convert(src, xt.dtype)?));
    }
    let Some(start) = start.as_const() else { return Ok(None) };
    // What the slice leaves after it: static, even when both sizes are symbolic (`x[:, 1:]` of a
    // dynamic sequence leaves nothing).
    let after = SymExpr::plus(xt.dims[d].clone(), SymExpr::times(c(-1), SymExpr::plus(c(start), st.dims[d].clone())));
    let Some(after) = after.as_const() else { return Ok(None) };
    if after < 0 || (0..xt.rank()).any(|k| k != d && st.dims[k] != xt.dims[k]) {
        return Ok(None);
    }
    // The slice's end as a number, where the mask needs one.
    let end = match xt.dims[d].as_const() {
        Some(size) => Some(size - after),
        None if after == 0 => None,
        None => return Ok(None),
    };
    let src = cx.convert(src, xt.dtype)?;
    let (mut low, mut high) = (vec![c(0); xt.rank()], vec![c(0); xt.rank()]);
    low[d] = c(start);
    high[d] = c(after);
    let padded = super::window::pad(cx, src, low, high, Attr::Int(0))?;
    let at = iota(cx, &xt.dims, d)?;
    let first = cx.splat_like(start as f64, at)?;
    let mut inside = cx.compare("GE", at, first)?;
    if let Some(end) = end {
        let end = cx.splat_like(end as f64, at)?;
        let lt = cx.compare("LT", at, end)?;
        inside = cx.emit(TenOp::And, vec![inside, lt], vec![])?;
    }
    Ok(Some(cx.select(inside, padded, x)?))
}

/// slice_scatter, select_scatter and diagonal_scatter: `src` written over the view of `self`
/// that slice/select/diagonal read, with one `ten.scatter` (the view's positions are distinct).
pub fn view_scatter(cx: &mut Cx, name: &str) -> Lowered {
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    if name == "slice_scatter" {
        if let Some(r) = slice_scatter_padded(cx, x)? {
            return Ok(Some(vec![r]));
        }
    }
    let src = cx.arg("src")?;
    let st = cx.tt(src);
    if !xt.is_static() || !st.is_static() || xt.rank() == 0 {
        return Ok(None);
    }
    let src = cx.convert(src, xt.dtype)?;
    if st.dims.iter().any(|d| *d == c(0)) {
        return Ok(Some(vec![x]));
    }
    let rank = xt.rank();
    let err = |e: String| cx.err(&e);
    let (src, coords) = if name == "diagonal_scatter" {
        let (d1, d2) =
            (norm_dim(cx.int_or("dim1", 0)?, rank).map_err(err)?, norm_dim(cx.int_or("dim2", 1)?, rank).map_err(err)?);
        let offset = cx.int_or("offset", 0)?;
        let diag = st.rank() - 1;
        let mut others = (0..diag).map(|k| iota(cx, &st.dims, k)).collect::<Result<Vec<_>, _>>()?.into_iter();
        let mut coords = Vec::new();
        for k in 0..rank {
            coords.push(if k == d1 || k == d2 {
                let l = iota(cx, &st.dims, diag)?;
                let shift = if k == d1 { (-offset).max(0) } else { offset.max(0) };
                if shift != 0 {
                    cx.binary_scalar(TenOp::Add, l, shift as f64)?
                } else {
                    l
                }
            } else {
                others.next().ok_or_else(|| cx.err("src has the wrong rank"))?
            });
        }
        (src, coords)
    } else {
        let d = norm_dim(cx.int_or("dim", 0)?, rank).map_err(err)?;
        let size = xt.dims[d].clone();
        let (src, start, step) = if name == "select_scatter" {
            let i = cx
                .attr("index")
                .and_then(|a| a.as_sym())
                .and_then(|s| s.as_const())
                .ok_or_else(|| cx.err("attribute `index` must be a static integer"))?;
            let n = size.as_const().expect("static");
            let mut dims = st.dims.clone();
            dims.insert(d, c(1));
            (cx.reshape(src, &dims)?, if i < 0 { i + n } else { i }, 1)
        } else {
            let start = super::shape::clamp_bound(cx.attr("start").and_then(|a| a.as_sym()), &size, c(0));
            let Some(start) = start.as_const() else { return Ok(None) };
            (src, start, cx.int_or("step", 1)?)
        };
        let sdims = cx.tt(src).dims;
        let mut coords = Vec::new();
        for k in 0..rank {
            let io = iota(cx, &sdims, k)?;
            coords.push(if k != d {
                io
            } else {
                let v = if step != 1 { cx.binary_scalar(TenOp::Mul, io, step as f64)? } else { io };
                if start != 0 {
                    cx.binary_scalar(TenOp::Add, v, start as f64)?
                } else {
                    v
                }
            });
        }
        (src, coords)
    };
    let lin = positions(cx, &xt.dims, coords)?;
    let flat = cx.reshape(x, &[xt.numel()])?;
    let r = scatter(cx, flat, lin, src, "set")?;
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
}

/// _embedding_bag / _embedding_bag_forward_only(weight, indices, offsets, mode, ...,
/// per_sample_weights, include_last_offset, padding_idx) -> (out, offset2bag, bag_size,
/// max_indices), as torch's CPU kernel returns each of them. Index i's bag is the count of the
/// first B offsets (B bags) at or before it, minus one (offset2bag); sum and mean scatter each
/// (weighted) row at the count over every offset instead, so with include_last_offset the rows
/// past the last offset drop out of the sum while the bag size, and so mean's divisor and max's
/// candidates, still count them (torch computes sizes from offset2bag, sums from the offsets).
/// Rows at `padding_idx` count nowhere. Max follows the kernel's running `x > best`: a bag's
/// first row wins where it is NaN, otherwise the largest non-NaN value, the first such row's
/// index. Sum mode returns zeros for bag_size and max_indices, mean its bag sizes for both;
/// where the export recorded an empty offset2bag (sum without padding_idx), it is empty.
pub fn embedding_bag(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (w, idx, off) = (cx.arg("weight")?, cx.arg("indices")?, cx.arg("offsets")?);
    let (wt, it, ot) = (cx.tt(w), cx.tt(idx), cx.tt(off));
    if !t.dtype.is_float() || wt.rank() != 2 || it.rank() != 1 || ot.rank() != 1 {
        return Ok(None);
    }
    let (Some(ws), Some(is), Some(os), Some(ts)) =
        (wt.static_shape(), it.static_shape(), ot.static_shape(), t.static_shape())
    else {
        return Ok(None);
    };
    let mode = cx.int_or("mode", 0)?;
    if !(0..=2).contains(&mode) {
        return Err(cx.err(&format!("unknown mode {mode}")));
    }
    let psw = cx.operand("per_sample_weights");
    if psw.is_some() && mode != 0 {
        return Err(cx.err("per_sample_weights is only defined for mode 'sum'"));
    }
    let ilo = cx.bool_or("include_last_offset", false);
    let pad = cx.int_or("padding_idx", -1)?;
    let (l, d, n_off, bags) = (is[0], ws[1], os[0], ts[0]);
    if bags != n_off - i64::from(ilo) || ts[1] != d {
        return Err(cx.err(&format!("{n_off} offsets do not make the {bags} bags of the result")));
    }
    let acc = build::acc_dtype(t.dtype);
    let (o2b_t, size_t, maxi_t) = (cx.out(1)?, cx.out(2)?, cx.out(3)?);
    if l == 0 {
        let mut r = vec![cx.constf(0.0, t.dtype, &t.dims)?];
        for want in [&o2b_t, &size_t, &maxi_t] {
            r.push(cx.constant(&Attr::Int(0), want.dtype, &want.dims)?);
        }
        return Ok(Some(r));
    }
    let i64s = |cx: &mut Cx, v: i64, shape: &[SymExpr]| cx.constant(&Attr::Int(v), DType::I64, shape);
    let iota = |cx: &mut Cx, shape: &[SymExpr], dim: i64| {
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(shape.to_vec())), ("dim", Attr::Int(dim)), ("dtype", Attr::DType(DType::I64))],
        )
    };
    let idx = cx.convert(idx, DType::I64)?;
    let off = cx.convert(off, DType::I64)?;
    // Per index: [offsets[j] <= i] over the offsets j.
    let grid = [c(l), c(n_off)];
    let pos = iota(cx, &grid, 0)?;
    let ob = cx.bcast_in_dim(off, &grid, &[1])?;
    let started = cx.compare("LE", ob, pos)?;
    let started = cx.convert(started, DType::I64)?;
    let count_upto = |cx: &mut Cx, k: i64| -> Result<Value, String> {
        let s = if k == n_off {
            started
        } else {
            cx.emit(
                TenOp::Slice,
                vec![started],
                vec![
                    ("start", Attr::Ints(vec![0, 0])),
                    ("shape", Attr::Ints(vec![l, k])),
                    ("step", Attr::Ints(vec![1, 1])),
                ],
            )?
        };
        let s = cx.reduce(s, "sum", &[1])?;
        cx.binary_scalar(TenOp::Sub, s, 1.0)
    };
    let bag = count_upto(cx, bags)?;
    let seg = if ilo { count_upto(cx, n_off)? } else { bag };
    let valid = if pad >= 0 {
        let p = i64s(cx, pad, &[c(l)])?;
        Some(cx.compare("NE", idx, p)?)
    } else {
        None
    };
    let lds = [c(l), c(d)];
    let rows = cx.emit(TenOp::Gather, vec![w, idx], vec![("dim", Attr::Int(0))])?;
    let mut rows = cx.convert(rows, acc)?;
    if let Some(p) = psw {
        let p = cx.convert(p, acc)?;
        let p = cx.bcast_in_dim(p, &lds, &[0])?;
        rows = cx.emit(TenOp::Mul, vec![rows, p], vec![])?;
    }
    // Flat positions seg * D + column in the [bags * D] output; seg -1 or `bags` fall outside.
    let col = iota(cx, &lds, 1)?;
    let at = |cx: &mut Cx, s: Value| -> Result<Value, String> {
        let s = cx.bcast_in_dim(s, &lds, &[0])?;
        let s = cx.binary_scalar(TenOp::Mul, s, d as f64)?;
        cx.emit(TenOp::Add, vec![s, col], vec![])
    };
    // Per bag, how many valid indices offset2bag puts in it.
    let ones = match valid {
        Some(v) => cx.convert(v, DType::I64)?,
        None => i64s(cx, 1, &[c(l)])?,
    };
    let zeros_b = i64s(cx, 0, &[c(bags)])?;
    let size = scatter(cx, zeros_b, bag, ones, "sum")?;
    let flat = [c(bags * d)];
    let (out, max_idx) = if mode == 2 {
        let lin = at(cx, bag)?;
        let nan = cx.emit(TenOp::Compare, vec![rows, rows], vec![("direction", Attr::Str("NE".into()))])?;
        let mut skip = nan;
        if let Some(v) = valid {
            let v = cx.bcast_in_dim(v, &lds, &[0])?;
            let inv = cx.unary(TenOp::Not, v)?;
            skip = cx.emit(TenOp::Or, vec![skip, inv], vec![])?;
        }
        let low = cx.splat_like(f64::NEG_INFINITY, rows)?;
        let cand = cx.select(skip, low, rows)?;
        let base = cx.constf(f64::NEG_INFINITY, acc, &flat)?;
        let best = scatter(cx, base, lin, cand, "max")?;
        // The first valid row of each bag: where its value is NaN, it is the result.
        let far = i64s(cx, l, &[c(l)])?;
        let p1 = iota(cx, &[c(l)], 0)?;
        let p1 = match valid {
            Some(v) => cx.select(v, p1, far)?,
            None => p1,
        };
        let lfill = i64s(cx, l, &[c(bags)])?;
        let first = scatter(cx, lfill, bag, p1, "min")?;
        let first_c = cx.binary_scalar(TenOp::Min, first, (l - 1) as f64)?;
        let bd = [c(bags), c(d)];
        let first_rows = cx.emit(TenOp::Gather, vec![rows, first_c], vec![("dim", Attr::Int(0))])?;
        let first_nan =
            cx.emit(TenOp::Compare, vec![first_rows, first_rows], vec![("direction", Attr::Str("NE".into()))])?;
        let best = cx.reshape(best, &bd)?;
        let value = cx.select(first_nan, first_rows, best)?;
        // The first row holding the best value, or the first row when it is NaN.
        let best_flat = cx.reshape(best, &flat)?;
        let lin_c = cx.binary_scalar(TenOp::Max, lin, 0.0)?;
        let lin_c = cx.binary_scalar(TenOp::Min, lin_c, (bags * d - 1) as f64)?;
        let mine = cx.emit(TenOp::Gather, vec![best_flat, lin_c], vec![("dim", Attr::Int(0))])?;
        let hit = cx.compare("EQ", cand, mine)?;
        let not_skip = cx.unary(TenOp::Not, skip)?;
        let hit = cx.emit(TenOp::And, vec![hit, not_skip], vec![])?;
        let pl = iota(cx, &lds, 0)?;
        let farl = i64s(cx, l, &lds)?;
        let pl = cx.select(hit, pl, farl)?;
        let lfill = i64s(cx, l, &flat)?;
        let arg = scatter(cx, lfill, lin, pl, "min")?;
        let arg = cx.reshape(arg, &bd)?;
        let first_b = cx.bcast_in_dim(first, &bd, &[0])?;
        let arg = cx.select(first_nan, first_b, arg)?;
        let arg_c = cx.binary_scalar(TenOp::Min, arg, (l - 1) as f64)?;
        let arg_flat = cx.reshape(arg_c, &flat)?;
        let which = cx.emit(TenOp::Gather, vec![idx, arg_flat], vec![("dim", Attr::Int(0))])?;
        let which = cx.reshape(which, &bd)?;
        let size_b = cx.bcast_in_dim(size, &bd, &[0])?;
        let zero = i64s(cx, 0, &bd)?;
        let empty = cx.compare("EQ", size_b, zero)?;
        let zf = cx.constf(0.0, acc, &bd)?;
        let value = cx.select(empty, zf, value)?;
        let which = cx.select(empty, zero, which)?;
        (value, Some(which))
    } else {
        if let Some(v) = valid {
            let v = cx.bcast_in_dim(v, &lds, &[0])?;
            let z = cx.splat_like(0.0, rows)?;
            rows = cx.select(v, rows, z)?;
        }
        let lin = at(cx, seg)?;
        let base = cx.constf(0.0, acc, &flat)?;
        let sum = scatter(cx, base, lin, rows, "sum")?;
        let mut out = cx.reshape(sum, &[c(bags), c(d)])?;
        if mode == 1 {
            let one = i64s(cx, 1, &[c(bags)])?;
            let n = cx.emit(TenOp::Max, vec![size, one], vec![])?;
            let n = cx.convert(n, acc)?;
            let n = cx.bcast_in_dim(n, &t.dims, &[0])?;
            out = cx.emit(TenOp::Div, vec![out, n], vec![])?;
        }
        (out, None)
    };
    let out = cx.convert(out, t.dtype)?;
    // Each auxiliary result in the shape the export recorded, or an error if it is not torch's.
    let aux = |cx: &mut Cx, want: &TensorType, v: Option<Value>, what: &str| -> Result<Value, String> {
        let v = match v {
            Some(v) if want.numel() != c(0) => v,
            _ => return cx.constant(&Attr::Int(0), want.dtype, &want.dims),
        };
        if cx.tt(v).dims != want.dims {
            return Err(cx.err(&format!("the recorded {what} has shape {:?}, not torch's", want.dims)));
        }
        cx.convert(v, want.dtype)
    };
    let o2b = aux(cx, &o2b_t, Some(bag), "offset2bag")?;
    let sizes = aux(cx, &size_t, (mode != 0).then_some(size), "bag_size")?;
    let maxi = aux(cx, &maxi_t, if mode == 2 { max_idx } else { (mode == 1).then_some(size) }, "max_indices")?;
    Ok(Some(vec![out, o2b, sizes, maxi]))
}

/// masked_scatter(self, mask, source): the k-th true element of the broadcast mask (row-major)
/// takes source's k-th element (row-major), its rank a running count of the mask; the others
/// keep `self`. One gather of the flattened source at the ranks, then a select. A source with
/// fewer elements than the mask has true ones, which torch raises for, reads its last element
/// there (no target checks values at run time).
pub fn masked_scatter(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (x, mask, src) = (cx.arg("self")?, cx.arg("mask")?, cx.arg("source")?);
    let st = cx.tt(src);
    let (Some(n), Some(ns)) = (t.numel().as_const(), st.numel().as_const()) else { return Ok(None) };
    let x = cx.coerce(x, t.dtype, &t.dims)?;
    let mask = cx.truthy(mask)?;
    let mask = cx.bcast(mask, &t.dims)?;
    if n == 0 || ns == 0 {
        return Ok(Some(vec![x]));
    }
    let flat = [c(n)];
    let m = cx.reshape(mask, &flat)?;
    let k = cx.convert(m, DType::I64)?;
    let k = cx.emit(TenOp::Cumsum, vec![k], vec![("dim", Attr::Int(0))])?;
    let k = cx.binary_scalar(TenOp::Sub, k, 1.0)?;
    let k = cx.binary_scalar(TenOp::Max, k, 0.0)?;
    let k = cx.binary_scalar(TenOp::Min, k, (ns - 1) as f64)?;
    let s = cx.reshape(src, &[c(ns)])?;
    let s = cx.convert(s, t.dtype)?;
    let v = cx.emit(TenOp::Gather, vec![s, k], vec![("dim", Attr::Int(0))])?;
    let xf = cx.reshape(x, &flat)?;
    let r = cx.select(m, v, xf)?;
    Ok(Some(vec![cx.reshape(r, &t.dims)?]))
}
