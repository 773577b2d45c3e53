//! Scatters: every torch scatter becomes `ten.scatter` into the flattened input at row-major
//! positions computed like the gathers' (`shape::linear_along`, `shape::adjacent_index`), then a
//! reshape back. Inputs with symbolic dims stay torch ops (the positions need static strides).

use super::build::{c, norm_dim, Cx, Lowered};
use super::shape::{adjacent_index, linear_along};
use ember_ir::attr::Attr;
use ember_ir::{DType, SymExpr, Value};

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
    cx.emit("ten.scatter", vec![x, index, updates], vec![("kind", Attr::Str(kind.into()))])
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
            cx.emit("ten.slice", vec![s], vec![("start", start), ("shape", Attr::dims(it.dims.clone())), ("step", Attr::Ints(vec![1; st.rank()]))])?
        };
        cx.convert(s, t.dtype)?
    };
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
        let count = cx.emit("ten.max", vec![count, one], vec![])?;
        r = cx.emit("ten.div", vec![r, count], vec![])?;
    }
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
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
    if !rshape.iter().all(|d| d.as_const().is_some()) {
        return Ok(None);
    }
    let sizes: Vec<i64> = xt.dims.iter().map(|d| d.as_const().expect("static")).collect();
    let stride = |k: usize| sizes[k + 1..].iter().product::<i64>();
    // Row-major position: leading dims' iotas, the merged index, trailing dims' iotas.
    let map: Vec<usize> = (ix.first..ix.first + k).collect();
    let merged = cx.bcast_in_dim(ix.linear, &rshape, &map)?;
    let mut lin = if stride(ix.last) != 1 { cx.binary_scalar("ten.mul", merged, stride(ix.last) as f64)? } else { merged };
    let other: Vec<(usize, usize)> = (0..ix.first).map(|j| (j, j)).chain((ix.last + 1..xt.rank()).map(|j| (j, j - ix.last - 1 + ix.first + k))).collect();
    for (xdim, rdim) in other {
        let io = cx.emit("ten.iota", vec![], vec![("shape", Attr::dims(rshape.clone())), ("dim", Attr::Int(rdim as i64)), ("dtype", Attr::DType(DType::I64))])?;
        let term = if stride(xdim) != 1 { cx.binary_scalar("ten.mul", io, stride(xdim) as f64)? } else { io };
        lin = cx.emit("ten.add", vec![lin, term], vec![])?;
    }
    let values = cx.arg("values")?;
    let values = cx.coerce(values, t.dtype, &rshape)?;
    let flat_shape: [SymExpr; 1] = [xt.numel()];
    let flat = cx.reshape(x, &flat_shape)?;
    let r = scatter(cx, flat, lin, values, if accumulate { "sum" } else { "set" })?;
    Ok(Some(vec![cx.reshape(r, &xt.dims)?]))
}
