//! The e-graph's language: one node kind for every `ten` op, named as in IR dumps.
//!
//! A node is `op{attrs}` over child e-classes plus its result type. Attributes and types are
//! interned text, so nodes hash, compare and sort by content (never by interning order: the
//! same input gives the same e-graph, rule order and extraction in every process).
//!
//! In rule patterns an op may carry attribute constraints, `ten.reduce{kind=max}`: a pattern
//! node matches an e-node with the same op and arity whose attributes include every constraint.
//! Patterns carry no type; rules that need types or attribute values read them in Rust.

use egg::{Id, Language, Symbol};
use ember_ir::dialect::ten::TenOp;
use ember_ir::{Attr, Attrs, Loc, TensorType};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

#[derive(Clone, Debug)]
pub struct ENode {
    pub op: Symbol,
    /// `k=v;k=v` sorted by key (see `attr_text`); constraints only in patterns.
    pub attrs: Symbol,
    /// The result type's text; empty in patterns.
    pub ty: Symbol,
    pub args: Vec<Id>,
}

impl ENode {
    /// The node's `ten` op (`None` for composites, inputs and opaque nodes).
    pub fn ten(&self) -> Option<TenOp> {
        ten_of(self.op)
    }
    fn key(&self) -> (&str, usize, &str, &str, &[Id]) {
        (self.op.as_str(), self.args.len(), self.attrs.as_str(), self.ty.as_str(), &self.args)
    }
}

impl PartialEq for ENode {
    fn eq(&self, o: &Self) -> bool {
        self.op == o.op && self.attrs == o.attrs && self.ty == o.ty && self.args == o.args
    }
}
impl Eq for ENode {}
impl Hash for ENode {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.op.as_str().hash(h);
        self.attrs.as_str().hash(h);
        self.ty.as_str().hash(h);
        self.args.hash(h);
    }
}
impl Ord for ENode {
    fn cmp(&self, o: &Self) -> Ordering {
        self.key().cmp(&o.key())
    }
}
impl PartialOrd for ENode {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The `ten` op named by an interned op name: a hash of the symbol, not a string search, since
/// the cost function asks for every node of every extraction.
pub fn ten_of(op: Symbol) -> Option<TenOp> {
    static BY_SYMBOL: OnceLock<HashMap<Symbol, TenOp>> = OnceLock::new();
    BY_SYMBOL.get_or_init(|| TenOp::ALL.iter().map(|&t| (Symbol::from(t.name()), t)).collect()).get(&op).copied()
}

/// Whether every `k=v` constraint of `pattern` is among `attrs`.
fn satisfies(attrs: &str, pattern: &str) -> bool {
    pattern.is_empty() || pattern.split(';').all(|c| attrs.split(';').any(|a| a == c))
}

impl Language for ENode {
    type Discriminant = (Symbol, usize);
    fn discriminant(&self) -> Self::Discriminant {
        (self.op, self.args.len())
    }
    fn matches(&self, o: &Self) -> bool {
        self.op == o.op
            && self.args.len() == o.args.len()
            && (self.ty.as_str().is_empty() || self.ty == o.ty)
            && satisfies(o.attrs.as_str(), self.attrs.as_str())
    }
    fn children(&self) -> &[Id] {
        &self.args
    }
    fn children_mut(&mut self) -> &mut [Id] {
        &mut self.args
    }
}

impl std::fmt::Display for ENode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.attrs.as_str().is_empty() {
            f.write_str(self.op.as_str())
        } else {
            write!(f, "{}{{{}}}", self.op, self.attrs)
        }
    }
}

impl egg::FromOp for ENode {
    type Error = String;
    fn from_op(op: &str, args: Vec<Id>) -> Result<Self, String> {
        let (name, attrs) = match op.split_once('{') {
            Some((n, rest)) => (n, rest.strip_suffix('}').ok_or_else(|| format!("`{op}`: missing `}}`"))?),
            None => (op, ""),
        };
        let mut items: Vec<&str> = attrs.split(';').filter(|s| !s.is_empty()).collect();
        items.sort();
        Ok(ENode { op: name.into(), attrs: items.join(";").into(), ty: "".into(), args })
    }
}

/// `k=v;..` for attributes, values printed as in IR dumps without spaces and quotes.
pub fn attr_text(attrs: &Attrs) -> String {
    let items: Vec<String> = attrs
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Attr::Str(s) => s.clone(),
                _ => v.to_string().replace(' ', ""),
            };
            format!("{k}={v}")
        })
        .collect();
    items.join(";")
}

/// What every e-class knows: its type, its value when it is a splat constant, and where it came
/// from in the user's program.
#[derive(Clone, Debug)]
pub struct Meta {
    pub ty: Symbol,
    pub konst: Option<f64>,
    pub loc: Option<Loc>,
}

/// The analysis owns the tables behind interned attribute and type text, and records which rule
/// made which class equal to what.
#[derive(Default)]
pub struct Ember {
    pub attrs: HashMap<Symbol, Attrs>,
    pub types: HashMap<Symbol, TensorType>,
    /// (rule, class) for every rewrite that changed the e-graph, in firing order.
    pub fired: Vec<(Symbol, Id)>,
}

pub type EG = egg::EGraph<ENode, Ember>;

impl Ember {
    pub fn intern_attrs(&mut self, attrs: &Attrs) -> Symbol {
        let s: Symbol = attr_text(attrs).into();
        self.attrs.entry(s).or_insert_with(|| attrs.clone());
        s
    }
    pub fn intern_type(&mut self, t: &TensorType) -> Symbol {
        let s: Symbol = t.to_string().into();
        self.types.entry(s).or_insert_with(|| t.clone());
        s
    }
}

impl egg::Analysis<ENode> for Ember {
    type Data = Meta;
    fn make(eg: &mut EG, n: &ENode) -> Meta {
        let konst = if n.ten() == Some(TenOp::Constant) {
            eg.analysis.attrs.get(&n.attrs).and_then(|a| match a.get("value") {
                Some(Attr::Float(x)) => Some(*x),
                Some(Attr::Int(i)) => Some(*i as f64),
                Some(Attr::Bool(b)) => Some(*b as i64 as f64),
                _ => None,
            })
        } else {
            None
        };
        Meta { ty: n.ty, konst, loc: None }
    }
    fn merge(&mut self, a: &mut Meta, b: Meta) -> egg::DidMerge {
        let mut changed_a = false;
        if a.konst.is_none() && b.konst.is_some() {
            a.konst = b.konst;
            changed_a = true;
        }
        if a.loc.is_none() && b.loc.is_some() {
            a.loc = b.loc.clone();
            changed_a = true;
        }
        egg::DidMerge(changed_a, true)
    }
}

/// Adds a node built from parts, interning its attributes and type.
pub fn add(eg: &mut EG, op: &str, attrs: &Attrs, ty: &TensorType, args: Vec<Id>) -> Id {
    let attrs = eg.analysis.intern_attrs(attrs);
    let ty = eg.analysis.intern_type(ty);
    eg.add(ENode { op: op.into(), attrs, ty, args })
}

pub fn type_of(eg: &EG, id: Id) -> TensorType {
    eg.analysis.types[&eg[id].data.ty].clone()
}

/// The attribute table of a node (empty for pattern nodes).
pub fn attrs_of<'a>(eg: &'a EG, n: &ENode) -> &'a Attrs {
    static EMPTY: OnceLock<Attrs> = OnceLock::new();
    eg.analysis.attrs.get(&n.attrs).unwrap_or_else(|| EMPTY.get_or_init(Attrs::new))
}

/// The nodes of class `id` with operator `op`, cloned so the caller may add to the e-graph.
pub fn nodes(eg: &EG, id: Id, op: &str) -> Vec<ENode> {
    eg[id].nodes.iter().filter(|n| n.op.as_str() == op).cloned().collect()
}
