//! Constants (`ten.constant`), ranges (`ten.iota`), dtype conversions and identities.

use super::build::{c, Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::DType;

/// full/full_like/scalar_tensor/zeros/ones(_like)/fill.Scalar: a splat of the result type; the
/// empty family is zero-filled (any value is valid for uninitialized memory, zeros are deterministic).
pub fn fill(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let value = match name {
        "full" | "full_like" => cx.attr("fill_value"),
        "scalar_tensor" => cx.attr("s"),
        "fill.Scalar" => cx.attr("value"),
        "zeros" | "zeros_like" | "empty.memory_format" | "empty_strided" | "empty_permuted" | "new_empty_strided" => {
            Some(Attr::Int(0))
        }
        _ => Some(Attr::Int(1)),
    };
    let value = value.ok_or_else(|| cx.err("missing fill value"))?;
    Ok(Some(vec![cx.constant(&value, t.dtype, &t.dims)?]))
}

/// arange: `ten.iota` * step + start. Fractional bounds compute in f64 and convert, as torch
/// accumulates in double; a symbolic start or step stays unlowered.
pub fn arange(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let start = cx.attr("start").unwrap_or(Attr::Int(0));
    let step = cx.attr("step").unwrap_or(Attr::Int(1));
    let (Some(s0), Some(st)) = (start.as_float(), step.as_float()) else { return Ok(None) };
    let fractional = [&start, &step, &cx.attr("end").unwrap_or(Attr::Int(0))]
        .iter()
        .any(|a| matches!(a, Attr::Float(f) if f.fract() != 0.0));
    let dt = if fractional && t.dtype != DType::F64 { DType::F64 } else { t.dtype };
    let mut v = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(t.dims.clone())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(dt))],
    )?;
    if st != 1.0 {
        let k = cx.constant(&step, dt, &t.dims)?;
        v = cx.emit(TenOp::Mul, vec![v, k], vec![])?;
    }
    if s0 != 0.0 {
        let k = cx.constant(&start, dt, &t.dims)?;
        v = cx.emit(TenOp::Add, vec![v, k], vec![])?;
    }
    Ok(Some(vec![cx.convert(v, t.dtype)?]))
}

/// _to_copy: `ten.convert` (to bool: `x != 0`), nothing when the dtype is unchanged;
/// copy(self, src): `src` converted and broadcast to self's type.
pub fn to_copy(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg(if name == "copy" { "src" } else { "self" })?;
    let x = if t.dtype == DType::Bool { cx.truthy(x)? } else { cx.convert(x, t.dtype)? };
    Ok(Some(vec![cx.bcast(x, &t.dims)?]))
}

/// clone/alias/detach/lift_fresh_copy: the input itself.
pub fn identity(cx: &mut Cx) -> Lowered {
    Ok(Some(vec![cx.arg("self")?]))
}

/// tril_indices/triu_indices(row, col, offset): the [2, N] (row, column) positions of the
/// triangle (c - r <= offset, or >= for triu) in row-major order. Every position of the
/// [row, col] grid goes to its rank among the kept ones (a running count of the mask), the
/// others out of range, where the scatter skips them.
pub fn tri_indices(cx: &mut Cx, name: &str) -> Lowered {
    let t = cx.out(0)?;
    let (rows, cols, offset) = (cx.int("row")?, cx.int("col")?, cx.int_or("offset", 0)?);
    let n = match t.dims.as_slice() {
        [_, n] => n.as_const().ok_or_else(|| cx.err("the number of indices must be static"))?,
        _ => return Err(cx.err("the result must be [2, N]")),
    };
    if n == 0 || rows <= 0 || cols <= 0 {
        return Ok(Some(vec![cx.constant(&Attr::Int(0), t.dtype, &t.dims)?]));
    }
    let cells = rows.checked_mul(cols).ok_or_else(|| cx.err(&format!("a {rows}x{cols} grid overflows")))?;
    let (grid, flat, out) = ([c(rows), c(cols)], [c(cells)], [c(n)]);
    let iota = |cx: &mut Cx, dim: i64| {
        cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(grid.to_vec())), ("dim", Attr::Int(dim)), ("dtype", Attr::DType(DType::I64))],
        )
    };
    let (r, col) = (iota(cx, 0)?, iota(cx, 1)?);
    let diff = cx.binary(TenOp::Sub, col, r)?;
    let k = cx.constant(&Attr::Int(offset), DType::I64, &grid)?;
    let keep = cx.compare(if name == "tril_indices" { "LE" } else { "GE" }, diff, k)?;
    let keep = cx.reshape(keep, &flat)?;
    let at = cx.packed_positions(keep, n)?;
    let mut parts = vec![];
    for v in [r, col] {
        let v = cx.reshape(v, &flat)?;
        let base = cx.constant(&Attr::Int(0), DType::I64, &out)?;
        let v = cx.emit(TenOp::Scatter, vec![base, at, v], vec![("kind", Attr::Str("set".into()))])?;
        parts.push(cx.reshape(v, &[c(1), c(n)])?);
    }
    let both = cx.emit(TenOp::Concat, parts, vec![("dim", Attr::Int(0))])?;
    Ok(Some(vec![cx.convert(both, t.dtype)?]))
}

/// nonzero_static(self, size, fill_value): the [size, rank] positions of the first `size`
/// nonzero elements in row-major order, the rows past the count `fill_value`. Every element
/// goes to its rank among the nonzero ones (a running count of the mask) or out of range,
/// where the scatter skips it, as tril_indices does.
pub fn nonzero_static(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let size = cx.int("size")?;
    let fill = cx.int_or("fill_value", -1)?;
    if size < 0 {
        return Err(cx.err(&format!("nonzero_static's size {size} is negative")));
    }
    let dims: Vec<i64> = xt
        .dims
        .iter()
        .map(|d| d.as_const())
        .collect::<Option<_>>()
        .ok_or_else(|| cx.err("nonzero_static needs static input sizes"))?;
    let n: i64 = dims.iter().product();
    if size == 0 || xt.rank() == 0 && n == 0 {
        return Ok(Some(vec![cx.constant(&Attr::Int(fill), t.dtype, &t.dims)?]));
    }
    let flat = [c(n)];
    let xf = cx.reshape(x, &flat)?;
    let keep = cx.truthy(xf)?;
    let at = cx.packed_positions(keep, size)?;
    let p = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(flat.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let mut cols = Vec::new();
    let mut stride = n;
    for &d in &dims {
        stride /= d.max(1);
        let q = cx.binary_scalar(TenOp::Div, p, stride.max(1) as f64)?;
        let coord = cx.binary_scalar(TenOp::Rem, q, d.max(1) as f64)?;
        let base = cx.constant(&Attr::Int(fill), DType::I64, &[c(size)])?;
        let col = cx.emit(TenOp::Scatter, vec![base, at, coord], vec![("kind", Attr::Str("set".into()))])?;
        cols.push(cx.reshape(col, &[c(size), c(1)])?);
    }
    let out = if cols.is_empty() {
        cx.constant(&Attr::Int(fill), DType::I64, &t.dims)?
    } else {
        cx.emit(TenOp::Concat, cols, vec![("dim", Attr::Int(1))])?
    };
    Ok(Some(vec![cx.convert(out, t.dtype)?]))
}
