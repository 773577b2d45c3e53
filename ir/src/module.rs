//! The IR container: one arena per module holding ops, values, blocks and regions.
//!
//! Entities are `u32` indices into the arena so passes can hold them across mutation, and so the
//! e-graph can map e-nodes back to ops without lifetimes. Erased ops stay in the arena (detached);
//! printing and walking only follow block op lists, so they never see them.

use crate::attr::{Attr, Loc};
use crate::dialect::ten::TenOp;
use crate::types::Type;
use std::collections::BTreeMap;

macro_rules! id {
    ($name:ident) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
id!(OpId);
id!(Value);
id!(BlockId);
id!(RegionId);

pub type Attrs = BTreeMap<String, Attr>;

#[derive(Clone, Debug)]
pub struct OpData {
    /// `dialect.op`, e.g. `torch.aten.add.Tensor`. Fixed at creation (`ten` is derived from it).
    pub name: String,
    /// The `ten` op `name` names, resolved once at creation so consumers match on the enum.
    ten: Option<TenOp>,
    pub operands: Vec<Value>,
    pub results: Vec<Value>,
    pub attrs: Attrs,
    pub regions: Vec<RegionId>,
    pub loc: Loc,
    pub parent: Option<BlockId>,
}

impl OpData {
    /// The `ten` op this is, `None` for other dialects.
    pub fn ten(&self) -> Option<TenOp> {
        self.ten
    }
    /// Whether this is the `ten` op `t`.
    pub fn is(&self, t: TenOp) -> bool {
        self.ten == Some(t)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueDef {
    Result(OpId, u32),
    Arg(BlockId, u32),
}

#[derive(Clone, Debug)]
pub struct ValueData {
    pub ty: Type,
    pub def: ValueDef,
}

#[derive(Clone, Debug, Default)]
pub struct BlockData {
    pub args: Vec<Value>,
    pub ops: Vec<OpId>,
    pub parent: Option<RegionId>,
}

#[derive(Clone, Debug, Default)]
pub struct RegionData {
    pub blocks: Vec<BlockId>,
    pub parent: Option<OpId>,
}

/// A module: attributes plus one top-level block of `func.func` ops.
#[derive(Clone, Debug)]
pub struct Module {
    pub attrs: Attrs,
    pub top: BlockId,
    ops: Vec<OpData>,
    values: Vec<ValueData>,
    blocks: Vec<BlockData>,
    regions: Vec<RegionData>,
}

impl Default for Module {
    fn default() -> Self {
        Self::new()
    }
}

pub const FUNC: &str = "func.func";
pub const RETURN: &str = "func.return";

impl Module {
    /// Symbol bounds from the module attribute `ember.symbols = {s0 = array<i64: min, max>}`.
    pub fn symbol_bounds(&self) -> BTreeMap<String, (i64, i64)> {
        let mut out = BTreeMap::new();
        if let Some(Attr::Dict(d)) = self.attrs.get("ember.symbols") {
            for (k, v) in d {
                if let Some([lo, hi]) = v.as_ints() {
                    out.insert(k.clone(), (*lo, *hi));
                }
            }
        }
        out
    }

    pub fn new() -> Self {
        Module {
            attrs: Attrs::new(),
            top: BlockId(0),
            ops: Vec::new(),
            values: Vec::new(),
            blocks: vec![BlockData::default()],
            regions: Vec::new(),
        }
    }

    // ---- accessors -------------------------------------------------------------------------

    pub fn op(&self, op: OpId) -> &OpData {
        &self.ops[op.index()]
    }
    pub fn op_mut(&mut self, op: OpId) -> &mut OpData {
        &mut self.ops[op.index()]
    }
    pub fn value(&self, v: Value) -> &ValueData {
        &self.values[v.index()]
    }
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v.index()].ty
    }
    pub fn set_ty(&mut self, v: Value, ty: Type) {
        self.values[v.index()].ty = ty;
    }
    pub fn block(&self, b: BlockId) -> &BlockData {
        &self.blocks[b.index()]
    }
    /// Replaces the ops of `b` wholesale (passes that rebuild a body); ops left out are detached.
    pub fn set_block_ops(&mut self, b: BlockId, ops: Vec<OpId>) {
        for &o in &self.blocks[b.index()].ops {
            self.ops[o.index()].parent = None;
        }
        for &o in &ops {
            self.ops[o.index()].parent = Some(b);
        }
        self.blocks[b.index()].ops = ops;
    }
    pub fn region(&self, r: RegionId) -> &RegionData {
        &self.regions[r.index()]
    }
    pub fn result(&self, op: OpId, i: usize) -> Value {
        self.ops[op.index()].results[i]
    }
    pub fn defining_op(&self, v: Value) -> Option<OpId> {
        match self.values[v.index()].def {
            ValueDef::Result(op, _) => Some(op),
            ValueDef::Arg(..) => None,
        }
    }

    /// The functions of the module, in order.
    pub fn funcs(&self) -> Vec<OpId> {
        self.block(self.top).ops.iter().copied().filter(|&o| self.op(o).name == FUNC).collect()
    }
    pub fn func_name(&self, f: OpId) -> &str {
        match self.op(f).attrs.get("sym_name") {
            Some(Attr::Str(s)) => s,
            _ => "",
        }
    }
    pub fn func_by_name(&self, name: &str) -> Option<OpId> {
        self.funcs().into_iter().find(|&f| self.func_name(f) == name)
    }
    /// The entry block of a function (or of any single-region op).
    pub fn entry(&self, op: OpId) -> BlockId {
        self.region(self.op(op).regions[0]).blocks[0]
    }
    pub fn func_type(&self, f: OpId) -> (Vec<Type>, Vec<Type>) {
        match self.op(f).attrs.get("function_type") {
            Some(Attr::Type(Type::Function(a, r))) => (a.clone(), r.clone()),
            _ => (Vec::new(), Vec::new()),
        }
    }
    /// The `func.return` of a function's entry block.
    pub fn func_return(&self, f: OpId) -> Option<OpId> {
        let b = self.entry(f);
        self.block(b).ops.last().copied().filter(|&o| self.op(o).name == RETURN)
    }

    /// Ops of a block, then recursively of nested regions, in program order.
    pub fn walk(&self, b: BlockId, f: &mut dyn FnMut(OpId)) {
        for &op in &self.block(b).ops {
            f(op);
            for &r in &self.op(op).regions {
                for &nb in &self.region(r).blocks {
                    self.walk(nb, f);
                }
            }
        }
    }

    /// Every (op, operand index) using `v`, in program order.
    pub fn uses(&self, v: Value) -> Vec<(OpId, usize)> {
        let mut out = Vec::new();
        self.walk(self.top, &mut |op| {
            for (i, &o) in self.op(op).operands.iter().enumerate() {
                if o == v {
                    out.push((op, i));
                }
            }
        });
        out
    }

    // ---- construction ----------------------------------------------------------------------

    fn new_value(&mut self, ty: Type, def: ValueDef) -> Value {
        self.values.push(ValueData { ty, def });
        Value(self.values.len() as u32 - 1)
    }

    pub fn new_block(&mut self, arg_types: &[Type]) -> BlockId {
        let b = BlockId(self.blocks.len() as u32);
        self.blocks.push(BlockData::default());
        let args =
            arg_types.iter().enumerate().map(|(i, t)| self.new_value(t.clone(), ValueDef::Arg(b, i as u32))).collect();
        self.blocks[b.index()].args = args;
        b
    }

    pub fn new_region(&mut self, blocks: Vec<BlockId>) -> RegionId {
        let r = RegionId(self.regions.len() as u32);
        for &b in &blocks {
            self.blocks[b.index()].parent = Some(r);
        }
        self.regions.push(RegionData { blocks, parent: None });
        r
    }

    /// Creates a detached op; `insert_op` / `append_op` place it.
    pub fn create_op(
        &mut self,
        name: &str,
        operands: Vec<Value>,
        result_types: Vec<Type>,
        attrs: Attrs,
        regions: Vec<RegionId>,
        loc: Loc,
    ) -> OpId {
        let id = OpId(self.ops.len() as u32);
        let results = result_types
            .into_iter()
            .enumerate()
            .map(|(i, t)| self.new_value(t, ValueDef::Result(id, i as u32)))
            .collect();
        for &r in &regions {
            self.regions[r.index()].parent = Some(id);
        }
        let ten = if name.starts_with("ten.") { TenOp::from_name(name) } else { None };
        self.ops.push(OpData { name: name.to_string(), ten, operands, results, attrs, regions, loc, parent: None });
        id
    }

    /// Appends a new op at the end of `block`.
    pub fn append_op(
        &mut self,
        block: BlockId,
        name: &str,
        operands: Vec<Value>,
        result_types: Vec<Type>,
        attrs: Attrs,
        loc: Loc,
    ) -> OpId {
        let op = self.create_op(name, operands, result_types, attrs, Vec::new(), loc);
        self.insert_op(block, self.block(block).ops.len(), op);
        op
    }

    /// Inserts a detached op at position `pos` of `block`.
    pub fn insert_op(&mut self, block: BlockId, pos: usize, op: OpId) {
        debug_assert!(self.ops[op.index()].parent.is_none(), "op already placed");
        self.ops[op.index()].parent = Some(block);
        self.blocks[block.index()].ops.insert(pos, op);
    }

    /// Removes an op from its block. Its results must have no remaining uses.
    pub fn erase_op(&mut self, op: OpId) {
        if let Some(b) = self.ops[op.index()].parent.take() {
            self.blocks[b.index()].ops.retain(|&o| o != op);
        }
    }

    pub fn replace_all_uses(&mut self, old: Value, new: Value) {
        for op in &mut self.ops {
            if op.parent.is_some() {
                for o in &mut op.operands {
                    if *o == old {
                        *o = new;
                    }
                }
            }
        }
    }

    /// Adds `func.func @name(args) -> results` with an empty entry block, and returns (func, entry).
    pub fn add_func(
        &mut self,
        name: &str,
        args: Vec<Type>,
        results: Vec<Type>,
        arg_attrs: Vec<Attrs>,
    ) -> (OpId, BlockId) {
        let entry = self.new_block(&args);
        let region = self.new_region(vec![entry]);
        let mut attrs = Attrs::new();
        attrs.insert("sym_name".into(), Attr::Str(name.into()));
        attrs.insert("function_type".into(), Attr::Type(Type::Function(args, results)));
        if arg_attrs.iter().any(|a| !a.is_empty()) {
            attrs.insert("arg_attrs".into(), Attr::Array(arg_attrs.into_iter().map(Attr::Dict).collect()));
        }
        let f = self.create_op(FUNC, vec![], vec![], attrs, vec![region], Loc::Unknown);
        let top = self.top;
        self.insert_op(top, self.block(top).ops.len(), f);
        (f, entry)
    }

    /// Appends an argument of type `ty` with attributes `attrs` to function `f` (its entry block,
    /// `function_type` and `arg_attrs`).
    pub fn add_arg(&mut self, f: OpId, ty: Type, attrs: Attrs) -> Value {
        let entry = self.entry(f);
        let i = self.block(entry).args.len();
        let v = self.new_value(ty.clone(), ValueDef::Arg(entry, i as u32));
        self.blocks[entry.index()].args.push(v);
        let fa = &mut self.ops[f.index()].attrs;
        if let Some(Attr::Type(Type::Function(args, _))) = fa.get_mut("function_type") {
            args.push(ty);
        }
        let mut all = match fa.remove("arg_attrs") {
            Some(Attr::Array(v)) => v,
            _ => Vec::new(),
        };
        all.resize(i, Attr::Dict(Attrs::new()));
        all.push(Attr::Dict(attrs));
        fa.insert("arg_attrs".into(), Attr::Array(all));
        v
    }

    /// Per-argument attribute dictionaries of a function.
    pub fn arg_attrs(&self, f: OpId, i: usize) -> Option<&Attrs> {
        match self.op(f).attrs.get("arg_attrs") {
            Some(Attr::Array(v)) => match v.get(i) {
                Some(Attr::Dict(d)) => Some(d),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn res_attrs(&self, f: OpId, i: usize) -> Option<&Attrs> {
        match self.op(f).attrs.get("res_attrs") {
            Some(Attr::Array(v)) => match v.get(i) {
                Some(Attr::Dict(d)) => Some(d),
                _ => None,
            },
            _ => None,
        }
    }
}
