//! Attributes and source locations.

use crate::sym::SymExpr;
use crate::types::{DType, Type};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    Unit,
    Bool(bool),
    /// `3 : i64`
    Int(i64),
    /// `1.0 : f64`
    Float(f64),
    Str(String),
    /// An element type used as a value (`dtype = f32`).
    DType(DType),
    Type(Type),
    /// `array<i64: 1, 2>`
    Ints(Vec<i64>),
    /// `array<f64: 1.0, 2.0>`
    Floats(Vec<f64>),
    Array(Vec<Attr>),
    Dict(BTreeMap<String, Attr>),
    /// A size list with at least one symbolic entry: `#ember.dims<["s0", 3]>`.
    /// Static lists are `Ints`; `as_dims` reads both.
    Dims(Vec<SymExpr>),
    /// `@name`
    SymRef(String),
}

impl Attr {
    /// Builds the canonical form of a size list: `Ints` when static, `Dims` otherwise.
    pub fn dims(d: Vec<SymExpr>) -> Attr {
        match d.iter().map(|e| e.as_const()).collect::<Option<Vec<_>>>() {
            Some(v) => Attr::Ints(v),
            None => Attr::Dims(d),
        }
    }

    /// Canonical form of one symbolic integer: `Int` when static.
    pub fn sym(e: SymExpr) -> Attr {
        match e.as_const() {
            Some(c) => Attr::Int(c),
            None => Attr::Dims(vec![e]),
        }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Attr::Int(i) => Some(*i),
            Attr::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Attr::Float(f) => Some(*f),
            Attr::Int(i) => Some(*i as f64),
            Attr::Bool(b) => Some(*b as i64 as f64),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Attr::Bool(b) => Some(*b),
            _ => None,
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Attr::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_ints(&self) -> Option<&[i64]> {
        match self {
            Attr::Ints(v) => Some(v),
            _ => None,
        }
    }
    pub fn as_dtype(&self) -> Option<DType> {
        match self {
            Attr::DType(d) => Some(*d),
            _ => None,
        }
    }
    /// A size list (static or symbolic), or a single symbolic int as a one-element list.
    pub fn as_dims(&self) -> Option<Vec<SymExpr>> {
        match self {
            Attr::Ints(v) => Some(v.iter().map(|&i| SymExpr::Const(i)).collect()),
            Attr::Dims(v) => Some(v.clone()),
            _ => None,
        }
    }
    /// A single symbolic int (`Int` or one-element `Dims`).
    pub fn as_sym(&self) -> Option<SymExpr> {
        match self {
            Attr::Int(i) => Some(SymExpr::Const(*i)),
            Attr::Dims(v) if v.len() == 1 => Some(v[0].clone()),
            _ => None,
        }
    }
}

/// Formats an f64 as an MLIR float literal: always with a `.`, hex for non-finite values.
pub fn fmt_f64(x: f64) -> String {
    if !x.is_finite() {
        return format!("0x{:016X}", x.to_bits());
    }
    let s = format!("{x:?}");
    if s.contains('.') {
        return s;
    }
    match s.find('e') {
        Some(i) => format!("{}.0{}", &s[..i], &s[i..]),
        None => format!("{s}.0"),
    }
}

pub fn fmt_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Attribute keys print bare when they are MLIR bare identifiers, quoted otherwise.
pub fn fmt_key(k: &str) -> String {
    let bare = !k.is_empty()
        && k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '$');
    if bare {
        k.to_string()
    } else {
        fmt_str(k)
    }
}

impl fmt::Display for Attr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attr::Unit => f.write_str("unit"),
            Attr::Bool(b) => write!(f, "{b}"),
            Attr::Int(i) => write!(f, "{i} : i64"),
            Attr::Float(x) => write!(f, "{} : f64", fmt_f64(*x)),
            Attr::Str(s) => f.write_str(&fmt_str(s)),
            Attr::DType(d) => write!(f, "{d}"),
            Attr::Type(t) => write!(f, "{t}"),
            Attr::Ints(v) => {
                f.write_str("array<i64")?;
                for (i, x) in v.iter().enumerate() {
                    write!(f, "{}{x}", if i == 0 { ": " } else { ", " })?;
                }
                f.write_str(">")
            }
            Attr::Floats(v) => {
                f.write_str("array<f64")?;
                for (i, x) in v.iter().enumerate() {
                    write!(f, "{}{}", if i == 0 { ": " } else { ", " }, fmt_f64(*x))?;
                }
                f.write_str(">")
            }
            Attr::Array(v) => {
                f.write_str("[")?;
                for (i, x) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{x}")?;
                }
                f.write_str("]")
            }
            Attr::Dict(m) => fmt_dict(m, f),
            Attr::Dims(v) => {
                f.write_str("#ember.dims<[")?;
                for (i, d) in v.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match d.as_const() {
                        Some(c) => write!(f, "{c}")?,
                        None => write!(f, "\"{d}\"")?,
                    }
                }
                f.write_str("]>")
            }
            Attr::SymRef(s) => write!(f, "@{}", fmt_key(s)),
        }
    }
}

pub fn fmt_dict(m: &BTreeMap<String, Attr>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("{")?;
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        match v {
            Attr::Unit => write!(f, "{}", fmt_key(k))?,
            _ => write!(f, "{} = {v}", fmt_key(k))?,
        }
    }
    f.write_str("}")
}

/// Where an op came from. `Named` wraps a location with the torch node name, so errors can say both.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Loc {
    #[default]
    Unknown,
    File {
        file: String,
        line: u32,
        col: u32,
    },
    Named(String, Box<Loc>),
    Fused(Vec<Loc>),
}

impl Loc {
    pub fn named(name: &str, inner: Loc) -> Loc {
        Loc::Named(name.to_string(), Box::new(inner))
    }

    /// The torch node name, if any.
    pub fn name(&self) -> Option<&str> {
        match self {
            Loc::Named(n, _) => Some(n),
            _ => None,
        }
    }

    /// The first `file:line` this location points at, for messages.
    pub fn source_line(&self) -> Option<String> {
        match self {
            Loc::Unknown => None,
            Loc::File { file, line, .. } => Some(format!("{file}:{line}")),
            Loc::Named(_, l) => l.source_line(),
            Loc::Fused(v) => v.iter().find_map(|l| l.source_line()),
        }
    }

    /// "node `linear` (model.py:12)" style description for error messages.
    pub fn describe(&self) -> String {
        match (self.name(), self.source_line()) {
            (Some(n), Some(s)) => format!("node `{n}` (from {s})"),
            (Some(n), None) => format!("node `{n}`"),
            (None, Some(s)) => format!("from {s}"),
            (None, None) => String::new(),
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn inner(l: &Loc, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match l {
                Loc::Unknown => f.write_str("unknown"),
                Loc::File { file, line, col } => write!(f, "{}:{line}:{col}", fmt_str(file)),
                Loc::Named(n, l) => {
                    write!(f, "{}", fmt_str(n))?;
                    if **l != Loc::Unknown {
                        f.write_str("(")?;
                        inner(l, f)?;
                        f.write_str(")")?;
                    }
                    Ok(())
                }
                Loc::Fused(v) => {
                    f.write_str("fused[")?;
                    for (i, l) in v.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        inner(l, f)?;
                    }
                    f.write_str("]")
                }
            }
        }
        f.write_str("loc(")?;
        inner(self, f)?;
        f.write_str(")")
    }
}
