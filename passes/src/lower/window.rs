//! Sliding-window ops: convolution, max/avg pooling, adaptive average and max pooling, constant padding,
//! bilinear/nearest resampling and grid sampling.
//!
//! Padding is `ten.pad`; windows are `ten.windows` (`[.., S] -> [.., K, O]`, an index remap).
//! Convolution is im2col: the windows of the padded input are transposed to
//! `[C, K.., N, O..]` (the CPU target materializes that as the GEMM operand), reshaped to
//! `[C*K, N*P]` and multiplied by the weight viewed as `[CO, C*K]` in one `ten.dot_general`
//! (groups become a batch dim), then brought back to `[N, CO, O..]` and the bias added. A 1x1,
//! stride-1 convolution skips the windows: its columns are the input transposed to `[C, N, S..]`.
//! Pools are windows reduced over the kernel dims.

use super::build::{acc_dtype, c, Cx, Lowered};
use ember_ir::attr::Attr;
use ember_ir::dialect::ten::TenOp;
use ember_ir::{DType, SymExpr, Value};

fn ints(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

fn prod(v: &[SymExpr]) -> SymExpr {
    v.iter().cloned().fold(c(1), SymExpr::times)
}

/// A static int-list attribute with `n` entries (a single entry repeats; absent or empty gives
/// `dflt`, or `None` when there is no default).
fn int_list(cx: &Cx, name: &str, n: usize, dflt: Option<&[i64]>) -> Result<Vec<i64>, String> {
    let v: Vec<i64> = match cx.attr(name) {
        None => vec![],
        Some(Attr::Int(i)) => vec![i],
        Some(Attr::Ints(v)) => v,
        Some(Attr::Dims(d)) => d
            .iter()
            .map(|e| e.as_const().ok_or_else(|| cx.err(&format!("attribute `{name}` must be static"))))
            .collect::<Result<_, _>>()?,
        Some(a) => return Err(cx.err(&format!("attribute `{name}` must be a list of integers, found `{a}`"))),
    };
    match v.len() {
        0 => dflt.map(<[i64]>::to_vec).ok_or_else(|| cx.err(&format!("attribute `{name}` is empty"))),
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v),
        k => Err(cx.err(&format!("attribute `{name}` has {k} entries for {n} window dims"))),
    }
}

/// `ten.pad` (nothing when every amount is zero).
pub fn pad(cx: &mut Cx, x: Value, low: Vec<SymExpr>, high: Vec<SymExpr>, value: Attr) -> Result<Value, String> {
    if low.iter().chain(&high).all(|e| *e == c(0)) {
        return Ok(x);
    }
    let dt = cx.tt(x).dtype;
    let value = super::build::scalar_as(&value, dt).ok_or_else(|| cx.err("the padding value must be a number"))?;
    cx.emit(TenOp::Pad, vec![x], vec![("low", Attr::dims(low)), ("high", Attr::dims(high)), ("value", value)])
}

fn windows(cx: &mut Cx, x: Value, k: &[i64], s: &[i64], d: &[i64]) -> Result<Value, String> {
    cx.emit(TenOp::Windows, vec![x], vec![("kernel", ints(k)), ("stride", ints(s)), ("dilation", ints(d))])
}

fn transpose(cx: &mut Cx, x: Value, perm: &[usize]) -> Result<Value, String> {
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return Ok(x);
    }
    cx.emit(TenOp::Transpose, vec![x], vec![("dims", Attr::Ints(perm.iter().map(|&p| p as i64).collect()))])
}

/// The smallest value of `dtype` (-inf for floats): max pooling's padding.
fn lowest(dtype: DType) -> Attr {
    if dtype.is_float() {
        return Attr::Float(f64::NEG_INFINITY);
    }
    Attr::Int(match dtype {
        DType::Bool | DType::U8 | DType::U16 | DType::U32 | DType::U64 => 0,
        DType::I8 => i8::MIN as i64,
        DType::I16 => i16::MIN as i64,
        DType::I32 => i32::MIN as i64,
        _ => i64::MIN,
    })
}

/// convolution (N-d, any groups). A transposed convolution is the plain convolution (stride 1)
/// of the input dilated by `stride` (each element followed by stride - 1 zeros: a size-1 dim
/// padded and merged), padded by dilation * (kernel - 1) - padding on both sides (plus
/// output_padding after; negative amounts crop), with the weight's in/out channels swapped per
/// group and its spatial dims reversed.
pub fn convolution(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (x, w) = (cx.arg("input")?, cx.arg("weight")?);
    let (xt, wt) = (cx.tt(x), cx.tt(w));
    if xt.rank() < 3 || wt.rank() != xt.rank() || t.rank() != xt.rank() {
        return Err(cx.err("convolution needs input and weight of equal rank >= 3"));
    }
    let sp = xt.rank() - 2;
    let groups = cx.int_or("groups", 1)?;
    if groups < 1 {
        return Err(cx.err("`groups` must be positive"));
    }
    let mut stride = int_list(cx, "stride", sp, Some(&vec![1; sp]))?;
    let padding = int_list(cx, "padding", sp, Some(&vec![0; sp]))?;
    let dilation = int_list(cx, "dilation", sp, Some(&vec![1; sp]))?;
    let kernel: Vec<i64> = wt.dims[2..]
        .iter()
        .map(|d| d.as_const().ok_or_else(|| cx.err("convolution kernel sizes must be static")))
        .collect::<Result<_, _>>()?;
    let x = cx.convert(x, t.dtype)?;
    let mut w = cx.convert(w, t.dtype)?;
    let mut low = vec![c(0), c(0)];
    let mut high = vec![c(0), c(0)];
    let mut x = x;
    if cx.bool_or("transposed", false) {
        let out_pad = int_list(cx, "output_padding", sp, Some(&vec![0; sp]))?;
        if stride.iter().any(|&s| s > 1) {
            // [N, C, S..] -> [N, C, S, 1, ..] padded to [N, C, S, s, ..] -> [N, C, S*s, ..].
            let mut split = xt.dims[..2].to_vec();
            let mut merged = xt.dims[..2].to_vec();
            let mut hi = vec![c(0), c(0)];
            for (i, &s) in stride.iter().enumerate() {
                split.extend([xt.dims[2 + i].clone(), c(1)]);
                merged.push(SymExpr::times(xt.dims[2 + i].clone(), c(s)));
                hi.extend([c(0), c(s - 1)]);
            }
            let r = cx.reshape(x, &split)?;
            let p = pad(cx, r, vec![c(0); split.len()], hi, Attr::Float(0.0))?;
            x = cx.reshape(p, &merged)?;
        }
        for i in 0..sp {
            let edge = dilation[i] * (kernel[i] - 1) - padding[i];
            low.push(c(edge));
            // The merged dim ends with stride - 1 zeros the dilation does not have.
            high.push(c(edge + out_pad[i] - (stride[i] - 1)));
        }
        // [Cin, Cout/g, K..] -> [g, Cin/g, Cout/g, K..] -> [g, Cout/g, Cin/g, K..] -> [Cout, Cin/g, K..], K reversed.
        let Some(cin) = wt.dims[0].as_const() else { return Ok(None) };
        let Some(cog) = wt.dims[1].as_const() else { return Ok(None) };
        let g = groups;
        let mut split = vec![c(g), c(cin / g), c(cog)];
        split.extend(wt.dims[2..].iter().cloned());
        let wr = cx.reshape(w, &split)?;
        let mut perm = vec![0, 2, 1];
        perm.extend(3..3 + sp);
        let wr = transpose(cx, wr, &perm)?;
        let mut wshape = vec![c(cog * g), c(cin / g)];
        wshape.extend(wt.dims[2..].iter().cloned());
        let wr = cx.reshape(wr, &wshape)?;
        w = cx.emit(TenOp::Reverse, vec![wr], vec![("dims", Attr::Ints((2..2 + sp as i64).collect()))])?;
        stride = vec![1; sp];
    } else {
        low.extend(padding.iter().map(|&p| c(p)));
        high = low.clone();
    }
    let (xt, wt) = (cx.tt(x), cx.tt(w));
    let cols = if kernel.iter().chain(&stride).all(|&k| k == 1) && low.iter().chain(&high).all(|p| *p == c(0)) {
        // 1x1, stride 1: the columns are the input itself, [C, N, S..] (no copy when N is 1).
        let mut perm = vec![1, 0];
        perm.extend(2..2 + sp);
        transpose(cx, x, &perm)?
    } else {
        let xp = pad(cx, x, low, high, Attr::Float(0.0))?;
        let win = windows(cx, xp, &kernel, &stride, &dilation)?;
        // [N, C, K.., O..] -> [C, K.., N, O..]
        let mut perm = vec![1];
        perm.extend(2..2 + sp);
        perm.push(0);
        perm.extend(2 + sp..2 + 2 * sp);
        transpose(cx, win, &perm)?
    };
    let (n, cin, cout) = (xt.dims[0].clone(), xt.dims[1].clone(), wt.dims[0].clone());
    let out_sp = t.dims[2..].to_vec();
    let np = SymExpr::times(n.clone(), prod(&out_sp));
    let kk = SymExpr::times(wt.dims[1].clone(), prod(&wt.dims[2..]));
    // An f16/bf16 convolution with a bias keeps the product's f32 accumulator for the bias and
    // rounds once, as torch's (and `matmul::scale_and_add`).
    let acc = if cx.operand("bias").is_some() && matches!(t.dtype, DType::F16 | DType::BF16) {
        Some(("dtype", Attr::DType(DType::F32)))
    } else {
        None
    };
    let y = if groups == 1 {
        let cols = cx.reshape(cols, &[SymExpr::times(cin, prod(&wt.dims[2..])), np])?;
        let wm = cx.reshape(w, &[cout.clone(), kk])?;
        let attrs = vec![
            ("lhs_batch", ints(&[])),
            ("rhs_batch", ints(&[])),
            ("lhs_contract", ints(&[1])),
            ("rhs_contract", ints(&[0])),
        ];
        let y = cx.emit(TenOp::DotGeneral, vec![wm, cols], attrs.into_iter().chain(acc.clone()).collect())?;
        // [CO, N*P] -> [N, CO, O..]
        if n == c(1) {
            cx.reshape(y, &t.dims)?
        } else {
            let mut shape = vec![cout, n];
            shape.extend(out_sp.iter().cloned());
            let y = cx.reshape(y, &shape)?;
            let mut perm = vec![1, 0];
            perm.extend(2..2 + sp);
            transpose(cx, y, &perm)?
        }
    } else {
        let g = c(groups);
        let cog = SymExpr::floordiv(cout.clone(), g.clone());
        let cols = cx.reshape(cols, &[g.clone(), kk.clone(), np])?;
        let wm = cx.reshape(w, &[g.clone(), cog.clone(), kk])?;
        let attrs = vec![
            ("lhs_batch", ints(&[0])),
            ("rhs_batch", ints(&[0])),
            ("lhs_contract", ints(&[2])),
            ("rhs_contract", ints(&[1])),
        ];
        let y = cx.emit(TenOp::DotGeneral, vec![wm, cols], attrs.into_iter().chain(acc.clone()).collect())?;
        // [G, COg, N*P] -> [N, G, COg, O..] -> [N, CO, O..]
        let mut shape = vec![g, cog, n];
        shape.extend(out_sp.iter().cloned());
        let y = cx.reshape(y, &shape)?;
        let mut perm = vec![2, 0, 1];
        perm.extend(3..3 + sp);
        let y = transpose(cx, y, &perm)?;
        cx.reshape(y, &t.dims)?
    };
    let y = cx.reshape(y, &t.dims)?;
    let Some(bias) = cx.operand("bias") else { return Ok(Some(vec![y])) };
    let bias = cx.convert(bias, cx.tt(y).dtype)?;
    let bias = cx.bcast_in_dim(bias, &t.dims, &[1])?;
    let y = cx.emit(TenOp::Add, vec![y, bias], vec![])?;
    Ok(Some(vec![cx.convert(y, t.dtype)?]))
}

/// Pool geometry over the trailing `kernel_size.len()` dims: (lead dims, kernel, stride,
/// padding, dilation, high padding that makes the windows give exactly the result's sizes).
struct Pool {
    lead: usize,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    dilation: Vec<i64>,
    low: Vec<SymExpr>,
    high: Vec<SymExpr>,
}

fn pool_geometry(cx: &Cx, x: Value, out: &[SymExpr], with_dilation: bool) -> Result<Pool, String> {
    let xt = cx.tt(x);
    let sp = if cx.name().contains("3d") {
        3
    } else if cx.name().contains("1d") {
        1
    } else {
        2
    };
    if xt.rank() < sp || out.len() != xt.rank() {
        return Err(cx.err(&format!("pooling needs at least {sp} dims")));
    }
    let kernel = int_list(cx, "kernel_size", sp, None)?;
    let stride = int_list(cx, "stride", sp, Some(&kernel))?;
    let padding = int_list(cx, "padding", sp, Some(&vec![0; sp]))?;
    let dilation = if with_dilation { int_list(cx, "dilation", sp, Some(&vec![1; sp]))? } else { vec![1; sp] };
    let ceil = cx.bool_or("ceil_mode", false);
    let lead = xt.rank() - sp;
    let mut low = vec![c(0); lead];
    let mut high = vec![c(0); lead];
    for i in 0..sp {
        low.push(c(padding[i]));
        if !ceil {
            high.push(c(padding[i]));
            continue;
        }
        // Ceil mode: pad the high side so that the windows give exactly torch's output size.
        let (Some(o), Some(s)) = (out[lead + i].as_const(), xt.dims[lead + i].as_const()) else {
            return Err(cx.err("ceil_mode pooling needs static spatial sizes"));
        };
        high.push(c((o - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - s - padding[i]));
    }
    Ok(Pool { lead, kernel, stride, dilation, low, high })
}

/// max_pool{1,2,3}d_with_indices: the max over windows padded with the lowest value, and (when
/// something reads it) each window's argmax as a flat position in the input's spatial plane,
/// as torch numbers it: the first maximum in window order (a NaN wins; with several NaNs in one
/// window torch keeps the last, this the first).
pub fn max_pool(cx: &mut Cx) -> Lowered {
    let (t, ti) = (cx.out(0)?, cx.out(1)?);
    let idx_result = cx.m.op(cx.op).results[1];
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let g = pool_geometry(cx, x, &t.dims, true)?;
    let xp = pad(cx, x, g.low.clone(), g.high.clone(), lowest(t.dtype))?;
    let win = windows(cx, xp, &g.kernel, &g.stride, &g.dilation)?;
    let kdims: Vec<usize> = (g.lead..g.lead + g.kernel.len()).collect();
    let m = cx.reduce(win, "max", &kdims)?;
    let values = cx.reshape(m, &t.dims)?;
    if cx.m.uses(idx_result).is_empty() {
        return Ok(Some(vec![values, cx.constant(&Attr::Int(0), DType::I64, &ti.dims)?]));
    }
    // k: the row-major offset of the winner inside its window. Spatial dim i of the input is
    // o·stride - padding + (k's digit i)·dilation for output position o.
    let k = cx.reduce(win, "argmax", &kdims)?;
    let k = cx.reshape(k, &ti.dims)?;
    let sp = g.kernel.len();
    let mut flat: Option<Value> = None;
    for i in 0..sp {
        // Scalar steps by 1 (or 0) are left out.
        let scale = |cx: &mut Cx, op: TenOp, x: Value, v: i64, unit: i64| {
            if v == unit {
                Ok(x)
            } else {
                cx.binary_scalar(op, x, v as f64)
            }
        };
        let inner: i64 = g.kernel[i + 1..].iter().product();
        let digit = scale(cx, TenOp::Div, k, inner, 1)?;
        let digit = if i == 0 { digit } else { cx.binary_scalar(TenOp::Rem, digit, g.kernel[i] as f64)? };
        let o = cx.emit(
            TenOp::Iota,
            vec![],
            vec![
                ("shape", Attr::dims(ti.dims.clone())),
                ("dim", Attr::Int((g.lead + i) as i64)),
                ("dtype", Attr::DType(DType::I64)),
            ],
        )?;
        let low = g.low[g.lead + i].as_const().ok_or_else(|| cx.err("max pooling indices need static padding"))?;
        let pos = scale(cx, TenOp::Mul, o, g.stride[i], 1)?;
        let pos = scale(cx, TenOp::Sub, pos, low, 0)?;
        let step = scale(cx, TenOp::Mul, digit, g.dilation[i], 1)?;
        let pos = cx.emit(TenOp::Add, vec![pos, step], vec![])?;
        flat = Some(match flat {
            None => pos,
            Some(f) => {
                let size = xt.dims[g.lead + i]
                    .as_const()
                    .ok_or_else(|| cx.err("max pooling indices need static spatial sizes"))?;
                let f = cx.binary_scalar(TenOp::Mul, f, size as f64)?;
                cx.emit(TenOp::Add, vec![f, pos], vec![])?
            }
        });
    }
    Ok(Some(vec![values, flat.expect("pooling has a spatial dim")]))
}

/// avg_pool{1,2,3}d: window sums of the zero-padded input over a divisor: `divisor_override`, the
/// window size, or (count_include_pad=false, or ceil-mode windows past the padding) a count of
/// the window's elements inside the input (plus padding), computed the same way from ones.
pub fn avg_pool(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    if !t.dtype.is_float() {
        return Ok(None);
    }
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let g = pool_geometry(cx, x, &t.dims, false)?;
    let acc = acc_dtype(t.dtype);
    let xa = cx.convert(x, acc)?;
    let xp = pad(cx, xa, g.low.clone(), g.high.clone(), Attr::Float(0.0))?;
    let win = windows(cx, xp, &g.kernel, &g.stride, &g.dilation)?;
    let kdims: Vec<usize> = (g.lead..g.lead + g.kernel.len()).collect();
    let sum = cx.reduce(win, "sum", &kdims)?;
    let sum_t = cx.tt(sum);
    let include_pad = cx.bool_or("count_include_pad", true);
    let padded = g.low.iter().any(|p| *p != c(0));
    let past_padding = g.high.iter().zip(&g.low).any(|(h, l)| h != l);
    let divisor = match cx.attr("divisor_override").and_then(|a| a.as_int()) {
        Some(d) => cx.constf(d as f64, acc, &sum_t.dims)?,
        None if !past_padding && (include_pad || !padded) => {
            cx.constf(g.kernel.iter().product::<i64>() as f64, acc, &sum_t.dims)?
        }
        None => {
            // Count the window elements inside the input (and, with count_include_pad, its padding).
            let sp = g.kernel.len();
            let spatial = xt.dims[g.lead..].to_vec();
            let ones = cx.constf(1.0, acc, &spatial)?;
            let (low, high) = (g.low[g.lead..].to_vec(), g.high[g.lead..].to_vec());
            let cover = if include_pad {
                let p1 = pad(cx, ones, low.clone(), low.clone(), Attr::Float(1.0))?;
                let extra = high
                    .iter()
                    .zip(&low)
                    .map(|(h, l)| SymExpr::plus(h.clone(), SymExpr::times(c(-1), l.clone())))
                    .collect();
                pad(cx, p1, vec![c(0); sp], extra, Attr::Float(0.0))?
            } else {
                pad(cx, ones, low, high, Attr::Float(0.0))?
            };
            let cw = windows(cx, cover, &g.kernel, &g.stride, &g.dilation)?;
            let cnt = cx.reduce(cw, "sum", &(0..sp).collect::<Vec<_>>())?;
            let map: Vec<usize> = (g.lead..g.lead + sp).collect();
            cx.bcast_in_dim(cnt, &sum_t.dims, &map)?
        }
    };
    let y = cx.emit(TenOp::Div, vec![sum, divisor], vec![])?;
    let y = cx.convert(y, t.dtype)?;
    Ok(Some(vec![cx.reshape(y, &t.dims)?]))
}

/// torch's adaptive windows along a dim of static size `sv` pooled to `ov`:
/// [floor(j·S/O), ceil((j+1)·S/O)) in int64 index math, padded to the longest (`kmax`). `index`
/// [O, kmax] is each window's positions clamped into the input, `valid` which of them it holds.
struct AdaptiveWindows {
    start: Value,
    len: Value,
    index: Value,
    valid: Value,
    kmax: i64,
}

fn adaptive_windows(cx: &mut Cx, sv: i64, ov: i64) -> Result<AdaptiveWindows, String> {
    let kmax = (0..ov).map(|j| ((j + 1) * sv + ov - 1) / ov - j * sv / ov).max().unwrap_or(1);
    let j = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(vec![c(ov)])), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let js = cx.binary_scalar(TenOp::Mul, j, sv as f64)?;
    let start = cx.binary_scalar(TenOp::Div, js, ov as f64)?;
    let j1 = cx.binary_scalar(TenOp::Add, js, (sv + ov - 1) as f64)?;
    let end = cx.binary_scalar(TenOp::Div, j1, ov as f64)?;
    let len = cx.emit(TenOp::Sub, vec![end, start], vec![])?;
    let win = [c(ov), c(kmax)];
    let m = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(win.to_vec())), ("dim", Attr::Int(1)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let start_b = cx.bcast_in_dim(start, &win, &[0])?;
    let index = cx.emit(TenOp::Add, vec![start_b, m], vec![])?;
    let index = cx.binary_scalar(TenOp::Min, index, (sv - 1) as f64)?;
    let len_b = cx.bcast_in_dim(len, &win, &[0])?;
    let valid = cx.compare("LT", m, len_b)?;
    Ok(AdaptiveWindows { start, len, index, valid, kmax })
}

/// _adaptive_avg_pool{1,2,3}d. Dims whose output size divides the input size (output 1
/// included, symbolic input sizes too) split into (output, window) by one reshape and one mean
/// over the windows. Other dims are pooled one at a time over torch's windows
/// [floor(i*S/O), ceil((i+1)*S/O)): gathered (padded to the longest window), masked, summed and
/// divided by each window's length.
pub fn adaptive_avg_pool(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    if !t.dtype.is_float() {
        return Ok(None);
    }
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let osz = cx.dims_attr("output_size")?;
    let sp = osz.len();
    if xt.rank() < sp {
        return Err(cx.err("output_size is longer than the input rank"));
    }
    let lead = xt.rank() - sp;
    let acc = acc_dtype(t.dtype);
    let mut y = cx.convert(x, acc)?;
    // Dividing sizes: [.., S, ..] -> [.., O, S/O, ..], one mean over the window dims.
    let mut split = xt.dims[..lead].to_vec();
    let mut wdims = Vec::new();
    for (s, o) in xt.dims[lead..].iter().zip(&osz) {
        let k = match (s.as_const(), o.as_const()) {
            _ if s == o => None,
            (_, Some(1)) => Some(s.clone()),
            (Some(sv), Some(ov)) if ov > 0 && sv % ov == 0 => Some(c(sv / ov)),
            _ => None,
        };
        match k {
            Some(k) => {
                split.push(o.clone());
                wdims.push(split.len());
                split.push(k);
            }
            None => split.push(s.clone()),
        }
    }
    if !wdims.is_empty() {
        let rest: Vec<SymExpr> =
            split.iter().enumerate().filter(|(j, _)| !wdims.contains(j)).map(|(_, e)| e.clone()).collect();
        let r = cx.reshape(y, &split)?;
        let sum = cx.reduce(r, "sum", &wdims)?;
        let n = cx.count(&split, &wdims, acc, &rest)?;
        y = cx.emit(TenOp::Div, vec![sum, n], vec![])?;
    }
    for (i, o) in osz.iter().enumerate() {
        let d = lead + i;
        let yt = cx.tt(y);
        let (s, o) = (yt.dims[d].clone(), o.clone());
        if s == o {
            continue;
        }
        let (Some(sv), Some(ov)) = (s.as_const(), o.as_const()) else {
            return Err(cx.err("adaptive pooling to a size that does not divide the input needs static sizes"));
        };
        if ov <= 0 {
            return Err(cx.err("adaptive pooling output sizes must be positive"));
        }
        let mut out_dims = yt.dims.clone();
        out_dims[d] = o.clone();
        let w = adaptive_windows(cx, sv, ov)?;
        let (len, idx, valid) = (w.len, w.index, w.valid);
        let gathered = cx.emit(TenOp::Gather, vec![y, idx], vec![("dim", Attr::Int(d as i64))])?;
        let gt = cx.tt(gathered);
        let valid = cx.bcast_in_dim(valid, &gt.dims, &[d, d + 1])?;
        let zero = cx.splat_like(0.0, gathered)?;
        let masked = cx.select(valid, gathered, zero)?;
        let sum = cx.reduce(masked, "sum", &[d + 1])?;
        let lenf = cx.convert(len, acc)?;
        let lenf = cx.bcast_in_dim(lenf, &out_dims, &[d])?;
        y = cx.emit(TenOp::Div, vec![sum, lenf], vec![])?;
    }
    let y = cx.convert(y, t.dtype)?;
    Ok(Some(vec![cx.reshape(y, &t.dims)?]))
}

/// adaptive_max_pool{2,3}d: each spatial dim gathered into torch's windows [floor(i*S/O),
/// ceil((i+1)*S/O)), padded to the longest with the lowest value, then one max (and argmax)
/// over the windows' elements in row-major order: the first maximum, as torch's scan keeps
/// (with several NaNs in one window torch keeps the last, this the first, as `max_pool`).
/// Indices are flat positions in the input's spatial plane.
pub fn adaptive_max_pool(cx: &mut Cx) -> Lowered {
    let (t, ti) = (cx.out(0)?, cx.out(1)?);
    let idx_result = cx.m.op(cx.op).results[1];
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    let osz = cx.dims_attr("output_size")?;
    let sp = osz.len();
    if xt.rank() < sp {
        return Err(cx.err("output_size is longer than the input rank"));
    }
    let lead = xt.rank() - sp;
    let (mut y, mut starts, mut kmaxes, mut sizes) = (x, Vec::new(), Vec::new(), Vec::new());
    for (i, o) in osz.iter().enumerate() {
        let (Some(sv), Some(ov)) = (xt.dims[lead + i].as_const(), o.as_const()) else {
            return Err(cx.err("adaptive max pooling needs static spatial and output sizes"));
        };
        if ov <= 0 || sv <= 0 {
            return Err(cx.err("adaptive max pooling sizes must be positive"));
        }
        // Dim lead + i is now at lead + 2i: each earlier one became (window, element).
        let d = lead + 2 * i;
        let w = adaptive_windows(cx, sv, ov)?;
        let (start, idx, valid, kmax) = (w.start, w.index, w.valid, w.kmax);
        let gathered = cx.emit(TenOp::Gather, vec![y, idx], vec![("dim", Attr::Int(d as i64))])?;
        let gt = cx.tt(gathered);
        let valid = cx.bcast_in_dim(valid, &gt.dims, &[d, d + 1])?;
        let low = cx.constant(&lowest(t.dtype), t.dtype, &gt.dims)?;
        y = cx.select(valid, gathered, low)?;
        starts.push(start);
        kmaxes.push(kmax);
        sizes.push(sv);
    }
    // [lead.., O1, K1, O2, K2, ..] -> [lead.., O1, O2, .., K1·K2·..]
    let perm: Vec<usize> =
        (0..lead).chain((0..sp).map(|i| lead + 2 * i)).chain((0..sp).map(|i| lead + 2 * i + 1)).collect();
    let y = transpose(cx, y, &perm)?;
    let mut flat_dims = t.dims.clone();
    flat_dims.push(c(kmaxes.iter().product()));
    let y = cx.reshape(y, &flat_dims)?;
    let values = cx.reduce(y, "max", &[t.rank()])?;
    if cx.m.uses(idx_result).is_empty() {
        return Ok(Some(vec![values, cx.constant(&Attr::Int(0), DType::I64, &ti.dims)?]));
    }
    // The winner's digit i in its window plus window i's start is its input position along dim i.
    let k = cx.reduce(y, "argmax", &[t.rank()])?;
    let mut flat: Option<Value> = None;
    for i in 0..sp {
        let inner: i64 = kmaxes[i + 1..].iter().product();
        let digit = cx.binary_scalar(TenOp::Div, k, inner as f64)?;
        let digit = cx.binary_scalar(TenOp::Rem, digit, kmaxes[i] as f64)?;
        let start = cx.bcast_in_dim(starts[i], &ti.dims, &[lead + i])?;
        let pos = cx.emit(TenOp::Add, vec![start, digit], vec![])?;
        flat = Some(match flat {
            None => pos,
            Some(f) => {
                let f = cx.binary_scalar(TenOp::Mul, f, sizes[i] as f64)?;
                cx.emit(TenOp::Add, vec![f, pos], vec![])?
            }
        });
    }
    Ok(Some(vec![values, flat.expect("pooling has a spatial dim")]))
}

/// constant_pad_nd: `ten.pad` with (before, after) pairs from the last dim backwards.
pub fn constant_pad(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let rank = cx.tt(x).rank();
    let pads = cx.dims_attr("pad")?;
    if pads.len() % 2 != 0 || pads.len() / 2 > rank {
        return Err(cx.err(&format!("`pad` has {} entries for rank {rank}", pads.len())));
    }
    let (mut low, mut high) = (vec![c(0); rank], vec![c(0); rank]);
    for i in 0..pads.len() / 2 {
        low[rank - 1 - i] = pads[2 * i].clone();
        high[rank - 1 - i] = pads[2 * i + 1].clone();
    }
    let value = cx.attr("value").unwrap_or(Attr::Int(0));
    let value = super::build::scalar_as(&value, t.dtype).ok_or_else(|| cx.err("`value` must be a number"))?;
    let y = pad(cx, x, low, high, value)?;
    Ok(Some(vec![cx.reshape(y, &t.dims)?]))
}

/// upsample_bilinear2d.vec: per spatial dim, torch's CPU source coordinate (f32 arithmetic:
/// `src = scale * dst` with align_corners, else `max(scale * (dst + 0.5) - 0.5, 0)`, scale
/// `(in - 1) / (out - 1)`, `1 / scale_factor` or `in / out`), the two neighbours
/// `i0 = floor(src)`, `i1 = min(i0 + 1, in - 1)` gathered along the dim and blended with
/// `l1 = clamp(src - i0, 0, 1)`, `l0 = 1 - l1`; width first, then height, as torch sums.
/// Half floats compute in f32. Symbolic spatial sizes stay a torch op.
pub fn upsample_bilinear(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    if xt.rank() != 4 || !t.dtype.is_float() {
        return Ok(None);
    }
    let (Some(ins), Some(outs)) = (
        xt.dims[2..].iter().map(|d| d.as_const()).collect::<Option<Vec<i64>>>(),
        t.dims[2..].iter().map(|d| d.as_const()).collect::<Option<Vec<i64>>>(),
    ) else {
        return Ok(None);
    };
    let align = cx.bool_or("align_corners", false);
    let factors: Option<Vec<f64>> = match cx.attr("scale_factors") {
        Some(Attr::Floats(v)) => Some(v),
        _ => None,
    };
    let acc = acc_dtype(t.dtype);
    let mut y = cx.convert(x, acc)?;
    for dim in [3usize, 2] {
        let (n_in, n_out) = (ins[dim - 2], outs[dim - 2]);
        let factor = factors.as_ref().and_then(|f| f.get(dim - 2).copied()).filter(|&s| s > 0.0);
        // torch's area_pixel_compute_scale, in f32 like its kernel's opmath.
        let scale = if align {
            if n_out > 1 {
                (n_in - 1) as f32 / (n_out - 1) as f32
            } else {
                0.0
            }
        } else {
            match factor {
                Some(s) => (1.0 / s) as f32,
                None => n_in as f32 / n_out as f32,
            }
        };
        let shape = [c(n_out)];
        let dst = cx.emit(
            TenOp::Iota,
            vec![],
            vec![("shape", Attr::dims(shape.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::F32))],
        )?;
        let src = if align {
            cx.binary_scalar(TenOp::Mul, dst, scale as f64)?
        } else {
            let s = cx.binary_scalar(TenOp::Add, dst, 0.5)?;
            let s = cx.binary_scalar(TenOp::Mul, s, scale as f64)?;
            let s = cx.binary_scalar(TenOp::Sub, s, 0.5)?;
            cx.binary_scalar(TenOp::Max, s, 0.0)?
        };
        let i0 = cx.convert(src, DType::I64)?;
        let i1 = cx.binary_scalar(TenOp::Add, i0, 1.0)?;
        let i1 = cx.binary_scalar(TenOp::Min, i1, (n_in - 1) as f64)?;
        let f0 = cx.convert(i0, DType::F32)?;
        let l1 = cx.emit(TenOp::Sub, vec![src, f0], vec![])?;
        let l1 = cx.binary_scalar(TenOp::Max, l1, 0.0)?;
        let l1 = cx.binary_scalar(TenOp::Min, l1, 1.0)?;
        let one = cx.splat_like(1.0, l1)?;
        let l0 = cx.emit(TenOp::Sub, vec![one, l1], vec![])?;
        let g0 = cx.emit(TenOp::Gather, vec![y, i0], vec![("dim", Attr::Int(dim as i64))])?;
        let g1 = cx.emit(TenOp::Gather, vec![y, i1], vec![("dim", Attr::Int(dim as i64))])?;
        let gshape = cx.tt(g0).dims;
        let l0 = cx.convert(l0, acc)?;
        let l1 = cx.convert(l1, acc)?;
        let l0 = cx.bcast_in_dim(l0, &gshape, &[dim])?;
        let l1 = cx.bcast_in_dim(l1, &gshape, &[dim])?;
        let a = cx.emit(TenOp::Mul, vec![g0, l0], vec![])?;
        let b = cx.emit(TenOp::Mul, vec![g1, l1], vec![])?;
        y = cx.emit(TenOp::Add, vec![a, b], vec![])?;
    }
    Ok(Some(vec![cx.convert(y, t.dtype)?]))
}

/// upsample_nearest2d.vec: torch's `nearest_idx` per spatial dim, `min(floor(dst * scale), in - 1)`
/// with the f32 scale `1 / scale_factor` or `in / out` (exact `dst` for equal sizes, `dst / 2`
/// for doubling), one gather per dim. Symbolic spatial sizes stay a torch op.
pub fn upsample_nearest(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("input")?;
    let xt = cx.tt(x);
    if xt.rank() != 4 {
        return Ok(None);
    }
    let (Some(ins), Some(outs)) = (
        xt.dims[2..].iter().map(|d| d.as_const()).collect::<Option<Vec<i64>>>(),
        t.dims[2..].iter().map(|d| d.as_const()).collect::<Option<Vec<i64>>>(),
    ) else {
        return Ok(None);
    };
    let factors: Option<Vec<f64>> = match cx.attr("scale_factors") {
        Some(Attr::Floats(v)) => Some(v),
        _ => None,
    };
    let mut y = x;
    for dim in [2usize, 3] {
        let (n_in, n_out) = (ins[dim - 2], outs[dim - 2]);
        if n_in == n_out {
            continue;
        }
        let shape = [c(n_out)];
        let idx = if n_out == 2 * n_in {
            let dst = cx.emit(
                TenOp::Iota,
                vec![],
                vec![("shape", Attr::dims(shape.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
            )?;
            cx.binary_scalar(TenOp::Div, dst, 2.0)?
        } else {
            let factor = factors.as_ref().and_then(|f| f.get(dim - 2).copied()).filter(|&s| s > 0.0);
            let scale = match factor {
                Some(s) => (1.0 / s) as f32,
                None => n_in as f32 / n_out as f32,
            };
            let dst = cx.emit(
                TenOp::Iota,
                vec![],
                vec![("shape", Attr::dims(shape.to_vec())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::F32))],
            )?;
            let s = cx.binary_scalar(TenOp::Mul, dst, scale as f64)?;
            let s = cx.unary(TenOp::Floor, s)?;
            let i = cx.convert(s, DType::I64)?;
            cx.binary_scalar(TenOp::Min, i, (n_in - 1) as f64)?
        };
        y = cx.emit(TenOp::Gather, vec![y, idx], vec![("dim", Attr::Int(dim as i64))])?;
    }
    Ok(Some(vec![y]))
}

/// grid_sampler_2d/3d with bilinear (trilinear) or nearest interpolation and zeros, border or
/// reflection padding (f32, static shapes), as torch's CPU kernels: grid coordinates
/// unnormalized to pixels (`(g + 1) / 2 * (size - 1)` with align_corners, else
/// `((g + 1) * size - 1) / 2`), clipped to [0, size - 1] for border padding, reflected first for
/// reflection padding (the 2-D kernel's vectorized form, `min(e, T - e)` of the distance folded
/// into one double span `T`); bilinear reads the 2^k neighbours `floor`, `floor + 1` weighted
/// `(1 - t) / t` per axis (in each kernel's product and summation order), nearest the
/// `round`-half-even one; neighbours outside the input read 0. Each read is one `ten.gather`
/// from the flattened input at `(n * C + c) * S + Σ i_d · stride_d`. Bicubic stays a torch op.
pub fn grid_sampler(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let (x, grid) = (cx.arg("input")?, cx.arg("grid")?);
    let (xt, gt) = (cx.tt(x), cx.tt(grid));
    let (mode, padding, align) =
        (cx.int("interpolation_mode")?, cx.int("padding_mode")?, cx.bool_or("align_corners", false));
    let sd = xt.rank().saturating_sub(2);
    if t.dtype != DType::F32
        || gt.dtype != DType::F32
        || mode > 1
        || padding > 2
        || !(sd == 2 || sd == 3)
        || gt.rank() != sd + 2
    {
        return Ok(None);
    }
    let (Some(xs), Some(gs)) = (xt.static_shape(), gt.static_shape()) else { return Ok(None) };
    if gs[sd + 1] != sd as i64 {
        return Ok(None);
    }
    let (n, ch) = (xs[0], xs[1]);
    // Per grid component k (0 = x over the last spatial dim, 1 = y, 2 = z over the first).
    let sizes: Vec<i64> = (0..sd).map(|k| xs[1 + sd - k]).collect();
    let plane: i64 = xs[2..].iter().product();
    if xs.iter().chain(&gs).any(|&d| d == 0) {
        return Ok(Some(vec![cx.constf(0.0, t.dtype, &t.dims)?]));
    }
    let pshape: Vec<SymExpr> = gs[..=sd].iter().map(|&d| c(d)).collect();
    let mut gslice = gs.clone();
    gslice[sd + 1] = 1;
    let coord = |cx: &mut Cx, k: usize, size: i64| -> Result<Value, String> {
        let mut start = vec![0i64; sd + 2];
        start[sd + 1] = k as i64;
        let g = cx.emit(
            TenOp::Slice,
            vec![grid],
            vec![
                ("start", Attr::Ints(start)),
                ("shape", Attr::Ints(gslice.clone())),
                ("step", Attr::Ints(vec![1; sd + 2])),
            ],
        )?;
        let g = cx.reshape(g, &pshape)?;
        let g1 = cx.binary_scalar(TenOp::Add, g, 1.0)?;
        let mut p = if align {
            let half = cx.binary_scalar(TenOp::Div, g1, 2.0)?;
            cx.binary_scalar(TenOp::Mul, half, (size - 1) as f64)?
        } else {
            let s = cx.binary_scalar(TenOp::Mul, g1, size as f64)?;
            let s = cx.binary_scalar(TenOp::Sub, s, 1.0)?;
            cx.binary_scalar(TenOp::Div, s, 2.0)?
        };
        if padding == 2 {
            // Reflect about -0.5 and size - 0.5 (about 0 and size - 1 with align_corners).
            let (low, span) = if align { (0.0, 2 * (size - 1)) } else { (-0.5, 2 * size) };
            p = if span == 0 {
                cx.splat_like(0.0, p)?
            } else {
                let shifted = cx.binary_scalar(TenOp::Sub, p, low)?;
                let a = cx.unary(TenOp::Abs, shifted)?;
                let flips = cx.binary_scalar(TenOp::Div, a, span as f64)?;
                let flips = cx.unary(TenOp::Trunc, flips)?;
                let back = cx.binary_scalar(TenOp::Mul, flips, span as f64)?;
                let extra = cx.emit(TenOp::Sub, vec![a, back], vec![])?;
                let top = cx.splat_like(span as f64, extra)?;
                let mirrored = cx.emit(TenOp::Sub, vec![top, extra], vec![])?;
                let r = cx.emit(TenOp::Min, vec![extra, mirrored], vec![])?;
                cx.binary_scalar(TenOp::Add, r, low)?
            };
        }
        if padding >= 1 {
            p = cx.binary_scalar(TenOp::Max, p, 0.0)?;
            p = cx.binary_scalar(TenOp::Min, p, (size - 1) as f64)?;
        }
        Ok(p)
    };
    let mut pix = Vec::with_capacity(sd);
    for (k, &size) in sizes.iter().enumerate() {
        pix.push(coord(cx, k, size)?);
    }
    let flat = cx.reshape(x, &[c(n * ch * plane)])?;
    let oshape = t.dims.clone();
    let io_n = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(oshape.clone())), ("dim", Attr::Int(0)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let io_c = cx.emit(
        TenOp::Iota,
        vec![],
        vec![("shape", Attr::dims(oshape.clone())), ("dim", Attr::Int(1)), ("dtype", Attr::DType(DType::I64))],
    )?;
    let nc = cx.binary_scalar(TenOp::Mul, io_n, ch as f64)?;
    let nc = cx.emit(TenOp::Add, vec![nc, io_c], vec![])?;
    let base = cx.binary_scalar(TenOp::Mul, nc, plane as f64)?;
    let spread: Vec<usize> = std::iter::once(0).chain(2..sd + 2).collect();
    // The input value at integer-valued f32 pixel coordinates (one per component), 0 outside.
    let read = |cx: &mut Cx, at: &[Value]| -> Result<Value, String> {
        let mut idx = Vec::with_capacity(sd);
        for &v in at {
            idx.push(cx.convert(v, DType::I64)?);
        }
        let mut inside: Option<Value> = None;
        for (&v, &size) in idx.iter().zip(&sizes) {
            let zero = cx.splat_like(0.0, v)?;
            let lo = cx.compare("GE", v, zero)?;
            let top = cx.splat_like(size as f64, v)?;
            let hi = cx.compare("LT", v, top)?;
            let both = cx.emit(TenOp::And, vec![lo, hi], vec![])?;
            inside = Some(match inside {
                Some(a) => cx.emit(TenOp::And, vec![a, both], vec![])?,
                None => both,
            });
        }
        let inside = inside.expect("two or three axes");
        let zero = cx.splat_like(0.0, idx[0])?;
        let mut pos = idx[sd - 1];
        for k in (0..sd - 1).rev() {
            pos = cx.binary_scalar(TenOp::Mul, pos, sizes[k] as f64)?;
            pos = cx.emit(TenOp::Add, vec![pos, idx[k]], vec![])?;
        }
        let pos = cx.select(inside, pos, zero)?;
        let pos = cx.bcast_in_dim(pos, &oshape, &spread)?;
        let pos = cx.emit(TenOp::Add, vec![base, pos], vec![])?;
        let v = cx.emit(TenOp::Gather, vec![flat, pos], vec![("dim", Attr::Int(0))])?;
        let inside = cx.bcast_in_dim(inside, &oshape, &spread)?;
        let z = cx.splat_like(0.0, v)?;
        cx.select(inside, v, z)
    };
    if mode == 1 {
        let mut at = Vec::with_capacity(sd);
        for &p in &pix {
            at.push(cx.unary(TenOp::Round, p)?);
        }
        return Ok(Some(vec![read(cx, &at)?]));
    }
    let mut lo = Vec::with_capacity(sd);
    for &p in &pix {
        lo.push(cx.unary(TenOp::Floor, p)?);
    }
    let mut hi = Vec::with_capacity(sd);
    for &f in &lo {
        hi.push(cx.binary_scalar(TenOp::Add, f, 1.0)?);
    }
    // (weight of the lower neighbour, weight of the upper one) per component.
    let mut wts = Vec::with_capacity(sd);
    for k in 0..sd {
        let w_hi = cx.emit(TenOp::Sub, vec![pix[k], lo[k]], vec![])?;
        let w_lo = cx.emit(TenOp::Sub, vec![hi[k], pix[k]], vec![])?;
        wts.push((w_lo, w_hi));
    }
    // The 2-D kernel multiplies y's weight by x's, the 3-D one x·y·z.
    let order: Vec<usize> = if sd == 2 { vec![1, 0] } else { vec![0, 1, 2] };
    let mut out: Option<Value> = None;
    for corner in 0..1usize << sd {
        let upper = |k: usize| corner >> k & 1 == 1;
        let at: Vec<Value> = (0..sd).map(|k| if upper(k) { hi[k] } else { lo[k] }).collect();
        let mut wgt: Option<Value> = None;
        for &k in &order {
            let w = if upper(k) { wts[k].1 } else { wts[k].0 };
            wgt = Some(match wgt {
                Some(a) => cx.emit(TenOp::Mul, vec![a, w], vec![])?,
                None => w,
            });
        }
        let wgt = cx.bcast_in_dim(wgt.expect("two or three axes"), &oshape, &spread)?;
        let v = read(cx, &at)?;
        let term = cx.emit(TenOp::Mul, vec![v, wgt], vec![])?;
        out = Some(match out {
            Some(o) => cx.emit(TenOp::Add, vec![o, term], vec![])?,
            None => term,
        });
    }
    Ok(Some(vec![out.expect("2^k neighbours")]))
}

/// _upsample_bilinear2d_aa: torch's separable antialiased resize, one weight matrix
/// [out, in] per resized spatial dim (width first, then height; a dim whose size does not
/// change is copied, as torch's kernel skips it) applied as one `ten.dot_general`. The weights
/// are the CPU kernel's, computed from iotas as it computes them (f32, the few steps it takes
/// in f64 in f64): with the scale of upsample_bilinear2d and `support = max(scale, 1)`, output
/// i reads inputs [trunc(c - support + 0.5), trunc(c + support + 0.5)) clipped to the input,
/// `c = scale·(i + 0.5)`, each weighted by the triangle filter `max(0, 1 - |(j - c + 0.5) /
/// max(scale, 1)|)` and normalized by the window's total. Half floats compute in f32.
/// Symbolic spatial sizes stay a torch op.
pub fn upsample_bilinear_aa(cx: &mut Cx) -> Lowered {
    let t = cx.out(0)?;
    let x = cx.arg("self")?;
    let xt = cx.tt(x);
    if xt.rank() != 4 || !t.dtype.is_float() {
        return Ok(None);
    }
    let (Some(ins), Some(outs)) = (xt.static_shape(), t.static_shape()) else { return Ok(None) };
    if ins[..2] != outs[..2] {
        return Err(cx.err("the batch and channel dims must be kept"));
    }
    let align = cx.bool_or("align_corners", false);
    let factors = [cx.attr("scales_h").and_then(|a| a.as_float()), cx.attr("scales_w").and_then(|a| a.as_float())];
    let acc = acc_dtype(t.dtype);
    let mut y = cx.convert(x, acc)?;
    if ins == outs {
        return Ok(Some(vec![cx.convert(y, t.dtype)?]));
    }
    if outs.contains(&0) || ins.contains(&0) {
        return Ok(Some(vec![cx.constf(0.0, t.dtype, &t.dims)?]));
    }
    for dim in [3usize, 2] {
        let (n_in, n_out) = (ins[dim], outs[dim]);
        if n_in == n_out {
            continue;
        }
        // torch's area_pixel_compute_scale in f32.
        let scale = if align {
            if n_out > 1 {
                (n_in - 1) as f32 / (n_out - 1) as f32
            } else {
                0.0
            }
        } else {
            match factors[dim - 2].filter(|&s| s > 0.0) {
                Some(s) => (1.0 / s) as f32,
                None => n_in as f32 / n_out as f32,
            }
        };
        let support = if scale >= 1.0 { scale } else { 1.0 };
        let invscale = if scale >= 1.0 { 1.0 / scale } else { 1.0 };
        let max_size = (support.ceil() as i64) * 2 + 1;
        let grid = [c(n_out), c(n_in)];
        let iota = |cx: &mut Cx, d: i64| {
            cx.emit(
                TenOp::Iota,
                vec![],
                vec![("shape", Attr::dims(grid.to_vec())), ("dim", Attr::Int(d)), ("dtype", Attr::DType(DType::F32))],
            )
        };
        let (i, j) = (iota(cx, 0)?, iota(cx, 1)?);
        let center = cx.binary_scalar(TenOp::Add, i, 0.5)?;
        let center = cx.binary_scalar(TenOp::Mul, center, scale as f64)?;
        // (int64) of (c ∓ support) + 0.5, the sum in f64.
        let bound = |cx: &mut Cx, op: TenOp| -> Result<Value, String> {
            let b = cx.binary_scalar(op, center, support as f64)?;
            let b = cx.convert(b, DType::F64)?;
            let b = cx.binary_scalar(TenOp::Add, b, 0.5)?;
            let b = cx.unary(TenOp::Trunc, b)?;
            cx.convert(b, DType::F32)
        };
        let lo = bound(cx, TenOp::Sub)?;
        let lo = cx.binary_scalar(TenOp::Max, lo, 0.0)?;
        let hi = bound(cx, TenOp::Add)?;
        let hi = cx.binary_scalar(TenOp::Min, hi, n_in as f64)?;
        let size = cx.emit(TenOp::Sub, vec![hi, lo], vec![])?;
        let size = cx.binary_scalar(TenOp::Max, size, 0.0)?;
        let size = cx.binary_scalar(TenOp::Min, size, max_size as f64)?;
        let end = cx.emit(TenOp::Add, vec![lo, size], vec![])?;
        let from = cx.compare("GE", j, lo)?;
        let until = cx.compare("LT", j, end)?;
        let inside = cx.emit(TenOp::And, vec![from, until], vec![])?;
        let arg = cx.emit(TenOp::Sub, vec![j, center], vec![])?;
        let arg = cx.convert(arg, DType::F64)?;
        let arg = cx.binary_scalar(TenOp::Add, arg, 0.5)?;
        let arg = cx.binary_scalar(TenOp::Mul, arg, invscale as f64)?;
        let arg = cx.convert(arg, DType::F32)?;
        let arg = cx.unary(TenOp::Abs, arg)?;
        let one = cx.splat_like(1.0, arg)?;
        let w = cx.emit(TenOp::Sub, vec![one, arg], vec![])?;
        let w = cx.binary_scalar(TenOp::Max, w, 0.0)?;
        let zero = cx.splat_like(0.0, w)?;
        let w = cx.select(inside, w, zero)?;
        let total = cx.reduce_bcast(w, "sum", &[1])?;
        let nonzero = cx.compare("NE", total, zero)?;
        let normed = cx.emit(TenOp::Div, vec![w, total], vec![])?;
        let w = cx.select(nonzero, normed, w)?;
        let w = cx.convert(w, acc)?;
        // The resized dim last and the others merged: one [rows, in] x [out, in]ᵀ GEMM.
        let perm: &[usize] = if dim == 2 { &[0, 1, 3, 2] } else { &[0, 1, 2, 3] };
        let moved = transpose(cx, y, perm)?;
        let mt = cx.tt(moved).dims;
        let rows = mt[..3].iter().map(|d| d.as_const().expect("static")).product::<i64>();
        let flat = cx.reshape(moved, &[c(rows), c(n_in)])?;
        let r = cx.emit(
            TenOp::DotGeneral,
            vec![flat, w],
            vec![
                ("lhs_batch", ints(&[])),
                ("rhs_batch", ints(&[])),
                ("lhs_contract", ints(&[1])),
                ("rhs_contract", ints(&[1])),
            ],
        )?;
        let r = cx.reshape(r, &[mt[0].clone(), mt[1].clone(), mt[2].clone(), c(n_out)])?;
        y = transpose(cx, r, perm)?;
    }
    Ok(Some(vec![cx.convert(y, t.dtype)?]))
}
