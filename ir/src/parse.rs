//! Parser for the text the printer writes (a subset of MLIR's syntax): module, `func.func`,
//! `return`, generic ops with regions, builtin types and attributes, `#ember.dims`, locations.

use crate::attr::{Attr, Loc};
use crate::module::{Attrs, BlockId, Module, OpId, Value, RETURN};
use crate::sym::SymExpr;
use crate::types::{DType, TensorType, Type};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {msg}")]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub msg: String,
}

pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    let mut p = P { s: text.as_bytes(), src: text, pos: 0, m: Module::new(), scopes: Vec::new(), depth: 0 };
    p.module()?;
    Ok(p.m)
}

/// Parses a type on its own (used by tests and the CLI).
pub fn parse_type(text: &str) -> Result<Type, ParseError> {
    let mut p = P { s: text.as_bytes(), src: text, pos: 0, m: Module::new(), scopes: Vec::new(), depth: 0 };
    let t = p.ty()?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(p.err("trailing text after type"));
    }
    Ok(t)
}

struct P<'a> {
    s: &'a [u8],
    src: &'a str,
    pos: usize,
    m: Module,
    /// Value names visible in the current function (a stack for nested regions).
    scopes: Vec<HashMap<String, Value>>,
    /// Current nesting of attributes, types, locations and regions (see `MAX_NESTING`).
    depth: usize,
}

/// How deeply attributes, types, locations and regions may nest. The parser recurses on each
/// (and so do the printer and verifier), so crafted text must get an error, not a stack
/// overflow; Ember's own modules nest a few levels.
const MAX_NESTING: usize = 256;

type R<T> = Result<T, ParseError>;

impl<'a> P<'a> {
    fn err(&self, msg: impl Into<String>) -> ParseError {
        // Inside a multi-byte character (a bad escape), the position is that character's start.
        let mut end = self.pos.min(self.src.len());
        while !self.src.is_char_boundary(end) {
            end -= 1;
        }
        let before = &self.src[..end];
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        ParseError { line, col, msg: msg.into() }
    }

    fn nested<T>(&mut self, what: &str, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        if self.depth >= MAX_NESTING {
            return Err(self.err(format!("{what} nested more than {MAX_NESTING} levels deep")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn ws(&mut self) {
        loop {
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.s[self.pos..].starts_with(b"//") {
                while self.pos < self.s.len() && self.s[self.pos] != b'\n' {
                    self.pos += 1;
                }
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.pos).copied()
    }

    fn at(&mut self, tok: &str) -> bool {
        self.ws();
        self.s[self.pos..].starts_with(tok.as_bytes())
    }

    /// Consumes `tok` if present. Word tokens must not be followed by an identifier character.
    fn eat(&mut self, tok: &str) -> bool {
        if !self.at(tok) {
            return false;
        }
        let end = self.pos + tok.len();
        let wordy = tok.as_bytes().last().is_some_and(|c| c.is_ascii_alphanumeric());
        if wordy && self.s.get(end).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.') {
            return false;
        }
        self.pos = end;
        true
    }

    fn expect(&mut self, tok: &str) -> R<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            let found = self.found();
            Err(self.err(format!("expected `{tok}`, found {found}")))
        }
    }

    fn found(&mut self) -> String {
        self.ws();
        if self.pos >= self.s.len() {
            return "end of input".into();
        }
        let rest = &self.src[self.pos..];
        let tok: String = rest.chars().take_while(|c| !c.is_whitespace()).take(20).collect();
        format!("`{tok}`")
    }

    fn ident(&mut self) -> R<String> {
        self.ws();
        let st = self.pos;
        while self.pos < self.s.len()
            && (self.s[self.pos].is_ascii_alphanumeric() || b"_.$-".contains(&self.s[self.pos]))
        {
            self.pos += 1;
        }
        if st == self.pos {
            let found = self.found();
            return Err(self.err(format!("expected an identifier, found {found}")));
        }
        Ok(self.src[st..self.pos].to_string())
    }

    fn string(&mut self) -> R<String> {
        self.ws();
        if self.s.get(self.pos) != Some(&b'"') {
            let found = self.found();
            return Err(self.err(format!("expected a string, found {found}")));
        }
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.pos) {
                None => return Err(self.err("unterminated string")),
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    let c = self.s.get(self.pos + 1).copied().ok_or_else(|| self.err("unterminated string"))?;
                    self.pos += 2;
                    match c {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        h if h.is_ascii_hexdigit() => {
                            let l = self
                                .s
                                .get(self.pos)
                                .copied()
                                .filter(u8::is_ascii_hexdigit)
                                .ok_or_else(|| self.err("bad escape"))?;
                            self.pos += 1;
                            out.push(
                                u8::from_str_radix(&format!("{}{}", h as char, l as char), 16)
                                    .map_err(|_| self.err("bad escape"))?,
                            );
                        }
                        _ => return Err(self.err("bad escape")),
                    }
                }
                Some(&c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| self.err("string is not UTF-8"))
    }

    /// An integer or float literal; returns (text, is_float).
    fn number(&mut self) -> R<(String, bool)> {
        self.ws();
        let st = self.pos;
        if self.s[self.pos..].starts_with(b"0x") {
            self.pos += 2;
            while self.pos < self.s.len() && self.s[self.pos].is_ascii_hexdigit() {
                self.pos += 1;
            }
            return Ok((self.src[st..self.pos].to_string(), false));
        }
        if matches!(self.s.get(self.pos), Some(b'-') | Some(b'+')) {
            self.pos += 1;
        }
        let mut float = false;
        while let Some(&c) = self.s.get(self.pos) {
            if c.is_ascii_digit() {
                self.pos += 1;
            } else if c == b'.' || c == b'e' || c == b'E' {
                float = true;
                self.pos += 1;
                if (c == b'e' || c == b'E') && matches!(self.s.get(self.pos), Some(b'-') | Some(b'+')) {
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
        if st == self.pos || !self.s[st..self.pos].iter().any(|c| c.is_ascii_digit()) {
            self.pos = st;
            let found = self.found();
            return Err(self.err(format!("expected a number, found {found}")));
        }
        Ok((self.src[st..self.pos].to_string(), float))
    }

    fn int(&mut self) -> R<i64> {
        let (t, f) = self.number()?;
        if f {
            return Err(self.err(format!("expected an integer, found `{t}`")));
        }
        t.parse().map_err(|_| self.err(format!("integer `{t}` out of range")))
    }

    // ---- types -----------------------------------------------------------------------------

    fn ty(&mut self) -> R<Type> {
        self.nested("types", Self::ty_inner)
    }

    fn ty_inner(&mut self) -> R<Type> {
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

    fn tensor_body(&mut self) -> R<TensorType> {
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
    fn dims_body(&mut self) -> R<Vec<SymExpr>> {
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

    fn dict(&mut self) -> R<Attrs> {
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

    fn attr(&mut self) -> R<Attr> {
        self.nested("attributes", Self::attr_inner)
    }

    fn attr_inner(&mut self) -> R<Attr> {
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

    fn loc_inner(&mut self) -> R<Loc> {
        self.nested("locations", Self::loc_body)
    }

    fn loc_body(&mut self) -> R<Loc> {
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

    fn opt_loc(&mut self) -> R<Loc> {
        if self.eat("loc") {
            self.expect("(")?;
            let l = self.loc_inner()?;
            self.expect(")")?;
            Ok(l)
        } else {
            Ok(Loc::Unknown)
        }
    }

    // ---- structure -------------------------------------------------------------------------

    fn module(&mut self) -> R<()> {
        let wrapped = self.eat("module");
        if wrapped {
            if self.eat("attributes") {
                self.m.attrs = self.dict()?;
            }
            self.expect("{")?;
        }
        loop {
            if wrapped && self.eat("}") {
                break;
            }
            if self.peek().is_none() {
                if wrapped {
                    return Err(self.err("expected `}` closing the module"));
                }
                break;
            }
            self.func()?;
        }
        if self.peek().is_some() {
            return Err(self.err("trailing text after module"));
        }
        Ok(())
    }

    fn value_name(&mut self) -> R<String> {
        self.ws();
        if self.s.get(self.pos) != Some(&b'%') {
            let found = self.found();
            return Err(self.err(format!("expected an SSA value, found {found}")));
        }
        let st = self.pos;
        self.pos += 1;
        while self.s.get(self.pos).is_some_and(|c| c.is_ascii_alphanumeric() || b"_$.#".contains(c)) {
            self.pos += 1;
        }
        Ok(self.src[st..self.pos].to_string())
    }

    fn define(&mut self, name: String, v: Value) -> R<()> {
        let scope = self.scopes.last_mut().expect("scope");
        if scope.insert(name.clone(), v).is_some() {
            return Err(self.err(format!("value `{name}` defined twice")));
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<Value> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn func(&mut self) -> R<()> {
        self.expect("func.func")?;
        self.expect("@")?;
        let name = if self.peek() == Some(b'"') { self.string()? } else { self.ident()? };
        self.expect("(")?;
        let mut arg_names = Vec::new();
        let mut arg_types = Vec::new();
        let mut arg_attrs = Vec::new();
        while !self.eat(")") {
            arg_names.push(self.value_name()?);
            self.expect(":")?;
            arg_types.push(self.ty()?);
            arg_attrs.push(if self.at("{") { self.dict()? } else { Attrs::new() });
            if !self.at(")") {
                self.expect(",")?;
            }
        }
        let mut results = Vec::new();
        let mut res_attrs = Vec::new();
        if self.eat("->") {
            if self.eat("(") {
                while !self.eat(")") {
                    results.push(self.ty()?);
                    res_attrs.push(if self.at("{") { self.dict()? } else { Attrs::new() });
                    if !self.at(")") {
                        self.expect(",")?;
                    }
                }
            } else {
                results.push(self.ty()?);
                res_attrs.push(Attrs::new());
            }
        }
        let extra = if self.eat("attributes") { self.dict()? } else { Attrs::new() };
        let (f, entry) = self.m.add_func(&name, arg_types, results, arg_attrs);
        if res_attrs.iter().any(|a| !a.is_empty()) {
            self.m
                .op_mut(f)
                .attrs
                .insert("res_attrs".into(), Attr::Array(res_attrs.into_iter().map(Attr::Dict).collect()));
        }
        for (k, v) in extra {
            self.m.op_mut(f).attrs.insert(k, v);
        }
        self.scopes.push(HashMap::new());
        let args = self.m.block(entry).args.clone();
        for (n, v) in arg_names.into_iter().zip(args) {
            self.define(n, v)?;
        }
        self.expect("{")?;
        self.block_ops(entry)?;
        self.expect("}")?;
        self.scopes.pop();
        Ok(())
    }

    /// Ops until the closing `}` (not consumed) or the next block label.
    fn block_ops(&mut self, b: BlockId) -> R<()> {
        while !self.at("}") && !self.at("^") {
            if self.peek().is_none() {
                return Err(self.err("unexpected end of input inside a block"));
            }
            let op = self.op()?;
            let pos = self.m.block(b).ops.len();
            self.m.insert_op(b, pos, op);
        }
        Ok(())
    }

    fn region(&mut self) -> R<crate::module::RegionId> {
        self.nested("regions", Self::region_inner)
    }

    fn region_inner(&mut self) -> R<crate::module::RegionId> {
        self.expect("{")?;
        self.scopes.push(HashMap::new());
        let mut blocks = Vec::new();
        loop {
            if self.eat("}") {
                break;
            }
            let (names, types) = if self.at("^") {
                self.pos += 1;
                self.ident()?;
                let mut names = Vec::new();
                let mut types = Vec::new();
                if self.eat("(") {
                    while !self.eat(")") {
                        names.push(self.value_name()?);
                        self.expect(":")?;
                        types.push(self.ty()?);
                        if !self.at(")") {
                            self.expect(",")?;
                        }
                    }
                }
                self.expect(":")?;
                (names, types)
            } else if blocks.is_empty() {
                (Vec::new(), Vec::new())
            } else {
                return Err(self.err("expected a block label"));
            };
            let b = self.m.new_block(&types);
            let args = self.m.block(b).args.clone();
            for (n, v) in names.into_iter().zip(args) {
                self.define(n, v)?;
            }
            self.block_ops(b)?;
            blocks.push(b);
        }
        self.scopes.pop();
        Ok(self.m.new_region(blocks))
    }

    fn op(&mut self) -> R<OpId> {
        // Results: `%0 =`, `%0:2 =`, `%a, %b =`.
        let mut result_names: Vec<(String, usize)> = Vec::new();
        if self.peek() == Some(b'%') {
            loop {
                let n = self.value_name()?;
                let count = if self.s.get(self.pos) == Some(&b':')
                    && self.s.get(self.pos + 1).is_some_and(|c| c.is_ascii_digit())
                {
                    self.pos += 1;
                    self.int()? as usize
                } else {
                    1
                };
                result_names.push((n, count));
                if !self.eat(",") {
                    break;
                }
            }
            self.expect("=")?;
        }
        let op_start = self.pos;
        if self.eat("return") || self.eat(RETURN) {
            if !result_names.is_empty() {
                return Err(self.err("`return` has no results"));
            }
            let mut operands = Vec::new();
            if self.peek() == Some(b'%') {
                loop {
                    operands.push(self.use_value()?);
                    if !self.eat(",") {
                        break;
                    }
                }
                self.expect(":")?;
                for (i, &v) in operands.iter().enumerate() {
                    if i > 0 {
                        self.expect(",")?;
                    }
                    let t = self.ty()?;
                    if *self.m.ty(v) != t {
                        return Err(
                            self.err(format!("return operand {i} has type {} but is annotated {t}", self.m.ty(v)))
                        );
                    }
                }
            }
            let loc = self.opt_loc()?;
            return Ok(self.m.create_op(RETURN, operands, vec![], Attrs::new(), vec![], loc));
        }
        if self.peek() != Some(b'"') {
            self.pos = op_start;
            let found = self.found();
            return Err(self.err(format!("expected an op in generic form (\"dialect.op\"(...)), found {found}")));
        }
        let name = self.string()?;
        self.expect("(")?;
        let mut operands = Vec::new();
        while !self.eat(")") {
            operands.push(self.use_value()?);
            if !self.at(")") {
                self.expect(",")?;
            }
        }
        let mut regions = Vec::new();
        if self.eat("(") {
            while !self.eat(")") {
                regions.push(self.region()?);
                if !self.at(")") {
                    self.expect(",")?;
                }
            }
        }
        let attrs = if self.at("{") { self.dict()? } else { Attrs::new() };
        self.expect(":")?;
        let fty_pos = self.pos;
        let (ins, outs) = match self.ty()? {
            Type::Function(i, o) => (i, o),
            t => {
                self.pos = fty_pos;
                return Err(self.err(format!("expected a function type after `:`, found {t}")));
            }
        };
        if ins.len() != operands.len() {
            return Err(self.err(format!("`{name}` has {} operands but its type lists {}", operands.len(), ins.len())));
        }
        for (i, (&v, t)) in operands.iter().zip(&ins).enumerate() {
            if self.m.ty(v) != t {
                return Err(self.err(format!("`{name}` operand {i} has type {} but is annotated {t}", self.m.ty(v))));
            }
        }
        let declared: usize = result_names.iter().map(|r| r.1).sum();
        if declared != outs.len() {
            return Err(self.err(format!("`{name}` binds {declared} results but its type lists {}", outs.len())));
        }
        // The printer writes `func.return` in its custom form, which has only operands.
        if name == RETURN && (!outs.is_empty() || !attrs.is_empty() || !regions.is_empty()) {
            return Err(self.err("`func.return` has operands only: no results, attributes or regions"));
        }
        let loc = self.opt_loc()?;
        let op = self.m.create_op(&name, operands, outs, attrs, regions, loc);
        let results = self.m.op(op).results.clone();
        let mut i = 0;
        for (n, count) in result_names {
            if count == 1 {
                self.define(n, results[i])?;
            } else {
                for k in 0..count {
                    self.define(format!("{n}#{k}"), results[i + k])?;
                }
            }
            i += count;
        }
        Ok(op)
    }

    fn use_value(&mut self) -> R<Value> {
        let st = self.pos;
        let n = self.value_name()?;
        self.lookup(&n).ok_or_else(|| {
            self.pos = st;
            self.err(format!("use of undefined value `{n}`"))
        })
    }
}
