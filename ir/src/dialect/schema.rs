//! Torch-style op signatures (`(Tensor self, Scalar other, *, Scalar alpha=1) -> Tensor`).
//!
//! Every op of every Ember dialect is declared with one such string, so the importer, the verifier
//! and the passes read operands and attributes by the names torch users know from the docs.
//! Tensor parameters become operands; everything else becomes an attribute of the same name.

use crate::attr::Attr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tensor,
    TensorList,
    /// `Tensor?[]`: a list whose entries may be None (advanced indexing).
    OptTensorList,
    Int,
    SymInt,
    Ints,
    SymInts,
    Float,
    Floats,
    Bool,
    Bools,
    Strs,
    Scalar,
    ScalarType,
    Str,
    /// `str[]`: an array of strings (`rules = ["a", "b"]` on fusion groups).
    Layout,
    Device,
    MemoryFormat,
    Generator,
}

impl Kind {
    pub fn is_tensor(self) -> bool {
        matches!(self, Kind::Tensor | Kind::TensorList | Kind::OptTensorList)
    }
    /// Arguments that say where or how a tensor is stored, not what it holds; the importer drops them.
    pub fn is_placement(self) -> bool {
        matches!(self, Kind::Layout | Kind::Device | Kind::Generator)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: Kind,
    pub optional: bool,
    pub default: Option<Attr>,
    /// `None` as default: absent unless given.
    pub default_none: bool,
    pub kw_only: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    Tensor,
    TensorList,
    SymInt,
    Scalar,
    Bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub params: Vec<Param>,
    pub rets: Vec<Ret>,
}

impl Signature {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
    pub fn tensor_params(&self) -> impl Iterator<Item = &Param> {
        self.params.iter().filter(|p| p.kind.is_tensor())
    }
    /// Ops with several tensor parameters, some optional or variadic, carry MLIR's
    /// `operandSegmentSizes`; with one tensor parameter the operand count says it all.
    pub fn has_segments(&self) -> bool {
        self.tensor_params().count() > 1 && self.tensor_params().any(|p| p.optional || p.kind != Kind::Tensor)
    }
}

/// c10's ScalarType numbering, used by defaults inside schema strings (`dtype=4` is int64).
pub fn c10_dtype(n: i64) -> Option<crate::types::DType> {
    use crate::types::DType::*;
    Some(match n {
        0 => U8,
        1 => I8,
        2 => I16,
        3 => I32,
        4 => I64,
        5 => F16,
        6 => F32,
        7 => F64,
        11 => Bool,
        15 => BF16,
        23 => F8E5M2,
        24 => F8E4M3FN,
        27 => U16,
        28 => U32,
        29 => U64,
        _ => return None,
    })
}

pub fn parse_signature(s: &str) -> Result<Signature, String> {
    let s = s.trim();
    let close = matching_paren(s).ok_or("signature must be `(params) -> rets`")?;
    let params_s = &s[1..close];
    let rest = s[close + 1..].trim();
    let rets_s = rest.strip_prefix("->").ok_or("missing `->`")?.trim();
    let mut params = Vec::new();
    let mut kw_only = false;
    for p in split_top(params_s) {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        if p == "*" {
            kw_only = true;
            continue;
        }
        let (decl, default) = match p.find('=') {
            Some(i) => (p[..i].trim(), Some(p[i + 1..].trim())),
            None => (p, None),
        };
        let sp = decl.rfind(' ').ok_or_else(|| format!("parameter `{p}` needs a type and a name"))?;
        let (ty, name) = (decl[..sp].trim(), decl[sp + 1..].trim());
        let (kind, optional) = parse_kind(ty)?;
        let default_none = default == Some("None");
        let default = match default {
            Some(d) if d != "None" => {
                Some(parse_default(kind, d).ok_or_else(|| format!("bad default `{d}` for `{name}`"))?)
            }
            _ => None,
        };
        params.push(Param { name: name.to_string(), kind, optional, default, default_none, kw_only });
    }
    let rets_inner = if rets_s.starts_with('(') {
        let c = matching_paren(rets_s).ok_or("unbalanced return list")?;
        &rets_s[1..c]
    } else {
        rets_s
    };
    let mut rets = Vec::new();
    for r in split_top(rets_inner) {
        let r = r.trim();
        if r.is_empty() {
            continue;
        }
        let ty = r.split(' ').next().unwrap_or(r);
        let base = strip_alias(ty);
        rets.push(match base.as_str() {
            "Tensor" => Ret::Tensor,
            "Tensor[]" => Ret::TensorList,
            "SymInt" | "int" => Ret::SymInt,
            "Scalar" | "float" => Ret::Scalar,
            "bool" => Ret::Bool,
            _ => return Err(format!("unsupported return type `{r}`")),
        });
    }
    Ok(Signature { params, rets })
}

fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut st) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[st..i]);
                st = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[st..]);
    out
}

/// `Tensor(a!)` → `Tensor`, `Tensor(a)[]` → `Tensor[]`, `int[2]?` → `int[]?`.
fn strip_alias(ty: &str) -> String {
    let mut out = String::new();
    let mut chars = ty.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '(' {
            for c in chars.by_ref() {
                if c == ')' {
                    break;
                }
            }
        } else if c == '[' {
            out.push('[');
            for c in chars.by_ref() {
                if c == ']' {
                    break;
                }
            }
            out.push(']');
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_kind(ty: &str) -> Result<(Kind, bool), String> {
    let base = strip_alias(ty);
    let (base, optional) = match base.strip_suffix('?') {
        Some(b) => (b.to_string(), true),
        None => (base, false),
    };
    let kind = match base.as_str() {
        "Tensor" => Kind::Tensor,
        "Tensor[]" => Kind::TensorList,
        "Tensor?[]" => Kind::OptTensorList,
        "int" => Kind::Int,
        "SymInt" => Kind::SymInt,
        "int[]" => Kind::Ints,
        "SymInt[]" => Kind::SymInts,
        "float" => Kind::Float,
        "float[]" => Kind::Floats,
        "bool" => Kind::Bool,
        "bool[]" => Kind::Bools,
        "Scalar" => Kind::Scalar,
        "ScalarType" => Kind::ScalarType,
        "str" => Kind::Str,
        "str[]" => Kind::Strs,
        "Layout" => Kind::Layout,
        "Device" => Kind::Device,
        "MemoryFormat" => Kind::MemoryFormat,
        "Generator" => Kind::Generator,
        _ => return Err(format!("unsupported parameter type `{ty}`")),
    };
    Ok((kind, optional))
}

fn parse_default(kind: Kind, d: &str) -> Option<Attr> {
    let int_list = |d: &str| -> Option<Vec<i64>> {
        let inner = d.strip_prefix('[')?.strip_suffix(']')?;
        inner.split(',').filter(|x| !x.trim().is_empty()).map(|x| x.trim().parse().ok()).collect()
    };
    Some(match kind {
        Kind::Bool => Attr::Bool(match d {
            "True" => true,
            "False" => false,
            _ => return None,
        }),
        Kind::Int | Kind::SymInt => Attr::Int(d.parse().ok()?),
        // `int[2] padding=0` means "0 in every position"; kept as given, readers broadcast it.
        Kind::Ints | Kind::SymInts => match int_list(d) {
            Some(v) => Attr::Ints(v),
            None => Attr::Ints(vec![d.parse().ok()?]),
        },
        Kind::Float => Attr::Float(d.parse().ok()?),
        Kind::Scalar => match d.parse::<i64>() {
            Ok(i) => Attr::Int(i),
            Err(_) => Attr::Float(d.parse().ok()?),
        },
        Kind::Str => Attr::Str(d.trim_matches('"').trim_matches('\'').to_string()),
        Kind::ScalarType => Attr::DType(c10_dtype(d.parse().ok()?)?),
        Kind::MemoryFormat => Attr::Str(d.to_string()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_torch_schemas() {
        let s = parse_signature("(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").unwrap();
        assert_eq!(s.params.len(), 3);
        assert!(s.params[2].kw_only);
        assert_eq!(s.params[2].default, Some(Attr::Int(1)));
        let s = parse_signature("(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]").unwrap();
        assert_eq!(s.rets, vec![Ret::TensorList]);
        let s = parse_signature("(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
            .unwrap();
        assert!(s.params[1].optional && s.params[3].default_none);
        let s = parse_signature("(Tensor self, Tensor?[] indices, Tensor values) -> Tensor").unwrap();
        assert!(s.has_segments());
        let s =
            parse_signature("(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)").unwrap();
        assert_eq!(s.rets.len(), 2);
        let s = parse_signature("(SymInt n, *, ScalarType? dtype=4) -> Tensor").unwrap();
        assert_eq!(s.params[1].default, Some(Attr::DType(crate::types::DType::I64)));
    }
}
