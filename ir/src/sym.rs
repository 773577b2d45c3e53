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
    /// Sum of at least two terms, canonically ordered, at most one constant (last). Terms whose
    /// constants would overflow i64 when folded stay apart, so evaluating the sum fails instead
    /// of wrapping.
    Add(Vec<SymExpr>),
    /// Product of at least two factors, canonically ordered, at most one constant (first), or
    /// several when their product would overflow i64.
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
#[error("cannot read symbolic size `{}`: {why}", shortened(text))]
pub struct SymParseError {
    pub text: String,
    pub why: String,
}

/// `text` cut to its first 80 characters: a crafted size can be kilobytes long.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
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

    pub fn plus(a: SymExpr, b: SymExpr) -> SymExpr {
        Self::make_add(vec![a, b])
    }

    pub fn times(a: SymExpr, b: SymExpr) -> SymExpr {
        Self::make_mul(vec![a, b])
    }

    pub fn floordiv(a: SymExpr, b: SymExpr) -> SymExpr {
        match (&a, &b) {
            (SymExpr::Const(x), SymExpr::Const(y)) if x.checked_div_euclid(*y).is_some() => {
                SymExpr::Const(x.div_euclid(*y))
            }
            (_, SymExpr::Const(1)) => a,
            _ => SymExpr::FloorDiv(Box::new(a), Box::new(b)),
        }
    }

    pub fn modulo(a: SymExpr, b: SymExpr) -> SymExpr {
        match (&a, &b) {
            (SymExpr::Const(x), SymExpr::Const(y)) if x.checked_rem_euclid(*y).is_some() => {
                SymExpr::Const(x.rem_euclid(*y))
            }
            _ => SymExpr::Mod(Box::new(a), Box::new(b)),
        }
    }

    fn make_add(terms: Vec<SymExpr>) -> SymExpr {
        // Flatten, fold constants, merge `c*x` terms with equal `x`.
        let mut konsts = Vec::new();
        let mut coeffs: BTreeMap<SymExpr, Vec<i64>> = BTreeMap::new();
        let mut stack = terms;
        while let Some(t) = stack.pop() {
            match t {
                SymExpr::Add(ts) => stack.extend(ts),
                SymExpr::Const(c) => konsts.push(c),
                other => {
                    let (c, rest) = other.split_coeff();
                    coeffs.entry(rest).or_default().push(c);
                }
            }
        }
        let mut out = Vec::new();
        for (e, cs) in coeffs {
            for c in fold_sum(cs) {
                match c {
                    0 => {}
                    1 => out.push(e.clone()),
                    c => out.push(Self::make_mul(vec![SymExpr::Const(c), e.clone()])),
                }
            }
        }
        let konsts: Vec<i64> = fold_sum(konsts).into_iter().filter(|&k| k != 0).collect();
        if konsts.is_empty() && out.is_empty() {
            return SymExpr::Const(0);
        }
        out.extend(konsts.into_iter().map(SymExpr::Const));
        if out.len() == 1 {
            out.pop().unwrap()
        } else {
            SymExpr::Add(out)
        }
    }

    fn make_mul(factors: Vec<SymExpr>) -> SymExpr {
        let mut konsts = Vec::new();
        let mut rest = Vec::new();
        let mut stack = factors;
        while let Some(f) = stack.pop() {
            match f {
                SymExpr::Mul(fs) => stack.extend(fs),
                SymExpr::Const(c) => konsts.push(c),
                other => rest.push(other),
            }
        }
        if konsts.contains(&0) {
            return SymExpr::Const(0);
        }
        rest.sort();
        let konsts = fold_product(konsts);
        if let ([konst], [SymExpr::Add(ts)]) = (&konsts[..], &rest[..]) {
            // Distribute constants over sums so `2*(s0+1)` and `2*s0+2` are one expression.
            let ts = ts.iter().map(|t| Self::make_mul(vec![SymExpr::Const(*konst), t.clone()])).collect();
            return Self::make_add(ts);
        }
        let mut out: Vec<SymExpr> = konsts.into_iter().filter(|&k| k != 1).map(SymExpr::Const).collect();
        if out.is_empty() && rest.is_empty() {
            return SymExpr::Const(1);
        }
        out.extend(rest);
        if out.len() == 1 {
            out.pop().unwrap()
        } else {
            SymExpr::Mul(out)
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

    /// The number of nodes in the tree.
    pub fn nodes(&self) -> usize {
        1 + match self {
            SymExpr::Const(_) | SymExpr::Sym(_) => 0,
            SymExpr::Add(v) | SymExpr::Mul(v) => v.iter().map(SymExpr::nodes).sum(),
            SymExpr::FloorDiv(a, b) | SymExpr::Mod(a, b) | SymExpr::Max(a, b) | SymExpr::Min(a, b) => {
                a.nodes() + b.nodes()
            }
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

    /// Evaluates with every symbol bound; `None` if a symbol is unbound, a division by zero occurs
    /// or a result overflows i64.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
        Some(match self {
            SymExpr::Const(c) => *c,
            SymExpr::Sym(s) => env(s)?,
            SymExpr::Add(v) => v.iter().try_fold(0i64, |acc, e| acc.checked_add(e.eval(env)?))?,
            SymExpr::Mul(v) => v.iter().try_fold(1i64, |acc, e| acc.checked_mul(e.eval(env)?))?,
            SymExpr::FloorDiv(a, b) => a.eval(env)?.checked_div_euclid(b.eval(env)?)?,
            SymExpr::Mod(a, b) => a.eval(env)?.checked_rem_euclid(b.eval(env)?)?,
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
            SymExpr::Mod(_, b) => b.upper_bound(bounds)?.checked_sub(1),
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
        let mut p = Parser { toks: &toks, pos: 0, depth: 0 };
        let e = p.expr().map_err(err)?;
        if p.pos != toks.len() {
            return Err(err(format!("unexpected `{}`", toks[p.pos])));
        }
        Ok(e)
    }
}

/// `cs` folded into one constant with `op` from `unit`, or, when that overflows i64, `cs` sorted
/// (a canonical order, so the unfolded form prints and parses back the same).
/// Folds constant terms into as few as i64 holds, canonically: the result depends only on the
/// exact sum, never on how the terms were grouped, so a printed sum parses back to itself.
/// A sum beyond i64 stays as several terms (`i64::MAX` chunks and a remainder), so evaluating
/// it fails instead of wrapping.
fn fold_sum(cs: Vec<i64>) -> Vec<i64> {
    // Exact in i128: reaching its range would take 2^64 terms, more than any input holds.
    let total: i128 = cs.iter().map(|&c| c as i128).sum();
    let chunk: i128 = if total >= 0 { i64::MAX as i128 } else { i64::MIN as i128 };
    let mut out = vec![chunk as i64; (total / chunk) as usize];
    if total % chunk != 0 {
        out.push((total % chunk) as i64);
    }
    if out.is_empty() {
        out.push(0);
    }
    out.sort();
    out
}

/// Folds constant factors greedily in order of magnitude, starting a new factor when the product
/// would overflow i64. Every two factors this leaves overflow when multiplied, so folding the
/// result again (as parsing its printed form does, two factors at a time) changes nothing.
fn fold_product(mut cs: Vec<i64>) -> Vec<i64> {
    cs.sort_by_key(|c| (c.unsigned_abs(), *c));
    let mut out: Vec<i64> = Vec::new();
    for c in cs {
        match out.last_mut().map(|l| (l.checked_mul(c), l)) {
            Some((Some(p), l)) => *l = p,
            _ => out.push(c),
        }
    }
    if out.is_empty() {
        out.push(1);
    }
    out.sort();
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A magnitude: `-9223372036854775808` (i64::MIN, which Display writes) is `-` then 2^63.
    Int(u64),
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
            let two = b.get(i..i + 2).unwrap_or_default();
            let p: &'static str = match (two, c) {
                (b"//", _) => "//",
                (b"**", _) => "**",
                (_, b'+') => "+",
                (_, b'-') => "-",
                (_, b'*') => "*",
                (_, b'%') => "%",
                (_, b'(') => "(",
                (_, b')') => ")",
                (_, b',') => ",",
                (_, b'=') => "=",
                _ => return Err(format!("unexpected character `{}`", s[i..].chars().next().unwrap_or_default())),
            };
            i += p.len();
            out.push(Tok::Punct(p));
        }
    }
    Ok(out)
}

/// How deeply parentheses, calls and unary minus may nest: the parser recurses on each, and a
/// crafted size must get an error rather than overflow the stack. sympy writes a few levels.
const MAX_DEPTH: usize = 200;

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    depth: usize,
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
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, String>) -> Result<T, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!("nested more than {MAX_DEPTH} levels deep"));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }
    fn expr(&mut self) -> Result<SymExpr, String> {
        let mut lhs = self.term()?;
        loop {
            if self.peek_punct("+") {
                self.pos += 1;
                lhs = SymExpr::plus(lhs, self.term()?);
            } else if self.peek_punct("-") {
                self.pos += 1;
                lhs = SymExpr::plus(lhs, SymExpr::times(SymExpr::Const(-1), self.term()?));
            } else {
                return Ok(lhs);
            }
        }
    }
    fn term(&mut self) -> Result<SymExpr, String> {
        let mut lhs = self.unary()?;
        // A chain of `//` and `%` builds a tree as deep as it is long, which later passes walk
        // recursively: it counts against the same limit.
        let mut chain = 0;
        loop {
            let Some(op) = ["*", "//", "%"].into_iter().find(|p| self.peek_punct(p)) else { return Ok(lhs) };
            self.pos += 1;
            let rhs = self.unary()?;
            if op == "*" {
                lhs = SymExpr::times(lhs, rhs);
                continue;
            }
            chain += 1;
            if self.depth + chain > MAX_DEPTH {
                return Err(format!("nested more than {MAX_DEPTH} levels deep"));
            }
            lhs = if op == "//" { SymExpr::floordiv(lhs, rhs) } else { SymExpr::modulo(lhs, rhs) };
        }
    }
    fn unary(&mut self) -> Result<SymExpr, String> {
        if self.peek_punct("-") {
            self.pos += 1;
            if self.toks.get(self.pos) == Some(&Tok::Int(1 << 63))
                && !matches!(self.toks.get(self.pos + 1), Some(Tok::Punct("**")))
            {
                self.pos += 1;
                return Ok(SymExpr::Const(i64::MIN));
            }
            return Ok(SymExpr::times(SymExpr::Const(-1), self.nested(Self::unary)?));
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
                Ok(SymExpr::Const(i64::try_from(i).map_err(|_| format!("integer `{i}` out of range"))?))
            }
            Some(Tok::Punct("(")) => {
                self.pos += 1;
                let e = self.nested(Self::expr)?;
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
                        args.push(self.nested(Self::expr)?);
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

/// The most nodes a power may expand to: nested powers multiply, so without a cap a short text
/// (`((s0+1)**16)**16...`) expands past any memory.
const MAX_POW_NODES: usize = 4096;

fn pow(base: SymExpr, e: SymExpr) -> Result<SymExpr, String> {
    match e.as_const() {
        Some(n) if (0..=16).contains(&n) => {
            if base.nodes().saturating_mul(n as usize) > MAX_POW_NODES {
                return Err(format!("the power expands to more than {MAX_POW_NODES} terms"));
            }
            Ok((0..n).fold(SymExpr::Const(1), |acc, _| SymExpr::times(acc, base.clone())))
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
    fn non_ascii_is_an_error_not_a_panic() {
        let e = SymExpr::parse("s77+é").unwrap_err();
        assert!(e.why.contains("unexpected character `é`"), "{e}");
        assert!(SymExpr::parse("s0/é").is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let n = 8000;
        for text in [
            format!("{}s0{}", "(".repeat(n), ")".repeat(n)),
            format!("{}s0", "-".repeat(n)),
            format!("{}s0{}", "Max(1, ".repeat(n), ")".repeat(n)),
            format!("s0{}", "//2".repeat(n)),
        ] {
            // A thread with a small stack: the limit must hold far below the main thread's 8 MB.
            let r = std::thread::Builder::new()
                .stack_size(1 << 20)
                .spawn(move || SymExpr::parse(&text))
                .unwrap()
                .join()
                .unwrap();
            assert!(r.as_ref().unwrap_err().why.contains("nested more than"), "{r:?}");
        }
        assert!(SymExpr::parse(&format!("{}s0{}", "(".repeat(50), ")".repeat(50))).is_ok());
    }

    #[test]
    fn nested_powers_are_capped() {
        let e = SymExpr::parse("((((s0 + 1)**16)**16)**16)**16").unwrap_err();
        assert!(e.why.contains("expands to more than"), "{e}");
    }

    #[test]
    fn folding_never_panics_or_wraps() {
        let min = SymExpr::Const(i64::MIN);
        let q = SymExpr::floordiv(min.clone(), SymExpr::Const(-1));
        assert_eq!(q.eval(&|_| None), None);
        assert_eq!(SymExpr::modulo(min.clone(), SymExpr::Const(-1)).eval(&|_| None), None);
        // Printed and parsed back, i64::MIN stays itself.
        assert_eq!(SymExpr::parse(&q.to_string()).unwrap(), q);
        let max = i64::MAX;
        let e = SymExpr::parse(&format!("{max}*s0 + {max}*s0")).unwrap();
        assert_ne!(e, SymExpr::parse("-2*s0").unwrap());
        assert_eq!(e.eval(&|_| Some(1)), None);
        assert_eq!(SymExpr::parse(&e.to_string()).unwrap(), e);
        let e = SymExpr::parse(&format!("{max} + {max} + s0")).unwrap();
        assert_eq!(e.eval(&|_| Some(-max)), Some(max));
        assert_eq!(SymExpr::parse(&e.to_string()).unwrap(), e);
        let e = SymExpr::parse(&format!("{max}*{max}*s0")).unwrap();
        assert_eq!(e.eval(&|_| Some(1)), None);
        assert_eq!(SymExpr::parse(&e.to_string()).unwrap(), e);
        // Folding that fits is unchanged.
        assert_eq!(SymExpr::parse("3*s0 + 4*s0 + 2 + 5").unwrap().to_string(), "7*s0 + 7");
    }

    #[test]
    fn errors_are_reported() {
        assert!(SymExpr::parse("Sin(s0)").is_err());
        assert!(SymExpr::parse("s0 +").is_err());
        assert!(SymExpr::parse("99999999999999999999").is_err());
    }
}
