//! The `ten` dialect: the small tensor-level op set every target consumes.
//!
//! Semantics follow StableHLO where one exists (explicit broadcasts, `dot_general` dimension
//! numbers, `reduce` over listed dims), so the TPU lowering is one-to-one and the CPU code
//! generator only needs an index function per op. Elementwise ops take operands of one shape;
//! `torch-to-ten` inserts the broadcasts and dtype conversions torch does implicitly.

use super::infer::Rule::*;
use super::{op, OpDef};

/// Sorted by name (a test checks).
#[rustfmt::skip]
pub static OPS: &[OpDef] = &[
    op("ten.abs",       "(Tensor x) -> Tensor", Elementwise, "|x|. ten.abs([-1.]) = [1.]"),
    op("ten.add",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs + rhs, same shapes. ten.add([1.], [2.]) = [3.]"),
    op("ten.and",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical AND. ten.and([true], [false]) = [false]"),
    op("ten.argsort",   "(Tensor x, *, int dim, bool descending) -> Tensor", ArgSort, "int64 positions along `dim` that sort each row, stable (ties keep their order), NaN after every number (before it when descending). ten.argsort([3., 1., 2.], 0, false) = [1, 2, 0]"),
    op("ten.atan2",     "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Four-quadrant arctangent of lhs / rhs (lhs is y, rhs is x), same shapes. ten.atan2([1.], [-1.]) = [2.356]"),
    op("ten.broadcast", "(Tensor x, *, SymInt[] shape, int[] dims) -> Tensor", BroadcastInDim, "Operand dim i maps to result dim dims[i] (size 1 or equal); other dims repeat. ten.broadcast([1., 2.], shape=[3, 2], dims=[1])"),
    op("ten.ceil",      "(Tensor x) -> Tensor", Elementwise, "Round up. ten.ceil([1.2]) = [2.]"),
    op("ten.compare",   "(Tensor lhs, Tensor rhs, *, str direction) -> Tensor", CompareStrict, "Elementwise EQ/NE/LT/LE/GT/GE, bool result. ten.compare([1.], [2.], \"LT\") = [true]"),
    op("ten.concat",    "(Tensor[] inputs, *, int dim) -> Tensor", Cat, "Concatenate along `dim`. ten.concat([1.], [2.], dim=0) = [1., 2.]"),
    op("ten.constant",  "(*, Scalar value, SymInt[] shape, ScalarType dtype) -> Tensor", Splat, "A tensor of `shape` filled with `value`. ten.constant(0., [2], f32) = [0., 0.]"),
    op("ten.convert",   "(Tensor x, *, ScalarType dtype) -> Tensor", SameWithDtype, "Elementwise dtype conversion (floats to ints truncate). ten.convert([1.7], i64) = [1]"),
    op("ten.cos",       "(Tensor x) -> Tensor", Elementwise, "Cosine. ten.cos([0.]) = [1.]"),
    op("ten.cumprod",   "(Tensor x, *, int dim) -> Tensor", Scan, "Running (inclusive) product along `dim`, same type (ints wrap like their dtype). ten.cumprod([1, 2, 3], 0) = [1, 2, 6]"),
    op("ten.cumsum",    "(Tensor x, *, int dim) -> Tensor", Scan, "Running (inclusive) sum along `dim`, same type (ints wrap like their dtype). ten.cumsum([1, 2, 3], 0) = [1, 3, 6]"),
    op("ten.div",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs / rhs (integers truncate toward zero). ten.div([1.], [4.]) = [0.25]"),
    op("ten.dot_general", "(Tensor lhs, Tensor rhs, *, int[] lhs_batch, int[] rhs_batch, int[] lhs_contract, int[] rhs_contract, ScalarType? dtype=None) -> Tensor", DotGeneral, "Batched contraction; result dims: batch, lhs free, rhs free, in the operands' dtype or `dtype` (f32 of f16/bf16 operands: the accumulator, unrounded). mm is lhs_contract=[1], rhs_contract=[0]"),
    op("ten.erf",       "(Tensor x) -> Tensor", Elementwise, "Gauss error function. ten.erf([0.]) = [0.]"),
    op("ten.exp",       "(Tensor x) -> Tensor", Elementwise, "e^x. ten.exp([0.]) = [1.]"),
    op("ten.floor",     "(Tensor x) -> Tensor", Elementwise, "Round down. ten.floor([1.8]) = [1.]"),
    op("ten.gather",    "(Tensor x, Tensor index, *, int dim) -> Tensor", TakeDim, "Slices of `x` along `dim` picked by each entry of `index` (index_select / embedding): result dims are x[:dim] + index + x[dim+1:]"),
    op("ten.iota",      "(*, SymInt[] shape, int dim, ScalarType dtype) -> Tensor", Iota, "Each element's index along `dim`. ten.iota([3], 0, i64) = [0, 1, 2]"),
    op("ten.log",       "(Tensor x) -> Tensor", Elementwise, "Natural log. ten.log([1.]) = [0.]"),
    op("ten.log1p",     "(Tensor x) -> Tensor", Elementwise, "log(1 + x). ten.log1p([0.]) = [0.]"),
    op("ten.max",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Elementwise max, NaN-propagating. ten.max([1.], [2.]) = [2.]"),
    op("ten.min",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Elementwise min, NaN-propagating. ten.min([1.], [2.]) = [1.]"),
    op("ten.mul",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs * rhs. ten.mul([2.], [3.]) = [6.]"),
    op("ten.neg",       "(Tensor x) -> Tensor", Elementwise, "-x. ten.neg([1.]) = [-1.]"),
    op("ten.not",       "(Tensor x) -> Tensor", Elementwise, "Bitwise/logical NOT. ten.not([true]) = [false]"),
    op("ten.or",        "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical OR. ten.or([true], [false]) = [true]"),
    op("ten.pad",       "(Tensor x, *, SymInt[] low, SymInt[] high, Scalar value) -> Tensor", PadEdges, "Add `low[i]` elements before and `high[i]` after dim i, filled with `value` (negative amounts crop). ten.pad([1., 2.], [1], [0], 0.) = [0., 1., 2.]"),
    op("ten.pow",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs ^ rhs. ten.pow([2.], [3.]) = [8.]"),
    op("ten.reduce",    "(Tensor x, *, str kind, int[] dims) -> Tensor", ReduceDims, "Reduce `dims` away with kind sum/max/min/prod/or/and, or argmax/argmin (int64 row-major index within `dims` of the first extreme; NaN is the extreme). ten.reduce([[1., 2.]], \"sum\", [1]) = [3.]"),
    op("ten.rem",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "C-style remainder (sign of lhs). ten.rem([-3.], [2.]) = [-1.]"),
    op("ten.reshape",   "(Tensor x, *, SymInt[] shape) -> Tensor", Reshape, "Same elements in row-major order, new shape. ten.reshape(x[6], [2, 3])"),
    op("ten.reverse",   "(Tensor x, *, int[] dims) -> Tensor", Elementwise, "Reverse the order along `dims`. ten.reverse([1., 2.], [0]) = [2., 1.]"),
    op("ten.round",     "(Tensor x) -> Tensor", Elementwise, "Round half to even. ten.round([2.5]) = [2.]"),
    op("ten.rsqrt",     "(Tensor x) -> Tensor", Elementwise, "1/sqrt(x). ten.rsqrt([4.]) = [0.5]"),
    op("ten.scatter",   "(Tensor x, Tensor index, Tensor updates, *, str kind) -> Tensor", ScatterFlat, "Copy of the 1-D `x` with each updates[s] combined into element index[s], in row-major order of s: kind set (which of several writes to one element wins is unspecified, as in torch), sum, prod, max or min (NaN-propagating); out-of-range indices are skipped. ten.scatter([0., 0.], [1, 1], [2., 3.], \"sum\") = [0., 5.]"),
    op("ten.select",    "(Tensor pred, Tensor on_true, Tensor on_false) -> Tensor", SelectStrict, "pred ? on_true : on_false, same shapes. ten.select([true], [1.], [2.]) = [1.]"),
    op("ten.sigmoid",   "(Tensor x) -> Tensor", Elementwise, "1/(1+e^-x). ten.sigmoid([0.]) = [0.5]"),
    op("ten.sign",      "(Tensor x) -> Tensor", Elementwise, "-1, 0 or 1. ten.sign([-2.]) = [-1.]"),
    op("ten.sin",       "(Tensor x) -> Tensor", Elementwise, "Sine. ten.sin([0.]) = [0.]"),
    op("ten.slice",     "(Tensor x, *, SymInt[] start, SymInt[] shape, int[] step) -> Tensor", SliceStrided, "Elements start + i*step per dim, `shape` of them. ten.slice([0, 1, 2, 3], [1], [2], [2]) = [1, 3]"),
    op("ten.sqrt",      "(Tensor x) -> Tensor", Elementwise, "Square root. ten.sqrt([4.]) = [2.]"),
    op("ten.sub",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs - rhs. ten.sub([3.], [1.]) = [2.]"),
    op("ten.tan",       "(Tensor x) -> Tensor", Elementwise, "Tangent. ten.tan([0.]) = [0.]"),
    op("ten.tanh",      "(Tensor x) -> Tensor", Elementwise, "Hyperbolic tangent. ten.tanh([0.]) = [0.]"),
    op("ten.transpose", "(Tensor x, *, int[] dims) -> Tensor", Permute, "Result dim i is operand dim dims[i]. ten.transpose(x[2, 3], [1, 0]) has shape [3, 2]"),
    op("ten.trunc",     "(Tensor x) -> Tensor", Elementwise, "Round toward zero. ten.trunc([-1.7]) = [-1.]"),
    op("ten.windows",   "(Tensor x, *, int[] kernel, int[] stride, int[] dilation) -> Tensor", Windows, "Sliding windows over the trailing len(kernel) dims: [.., S_i] -> [.., K_i, O_i] with O_i = (S_i - d_i*(K_i-1) - 1)/s_i + 1 and result[.., k_i, o_i] = x[.., o_i*s_i + k_i*d_i]. ten.windows([1., 2., 3.], [2], [1], [1]) = [[1., 2.], [2., 3.]]"),
    op("ten.xor",       "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical XOR. ten.xor([true], [true]) = [false]"),
];
