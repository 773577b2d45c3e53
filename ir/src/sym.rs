//! Symbolic integer expressions for tensor dims.
//!
//! torch.export writes sizes as sympy expressions (`s0`, `2*s0`, `s0//2`). Ember keeps them as a small
//! canonical tree so that two spellings of one size compare equal, types print identically, and a
//! runtime can evaluate them once it knows the input shapes.

use std::collections::BTreeMap;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SymExpr {
    Const(i64),
    Sym(String),
    /// Sum of at least two terms, canonically ordered, at most one constant (last).
    Add(Vec<SymExpr>),
    /// Product of at least two factors, canonically ordered, at most one constant (first).
    Mul(Vec<SymExpr>),
    FloorDiv(Box<SymExpr>, Box<SymExpr>),
    Mod(Box<SymExpr>, Box<SymExpr>),
    Max(Box<SymExpr>, Box<SymExpr>),
    Min(Box<SymExpr>, Box<SymExpr>),
}

/// Inclusive bounds of a symbol, from `range_constraints`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub min: i64,
    pub max: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read symbolic size `{text}`: {why}")]
pub struct SymParseError {
    pub text: String,
    pub why: String,
}

impl SymExpr {
    pub fn sym(name: &str) -> Self {
        SymExpr::Sym(name.to_string())
    }

    pub fn as_const(&self) -> Option<i64> {
        match self {
            SymExpr::Const(c) => Some(*c),
            _ => None,
        }
    }

    pub fn add(a: SymExpr, b: SymExpr) -> SymExpr {
        Self::make_add(vec![a, b])
    }

    pub fn mul(a: SymExpr, b: SymExpr) -> SymExpr {
        Self::make_mul(vec![a, b])
    }

    pub fn floordiv(a: SymExpr, b: SymExpr) -> SymExpr {
        match (&a, &b) {
            (SymExpr::Const(x), SymExpr::Const(y)) if *y != 0 => SymExpr::Const(x.div_euclid(*y)),
            (_, SymExpr::Const(1)) => a,
            _ => SymExpr::FloorDiv(Box::new(a), Box::new(b)),
        }
    }

    pub fn modulo(a: SymExpr, b: SymExpr) -> SymExpr {
        match (&a, &b) {
            (SymExpr::Const(x), SymExpr::Const(y)) if *y != 0 => SymExpr::Const(x.rem_euclid(*y)),
            _ => SymExpr::Mod(Box::new(a), Box::new(b)),
        }
    }

    fn make_add(terms: Vec<SymExpr>) -> SymExpr {
        // Flatten, fold constants, merge `c*x` terms with equal `x`.
        let mut konst: i64 = 0;
        let mut coeffs: BTreeMap<SymExpr, i64> = BTreeMap::new();
        let mut stack = terms;
        while let Some(t) = stack.pop() {
            match t {
                SymExpr::Add(ts) => stack.extend(ts),
                SymExpr::Const(c) => konst = konst.wrapping_add(c),
                other => {
                    let (c, rest) = other.split_coeff();
                    *coeffs.entry(rest).or_insert(0) += c;
                }
            }
        }
        let mut out: Vec<SymExpr> = coeffs
            .into_iter()
            .filter(|(_, c)| *c != 0)
            .map(|(e, c)| if c == 1 { e } else { Self::make_mul(vec![SymExpr::Const(c), e]) })
            .collect();
        if konst != 0 || out.is_empty() {
            out.push(SymExpr::Const(konst));
        }
        if out.len() == 1 {
            out.pop().unwrap()
        } else {
            SymExpr::Add(out)
        }
    }

    fn make_mul(factors: Vec<SymExpr>) -> SymExpr {
        let mut konst: i64 = 1;
        let mut rest = Vec::new();
        let mut stack = factors;
        while let Some(f) = stack.pop() {
            match f {
                SymExpr::Mul(fs) => stack.extend(fs),
                SymExpr::Const(c) => konst = konst.wrapping_mul(c),
                // Distribute constants over sums so `2*(s0+1)` and `2*s0+2` are one expression.
                other => rest.push(other),
            }
        }
        if konst == 0 {
            return SymExpr::Const(0);
        }
        rest.sort();
        if rest.len() == 1 {
            if let SymExpr::Add(ts) = &rest[0] {
                let ts = ts.iter().map(|t| Self::make_mul(vec![SymExpr::Const(konst), t.clone()])).collect();
                return Self::make_add(ts);
            }
        }
        if konst != 1 || rest.is_empty() {
            rest.insert(0, SymExpr::Const(konst));
        }
        if rest.len() == 1 {
            rest.pop().unwrap()
        } else {
            SymExpr::Mul(rest)
        }
    }

    /// Splits `c*x` into `(c, x)`; anything else is `(1, self)`.
    fn split_coeff(self) -> (i64, SymExpr) {
        match self {
            SymExpr::Mul(mut fs) if matches!(fs.first(), Some(SymExpr::Const(_))) => {
                let c = fs.remove(0).as_const().unwrap();
                let rest = if fs.len() == 1 { fs.pop().unwrap() } else { SymExpr::Mul(fs) };
                (c, rest)
            }
            e => (1, e),
        }
    }

    pub fn symbols(&self, out: &mut Vec<String>) {
        match self {
            SymExpr::Const(_) => {}
            SymExpr::Sym(s) => {
                if !out.contains(s) {
                    out.push(s.clone())
                }
            }
            SymExpr::Add(v) | SymExpr::Mul(v) => v.iter().for_each(|e| e.symbols(out)),
            SymExpr::FloorDiv(a, b) | SymExpr::Mod(a, b) | SymExpr::Max(a, b) | SymExpr::Min(a, b) => {
                a.symbols(out);
                b.symbols(out)
            }
        }
    }

    /// Evaluates with every symbol bound; `None` if a symbol is unbound or a division by zero occurs.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        Some(match self {
            SymExpr::Const(c) => *c,
            SymExpr::Sym(s) => env(s)?,
            SymExpr::Add(v) => v.iter().try_fold(0i64, |acc, e| acc.checked_add(e.eval(env)?))?,
            SymExpr::Mul(v) => v.iter().try_fold(1i64, |acc, e| acc.checked_mul(e.eval(env)?))?,
            SymExpr::FloorDiv(a, b) => {
                let d = b.eval(env)?;
                if d == 0 {
                    return None;
                }
                a.eval(env)?.div_euclid(d)
            }
            SymExpr::Mod(a, b) => {
                let d = b.eval(env)?;
                if d == 0 {
                    return None;
                }
                a.eval(env)?.rem_euclid(d)
            }
            SymExpr::Max(a, b) => a.eval(env)?.max(b.eval(env)?),
            SymExpr::Min(a, b) => a.eval(env)?.min(b.eval(env)?),
        })
    }

    /// Upper bound given symbol bounds; `None` when unbounded. Assumes non-negative sizes.
    pub fn upper_bound(&self, bounds: &dyn Fn(&str) -> Option<Bounds>) -> Option<i64> {
        match self {
            SymExpr::Const(c) => Some(*c),
            SymExpr::Sym(s) => bounds(s)?.max,
            SymExpr::Add(v) => v.iter().try_fold(0i64, |acc, e| acc.checked_add(e.upper_bound(bounds)?)),
            SymExpr::Mul(v) => v.iter().try_fold(1i64, |acc, e| acc.checked_mul(e.upper_bound(bounds)?)),
            SymExpr::FloorDiv(a, b) => {
                let lo = b.lower_bound(bounds).max(1);
                Some(a.upper_bound(bounds)?.div_euclid(lo))
            }
            SymExpr::Mod(_, b) => Some(b.upper_bound(bounds)? - 1),
            SymExpr::Max(a, b) => Some(a.upper_bound(bounds)?.max(b.upper_bound(bounds)?)),
            SymExpr::Min(a, b) => match (a.upper_bound(bounds), b.upper_bound(bounds)) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
        }
    }

    pub fn lower_bound(&self, bounds: &dyn Fn(&str) -> Option<Bounds>) -> i64 {
        match self {
            SymExpr::Const(c) => *c,
            SymExpr::Sym(s) => bounds(s).map(|b| b.min).unwrap_or(0),
            SymExpr::Add(v) => v.iter().map(|e| e.lower_bound(bounds)).fold(0i64, |a, b| a.saturating_add(b)),
            SymExpr::Mul(v) => v.iter().map(|e| e.lower_bound(bounds)).fold(1i64, |a, b| a.saturating_mul(b)),
            SymExpr::FloorDiv(a, b) => match b.upper_bound(bounds) {
                Some(d) if d > 0 => a.lower_bound(bounds).div_euclid(d),
                _ => 0,
            },
            SymExpr::Mod(..) => 0,
            SymExpr::Max(a, b) => a.lower_bound(bounds).max(b.lower_bound(bounds)),
            SymExpr::Min(a, b) => a.lower_bound(bounds).min(b.lower_bound(bounds)),
        }
    }

    /// Parses either sympy `srepr` (`Mul(Integer(2), Symbol('s0', integer=True))`) or infix
    /// (`2*s0 + 1`, `s0//2`, `Max(s0, 4)`).
    pub fn parse(text: &str) -> Result<SymExpr, SymParseError> {
        let err = |why: String| SymParseError { text: text.to_string(), why };
        let toks = lex(text).map_err(err)?;
        let mut p = Parser { toks: &toks, pos: 0 };
        let e = p.expr().map_err(err)?;
        if p.pos != toks.len() {
            return Err(err(format!("unexpected `{}`", toks[p.pos])));
        }
        Ok(e)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Ident(String),
    Str(String),
    Punct(&'static str),
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Int(i) => write!(f, "{i}"),
            Tok::Ident(s) => write!(f, "{s}"),
            Tok::Str(s) => write!(f, "'{s}'"),
            Tok::Punct(p) => write!(f, "{p}"),
        }
    }
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Int(s[st..i].parse().map_err(|_| format!("integer `{}` out of range", &s[st..i]))?));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[st..i].to_string()));
        } else if c == b'\'' || c == b'"' {
            let st = i + 1;
            i += 1;
            while i < b.len() && b[i] != c {
                i += 1;
            }
            if i >= b.len() {
                return Err("unterminated string".into());
            }
            out.push(Tok::Str(s[st..i].to_string()));
            i += 1;
        } else {
            let two = if i + 1 < b.len() { &s[i..i + 2] } else { "" };
            let p: &'static str = match (two, c) {
                ("//", _) => "//",
                ("**", _) => "**",
                (_, b'+') => "+",
                (_, b'-') => "-",
                (_, b'*') => "*",
                (_, b'%') => "%",
                (_, b'(') => "(",
                (_, b')') => ")",
                (_, b',') => ",",
                (_, b'=') => "=",
                _ => return Err(format!("unexpected character `{}`", c as char)),
            };
            i += p.len();
            out.push(Tok::Punct(p));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
}

impl Parser<'_> {
    fn peek_punct(&self, p: &str) -> bool {
        matches!(self.toks.get(self.pos), Some(Tok::Punct(q)) if *q == p)
    }
    fn eat(&mut self, p: &str) -> Result<(), String> {
        if self.peek_punct(p) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{p}`"))
        }
    }
    fn expr(&mut self) -> Result<SymExpr, String> {
        let mut lhs = self.term()?;
        loop {
            if self.peek_punct("+") {
                self.pos += 1;
                lhs = SymExpr::add(lhs, self.term()?);
            } else if self.peek_punct("-") {
                self.pos += 1;
                lhs = SymExpr::add(lhs, SymExpr::mul(SymExpr::Const(-1), self.term()?));
            } else {
                return Ok(lhs);
            }
        }
    }
    fn term(&mut self) -> Result<SymExpr, String> {
        let mut lhs = self.unary()?;
        loop {
            if self.peek_punct("*") {
                self.pos += 1;
                lhs = SymExpr::mul(lhs, self.unary()?);
            } else if self.peek_punct("//") {
                self.pos += 1;
                lhs = SymExpr::floordiv(lhs, self.unary()?);
            } else if self.peek_punct("%") {
                self.pos += 1;
                lhs = SymExpr::modulo(lhs, self.unary()?);
            } else {
                return Ok(lhs);
            }
        }
    }
    fn unary(&mut self) -> Result<SymExpr, String> {
        if self.peek_punct("-") {
            self.pos += 1;
            return Ok(SymExpr::mul(SymExpr::Const(-1), self.unary()?));
        }
        let base = self.atom()?;
        if self.peek_punct("**") {
            self.pos += 1;
            let e = self.atom()?;
            return pow(base, e);
        }
        Ok(base)
    }
    fn atom(&mut self) -> Result<SymExpr, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Int(i)) => {
                self.pos += 1;
                Ok(SymExpr::Const(i))
            }
            Some(Tok::Punct("(")) => {
                self.pos += 1;
                let e = self.expr()?;
                self.eat(")")?;
                Ok(e)
            }
            Some(Tok::Ident(name)) => {
                self.pos += 1;
                if !self.peek_punct("(") {
                    return Ok(SymExpr::Sym(name));
                }
                self.pos += 1;
                let mut args = Vec::new();
                while !self.peek_punct(")") {
                    // Keyword arguments (`integer=True`) are sympy assumptions; skip them.
                    if let (Some(Tok::Ident(_)), Some(Tok::Punct("="))) =
                        (self.toks.get(self.pos), self.toks.get(self.pos + 1))
                    {
                        self.pos += 3;
                    } else if let Some(Tok::Str(s)) = self.toks.get(self.pos).cloned() {
                        self.pos += 1;
                        args.push(SymExpr::Sym(s));
                    } else {
                        args.push(self.expr()?);
                    }
                    if !self.peek_punct(")") {
                        self.eat(",")?;
                    }
                }
                self.pos += 1;
                call(&name, args)
            }
            Some(t) => Err(format!("unexpected `{t}`")),
            None => Err("unexpected end".into()),
        }
    }
}

fn pow(base: SymExpr, e: SymExpr) -> Result<SymExpr, String> {
    match e.as_const() {
        Some(n) if (0..=16).contains(&n) => {
            Ok((0..n).fold(SymExpr::Const(1), |acc, _| SymExpr::mul(acc, base.clone())))
        }
        _ => Err("only small non-negative integer powers are supported".into()),
    }
}

fn call(name: &str, mut args: Vec<SymExpr>) -> Result<SymExpr, String> {
    let n = args.len();
    let two = |args: &mut Vec<SymExpr>| -> Result<(SymExpr, SymExpr), String> {
        if args.len() != 2 {
            return Err(format!("`{name}` takes 2 arguments, got {n}"));
        }
        let b = args.pop().unwrap();
        Ok((args.pop().unwrap(), b))
    };
    match name {
        "Symbol" if n == 1 => Ok(args.pop().unwrap()),
        "Integer" if n == 1 => Ok(args.pop().unwrap()),
        "Add" if n >= 1 => Ok(SymExpr::make_add(args)),
        "Mul" if n >= 1 => Ok(SymExpr::make_mul(args)),
        "FloorDiv" => two(&mut args).map(|(a, b)| SymExpr::floordiv(a, b)),
        "Mod" | "PythonMod" => two(&mut args).map(|(a, b)| SymExpr::modulo(a, b)),
        "Pow" => two(&mut args).and_then(|(a, b)| pow(a, b)),
        "Max" => two(&mut args).map(|(a, b)| SymExpr::Max(Box::new(a), Box::new(b))),
        "Min" => two(&mut args).map(|(a, b)| SymExpr::Min(Box::new(a), Box::new(b))),
        _ => Err(format!("unsupported sympy function `{name}` with {n} arguments")),
    }
}

impl fmt::Display for SymExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn wrap(e: &SymExpr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match e {
                SymExpr::Add(_) | SymExpr::Mul(_) | SymExpr::FloorDiv(..) | SymExpr::Mod(..) => write!(f, "({e})"),
                SymExpr::Const(c) if *c < 0 => write!(f, "({e})"),
                _ => write!(f, "{e}"),
            }
        }
        match self {
            SymExpr::Const(c) => write!(f, "{c}"),
            SymExpr::Sym(s) => write!(f, "{s}"),
            SymExpr::Add(ts) => {
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" + ")?;
                    }
                    match t {
                        SymExpr::Add(_) => wrap(t, f)?,
                        _ => write!(f, "{t}")?,
                    }
                }
                Ok(())
            }
            SymExpr::Mul(fs) => {
                for (i, t) in fs.iter().enumerate() {
                    if i > 0 {
                        f.write_str("*")?;
                    }
                    match t {
                        SymExpr::Const(c) if i == 0 => write!(f, "{c}")?,
                        _ => wrap(t, f)?,
                    }
                }
                Ok(())
            }
            SymExpr::FloorDiv(a, b) => {
                wrap(a, f)?;
                f.write_str("//")?;
                wrap(b, f)
            }
            SymExpr::Mod(a, b) => {
                wrap(a, f)?;
                f.write_str("%")?;
                wrap(b, f)
            }
            SymExpr::Max(a, b) => write!(f, "Max({a}, {b})"),
            SymExpr::Min(a, b) => write!(f, "Min({a}, {b})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srepr_and_infix_agree() {
        let a = SymExpr::parse("Mul(Integer(2), Symbol('s0', integer=True, positive=True))").unwrap();
        let b = SymExpr::parse("2*s0").unwrap();
        let c = SymExpr::parse("s0*2").unwrap();
        assert_eq!(a, b);
        assert_eq!(b, c);
        assert_eq!(a.to_string(), "2*s0");
    }

    #[test]
    fn canonical_forms_and_eval() {
        let e = SymExpr::parse("2*(s0 + 1) - 2").unwrap();
        assert_eq!(e, SymExpr::parse("2*s0").unwrap());
        let e = SymExpr::parse("s1 + s0 + 3").unwrap();
        assert_eq!(e.to_string(), "s0 + s1 + 3");
        assert_eq!(SymExpr::parse(&e.to_string()).unwrap(), e);
        let env = |s: &str| if s == "s0" { Some(4) } else { Some(10) };
        assert_eq!(e.eval(&env), Some(17));
        let d = SymExpr::parse("FloorDiv(s0, 2)").unwrap();
        assert_eq!(d.to_string(), "s0//2");
        assert_eq!(d.eval(&env), Some(2));
    }

    #[test]
    fn bounds() {
        let b = |_: &str| Some(Bounds { min: 2, max: Some(64) });
        let e = SymExpr::parse("3*s0 + 1").unwrap();
        assert_eq!(e.upper_bound(&b), Some(193));
        assert_eq!(e.lower_bound(&b), 7);
    }

    #[test]
    fn errors_are_reported() {
        assert!(SymExpr::parse("Sin(s0)").is_err());
        assert!(SymExpr::parse("s0 +").is_err());
        assert!(SymExpr::parse("99999999999999999999").is_err());
    }
}
