//! The `ten` dialect: the small tensor-level op set every target consumes.
//!
//! Semantics follow StableHLO where one exists (explicit broadcasts, `dot_general` dimension
//! numbers, `reduce` over listed dims), so the TPU lowering is one-to-one and the CPU code
//! generator only needs an index function per op. Elementwise ops take operands of one shape;
//! `torch-to-ten` inserts the broadcasts and dtype conversions torch does implicitly.
//!
//! The table is the one list of `ten` ops: besides the signature, rule and doc line of every
//! dialect, each row says what consumers need to know without a list of their own (its
//! `Class`, `Cost`, whether it is a view, its StableHLO form), and `ten_table!` makes a
//! `TenOp` variant of it. Consumers `match` on `TenOp` (or on `Form`, which splits the unary
//! and binary elementwise ops off), so adding a row makes the compiler list every place that
//! must decide what to do with it.

/// On a `ten.gather` from a flattened tensor whose symbolic dim leads: result row r reads only
/// row r of the operand (the tpu target's padded buckets may then gather along it).
pub const ROWS_ALIGNED: &str = "ember.rows_aligned";

/// On a linalg op whose `info` result `_linalg_check_errors` checked: the torch API whose error
/// the target raises at run time when an info is non-zero (torch raises it there too).
pub const CHECK_ERRORS: &str = "ember.check_errors";

use super::infer::Rule::*;
use super::{op, OpDef};

/// What kind of computation an op is, as the optimizer, the planner and the code generators
/// group ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Elementwise math on one operand: one scalar function per element (`UnaryOp`).
    Unary,
    /// Elementwise math on two operands of one shape and dtype (`BinaryOp`).
    Binary,
    /// Other elementwise ops, read at the result's own index: compare, select, convert.
    Elementwise,
    /// Data movement: every result element is an operand element (or a fill value).
    Layout,
    Reduction,
    /// Running reductions along a dim (cumsum, cumprod).
    Scan,
    Contraction,
    /// Elements at computed positions.
    Gather,
    /// Writes at computed positions.
    Scatter,
    Sort,
    /// Sliding windows (`ten.windows`).
    Window,
    /// Computed by a routine of the CPU runtime rather than a generated loop nest: matrix
    /// factorizations and solves over the trailing two dims (on faer), and per-element
    /// recurrences whose trip count is data.
    Routine,
    /// Values computed from indices alone: constants and iotas.
    Free,
}

/// Arithmetic per element, for cost models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cost {
    Simple,
    /// Division and square roots: a few operations.
    Divide,
    /// Exponentials, logarithms, trigonometric and error functions: a polynomial each.
    Transcendental,
}

/// How the StableHLO emitter writes the op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hlo {
    /// `stablehlo.<name>` over the operands, same result type (unary and binary ops).
    Op(&'static str),
    /// Written by the emitter's own case.
    Custom,
}
use Hlo::{Custom, Op};

/// What the table says about one op beyond its `OpDef`.
#[derive(Clone, Copy, Debug)]
pub struct Info {
    pub class: Class,
    pub cost: Cost,
    /// Its value is an index remap of its operand (no arithmetic when inlined).
    pub view: bool,
    pub hlo: Hlo,
}

/// Splits rows into the `UnaryOp`, `BinaryOp` and `OtherOp` enums by class (a tt-muncher:
/// macro_rules cannot compare a row's class with a name any other way).
macro_rules! forms {
    (@go [$($u:ident)*] [$($b:ident)*] [$($o:ident)*]) => {
        /// The ops of class `Unary`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum UnaryOp { $($u),* }
        /// The ops of class `Binary`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum BinaryOp { $($b),* }
        /// Every other op.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum OtherOp { $($o),* }
        impl UnaryOp {
            pub fn ten(self) -> TenOp { match self { $(UnaryOp::$u => TenOp::$u),* } }
        }
        impl BinaryOp {
            pub fn ten(self) -> TenOp { match self { $(BinaryOp::$b => TenOp::$b),* } }
        }
        impl OtherOp {
            pub fn ten(self) -> TenOp { match self { $(OtherOp::$o => TenOp::$o),* } }
        }
    };
    (@go [$($u:ident)*] [$($b:ident)*] [$($o:ident)*] [$v:ident Unary] $($rest:tt)*) => {
        forms!(@go [$($u)* $v] [$($b)*] [$($o)*] $($rest)*);
    };
    (@go [$($u:ident)*] [$($b:ident)*] [$($o:ident)*] [$v:ident Binary] $($rest:tt)*) => {
        forms!(@go [$($u)*] [$($b)* $v] [$($o)*] $($rest)*);
    };
    (@go [$($u:ident)*] [$($b:ident)*] [$($o:ident)*] [$v:ident $c:ident] $($rest:tt)*) => {
        forms!(@go [$($u)*] [$($b)*] [$($o)* $v] $($rest)*);
    };
}

macro_rules! form_of {
    (Unary, $v:ident) => {
        Form::Unary(UnaryOp::$v)
    };
    (Binary, $v:ident) => {
        Form::Binary(BinaryOp::$v)
    };
    ($c:ident, $v:ident) => {
        Form::Other(OtherOp::$v)
    };
}

/// One row per op: variant, IR name, class, cost, view, StableHLO form, then the `OpDef`
/// columns (signature, result type rule, doc line with an example).
macro_rules! ten_table {
    ($($v:ident $name:literal $class:ident $cost:ident $view:literal $hlo:expr, $sig:literal, $rule:ident, $doc:literal;)*) => {
        /// A `ten` op: one variant per table row, in table order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum TenOp { $($v),* }

        /// Sorted by name (a test checks).
        pub static OPS: &[OpDef] = &[$(op($name, $sig, $rule, $doc)),*];

        static INFO: &[Info] = &[$(Info { class: Class::$class, cost: Cost::$cost, view: $view, hlo: $hlo }),*];

        static FORMS: &[Form] = &[$(form_of!($class, $v)),*];

        impl TenOp {
            /// Every op, in table order.
            pub const ALL: &[TenOp] = &[$(TenOp::$v),*];
        }

        forms!(@go [] [] [] $([$v $class])*);
    };
}

/// `TenOp` split by how code generators emit it: scalar functions for unary and binary math,
/// a case of their own for everything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Other(OtherOp),
}

#[rustfmt::skip]
ten_table! {
    Abs        "ten.abs"         Unary       Simple         false Op("abs"),               "(Tensor x) -> Tensor", Elementwise, "|x|. ten.abs([-1.]) = [1.]";
    Add        "ten.add"         Binary      Simple         false Op("add"),               "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs + rhs, same shapes. ten.add([1.], [2.]) = [3.]";
    And        "ten.and"         Binary      Simple         false Op("and"),               "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical AND. ten.and([true], [false]) = [false]";
    Argsort    "ten.argsort"     Sort        Simple         false Custom,                  "(Tensor x, *, int dim, bool descending) -> Tensor", ArgSort, "int64 positions along `dim` that sort each row, stable (ties keep their order), NaN after every number (before it when descending). ten.argsort([3., 1., 2.], 0, false) = [1, 2, 0]";
    Atan2      "ten.atan2"       Binary      Transcendental false Op("atan2"),             "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Four-quadrant arctangent of lhs / rhs (lhs is y, rhs is x), same shapes. ten.atan2([1.], [-1.]) = [2.356]";
    BitcastConvert "ten.bitcast_convert" Elementwise Simple false Custom,              "(Tensor x, *, ScalarType dtype) -> Tensor", SameWithDtype, "The same bits read as `dtype` of the same width (f32 and i32, f64 and i64): sign, exponent and mantissa fields for nextafter and frexp. ten.bitcast_convert([1.], i32) = [1065353216]";
    Broadcast  "ten.broadcast"   Layout      Simple         true  Custom,                  "(Tensor x, *, SymInt[] shape, int[] dims) -> Tensor", BroadcastInDim, "Operand dim i maps to result dim dims[i] (size 1 or equal); other dims repeat. ten.broadcast([1., 2.], shape=[3, 2], dims=[1])";
    Ceil       "ten.ceil"        Unary       Simple         false Op("ceil"),              "(Tensor x) -> Tensor", Elementwise, "Round up. ten.ceil([1.2]) = [2.]";
    Cholesky   "ten.cholesky"    Routine     Simple         false Custom,                  "(Tensor x, *, bool upper) -> (Tensor factor, Tensor info)", Cholesky, "Cholesky factor of each symmetric positive-definite [.., n, n] matrix (L with A = L·Lᵀ, or U = Lᵀ when `upper`; only that triangle of x is read) and int32 info: 0, or the order of the first leading minor that is not positive-definite (LAPACK potrf)";
    Compare    "ten.compare"     Elementwise Simple         false Custom,                  "(Tensor lhs, Tensor rhs, *, str direction) -> Tensor", CompareStrict, "Elementwise EQ/NE/LT/LE/GT/GE, bool result. ten.compare([1.], [2.], \"LT\") = [true]";
    Concat     "ten.concat"      Layout      Simple         false Custom,                  "(Tensor[] inputs, *, int dim) -> Tensor", Cat, "Concatenate along `dim`. ten.concat([1.], [2.], dim=0) = [1., 2.]";
    Constant   "ten.constant"    Free        Simple         false Custom,                  "(*, Scalar value, SymInt[] shape, ScalarType dtype) -> Tensor", Splat, "A tensor of `shape` filled with `value`. ten.constant(0., [2], f32) = [0., 0.]";
    Convert    "ten.convert"     Elementwise Simple         false Custom,                  "(Tensor x, *, ScalarType dtype) -> Tensor", SameWithDtype, "Elementwise dtype conversion (floats to ints truncate). ten.convert([1.7], i64) = [1]";
    Cos        "ten.cos"         Unary       Transcendental false Op("cosine"),            "(Tensor x) -> Tensor", Elementwise, "Cosine. ten.cos([0.]) = [1.]";
    Cumprod    "ten.cumprod"     Scan        Simple         false Custom,                  "(Tensor x, *, int dim) -> Tensor", Scan, "Running (inclusive) product along `dim`, same type (ints wrap like their dtype). ten.cumprod([1, 2, 3], 0) = [1, 2, 6]";
    Cumsum     "ten.cumsum"      Scan        Simple         false Custom,                  "(Tensor x, *, int dim) -> Tensor", Scan, "Running (inclusive) sum along `dim`, same type (ints wrap like their dtype). ten.cumsum([1, 2, 3], 0) = [1, 3, 6]";
    Div        "ten.div"         Binary      Divide         false Op("divide"),            "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs / rhs (integers truncate toward zero). ten.div([1.], [4.]) = [0.25]";
    DotGeneral "ten.dot_general" Contraction Simple         false Custom,                  "(Tensor lhs, Tensor rhs, *, int[] lhs_batch, int[] rhs_batch, int[] lhs_contract, int[] rhs_contract, ScalarType? dtype=None) -> Tensor", DotGeneral, "Batched contraction; result dims: batch, lhs free, rhs free, in the operands' dtype or `dtype` (f32 of f16/bf16 operands: the accumulator, unrounded). mm is lhs_contract=[1], rhs_contract=[0]";
    Eigh       "ten.eigh"        Routine     Simple         false Custom,                  "(Tensor x, *, bool upper) -> (Tensor eigenvalues, Tensor eigenvectors)", Eigh, "Eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric [.., n, n] matrix, reading its lower (or `upper`) triangle";
    Erf        "ten.erf"         Unary       Transcendental false Custom,                  "(Tensor x) -> Tensor", Elementwise, "Gauss error function. ten.erf([0.]) = [0.]";
    Exp        "ten.exp"         Unary       Transcendental false Op("exponential"),       "(Tensor x) -> Tensor", Elementwise, "e^x. ten.exp([0.]) = [1.]";
    Floor      "ten.floor"       Unary       Simple         false Op("floor"),             "(Tensor x) -> Tensor", Elementwise, "Round down. ten.floor([1.8]) = [1.]";
    Gather     "ten.gather"      Gather      Simple         false Custom,                  "(Tensor x, Tensor index, *, int dim) -> Tensor", TakeDim, "Slices of `x` along `dim` picked by each entry of `index` (index_select / embedding): result dims are x[:dim] + index + x[dim+1:]";
    Geqrf      "ten.geqrf"       Routine     Simple         false Custom,                  "(Tensor x) -> (Tensor a, Tensor tau)", Geqrf, "LAPACK geqrf of each [.., m, n] matrix: R on and above the diagonal, the Householder vectors (unit first entry implied) below it, and their scales tau [.., min(m, n)] (H = I - tau·v·vᵀ)";
    HouseholderProduct "ten.householder_product" Routine Simple false Custom,               "(Tensor v, Tensor tau) -> Tensor", HouseholderProduct, "LAPACK orgqr: the first n columns of H₁·H₂·…·H_k for Householder vectors below the diagonal of each [.., m, n] v (n <= m) and scales tau [.., k] (k <= n)";
    Iota       "ten.iota"        Free        Simple         false Custom,                  "(*, SymInt[] shape, int dim, ScalarType dtype) -> Tensor", Iota, "Each element's index along `dim`. ten.iota([3], 0, i64) = [0, 1, 2]";
    Log        "ten.log"         Unary       Transcendental false Op("log"),               "(Tensor x) -> Tensor", Elementwise, "Natural log. ten.log([1.]) = [0.]";
    Log1p      "ten.log1p"       Unary       Transcendental false Op("log_plus_one"),      "(Tensor x) -> Tensor", Elementwise, "log(1 + x). ten.log1p([0.]) = [0.]";
    Lu         "ten.lu"          Routine     Simple         false Custom,                  "(Tensor x) -> (Tensor lu, Tensor pivots, Tensor info)", Lu, "LU with partial pivoting of each [.., m, n] matrix as LAPACK getrf: L (unit, below the diagonal) and U packed, int32 1-based row interchanges [.., min(m, n)], int32 info (0 or the first exactly zero pivot, 1-based)";
    LuSolve    "ten.lu_solve"    Routine     Simple         false Custom,                  "(Tensor lu, Tensor pivots, Tensor b, *, bool adjoint) -> Tensor", LuSolve, "Solves A·x = b (Aᵀ·x = b when `adjoint`) for each [.., n, k] b from `ten.lu`'s factors of A";
    Max        "ten.max"         Binary      Simple         false Op("maximum"),           "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Elementwise max, NaN-propagating. ten.max([1.], [2.]) = [2.]";
    Min        "ten.min"         Binary      Simple         false Op("minimum"),           "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Elementwise min, NaN-propagating. ten.min([1.], [2.]) = [1.]";
    Mul        "ten.mul"         Binary      Simple         false Op("multiply"),          "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs * rhs. ten.mul([2.], [3.]) = [6.]";
    Neg        "ten.neg"         Unary       Simple         false Op("negate"),            "(Tensor x) -> Tensor", Elementwise, "-x. ten.neg([1.]) = [-1.]";
    Not        "ten.not"         Unary       Simple         false Op("not"),               "(Tensor x) -> Tensor", Elementwise, "Bitwise/logical NOT. ten.not([true]) = [false]";
    Or         "ten.or"          Binary      Simple         false Op("or"),                "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical OR. ten.or([true], [false]) = [true]";
    Pad        "ten.pad"         Layout      Simple         true  Custom,                  "(Tensor x, *, SymInt[] low, SymInt[] high, Scalar value) -> Tensor", PadEdges, "Add `low[i]` elements before and `high[i]` after dim i, filled with `value` (negative amounts crop). ten.pad([1., 2.], [1], [0], 0.) = [0., 1., 2.]";
    Pow        "ten.pow"         Binary      Transcendental false Op("power"),             "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs ^ rhs. ten.pow([2.], [3.]) = [8.]";
    Qr         "ten.qr"          Routine     Simple         false Custom,                  "(Tensor x, *, bool complete) -> (Tensor q, Tensor r)", Qr, "Householder QR of each [.., m, n] matrix with LAPACK's signs (geqrf, orgqr): Q [.., m, k] and R [.., k, n], k = min(m, n), or Q [.., m, m] and R [.., m, n] when `complete`";
    Reduce     "ten.reduce"      Reduction   Simple         false Custom,                  "(Tensor x, *, str kind, int[] dims) -> Tensor", ReduceDims, "Reduce `dims` away with kind sum/max/min/prod/or/and, or argmax/argmin (int64 row-major index within `dims` of the first extreme; NaN is the extreme). ten.reduce([[1., 2.]], \"sum\", [1]) = [3.]";
    Rem        "ten.rem"         Binary      Divide         false Op("remainder"),         "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "C-style remainder (sign of lhs). ten.rem([-3.], [2.]) = [-1.]";
    Reshape    "ten.reshape"     Layout      Simple         true  Custom,                  "(Tensor x, *, SymInt[] shape) -> Tensor", Reshape, "Same elements in row-major order, new shape. ten.reshape(x[6], [2, 3])";
    Reverse    "ten.reverse"     Layout      Simple         true  Custom,                  "(Tensor x, *, int[] dims) -> Tensor", Elementwise, "Reverse the order along `dims`. ten.reverse([1., 2.], [0]) = [2., 1.]";
    Round      "ten.round"       Unary       Simple         false Op("round_nearest_even"), "(Tensor x) -> Tensor", Elementwise, "Round half to even. ten.round([2.5]) = [2.]";
    Rsqrt      "ten.rsqrt"       Unary       Divide         false Op("rsqrt"),             "(Tensor x) -> Tensor", Elementwise, "1/sqrt(x). ten.rsqrt([4.]) = [0.5]";
    Scatter    "ten.scatter"     Scatter     Simple         false Custom,                  "(Tensor x, Tensor index, Tensor updates, *, str kind) -> Tensor", ScatterFlat, "Copy of the 1-D `x` with each updates[s] combined into element index[s], in row-major order of s: kind set (which of several writes to one element wins is unspecified, as in torch), sum, prod, max or min (NaN-propagating); out-of-range indices are skipped. ten.scatter([0., 0.], [1, 1], [2., 3.], \"sum\") = [0., 5.]";
    Select     "ten.select"      Elementwise Simple         false Custom,                  "(Tensor pred, Tensor on_true, Tensor on_false) -> Tensor", SelectStrict, "pred ? on_true : on_false, same shapes. ten.select([true], [1.], [2.]) = [1.]";
    Sigmoid    "ten.sigmoid"     Unary       Transcendental false Op("logistic"),          "(Tensor x) -> Tensor", Elementwise, "1/(1+e^-x). ten.sigmoid([0.]) = [0.5]";
    Sign       "ten.sign"        Unary       Simple         false Op("sign"),              "(Tensor x) -> Tensor", Elementwise, "-1, 0 or 1. ten.sign([-2.]) = [-1.]";
    Sin        "ten.sin"         Unary       Transcendental false Op("sine"),              "(Tensor x) -> Tensor", Elementwise, "Sine. ten.sin([0.]) = [0.]";
    Slice      "ten.slice"       Layout      Simple         true  Custom,                  "(Tensor x, *, SymInt[] start, SymInt[] shape, int[] step) -> Tensor", SliceStrided, "Elements start + i*step per dim, `shape` of them. ten.slice([0, 1, 2, 3], [1], [2], [2]) = [1, 3]";
    Special    "ten.special"     Routine     Transcendental false Custom,                  "(Tensor x, Tensor y, *, str kind) -> Tensor", Elementwise, "The special function `kind` of two operands of the result's shape and dtype, as torch's kernel computes it, where its loop runs a number of steps that is data: the orthogonal polynomials chebyshev_t/u/v/w, shifted_chebyshev_t/u/v/w, hermite_h/he, laguerre_l and legendre_p of x and degree trunc(y) (0 for y < 0), and igamma/igammac, the regularized lower/upper incomplete gamma functions P(x, y)/Q(x, y) (x the shape a, y the limit of integration). ten.special([0.5], [2.], \"chebyshev_t\") = [-0.5]; ten.special([1.], [1.], \"igamma\") = [0.6321]";
    Sqrt       "ten.sqrt"        Unary       Divide         false Op("sqrt"),              "(Tensor x) -> Tensor", Elementwise, "Square root. ten.sqrt([4.]) = [2.]";
    Sub        "ten.sub"         Binary      Simple         false Op("subtract"),          "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "lhs - rhs. ten.sub([3.], [1.]) = [2.]";
    Svd        "ten.svd"         Routine     Simple         false Custom,                  "(Tensor x, *, bool full_matrices) -> (Tensor u, Tensor s, Tensor vh)", Svd, "Singular value decomposition x = U·diag(S)·Vh of each [.., m, n] matrix, S descending; U [.., m, k], Vh [.., k, n] (k = min(m, n)), square when `full_matrices`";
    Tan        "ten.tan"         Unary       Transcendental false Op("tan"),               "(Tensor x) -> Tensor", Elementwise, "Tangent. ten.tan([0.]) = [0.]";
    Tanh       "ten.tanh"        Unary       Transcendental false Op("tanh"),              "(Tensor x) -> Tensor", Elementwise, "Hyperbolic tangent. ten.tanh([0.]) = [0.]";
    Transpose  "ten.transpose"   Layout      Simple         true  Custom,                  "(Tensor x, *, int[] dims) -> Tensor", Permute, "Result dim i is operand dim dims[i]. ten.transpose(x[2, 3], [1, 0]) has shape [3, 2]";
    TriangularSolve "ten.triangular_solve" Routine Simple    false Custom,                  "(Tensor a, Tensor b, *, bool upper, bool unitriangular) -> Tensor", TriangularSolve, "Solves a·x = b for each [.., n, n] triangular a (lower, or `upper`; the other triangle is not read; a diagonal of ones when `unitriangular`) and [.., n, k] b";
    Trunc      "ten.trunc"       Unary       Simple         false Custom,                  "(Tensor x) -> Tensor", Elementwise, "Round toward zero. ten.trunc([-1.7]) = [-1.]";
    Windows    "ten.windows"     Window      Simple         true  Custom,                  "(Tensor x, *, int[] kernel, int[] stride, int[] dilation) -> Tensor", Windows, "Sliding windows over the trailing len(kernel) dims: [.., S_i] -> [.., K_i, O_i] with O_i = (S_i - d_i*(K_i-1) - 1)/s_i + 1 and result[.., k_i, o_i] = x[.., o_i*s_i + k_i*d_i]. ten.windows([1., 2., 3.], [2], [1], [1]) = [[1., 2.], [2., 3.]]";
    Xor        "ten.xor"         Binary      Simple         false Op("xor"),               "(Tensor lhs, Tensor rhs) -> Tensor", Elementwise, "Bitwise/logical XOR. ten.xor([true], [true]) = [false]";
}

impl TenOp {
    /// The op named `name` (`ten.add`), if it is a `ten` op.
    pub fn from_name(name: &str) -> Option<TenOp> {
        OPS.binary_search_by(|d| d.name.cmp(name)).ok().map(|i| TenOp::ALL[i])
    }
    /// The full IR name, `ten.add`.
    pub fn name(self) -> &'static str {
        OPS[self as usize].name
    }
    /// The name without the dialect prefix, `add`.
    pub fn short(self) -> &'static str {
        &self.name()["ten.".len()..]
    }
    pub fn def(self) -> &'static OpDef {
        &OPS[self as usize]
    }
    pub fn info(self) -> &'static Info {
        &INFO[self as usize]
    }
    pub fn class(self) -> Class {
        self.info().class
    }
    pub fn cost(self) -> Cost {
        self.info().cost
    }
    pub fn is_view(self) -> bool {
        self.info().view
    }
    pub fn hlo(self) -> Hlo {
        self.info().hlo
    }
    pub fn form(self) -> Form {
        FORMS[self as usize]
    }
    /// Read at the result's own index, operands of the result's shape.
    pub fn is_elementwise(self) -> bool {
        matches!(self.class(), Class::Unary | Class::Binary | Class::Elementwise)
    }
}

impl std::fmt::Display for TenOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enum_follows_table() {
        for (i, &t) in TenOp::ALL.iter().enumerate() {
            assert_eq!(t as usize, i);
            assert_eq!(TenOp::from_name(t.name()), Some(t));
            let form_class = match t.form() {
                Form::Unary(u) => (u.ten() == t).then_some(Class::Unary),
                Form::Binary(b) => (b.ten() == t).then_some(Class::Binary),
                Form::Other(o) => (o.ten() == t).then_some(t.class()),
            };
            assert_eq!(form_class, Some(t.class()), "{t}");
            if matches!(t.class(), Class::Unary | Class::Binary) {
                assert_eq!(t.def().rule, Elementwise, "{t}");
            }
        }
        assert_eq!(TenOp::from_name("ten.nope"), None);
    }
}
