//! Parser for the text the printer writes (a subset of MLIR's syntax): module, `func.func`,
//! `return`, generic ops with regions, builtin types and attributes, `#ember.dims`, locations.

use crate::module::{Module, Value};
use crate::types::Type;
use std::collections::HashMap;

mod structure;
mod values;

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
}
