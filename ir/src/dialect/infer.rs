//! Result type rules: shape and dtype inference for every op in the dialect tables.
//!
//! Rules follow torch's semantics (broadcasting, type promotion with wrapped scalars, reduction
//! dtypes). The importer takes result types from torch.export's metadata and the verifier checks them
//! against these rules, so a rule that disagrees with torch fails loudly on real models.

use super::schema::{Kind, Signature};
use crate::attr::Attr;
use crate::module::Attrs;
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};

/// How an op's result types follow from its operands and attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The type of the first tensor operand (shape and dtype).
    Same,
    /// `_softmax`/`_log_softmax`: `self`'s type, float32 with `half_to_float` (CUDA's f16 kernels).
    Softmax,
    /// Shape of the first tensor operand; integer/bool inputs give float32 (sin, exp, sigmoid).
    UnaryFloat,
    /// Shape of the first tensor operand, dtype bool.
    UnaryBool,
    /// Broadcast tensor operands; dtype by torch promotion with the scalar `other`/`exponent`/`self`.
    Binary,
    /// As `Binary`, but integer results become float32 (true division, atan2).
    BinaryFloat,
    /// Broadcast, dtype bool (comparisons, logical ops).
    Compare,
    /// `where(condition, self, other)`.
    Where,
    /// Reduction over `dim` (None or [] = all) with `keepdim`; dtype kept.
    Reduce,
    /// Reduction whose integer/bool inputs accumulate in int64 unless `dtype` is given (sum, prod).
    ReduceSum,
    /// Reduction to bool (any).
    ReduceBool,
    /// Reduction giving int64 indices (argmax, argmin; `dim` None flattens).
    ReduceArg,
    /// (values, int64 indices) over one `dim` with `keepdim` (max.dim, min.dim).
    ReduceValuesIndices,
    /// (var, mean) over `dim` (var_mean.correction).
    VarMean,
    /// mm, bmm, addmm: `[.., M, K] x [.., K, N] -> [.., M, N]`.
    Matmul,
    /// Reshape to `size` (one entry may be -1).
    View,
    /// Broadcast to `size` (-1 keeps a dim; new dims lead).
    Expand,
    Permute,
    /// Swap `dim0` and `dim1`.
    Transpose,
    Unsqueeze,
    /// Drop size-1 dims listed in `dim` (int or list; absent = all).
    Squeeze,
    /// Remove `dim` (select.int).
    Select,
    /// `dim`, `start`, `end`, `step`.
    Slice,
    /// One result per entry of `split_sizes` along `dim`.
    SplitWithSizes,
    /// Concatenate `tensors` along `dim`.
    Cat,
    /// Stack `tensors` along a new `dim`.
    Stack,
    Repeat,
    /// `pad` pairs from the last dim backwards (constant_pad_nd).
    ConstantPad,
    /// `padding` pairs from the last dim backwards (reflection/replication pads).
    Pad,
    IndexSelect,
    /// Shape of `index`, dtype of `self` (gather).
    Gather,
    /// `indices.shape + [weight.shape[1]]`.
    Embedding,
    /// Advanced indexing (index.Tensor).
    Index,
    /// `size` with dtype from `dtype`, else from `fill_value` (full).
    Full,
    /// `size` with dtype from `dtype`, else float32 (empty, rand, randn).
    Empty,
    /// `[n]` with dtype from `dtype` (randperm).
    Randperm,
    /// arange.start_step.
    Arange,
    /// Rank-0 tensor with dtype from `dtype`, else float32.
    ScalarTensor,
    /// Same shape, dtype from `dtype` when given (_to_copy, full_like).
    SameWithDtype,
    /// Same shape; int/bool accumulate in int64 unless `dtype` (cumsum).
    Cumsum,
    /// (out, mean, rstd) with mean/rstd keeping the leading dims (native_layer_norm).
    LayerNorm,
    /// (out, mean [N, group], rstd [N, group]).
    GroupNorm,
    /// (out, save_mean, save_invstd): `[C]` when `training`, else `[0]`.
    BatchNorm,
    Convolution,
    /// (values, int64 indices) of a max pool.
    MaxPool,
    AvgPool,
    AdaptiveAvgPool,
    Upsample,
    /// (values, int64 indices), same shape (sort).
    Sort,
    /// (values, int64 indices) with `k` along `dim`.
    TopK,
    Diagonal,
    /// Shape from `size` (as_strided).
    AsStrided,
    /// (out, bool mask) of the same shape.
    Dropout,
    /// An int64 scalar (sym_size.int and friends).
    SymInt,
    /// A scalar of the operand's dtype (_local_scalar_dense).
    Scalar,
    /// (grad_input, grad_weight, grad_bias) shaped like (input, weight, [bias_sizes]).
    ConvolutionBackward,
    /// (grad_input, grad_weight, grad_bias) shaped like (input, weight, bias).
    LayerNormBackward,
    /// `[num_weights, grad.shape[-1]]`.
    EmbeddingBackward,
    /// Shape of `self` operand regardless of which comes first (pooling backward ops).
    LikeSelf,
    /// `ten` elementwise: every tensor operand has the first one's shape; result is its type.
    Elementwise,
    /// `ten.compare`: equal shapes, bool result.
    CompareStrict,
    /// `ten.select`: equal shapes; result is `on_true`'s type.
    SelectStrict,
    /// `ten.broadcast`: `shape`, operand dim i placed at `dims[i]`.
    BroadcastInDim,
    /// `ten.constant`: `shape` and `dtype`.
    Splat,
    /// `ten.iota`: `shape` and `dtype`.
    Iota,
    /// `ten.reshape`: `shape` with the same element count.
    Reshape,
    /// `ten.reduce`: drop `dims`.
    ReduceDims,
    /// `ten.dot_general`: batch dims, lhs free dims, rhs free dims.
    DotGeneral,
    /// `ten.gather`: `x[:dim] + index.shape + x[dim+1:]`.
    TakeDim,
    /// `ten.slice`: `shape` (start and step are checked against the operand).
    SliceStrided,
    /// `ten.pad`: each dim grows by `low[i] + high[i]`.
    PadEdges,
    /// `ten.windows`: trailing dims `[.., S_i]` become `[.., K_i, O_i]`.
    Windows,
    /// `ten.cumsum`, `ten.cumprod`: the operand's type; `dim` must be in range.
    Scan,
    /// `ten.argsort`: the operand's shape, int64; `dim` must be in range.
    ArgSort,
    /// `ten.scatter`: the type of the 1-D `x`; `updates` has `index`'s shape and `x`'s dtype.
    ScatterFlat,
    /// Broadcast of `self` and `mask`, dtype of `self` (masked_scatter, masked_fill).
    MaskedLike,
    /// No inference: result types come from the importer's metadata and are trusted. Used only for
    /// data-dependent shapes (nonzero) and ops whose rule is not written yet; `dialect::trusted_ops`
    /// lists them.
    Trust,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferError(pub String);

type R<T> = Result<T, InferError>;

fn err<T>(msg: impl Into<String>) -> R<T> {
    Err(InferError(msg.into()))
}

/// What a rule sees of an op: tensor operands by parameter name and the attributes.
pub struct InferCtx<'a> {
    pub sig: &'a Signature,
    /// One entry per tensor parameter; `None` entries are absent optionals.
    pub tensors: Vec<(&'a str, Vec<Option<&'a TensorType>>)>,
    pub attrs: &'a Attrs,
    /// The op's declared result types (empty for an op being built): read only where torch's
    /// own result dtype depends on the device the graph was exported on (`stat_dtype`).
    pub results: Vec<Option<&'a TensorType>>,
}

impl<'a> InferCtx<'a> {
    fn first(&self) -> R<&'a TensorType> {
        self.tensors
            .iter()
            .flat_map(|(_, v)| v.iter())
            .flatten()
            .next()
            .copied()
            .ok_or_else(|| InferError("op has no tensor operand".into()))
    }
    /// The dtype of result `i`, a normalization statistic of a `dt` input: torch's CPU kernels
    /// keep a reduced-precision input's dtype (an export on CPU records it), its CUDA kernels
    /// compute and return float32. Both are torch's; the graph's choice is kept.
    fn stat_dtype(&self, i: usize, dt: DType) -> DType {
        let narrow = matches!(dt, DType::F16 | DType::BF16);
        match self.results.get(i).copied().flatten() {
            Some(r) if narrow && (r.dtype == DType::F32 || r.dtype == dt) => r.dtype,
            _ if narrow => DType::F32,
            _ => dt,
        }
    }
    fn t(&self, name: &str) -> R<&'a TensorType> {
        self.opt_t(name).ok_or_else(|| InferError(format!("missing tensor operand `{name}`")))
    }
    fn opt_t(&self, name: &str) -> Option<&'a TensorType> {
        self.tensors.iter().find(|(n, _)| *n == name).and_then(|(_, v)| v.first().copied().flatten())
    }
    fn list(&self, name: &str) -> Vec<Option<&'a TensorType>> {
        self.tensors.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap_or_default()
    }
    fn all_tensors(&self) -> Vec<&'a TensorType> {
        self.tensors.iter().flat_map(|(_, v)| v.iter()).flatten().copied().collect()
    }
    fn attr(&self, name: &str) -> Option<&'a Attr> {
        self.attrs.get(name)
    }
    fn int(&self, name: &str) -> R<i64> {
        self.attr(name)
            .and_then(|a| a.as_int())
            .ok_or_else(|| InferError(format!("attribute `{name}` must be an integer")))
    }
    fn int_or(&self, name: &str, d: i64) -> R<i64> {
        match self.attr(name) {
            None => Ok(d),
            Some(_) => self.int(name),
        }
    }
    fn bool_or(&self, name: &str, d: bool) -> bool {
        self.attr(name).and_then(|a| a.as_bool()).unwrap_or(d)
    }
    fn dims(&self, name: &str) -> R<Vec<SymExpr>> {
        match self.attr(name) {
            Some(a) => a
                .as_dims()
                .or_else(|| a.as_sym().map(|s| vec![s]))
                .ok_or_else(|| InferError(format!("attribute `{name}` must be a size list"))),
            None => err(format!("missing attribute `{name}`")),
        }
    }
    fn ints(&self, name: &str) -> R<Vec<i64>> {
        match self.attr(name) {
            Some(Attr::Ints(v)) => Ok(v.clone()),
            Some(Attr::Int(i)) => Ok(vec![*i]),
            Some(_) => err(format!("attribute `{name}` must be a list of integers")),
            None => err(format!("missing attribute `{name}`")),
        }
    }
    fn sym(&self, name: &str) -> R<Option<SymExpr>> {
        match self.attr(name) {
            None => Ok(None),
            Some(a) => a.as_sym().map(Some).ok_or_else(|| InferError(format!("attribute `{name}` must be an integer"))),
        }
    }
    fn dtype(&self) -> Option<DType> {
        self.attr("dtype").and_then(|a| a.as_dtype())
    }
    /// A `dim` list attribute normalized to `0..rank`; None or [] means every dim.
    fn reduce_dims(&self, rank: usize) -> R<Vec<usize>> {
        let raw = match self.attr("dim") {
            None => vec![],
            Some(Attr::Int(i)) => vec![*i],
            Some(Attr::Ints(v)) => v.clone(),
            Some(_) => return err("attribute `dim` must be an integer or a list"),
        };
        if raw.is_empty() {
            return Ok((0..rank).collect());
        }
        let mut out = raw.iter().map(|&d| norm_dim(d, rank.max(1))).collect::<R<Vec<_>>>()?;
        out.sort();
        if out.windows(2).any(|w| w[0] == w[1]) {
            // torch rejects `[-1, 1]` on rank 2 too ("duplicate value in the list of dims").
            return err(format!("dim {raw:?} names one dim twice"));
        }
        Ok(out)
    }
}

fn norm_dim(d: i64, rank: usize) -> R<usize> {
    let r = rank as i64;
    if d < -r || d >= r {
        return err(format!("dim {d} is out of range for rank {rank}"));
    }
    Ok(if d < 0 { (d + r) as usize } else { d as usize })
}

fn c(v: i64) -> SymExpr {
    SymExpr::Const(v)
}

/// Broadcasts two dims; errors only when they provably differ.
fn bcast_dim(a: &SymExpr, b: &SymExpr) -> R<SymExpr> {
    if a == b || b.as_const() == Some(1) {
        return Ok(a.clone());
    }
    if a.as_const() == Some(1) {
        return Ok(b.clone());
    }
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => err(format!("cannot broadcast dims {x} and {y}")),
        (None, Some(_)) => Ok(b.clone()),
        _ => Ok(a.clone()),
    }
}

pub fn broadcast(shapes: &[&[SymExpr]]) -> R<Vec<SymExpr>> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![c(1); rank];
    for s in shapes {
        let off = rank - s.len();
        for (i, d) in s.iter().enumerate() {
            out[off + i] = bcast_dim(&out[off + i], d)
                .map_err(|e| InferError(format!("{} (shapes {})", e.0, fmt_shapes(shapes))))?;
        }
    }
    Ok(out)
}

fn fmt_shapes(shapes: &[&[SymExpr]]) -> String {
    shapes
        .iter()
        .map(|s| format!("[{}]", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")))
        .collect::<Vec<_>>()
        .join(" and ")
}

/// torch's `result_type`: non-zero-dim tensors, then zero-dim tensors, then wrapped Python scalars.
pub fn result_type(tensors: &[&TensorType], scalars: &[&Attr]) -> DType {
    fn fold(ds: impl Iterator<Item = DType>) -> Option<DType> {
        ds.reduce(DType::promote)
    }
    fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
        match (higher, lower) {
            (None, l) => l,
            (h, None) => h,
            (Some(h), Some(l)) => {
                if h.is_float() {
                    Some(h)
                } else if h == DType::Bool || l.is_float() {
                    Some(DType::promote(h, l))
                } else {
                    Some(h)
                }
            }
        }
    }
    let dim = fold(tensors.iter().filter(|t| t.rank() > 0).map(|t| t.dtype));
    let zero = fold(tensors.iter().filter(|t| t.rank() == 0).map(|t| t.dtype));
    let wrapped = fold(scalars.iter().filter_map(|a| match a {
        Attr::Bool(_) => Some(DType::Bool),
        Attr::Int(_) => Some(DType::I64),
        Attr::Float(_) => Some(DType::F32),
        _ => None,
    }));
    combine(combine(dim, zero), wrapped).unwrap_or(DType::F32)
}

fn float_of(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F32
    }
}

fn tt(dims: Vec<SymExpr>, dtype: DType) -> Type {
    Type::Tensor(TensorType::new(dims, dtype))
}

/// `a / b` when exact for monomials (`8*s0 / 4 = 2*s0`), else floor division.
pub fn div_exact(a: &SymExpr, b: &SymExpr) -> SymExpr {
    fn parts(e: &SymExpr) -> (i64, Vec<SymExpr>) {
        match e {
            SymExpr::Const(k) => (*k, vec![]),
            SymExpr::Mul(fs) => {
                let mut k = 1;
                let mut rest = vec![];
                for f in fs {
                    match f {
                        SymExpr::Const(x) => k *= x,
                        o => rest.push(o.clone()),
                    }
                }
                (k, rest)
            }
            o => (1, vec![o.clone()]),
        }
    }
    let (ka, mut fa) = parts(a);
    let (kb, fb) = parts(b);
    let mut ok = kb != 0 && ka % kb == 0;
    for f in &fb {
        match fa.iter().position(|x| x == f) {
            Some(i) => {
                fa.remove(i);
            }
            None => ok = false,
        }
    }
    if ok {
        fa.into_iter().fold(c(ka / kb), SymExpr::mul)
    } else {
        SymExpr::floordiv(a.clone(), b.clone())
    }
}

fn ceil_div(a: SymExpr, b: i64) -> SymExpr {
    SymExpr::floordiv(SymExpr::add(a, c(b - 1)), c(b))
}

fn pool_out(inp: &SymExpr, k: i64, s: i64, p: i64, d: i64, ceil: bool) -> SymExpr {
    // floor/ceil((in + 2p - d(k-1) - 1) / s) + 1, as torch's pooling_output_shape.
    let num = SymExpr::add(inp.clone(), c(2 * p - d * (k - 1) - 1));
    let mut out =
        SymExpr::add(if ceil { ceil_div(num.clone(), s) } else { SymExpr::floordiv(num.clone(), c(s)) }, c(1));
    if ceil {
        // The last window must start inside the input or left padding.
        if let (Some(o), Some(i)) = (out.as_const(), inp.as_const()) {
            if (o - 1) * s >= i + p {
                out = c(o - 1);
            }
        }
    }
    out
}

fn nth(v: &[i64], i: usize, d: i64) -> i64 {
    match v.len() {
        0 => d,
        1 => v[0],
        _ => v.get(i).copied().unwrap_or(d),
    }
}

pub fn infer(rule: Rule, cx: &InferCtx) -> R<Vec<Type>> {
    use Rule::*;
    let one = |t: Type| Ok(vec![t]);
    match rule {
        Trust => err("no rule"),
        Same | LikeSelf => {
            let t = if rule == LikeSelf { cx.t("self")? } else { cx.first()? };
            one(Type::Tensor(t.clone()))
        }
        Softmax => {
            let t = cx.t("self")?;
            one(tt(t.dims.clone(), if cx.bool_or("half_to_float", false) { DType::F32 } else { t.dtype }))
        }
        UnaryFloat => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), float_of(t.dtype)))
        }
        UnaryBool => one(tt(cx.first()?.dims.clone(), DType::Bool)),
        Binary | BinaryFloat | Compare => {
            let ts = cx.all_tensors();
            let shapes: Vec<&[SymExpr]> = ts.iter().map(|t| t.dims.as_slice()).collect();
            let dims = broadcast(&shapes)?;
            let scalars: Vec<&Attr> = ["other", "exponent", "self"]
                .iter()
                .filter_map(|n| cx.sig.param(n).filter(|p| p.kind == Kind::Scalar).and(cx.attr(n)))
                .collect();
            let dt = result_type(&ts, &scalars);
            one(tt(
                dims,
                match rule {
                    Compare => DType::Bool,
                    BinaryFloat => float_of(dt),
                    _ => dt,
                },
            ))
        }
        Where => {
            let (cnd, a, b) = (cx.t("condition")?, cx.t("self")?, cx.t("other")?);
            let dims = broadcast(&[&cnd.dims, &a.dims, &b.dims])?;
            one(tt(dims, result_type(&[a, b], &[])))
        }
        Reduce | ReduceSum | ReduceBool | ReduceArg | VarMean => {
            let t = cx.t("self")?;
            let keep = cx.bool_or("keepdim", false);
            let rank = t.rank();
            let (dims, flatten) = if rule == ReduceArg && cx.attr("dim").is_none() {
                ((0..rank).collect::<Vec<_>>(), true)
            } else {
                (cx.reduce_dims(rank)?, false)
            };
            let shape: Vec<SymExpr> = if flatten && !keep {
                vec![]
            } else {
                t.dims
                    .iter()
                    .enumerate()
                    .filter_map(|(i, d)| if dims.contains(&i) { keep.then(|| c(1)) } else { Some(d.clone()) })
                    .collect()
            };
            let dt = match rule {
                ReduceSum => cx.dtype().unwrap_or(if t.dtype.is_float() { t.dtype } else { DType::I64 }),
                ReduceBool => DType::Bool,
                ReduceArg => DType::I64,
                _ => cx.dtype().unwrap_or(t.dtype),
            };
            if rule == VarMean {
                return Ok(vec![tt(shape.clone(), dt), tt(shape, dt)]);
            }
            one(tt(shape, dt))
        }
        ReduceValuesIndices => {
            let t = cx.t("self")?;
            let d = norm_dim(cx.int("dim")?, t.rank().max(1))?;
            let keep = cx.bool_or("keepdim", false);
            let mut shape = t.dims.clone();
            if t.rank() > 0 {
                if keep {
                    shape[d] = c(1);
                } else {
                    shape.remove(d);
                }
            }
            Ok(vec![tt(shape.clone(), t.dtype), tt(shape, DType::I64)])
        }
        Matmul => {
            let ts: Vec<&TensorType> = match (cx.opt_t("mat1"), cx.opt_t("mat2")) {
                (Some(a), Some(b)) => vec![a, b],
                (None, Some(b)) => vec![cx.t("self")?, b],
                _ => vec![cx.t("self")?, cx.t("other")?],
            };
            let (a, b) = (ts[0], ts[1]);
            if a.rank() < 2 || b.rank() < 2 || a.rank() != b.rank() {
                return err(format!("matmul operands must have equal rank >= 2, got {} and {}", a.rank(), b.rank()));
            }
            let r = a.rank();
            // bmm's batch dims must be equal (torch does not broadcast them).
            for i in 0..r - 2 {
                if let (Some(x), Some(y)) = (a.dims[i].as_const(), b.dims[i].as_const()) {
                    if x != y {
                        return err(format!("batch dim {i} differs: {x} vs {y}"));
                    }
                }
            }
            let (k1, k2) = (&a.dims[r - 1], &b.dims[r - 2]);
            if let (Some(x), Some(y)) = (k1.as_const(), k2.as_const()) {
                if x != y {
                    return err(format!("contraction dims differ: {x} (lhs dim {}) vs {y} (rhs dim {})", r - 1, r - 2));
                }
            }
            let mut dims = a.dims[..r - 1].to_vec();
            dims.push(b.dims[r - 1].clone());
            one(tt(dims, result_type(&[a, b], &[])))
        }
        View => {
            let t = cx.first()?;
            let size = cx.dims("size").or_else(|_| cx.dims("shape"))?;
            let wild: Vec<usize> =
                size.iter().enumerate().filter(|(_, d)| d.as_const() == Some(-1)).map(|(i, _)| i).collect();
            let mut size = size;
            if wild.len() > 1 {
                return err("only one dim of a view may be -1");
            }
            if let Some(&w) = wild.first() {
                let known = size
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != w)
                    .fold(c(1), |acc, (_, d)| SymExpr::mul(acc, d.clone()));
                size[w] = div_exact(&t.numel(), &known);
            }
            let (a, b) = (t.numel(), size.iter().cloned().fold(c(1), SymExpr::mul));
            if let (Some(x), Some(y)) = (a.as_const(), b.as_const()) {
                if x != y {
                    return err(format!("cannot view {x} elements as {y}"));
                }
            }
            one(tt(size, t.dtype))
        }
        Expand => {
            let t = cx.first()?;
            let size = cx.dims("size")?;
            if size.len() < t.rank() {
                return err(format!("expand to rank {} is below the input rank {}", size.len(), t.rank()));
            }
            let off = size.len() - t.rank();
            let mut dims = Vec::new();
            for (i, d) in size.iter().enumerate() {
                if d.as_const() == Some(-1) {
                    if i < off {
                        return err("-1 is not allowed for a new leading dim of expand");
                    }
                    dims.push(t.dims[i - off].clone());
                } else {
                    if i >= off {
                        let src = &t.dims[i - off];
                        if src.as_const() != Some(1) && src != d && src.as_const().is_some() && d.as_const().is_some() {
                            return err(format!("cannot expand dim {} of size {src} to {d}", i - off));
                        }
                    }
                    dims.push(d.clone());
                }
            }
            one(tt(dims, t.dtype))
        }
        Permute => {
            let t = cx.first()?;
            let p = cx.ints("dims")?;
            if p.len() != t.rank() {
                return err(format!("permutation has {} entries for rank {}", p.len(), t.rank()));
            }
            let mut seen = vec![false; t.rank()];
            let mut dims = Vec::new();
            for &d in &p {
                let d = norm_dim(d, t.rank())?;
                if std::mem::replace(&mut seen[d], true) {
                    return err(format!("dim {d} repeats in the permutation"));
                }
                dims.push(t.dims[d].clone());
            }
            one(tt(dims, t.dtype))
        }
        Transpose => {
            let t = cx.first()?;
            let r = t.rank().max(1);
            let (a, b) = (norm_dim(cx.int("dim0")?, r)?, norm_dim(cx.int("dim1")?, r)?);
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims.swap(a, b);
            }
            one(tt(dims, t.dtype))
        }
        Unsqueeze => {
            let t = cx.first()?;
            let d = norm_dim(cx.int("dim")?, t.rank() + 1)?;
            let mut dims = t.dims.clone();
            dims.insert(d, c(1));
            one(tt(dims, t.dtype))
        }
        Squeeze => {
            let t = cx.first()?;
            // An empty `dim` list squeezes nothing (unlike reductions, where [] means all dims).
            let sel = match cx.attr("dim") {
                Some(Attr::Ints(v)) if v.is_empty() => vec![],
                Some(_) => cx.reduce_dims(t.rank())?,
                None => (0..t.rank()).collect(),
            };
            let dims = t
                .dims
                .iter()
                .enumerate()
                .filter(|(i, d)| !(sel.contains(i) && d.as_const() == Some(1)))
                .map(|(_, d)| d.clone())
                .collect();
            one(tt(dims, t.dtype))
        }
        Select => {
            let t = cx.first()?;
            let d = norm_dim(cx.int("dim")?, t.rank())?;
            let mut dims = t.dims.clone();
            dims.remove(d);
            one(tt(dims, t.dtype))
        }
        Slice => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", 0)?, t.rank())?;
            let size = t.dims[d].clone();
            let step = cx.int_or("step", 1)?;
            if step <= 0 {
                return err("slice step must be positive");
            }
            let clamp = |e: Option<SymExpr>, dflt: SymExpr| -> SymExpr {
                match e {
                    None => dflt,
                    Some(e) => match (e.as_const(), size.as_const()) {
                        (Some(v), Some(n)) => c(if v < 0 { (v + n).max(0) } else { v.min(n) }),
                        (Some(v), None) if v >= i64::MAX / 2 => size.clone(),
                        (Some(v), None) if v < 0 => SymExpr::add(size.clone(), c(v)),
                        _ => e,
                    },
                }
            };
            let start = clamp(cx.sym("start")?, c(0));
            let end = clamp(cx.sym("end")?, size.clone());
            let len = SymExpr::add(end, SymExpr::mul(c(-1), start));
            let len = match len.as_const() {
                Some(l) => c(if l <= 0 { 0 } else { (l + step - 1) / step }),
                None => ceil_div(len, step),
            };
            let mut dims = t.dims.clone();
            dims[d] = len;
            one(tt(dims, t.dtype))
        }
        SplitWithSizes => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", 0)?, t.rank())?;
            let sizes = cx.dims("split_sizes")?;
            Ok(sizes
                .into_iter()
                .map(|s| {
                    let mut dims = t.dims.clone();
                    dims[d] = s;
                    tt(dims, t.dtype)
                })
                .collect())
        }
        Cat | Stack => {
            let name = if cx.sig.param("inputs").is_some() { "inputs" } else { "tensors" };
            let ts: Vec<&TensorType> = cx.list(name).into_iter().flatten().collect();
            // torch skips legacy empty 1-D tensors in cat.
            let all = ts.clone();
            let mut ts: Vec<&TensorType> =
                ts.into_iter().filter(|t| !(rule == Cat && t.rank() == 1 && t.dims[0].as_const() == Some(0))).collect();
            if ts.is_empty() && !all.is_empty() {
                ts = vec![all[0]];
            }
            let Some(first) = ts.first() else { return err("cat of no tensors") };
            let dt = result_type(&ts, &[]);
            let rank = first.rank();
            if ts.iter().any(|t| t.rank() != rank) {
                return err("cat/stack inputs must have equal rank");
            }
            if rule == Stack {
                let d = norm_dim(cx.int_or("dim", 0)?, rank + 1)?;
                let mut dims = first.dims.clone();
                dims.insert(d, c(ts.len() as i64));
                return one(tt(dims, dt));
            }
            let d = norm_dim(cx.int_or("dim", 0)?, rank)?;
            // Every other dim must agree (symbolic ones are torch.export's to guarantee).
            for (k, t) in ts.iter().enumerate() {
                for i in (0..rank).filter(|&i| i != d) {
                    if let (Some(x), Some(y)) = (first.dims[i].as_const(), t.dims[i].as_const()) {
                        if x != y {
                            return err(format!("cat input {k} has size {y} in dim {i}, the first input {x}"));
                        }
                    }
                }
            }
            let mut dims = first.dims.clone();
            dims[d] = ts.iter().map(|t| t.dims[d].clone()).fold(c(0), SymExpr::add);
            one(tt(dims, dt))
        }
        Repeat => {
            let t = cx.first()?;
            let reps = cx.dims("repeats")?;
            if reps.len() < t.rank() {
                return err("repeat needs at least as many repeats as dims");
            }
            let off = reps.len() - t.rank();
            let dims = reps
                .iter()
                .enumerate()
                .map(|(i, r)| if i < off { r.clone() } else { SymExpr::mul(r.clone(), t.dims[i - off].clone()) })
                .collect();
            one(tt(dims, t.dtype))
        }
        ConstantPad | Pad => {
            let t = cx.first()?;
            let pad = cx.dims(if rule == ConstantPad { "pad" } else { "padding" })?;
            if pad.len() % 2 != 0 || pad.len() / 2 > t.rank() {
                return err(format!("padding has {} entries for rank {}", pad.len(), t.rank()));
            }
            let mut dims = t.dims.clone();
            for i in 0..pad.len() / 2 {
                let d = t.rank() - 1 - i;
                dims[d] = SymExpr::add(dims[d].clone(), SymExpr::add(pad[2 * i].clone(), pad[2 * i + 1].clone()));
            }
            one(tt(dims, t.dtype))
        }
        IndexSelect => {
            let (t, idx) = (cx.t("self")?, cx.t("index")?);
            let d = norm_dim(cx.int("dim")?, t.rank().max(1))?;
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims[d] = idx.numel();
            }
            one(tt(dims, t.dtype))
        }
        Gather => one(tt(cx.t("index")?.dims.clone(), cx.t("self")?.dtype)),
        MaskedLike => {
            let (t, mask) = (cx.t("self")?, cx.t("mask")?);
            one(tt(broadcast(&[&t.dims, &mask.dims])?, t.dtype))
        }
        Embedding => {
            let (w, idx) = (cx.t("weight")?, cx.t("indices")?);
            if w.rank() != 2 {
                return err(format!("embedding weight must be 2-D, got rank {}", w.rank()));
            }
            let mut dims = idx.dims.clone();
            dims.push(w.dims[1].clone());
            one(tt(dims, w.dtype))
        }
        Index => {
            let t = cx.t("self")?;
            let idx = cx.list("indices");
            if idx.len() > t.rank() {
                return err(format!("{} indices for a rank-{} tensor", idx.len(), t.rank()));
            }
            let mut shapes: Vec<Vec<SymExpr>> = Vec::new();
            for i in idx.iter().flatten() {
                if i.dtype == DType::Bool || i.dtype == DType::U8 {
                    // Boolean masks give a data-dependent count.
                    return err("boolean mask indexing has a data-dependent shape");
                }
                shapes.push(i.dims.clone());
            }
            let refs: Vec<&[SymExpr]> = shapes.iter().map(|s| s.as_slice()).collect();
            let bshape = broadcast(&refs)?;
            let present: Vec<usize> = idx.iter().enumerate().filter(|(_, i)| i.is_some()).map(|(k, _)| k).collect();
            let adjacent = present.windows(2).all(|w| w[1] == w[0] + 1);
            let mut dims = Vec::new();
            if adjacent && !present.is_empty() {
                let first = present[0];
                dims.extend_from_slice(&t.dims[..first]);
                dims.extend(bshape);
                dims.extend((0..t.rank()).filter(|k| *k > first && !present.contains(k)).map(|k| t.dims[k].clone()));
            } else {
                dims.extend(bshape);
                dims.extend((0..t.rank()).filter(|k| !present.contains(k)).map(|k| t.dims[k].clone()));
            }
            one(tt(dims, t.dtype))
        }
        Full => {
            let size = cx.dims("size")?;
            let dt = cx.dtype().unwrap_or(match cx.attr("fill_value") {
                Some(Attr::Bool(_)) => DType::Bool,
                Some(Attr::Int(_)) => DType::I64,
                _ => DType::F32,
            });
            one(tt(size, dt))
        }
        Empty => one(tt(cx.dims("size")?, cx.dtype().unwrap_or(DType::F32))),
        Randperm => one(tt(vec![cx.sym("n")?.unwrap_or(c(0))], cx.dtype().unwrap_or(DType::I64))),
        Arange => {
            let get = |n: &str| cx.attr(n);
            // Python bools are ints here (arange(False, True) == [0]).
            let as_num = |a: Option<&Attr>, d: i64| -> Attr {
                match a {
                    Some(Attr::Bool(b)) => Attr::Int(*b as i64),
                    Some(a) => a.clone(),
                    None => Attr::Int(d),
                }
            };
            let (start, end, step) =
                (&as_num(get("start"), 0), get("end").map(|e| as_num(Some(e), 0)), &as_num(get("step"), 1));
            let end = end.as_ref();
            let Some(end) = end else { return err("arange needs `end`") };
            let all_int = [start, end, step].iter().all(|a| !matches!(a, Attr::Float(_)));
            let dt = cx.dtype().unwrap_or(if all_int { DType::I64 } else { DType::F32 });
            let len = if all_int {
                let (s, e, st) = (start.as_sym(), end.as_sym(), step.as_int());
                match (s, e, st) {
                    (Some(s), Some(e), Some(st)) if st > 0 => {
                        let span = SymExpr::add(e, SymExpr::mul(c(-1), s));
                        match span.as_const() {
                            Some(v) => c(((v + st - 1) / st).max(0)),
                            None => ceil_div(span, st),
                        }
                    }
                    (Some(s), Some(e), Some(st)) if st < 0 => match (s.as_const(), e.as_const()) {
                        (Some(s), Some(e)) => c(((s - e + (-st) - 1) / (-st)).max(0)),
                        _ => return err("negative-step arange needs static bounds"),
                    },
                    _ => return err("arange bounds must be integers"),
                }
            } else {
                let (s, e, st) =
                    (start.as_float().unwrap_or(0.0), end.as_float().unwrap_or(0.0), step.as_float().unwrap_or(1.0));
                c(((e - s) / st).ceil().max(0.0) as i64)
            };
            one(tt(vec![len], dt))
        }
        ScalarTensor => one(tt(vec![], cx.dtype().unwrap_or(DType::F32))),
        SameWithDtype => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), cx.dtype().unwrap_or(t.dtype)))
        }
        Cumsum => {
            let t = cx.first()?;
            one(tt(t.dims.clone(), cx.dtype().unwrap_or(if t.dtype.is_float() { t.dtype } else { DType::I64 })))
        }
        LayerNorm => {
            let t = cx.t("input")?;
            let n = cx.dims("normalized_shape")?.len();
            if n > t.rank() {
                return err("normalized_shape is longer than the input rank");
            }
            let stat: Vec<SymExpr> =
                t.dims.iter().enumerate().map(|(i, d)| if i >= t.rank() - n { c(1) } else { d.clone() }).collect();
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(stat.clone(), cx.stat_dtype(1, t.dtype)),
                tt(stat, cx.stat_dtype(2, t.dtype)),
            ])
        }
        GroupNorm => {
            let t = cx.t("input")?;
            let n = cx.sym("N")?.unwrap_or(c(1));
            let g = cx.int("group")?;
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(vec![n.clone(), c(g)], cx.stat_dtype(1, t.dtype)),
                tt(vec![n, c(g)], cx.stat_dtype(2, t.dtype)),
            ])
        }
        BatchNorm => {
            let t = cx.t("input")?;
            let training = cx.bool_or("training", false);
            let ch = if training && t.rank() > 1 { t.dims[1].clone() } else { c(0) };
            Ok(vec![
                Type::Tensor(t.clone()),
                tt(vec![ch.clone()], cx.stat_dtype(1, t.dtype)),
                tt(vec![ch], cx.stat_dtype(2, t.dtype)),
            ])
        }
        Convolution => {
            let (x, w) = (cx.t("input")?, cx.t("weight")?);
            if x.rank() < 3 || w.rank() != x.rank() {
                return err(format!(
                    "convolution input rank {} and weight rank {} must match and be >= 3",
                    x.rank(),
                    w.rank()
                ));
            }
            let sp = x.rank() - 2;
            let (stride, pad, dil) = (cx.ints("stride")?, cx.ints("padding")?, cx.ints("dilation")?);
            let transposed = cx.bool_or("transposed", false);
            let groups = cx.int_or("groups", 1)?;
            let opad = if transposed { cx.ints("output_padding")? } else { vec![] };
            let out_ch = if transposed { SymExpr::mul(w.dims[1].clone(), c(groups)) } else { w.dims[0].clone() };
            let mut dims = vec![x.dims[0].clone(), out_ch];
            for i in 0..sp {
                let k = w.dims[2 + i]
                    .as_const()
                    .ok_or_else(|| InferError("convolution kernel sizes must be static".into()))?;
                let (s, p, d) = (nth(&stride, i, 1), nth(&pad, i, 0), nth(&dil, i, 1));
                let inp = x.dims[2 + i].clone();
                dims.push(if transposed {
                    SymExpr::add(
                        SymExpr::mul(SymExpr::add(inp, c(-1)), c(s)),
                        c(-2 * p + d * (k - 1) + nth(&opad, i, 0) + 1),
                    )
                } else {
                    pool_out(&inp, k, s, p, d, false)
                });
            }
            one(tt(dims, x.dtype))
        }
        MaxPool | AvgPool => {
            let t = cx.t("self")?;
            let k = cx.ints("kernel_size")?;
            let sp = k.len().max(1);
            if t.rank() < sp {
                return err("pool input rank is below the kernel rank");
            }
            let stride = cx.ints("stride").unwrap_or_default();
            let pad = cx.ints("padding").unwrap_or_default();
            let dil = if rule == MaxPool { cx.ints("dilation").unwrap_or_default() } else { vec![] };
            let ceil = cx.bool_or("ceil_mode", false);
            let mut dims = t.dims[..t.rank() - sp].to_vec();
            for i in 0..sp {
                let kk = nth(&k, i, 1);
                let s = if stride.is_empty() { kk } else { nth(&stride, i, kk) };
                dims.push(pool_out(&t.dims[t.rank() - sp + i], kk, s, nth(&pad, i, 0), nth(&dil, i, 1), ceil));
            }
            if rule == MaxPool {
                Ok(vec![tt(dims.clone(), t.dtype), tt(dims, DType::I64)])
            } else {
                one(tt(dims, t.dtype))
            }
        }
        AdaptiveAvgPool => {
            let t = cx.t("self")?;
            let o = cx.dims("output_size")?;
            if t.rank() < o.len() {
                return err("output_size is longer than the input rank");
            }
            let mut dims = t.dims[..t.rank() - o.len()].to_vec();
            dims.extend(o);
            one(tt(dims, t.dtype))
        }
        Upsample => {
            let t = cx.t("input")?;
            let mut dims = t.dims[..2.min(t.rank())].to_vec();
            if let Some(o) = cx.attr("output_size").and_then(|a| a.as_dims()) {
                dims.extend(o);
            } else if let Some(Attr::Floats(f)) = cx.attr("scale_factors") {
                for (i, s) in f.iter().enumerate() {
                    let d = t
                        .dims
                        .get(2 + i)
                        .and_then(|d| d.as_const())
                        .ok_or_else(|| InferError("scale_factors need static input dims".into()))?;
                    dims.push(c((d as f64 * s).floor() as i64));
                }
            } else {
                return err("upsample needs output_size or scale_factors");
            }
            one(tt(dims, t.dtype))
        }
        Sort => {
            let t = cx.first()?;
            Ok(vec![Type::Tensor(t.clone()), tt(t.dims.clone(), DType::I64)])
        }
        TopK => {
            let t = cx.first()?;
            let d = norm_dim(cx.int_or("dim", -1)?, t.rank().max(1))?;
            let k = cx.sym("k")?.ok_or_else(|| InferError("topk needs `k`".into()))?;
            let mut dims = t.dims.clone();
            if t.rank() > 0 {
                dims[d] = k;
            }
            Ok(vec![tt(dims.clone(), t.dtype), tt(dims, DType::I64)])
        }
        Diagonal => {
            let t = cx.first()?;
            let (off, d1, d2) = (
                cx.int_or("offset", 0)?,
                norm_dim(cx.int_or("dim1", 0)?, t.rank())?,
                norm_dim(cx.int_or("dim2", 1)?, t.rank())?,
            );
            let (a, b) = (t.dims[d1].as_const(), t.dims[d2].as_const());
            let len = match (a, b) {
                (Some(a), Some(b)) => c(if off >= 0 { a.min(b - off) } else { (a + off).min(b) }.max(0)),
                _ if off == 0 && t.dims[d1] == t.dims[d2] => t.dims[d1].clone(),
                _ => return err("diagonal of symbolic dims needs offset 0 and equal dims"),
            };
            let mut dims: Vec<SymExpr> =
                t.dims.iter().enumerate().filter(|(i, _)| *i != d1 && *i != d2).map(|(_, d)| d.clone()).collect();
            dims.push(len);
            one(tt(dims, t.dtype))
        }
        AsStrided => one(tt(cx.dims("size")?, cx.first()?.dtype)),
        Dropout => {
            let t = cx.first()?;
            Ok(vec![Type::Tensor(t.clone()), tt(t.dims.clone(), DType::Bool)])
        }
        Elementwise | CompareStrict | SelectStrict => {
            let ts = cx.all_tensors();
            let first = if rule == SelectStrict { cx.t("on_true")? } else { cx.first()? };
            for (i, t) in ts.iter().enumerate() {
                if t.dims != first.dims {
                    return err(format!(
                        "operand {i} has shape {} but the op needs {} for every operand",
                        fmt_shapes(&[&t.dims]),
                        fmt_shapes(&[&first.dims])
                    ));
                }
            }
            if rule == SelectStrict {
                if cx.t("pred")?.dtype != DType::Bool {
                    return err("`pred` must be bool");
                }
                if cx.t("on_false")?.dtype != first.dtype {
                    return err("`on_true` and `on_false` dtypes differ");
                }
            } else if ts.iter().any(|t| t.dtype != first.dtype) {
                return err("operand dtypes differ; insert ten.convert");
            }
            one(tt(first.dims.clone(), if rule == CompareStrict { DType::Bool } else { first.dtype }))
        }
        BroadcastInDim => {
            let t = cx.first()?;
            let shape = cx.dims("shape")?;
            let map = cx.ints("dims")?;
            if map.len() != t.rank() {
                return err(format!("`dims` has {} entries for a rank-{} operand", map.len(), t.rank()));
            }
            for (i, &d) in map.iter().enumerate() {
                let Some(target) = usize::try_from(d).ok().and_then(|d| shape.get(d)) else {
                    return err(format!("`dims`[{i}] = {d} is outside the result rank {}", shape.len()));
                };
                let src = &t.dims[i];
                if src.as_const() != Some(1) && src != target && src.as_const().is_some() && target.as_const().is_some()
                {
                    return err(format!("operand dim {i} (size {src}) cannot broadcast to size {target}"));
                }
            }
            one(tt(shape, t.dtype))
        }
        Splat | Iota => {
            let dt = cx.dtype().ok_or_else(|| InferError("missing `dtype`".into()))?;
            one(tt(cx.dims("shape")?, dt))
        }
        Reshape => {
            let t = cx.first()?;
            let shape = cx.dims("shape")?;
            let (a, b) = (t.numel(), shape.iter().cloned().fold(c(1), SymExpr::mul));
            if a != b && a.as_const().is_some() && b.as_const().is_some() {
                return err(format!("cannot reshape {a} elements into {b}"));
            }
            one(tt(shape, t.dtype))
        }
        ReduceDims => {
            let t = cx.first()?;
            let dims = cx.ints("dims")?;
            let arg = matches!(cx.attr("kind").and_then(|a| a.as_str()), Some("argmax" | "argmin"));
            for &d in &dims {
                if d < 0 || d as usize >= t.rank() {
                    return err(format!("reduce dim {d} is outside rank {}", t.rank()));
                }
            }
            let shape = t
                .dims
                .iter()
                .enumerate()
                .filter(|(i, _)| !dims.contains(&(*i as i64)))
                .map(|(_, d)| d.clone())
                .collect();
            one(tt(shape, if arg { DType::I64 } else { t.dtype }))
        }
        DotGeneral => {
            let (l, r) = (cx.t("lhs")?, cx.t("rhs")?);
            let (lb, rb, lc, rc) =
                (cx.ints("lhs_batch")?, cx.ints("rhs_batch")?, cx.ints("lhs_contract")?, cx.ints("rhs_contract")?);
            if lb.len() != rb.len() || lc.len() != rc.len() {
                return err("batch and contracting dim lists must pair up");
            }
            let get = |t: &TensorType, d: i64| -> R<SymExpr> {
                t.dims
                    .get(d as usize)
                    .cloned()
                    .ok_or_else(|| InferError(format!("dim {d} is outside rank {}", t.rank())))
            };
            for (&a, &b) in lb.iter().zip(&rb).chain(lc.iter().zip(&rc)) {
                let (x, y) = (get(l, a)?, get(r, b)?);
                if x != y && x.as_const().is_some() && y.as_const().is_some() {
                    return err(format!("lhs dim {a} (size {x}) and rhs dim {b} (size {y}) must match"));
                }
            }
            let mut dims: Vec<SymExpr> = lb.iter().map(|&d| get(l, d)).collect::<R<_>>()?;
            dims.extend(
                (0..l.rank() as i64).filter(|d| !lb.contains(d) && !lc.contains(d)).map(|d| l.dims[d as usize].clone()),
            );
            dims.extend(
                (0..r.rank() as i64).filter(|d| !rb.contains(d) && !rc.contains(d)).map(|d| r.dims[d as usize].clone()),
            );
            if l.dtype != r.dtype {
                return err("dot_general operands must share a dtype");
            }
            match cx.dtype() {
                None => one(tt(dims, l.dtype)),
                Some(DType::F32) if matches!(l.dtype, DType::F16 | DType::BF16 | DType::F32) => {
                    one(tt(dims, DType::F32))
                }
                Some(d) => err(format!(
                    "dot_general `dtype` {} of {} operands: only f32 (the f16/bf16 accumulator)",
                    d.torch_name(),
                    l.dtype.torch_name()
                )),
            }
        }
        TakeDim => {
            let (x, idx) = (cx.t("x")?, cx.t("index")?);
            let d = cx.int("dim")?;
            if d < 0 || d as usize >= x.rank() {
                return err(format!("dim {d} is outside rank {}", x.rank()));
            }
            if idx.dtype.is_float() || idx.dtype == DType::Bool {
                return err("`index` must be an integer tensor");
            }
            let d = d as usize;
            let mut dims = x.dims[..d].to_vec();
            dims.extend(idx.dims.iter().cloned());
            dims.extend(x.dims[d + 1..].iter().cloned());
            one(tt(dims, x.dtype))
        }
        SliceStrided => {
            let t = cx.first()?;
            let (start, shape, step) = (cx.dims("start")?, cx.dims("shape")?, cx.ints("step")?);
            if start.len() != t.rank() || shape.len() != t.rank() || step.len() != t.rank() {
                return err("`start`, `shape` and `step` need one entry per dim");
            }
            if step.iter().any(|&s| s <= 0) {
                return err("slice steps must be positive");
            }
            one(tt(shape, t.dtype))
        }
        PadEdges => {
            let t = cx.first()?;
            let (low, high) = (cx.dims("low")?, cx.dims("high")?);
            if low.len() != t.rank() || high.len() != t.rank() {
                return err("`low` and `high` need one entry per dim");
            }
            let mut dims = Vec::new();
            for (i, d) in t.dims.iter().enumerate() {
                let n = SymExpr::add(d.clone(), SymExpr::add(low[i].clone(), high[i].clone()));
                if n.as_const().is_some_and(|n| n < 0) {
                    return err(format!(
                        "padding dim {i} (size {d}) by {} and {} leaves a negative size",
                        low[i], high[i]
                    ));
                }
                dims.push(n);
            }
            one(tt(dims, t.dtype))
        }
        Windows => {
            let t = cx.first()?;
            let (k, s, d) = (cx.ints("kernel")?, cx.ints("stride")?, cx.ints("dilation")?);
            let n = k.len();
            if s.len() != n || d.len() != n {
                return err("`kernel`, `stride` and `dilation` need one entry per window dim");
            }
            if n > t.rank() {
                return err(format!("{n} window dims for a rank-{} operand", t.rank()));
            }
            if k.iter().chain(&s).chain(&d).any(|&v| v < 1) {
                return err("kernel sizes, strides and dilations must be positive");
            }
            let lead = t.rank() - n;
            let mut dims = t.dims[..lead].to_vec();
            dims.extend(k.iter().map(|&v| c(v)));
            for i in 0..n {
                let span = d[i] * (k[i] - 1) + 1;
                let src = &t.dims[lead + i];
                if src.as_const().is_some_and(|v| v < span) {
                    return err(format!("window dim {i} spans {span} elements but the operand has {src}"));
                }
                dims.push(SymExpr::add(SymExpr::floordiv(SymExpr::add(src.clone(), c(-span)), c(s[i])), c(1)));
            }
            one(tt(dims, t.dtype))
        }
        ScatterFlat => {
            let (x, idx, upd) = (cx.t("x")?, cx.t("index")?, cx.t("updates")?);
            if x.rank() != 1 {
                return err(format!("`x` must be 1-D, found rank {}", x.rank()));
            }
            if idx.dtype.is_float() || idx.dtype == DType::Bool {
                return err("`index` must be an integer tensor");
            }
            if upd.dims != idx.dims || upd.dtype != x.dtype {
                return err("`updates` must have the shape of `index` and the dtype of `x`");
            }
            let kind = cx.attr("kind").and_then(|a| a.as_str()).unwrap_or("");
            if !matches!(kind, "set" | "sum" | "prod" | "max" | "min") {
                return err(format!("unknown scatter kind `{kind}` (set, sum, prod, max or min)"));
            }
            one(Type::Tensor(x.clone()))
        }
        Scan | ArgSort => {
            let t = cx.first()?;
            let d = cx.int("dim")?;
            if d < 0 || d as usize >= t.rank() {
                return err(format!("dim {d} is outside rank {}", t.rank()));
            }
            one(if rule == ArgSort { tt(t.dims.clone(), DType::I64) } else { Type::Tensor(t.clone()) })
        }
        SymInt => one(Type::Scalar(DType::I64)),
        Scalar => one(Type::Scalar(cx.first()?.dtype)),
        ConvolutionBackward => {
            let (x, w) = (cx.t("input")?, cx.t("weight")?);
            let bias = cx.attr("bias_sizes").and_then(|a| a.as_dims()).unwrap_or_else(|| vec![w.dims[0].clone()]);
            Ok(vec![Type::Tensor(x.clone()), Type::Tensor(w.clone()), tt(bias, x.dtype)])
        }
        LayerNormBackward => {
            let x = cx.t("input")?;
            let ns = cx.dims("normalized_shape")?;
            let w = cx.opt_t("weight").map(|t| t.dims.clone()).unwrap_or(ns.clone());
            let b = cx.opt_t("bias").map(|t| t.dims.clone()).unwrap_or(ns);
            Ok(vec![Type::Tensor(x.clone()), tt(w, x.dtype), tt(b, x.dtype)])
        }
        EmbeddingBackward => {
            let g = cx.t("grad_output")?;
            let n = cx.sym("num_weights")?.ok_or_else(|| InferError("missing num_weights".into()))?;
            let last = g.dims.last().cloned().unwrap_or(c(1));
            one(tt(vec![n, last], g.dtype))
        }
    }
}
