//! Types, attributes and locations: the value grammar (tensor types with symbolic dims,
//! `#ember.dims`, dense literals, `loc(..)`), which the op structure only refers to.

use super::{P, R};
use crate::attr::{Attr, Loc};
use crate::module::Attrs;
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};

impl<'a> P<'a> {
    // ---- types -----------------------------------------------------------------------------

    pub(super) fn ty(&mut self) -> R<Type> {
        self.nested("types", Self::ty_inner)
    }

    pub(super) fn ty_inner(&mut self) -> R<Type> {
        self.ws();
        if self.at("(") {
            self.expect("(")?;
            let mut ins = Vec::new();
            while !self.eat(")") {
                ins.push(self.ty()?);
                if !self.at(")") {
                    self.expect(",")?;
                }
            }
            self.expect("->")?;
            let outs = if self.at("(") {
                self.expect("(")?;
                let mut outs = Vec::new();
                while !self.eat(")") {
                    outs.push(self.ty()?);
                    if !self.at(")") {
                        self.expect(",")?;
                    }
                }
                outs
            } else {
                vec![self.ty()?]
            };
            return Ok(Type::Function(ins, outs));
        }
        if self.eat("tensor") {
            return self.tensor_body().map(Type::Tensor);
        }
        if self.eat("index") {
            return Ok(Type::Index);
        }
        let st = self.pos;
        let name = self.ident()?;
        match DType::from_mlir_name(&name) {
            Some(d) => Ok(Type::Scalar(d)),
            None => {
                self.pos = st;
                Err(self.err(format!("unknown type `{name}`")))
            }
        }
    }

    pub(super) fn tensor_body(&mut self) -> R<TensorType> {
        self.expect("<")?;
        let mut dims: Vec<Option<i64>> = Vec::new();
        // Dims: `2x?x` then the element type.
        loop {
            self.ws();
            match self.s.get(self.pos) {
                Some(b'?') => {
                    self.pos += 1;
                    dims.push(None);
                }
                Some(c) if c.is_ascii_digit() => {
                    let st = self.pos;
                    while self.s.get(self.pos).is_some_and(|c| c.is_ascii_digit()) {
                        self.pos += 1;
                    }
                    dims.push(Some(self.src[st..self.pos].parse().map_err(|_| self.err("dim out of range"))?));
                }
                _ => break,
            }
            if self.s.get(self.pos) != Some(&b'x') {
                return Err(self.err("expected `x` after a dim"));
            }
            self.pos += 1;
        }
        let et = self.ident()?;
        let dtype = DType::from_mlir_name(&et).ok_or_else(|| self.err(format!("unknown element type `{et}`")))?;
        let dims: Vec<SymExpr> = if self.eat(",") {
            self.expect("#ember.dims")?;
            let exprs = self.dims_body()?;
            if exprs.len() != dims.len() {
                return Err(self.err(format!(
                    "#ember.dims has {} entries for a rank-{} tensor",
                    exprs.len(),
                    dims.len()
                )));
            }
            for (d, e) in dims.iter().zip(&exprs) {
                if let (Some(c), Some(ec)) = (d, e.as_const()) {
                    if *c != ec {
                        return Err(self.err(format!("dim {c} disagrees with #ember.dims entry {ec}")));
                    }
                }
                if d.is_some() != e.as_const().is_some() {
                    return Err(self.err("`?` dims and symbolic #ember.dims entries must line up"));
                }
            }
            exprs
        } else {
            if dims.iter().any(|d| d.is_none()) {
                return Err(self.err("a tensor with `?` dims needs #ember.dims<[...]> naming them"));
            }
            dims.into_iter().map(|d| SymExpr::Const(d.unwrap())).collect()
        };
        self.expect(">")?;
        Ok(TensorType { dims, dtype })
    }

    /// `<["s0", 3]>` after `#ember.dims`.
    pub(super) fn dims_body(&mut self) -> R<Vec<SymExpr>> {
        self.expect("<")?;
        self.expect("[")?;
        let mut out = Vec::new();
        while !self.eat("]") {
            if self.peek() == Some(b'"') {
                let s = self.string()?;
                out.push(SymExpr::parse(&s).map_err(|e| self.err(e.to_string()))?);
            } else {
                out.push(SymExpr::Const(self.int()?));
            }
            if !self.at("]") {
                self.expect(",")?;
            }
        }
        self.expect(">")?;
        Ok(out)
    }

    // ---- attributes ------------------------------------------------------------------------

    pub(super) fn dict(&mut self) -> R<Attrs> {
        self.expect("{")?;
        let mut out = Attrs::new();
        while !self.eat("}") {
            let key = if self.peek() == Some(b'"') { self.string()? } else { self.ident()? };
            let v = if self.eat("=") { self.attr()? } else { Attr::Unit };
            if out.insert(key.clone(), v).is_some() {
                return Err(self.err(format!("duplicate attribute `{key}`")));
            }
            if !self.at("}") {
                self.expect(",")?;
            }
        }
        Ok(out)
    }

    pub(super) fn attr(&mut self) -> R<Attr> {
        self.nested("attributes", Self::attr_inner)
    }

    pub(super) fn attr_inner(&mut self) -> R<Attr> {
        self.ws();
        match self.peek() {
            Some(b'"') => return Ok(Attr::Str(self.string()?)),
            Some(b'[') => {
                self.expect("[")?;
                let mut v = Vec::new();
                while !self.eat("]") {
                    v.push(self.attr()?);
                    if !self.at("]") {
                        self.expect(",")?;
                    }
                }
                return Ok(Attr::Array(v));
            }
            Some(b'{') => return Ok(Attr::Dict(self.dict()?)),
            Some(b'@') => {
                self.pos += 1;
                let n = if self.peek() == Some(b'"') { self.string()? } else { self.ident()? };
                return Ok(Attr::SymRef(n));
            }
            Some(c) if c.is_ascii_digit() || c == b'-' || c == b'+' => {
                let (t, is_float) = self.number()?;
                let ty = if self.eat(":") { Some(self.ty()?) } else { None };
                let is_float = is_float || matches!(ty, Some(Type::Scalar(d)) if d.is_float());
                if is_float {
                    let v = if let Some(h) = t.strip_prefix("0x") {
                        f64::from_bits(u64::from_str_radix(h, 16).map_err(|_| self.err("bad hex float"))?)
                    } else {
                        t.parse::<f64>().map_err(|_| self.err(format!("bad float `{t}`")))?
                    };
                    return Ok(Attr::Float(v));
                }
                return Ok(Attr::Int(t.parse().map_err(|_| self.err(format!("integer `{t}` out of range")))?));
            }
            _ => {}
        }
        if self.eat("true") {
            return Ok(Attr::Bool(true));
        }
        if self.eat("false") {
            return Ok(Attr::Bool(false));
        }
        if self.eat("unit") {
            return Ok(Attr::Unit);
        }
        if self.eat("#ember.dims") {
            return Ok(Attr::Dims(self.dims_body()?));
        }
        if self.eat("array") {
            self.expect("<")?;
            let et = self.ident()?;
            let float = match et.as_str() {
                "i64" | "i32" | "i16" | "i8" | "i1" => false,
                "f64" | "f32" => true,
                _ => return Err(self.err(format!("unsupported array element type `{et}`"))),
            };
            let mut ints = Vec::new();
            let mut floats = Vec::new();
            if self.eat(":") {
                loop {
                    if float {
                        let (t, _) = self.number()?;
                        floats.push(t.parse::<f64>().map_err(|_| self.err(format!("bad float `{t}`")))?);
                    } else {
                        ints.push(self.int()?);
                    }
                    if !self.eat(",") {
                        break;
                    }
                }
            }
            self.expect(">")?;
            return Ok(if float { Attr::Floats(floats) } else { Attr::Ints(ints) });
        }
        let t = self.ty()?;
        Ok(match t {
            Type::Scalar(d) => Attr::DType(d),
            t => Attr::Type(t),
        })
    }

    pub(super) fn loc_inner(&mut self) -> R<Loc> {
        self.nested("locations", Self::loc_body)
    }

    pub(super) fn loc_body(&mut self) -> R<Loc> {
        if self.eat("unknown") {
            return Ok(Loc::Unknown);
        }
        if self.eat("fused") {
            self.expect("[")?;
            let mut v = Vec::new();
            while !self.eat("]") {
                v.push(self.loc_inner()?);
                if !self.at("]") {
                    self.expect(",")?;
                }
            }
            return Ok(Loc::Fused(v));
        }
        let s = self.string()?;
        if self.eat(":") {
            let line = self.int()? as u32;
            self.expect(":")?;
            let col = self.int()? as u32;
            return Ok(Loc::File { file: s, line, col });
        }
        if self.eat("(") {
            let inner = self.loc_inner()?;
            self.expect(")")?;
            return Ok(Loc::Named(s, Box::new(inner)));
        }
        Ok(Loc::Named(s, Box::new(Loc::Unknown)))
    }

    pub(super) fn opt_loc(&mut self) -> R<Loc> {
        if self.eat("loc") {
            self.expect("(")?;
            let l = self.loc_inner()?;
            self.expect(")")?;
            Ok(l)
        } else {
            Ok(Loc::Unknown)
        }
    }
}
