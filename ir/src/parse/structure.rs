//! Structure: the module, functions, regions and blocks, and the generic op form with its SSA
//! names. Name resolution (define before use) lives here, apart from the value grammar.

use super::{P, R};
use crate::attr::Attr;
use crate::module::{Attrs, BlockId, OpId, Value, RETURN};
use crate::types::Type;
use std::collections::HashMap;

impl<'a> P<'a> {
    // ---- structure -------------------------------------------------------------------------

    pub(super) fn module(&mut self) -> R<()> {
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

    pub(super) fn value_name(&mut self) -> R<String> {
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

    pub(super) fn define(&mut self, name: String, v: Value) -> R<()> {
        let scope = self.scopes.last_mut().expect("scope");
        if scope.insert(name.clone(), v).is_some() {
            return Err(self.err(format!("value `{name}` defined twice")));
        }
        Ok(())
    }

    pub(super) fn lookup(&self, name: &str) -> Option<Value> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    pub(super) fn func(&mut self) -> R<()> {
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
    pub(super) fn block_ops(&mut self, b: BlockId) -> R<()> {
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

    pub(super) fn region(&mut self) -> R<crate::module::RegionId> {
        self.nested("regions", Self::region_inner)
    }

    pub(super) fn region_inner(&mut self) -> R<crate::module::RegionId> {
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

    pub(super) fn op(&mut self) -> R<OpId> {
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

    pub(super) fn use_value(&mut self) -> R<Value> {
        let st = self.pos;
        let n = self.value_name()?;
        self.lookup(&n).ok_or_else(|| {
            self.pos = st;
            self.err(format!("use of undefined value `{n}`"))
        })
    }
}
