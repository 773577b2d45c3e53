//! Result type rules: shape and dtype inference for every op in the dialect tables.
//!
//! Rules follow torch's semantics (broadcasting, type promotion with wrapped scalars, reduction
//! dtypes). The importer takes result types from torch.export's metadata and the verifier checks them
//! against these rules, so a rule that disagrees with torch fails loudly on real models.

use super::schema::Signature;
use crate::attr::Attr;
use crate::module::Attrs;
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};

mod contract;
mod create;
mod elementwise;
mod index;
mod linalg;
mod reduce;
mod shape;
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
    /// (values, int64 indices) of an adaptive max pool.
    AdaptiveMaxPool,
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
    /// `ten.cholesky`: (the factor, int32 info per matrix).
    Cholesky,
    /// `ten.eigh`: (eigenvalues [.., n], eigenvectors [.., n, n]).
    Eigh,
    /// `ten.lu`: (packed LU [.., m, n], int32 pivots [.., min(m, n)], int32 info [..]).
    Lu,
    /// `ten.lu_solve`: the type of `b`.
    LuSolve,
    /// `ten.triangular_solve`: the type of `b`.
    TriangularSolve,
    /// `ten.qr`: (Q, R), reduced or `complete`.
    Qr,
    /// `ten.svd`: (U, S, Vh), thin or `full_matrices`.
    Svd,
    /// `ten.geqrf`: (the operand's type, tau [.., min(m, n)]).
    Geqrf,
    /// `ten.householder_product`: the type of `v`.
    HouseholderProduct,
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
        fa.into_iter().fold(c(ka / kb), SymExpr::times)
    } else {
        SymExpr::floordiv(a.clone(), b.clone())
    }
}

fn ceil_div(a: SymExpr, b: i64) -> SymExpr {
    SymExpr::floordiv(SymExpr::plus(a, c(b - 1)), c(b))
}

fn pool_out(inp: &SymExpr, k: i64, s: i64, p: i64, d: i64, ceil: bool) -> SymExpr {
    // floor/ceil((in + 2p - d(k-1) - 1) / s) + 1, as torch's pooling_output_shape.
    let num = SymExpr::plus(inp.clone(), c(2 * p - d * (k - 1) - 1));
    let mut out =
        SymExpr::plus(if ceil { ceil_div(num.clone(), s) } else { SymExpr::floordiv(num.clone(), c(s)) }, c(1));
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
    match rule {
        Trust => err("no rule"),
        Same | LikeSelf | Softmax | UnaryFloat | UnaryBool | Binary | BinaryFloat | Compare | Where | SameWithDtype
        | Dropout | Elementwise | CompareStrict | SelectStrict | BroadcastInDim | Splat | Iota | SymInt | Scalar => {
            elementwise::infer(rule, cx)
        }
        View | Expand | Permute | Transpose | Unsqueeze | Squeeze | Select | Slice | SplitWithSizes | Cat | Stack
        | Repeat | ConstantPad | Pad | Diagonal | AsStrided | Reshape | SliceStrided | PadEdges => {
            shape::infer(rule, cx)
        }
        Reduce | ReduceSum | ReduceBool | ReduceArg | VarMean | ReduceValuesIndices | Cumsum | LayerNorm
        | GroupNorm | BatchNorm | Sort | TopK | ReduceDims | Scan | ArgSort | LayerNormBackward => {
            reduce::infer(rule, cx)
        }
        Matmul | Convolution | MaxPool | AvgPool | AdaptiveAvgPool | AdaptiveMaxPool | Upsample | DotGeneral
        | Windows | ConvolutionBackward => contract::infer(rule, cx),
        IndexSelect | Gather | MaskedLike | Embedding | Index | TakeDim | ScatterFlat | EmbeddingBackward => {
            index::infer(rule, cx)
        }
        Full | Empty | Randperm | Arange | ScalarTensor => create::infer(rule, cx),
        Cholesky | Eigh | Lu | LuSolve | TriangularSolve | Qr | Svd | Geqrf | HouseholderProduct => {
            linalg::infer(rule, cx)
        }
    }
}
