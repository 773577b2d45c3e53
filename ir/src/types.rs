//! Element types, tensor types with symbolic dims, and the other value types of the IR.

use crate::sym::SymExpr;
use std::fmt;

/// Element types of every dtype core ATen uses. Printed as MLIR builtin types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    Bool,
    U8,
    U16,
    U32,
    U64,
    I8,
    I16,
    I32,
    I64,
    F8E4M3FN,
    F8E5M2,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F8E4M3FN,
        DType::F8E5M2,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    pub fn mlir_name(self) -> &'static str {
        match self {
            DType::Bool => "i1",
            DType::U8 => "ui8",
            DType::U16 => "ui16",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F8E4M3FN => "f8E4M3FN",
            DType::F8E5M2 => "f8E5M2",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    pub fn from_mlir_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.mlir_name() == s)
    }

    /// torch's name, as users see it in messages (`torch.float32`).
    pub fn torch_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F8E4M3FN => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    pub fn byte_size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 | DType::F8E4M3FN | DType::F8E5M2 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F8E4M3FN | DType::F8E5M2 | DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != DType::Bool
    }

    /// torch's type promotion category: bool < integer < floating.
    fn category(self) -> u8 {
        if self == DType::Bool {
            0
        } else if self.is_float() {
            2
        } else {
            1
        }
    }

    /// torch.promote_types for the dtypes Ember models.
    pub fn promote(a: DType, b: DType) -> DType {
        if a == b {
            return a;
        }
        let (ca, cb) = (a.category(), b.category());
        if ca != cb {
            return if ca > cb { a } else { b };
        }
        if ca == 2 {
            // f16 + bf16 -> f32, as in torch.
            if matches!((a, b), (DType::F16, DType::BF16) | (DType::BF16, DType::F16)) {
                return DType::F32;
            }
            return if a.byte_size() >= b.byte_size() { a } else { b };
        }
        let signed = |d: DType| matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64);
        match (signed(a), signed(b)) {
            (true, true) | (false, false) => {
                if a.byte_size() >= b.byte_size() {
                    a
                } else {
                    b
                }
            }
            // Mixed signedness widens to the next signed type that holds both, as in torch.
            _ => {
                let (s, u) = if signed(a) { (a, b) } else { (b, a) };
                if s.byte_size() > u.byte_size() {
                    s
                } else {
                    match u.byte_size() {
                        1 => DType::I16,
                        2 => DType::I32,
                        _ => DType::I64,
                    }
                }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

/// A dim is a symbolic expression; static dims are `SymExpr::Const`.
pub type Dim = SymExpr;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dims: Vec<Dim>,
    pub dtype: DType,
}

impl TensorType {
    pub fn new(dims: Vec<Dim>, dtype: DType) -> Self {
        TensorType { dims, dtype }
    }

    pub fn of(shape: &[i64], dtype: DType) -> Self {
        TensorType { dims: shape.iter().map(|&d| SymExpr::Const(d)).collect(), dtype }
    }

    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    pub fn static_shape(&self) -> Option<Vec<i64>> {
        self.dims.iter().map(|d| d.as_const()).collect()
    }

    pub fn is_static(&self) -> bool {
        self.dims.iter().all(|d| d.as_const().is_some())
    }

    pub fn with_dtype(&self, dtype: DType) -> Self {
        TensorType { dims: self.dims.clone(), dtype }
    }

    /// Dims as text (`"4"`, `"2*s0"`), the form manifests carry.
    pub fn dim_strings(&self) -> Vec<String> {
        self.dims.iter().map(|d| d.to_string()).collect()
    }

    /// Element count as an expression.
    pub fn numel(&self) -> SymExpr {
        self.dims.iter().cloned().fold(SymExpr::Const(1), SymExpr::times)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Tensor(TensorType),
    /// A scalar of an element type (symbolic ints are `i64`).
    Scalar(DType),
    Index,
    Function(Vec<Type>, Vec<Type>),
}

impl Type {
    pub fn tensor(&self) -> Option<&TensorType> {
        match self {
            Type::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

impl From<TensorType> for Type {
    fn from(t: TensorType) -> Self {
        Type::Tensor(t)
    }
}

impl fmt::Display for TensorType {
    /// `tensor<2x?xf32, #ember.dims<[2, s0]>>`: MLIR's dims carry `?` for every symbolic dim, and
    /// the encoding keeps the expressions so the text round-trips.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.dims {
            match d.as_const() {
                Some(c) => write!(f, "{c}x")?,
                None => f.write_str("?x")?,
            }
        }
        write!(f, "{}", self.dtype)?;
        if !self.is_static() {
            f.write_str(", #ember.dims<[")?;
            for (i, d) in self.dims.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                // Quoted: sympy spellings (`s0//2`) are not MLIR tokens.
                match d.as_const() {
                    Some(c) => write!(f, "{c}")?,
                    None => write!(f, "\"{d}\"")?,
                }
            }
            f.write_str("]>")?;
        }
        f.write_str(">")
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Tensor(t) => write!(f, "{t}"),
            Type::Scalar(d) => write!(f, "{d}"),
            Type::Index => f.write_str("index"),
            Type::Function(ins, outs) => {
                f.write_str("(")?;
                for (i, t) in ins.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(") -> ")?;
                if outs.len() == 1 && !matches!(outs[0], Type::Function(..)) {
                    write!(f, "{}", outs[0])
                } else {
                    f.write_str("(")?;
                    for (i, t) in outs.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        write!(f, "{t}")?;
                    }
                    f.write_str(")")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_matches_torch() {
        assert_eq!(DType::promote(DType::I64, DType::F32), DType::F32);
        assert_eq!(DType::promote(DType::Bool, DType::I32), DType::I32);
        assert_eq!(DType::promote(DType::U8, DType::I8), DType::I16);
        assert_eq!(DType::promote(DType::F16, DType::BF16), DType::F32);
        assert_eq!(DType::promote(DType::F16, DType::F64), DType::F64);
    }
}
