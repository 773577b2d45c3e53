//! The rewrite context: reads the torch op being lowered and builds `ten` ops in front of it, each
//! with the torch op's location and result types inferred by the `ten` rules.

use ember_ir::attr::{Attr, Loc};
use ember_ir::dialect::ten::TenOp;
use ember_ir::dialect::{build_op, infer, OpView};
use ember_ir::module::{Attrs, BlockId, Module, OpId, FUNC};
use ember_ir::{DType, SymExpr, TensorType, Type, Value};

/// Marks the function argument that seeds the random ops (an int64 scalar user input).
pub const RNG_SEED: &str = "ember.rng_seed";
/// Module attribute: how many random ops took a stream of the seed so far.
const RNG_STREAMS: &str = "ember.rng_streams";

/// `Some(values)` replace the torch op's results in order; `None` leaves the op unlowered.
pub type Lowered = Result<Option<Vec<Value>>, String>;

pub fn c(v: i64) -> SymExpr {
    SymExpr::Const(v)
}

/// Accumulation dtype of reductions and normalizations: half floats compute in f32, as torch does.
pub fn acc_dtype(dt: DType) -> DType {
    match dt {
        DType::F16 | DType::BF16 | DType::F8E4M3FN | DType::F8E5M2 => DType::F32,
        d => d,
    }
}

/// Normalizes a possibly negative dim against `rank`.
pub fn norm_dim(d: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if d < -r || d >= r.max(1) {
        return Err(format!("dim {d} is out of range for rank {rank}"));
    }
    Ok(if d < 0 { (d + r) as usize } else { d as usize })
}

pub struct Cx<'m> {
    pub m: &'m mut Module,
    pub op: OpId,
    block: BlockId,
    pos: usize,
    loc: Loc,
}

impl<'m> Cx<'m> {
    pub fn new(m: &'m mut Module, op: OpId) -> Self {
        let block = m.op(op).parent.expect("walked ops are placed");
        let pos = m.block(block).ops.iter().position(|&o| o == op).expect("op is in its block");
        let loc = m.op(op).loc.clone();
        Cx { m, op, block, pos, loc }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn name(&self) -> &str {
        &self.m.op(self.op).name
    }

    /// An error naming the torch op and the user's line.
    pub fn err(&self, msg: &str) -> String {
        let at = self.loc.describe();
        if at.is_empty() {
            format!("cannot lower `{}`: {msg}", self.name())
        } else {
            format!("cannot lower `{}` at {at}: {msg}", self.name())
        }
    }

    /// The `func.func` the op is in.
    fn func(&self) -> Result<OpId, String> {
        let mut b = self.block;
        loop {
            let r = self.m.block(b).parent.ok_or_else(|| self.err("the op is not inside a function"))?;
            let op = self.m.region(r).parent.ok_or_else(|| self.err("the op is not inside a function"))?;
            if self.m.op(op).name == FUNC {
                return Ok(op);
            }
            b = self.m.op(op).parent.ok_or_else(|| self.err("the op is not inside a function"))?;
        }
    }

    /// The seed of the function's random ops, a user input (int64 scalar `ember_seed`, added
    /// last on first use, so a graph without random ops keeps its signature), and a stream
    /// number no other random op of the module has: the op's draws are Philox's counters
    /// (element, 0, stream, 0) under that seed.
    pub fn rng_seed(&mut self) -> Result<(Value, i64), String> {
        let f = self.func()?;
        let entry = self.m.entry(f);
        let n = self.m.block(entry).args.len();
        let seed = match (0..n).find(|&i| self.m.arg_attrs(f, i).is_some_and(|a| a.contains_key(RNG_SEED))) {
            Some(i) => self.m.block(entry).args[i],
            None => {
                let mut attrs = Attrs::new();
                attrs.insert("ember.input".into(), Attr::Str("ember_seed".into()));
                attrs.insert(RNG_SEED.into(), Attr::Bool(true));
                self.m.add_arg(f, Type::Tensor(TensorType::new(vec![], DType::I64)), attrs)
            }
        };
        let stream = match self.m.attrs.get(RNG_STREAMS) {
            Some(Attr::Int(k)) => *k,
            _ => 0,
        };
        self.m.attrs.insert(RNG_STREAMS.into(), Attr::Int(stream + 1));
        Ok((seed, stream))
    }

    // ---- reading the torch op ------------------------------------------------------------------

    fn view(&self) -> OpView<'_> {
        OpView::new(self.m, self.op).expect("torch ops have table entries")
    }

    /// The tensor operand of parameter `name`, if present.
    pub fn operand(&self, name: &str) -> Option<Value> {
        self.view().operand(name)
    }

    pub fn arg(&self, name: &str) -> Result<Value, String> {
        self.operand(name).ok_or_else(|| self.err(&format!("missing operand `{name}`")))
    }

    /// A `Tensor[]` / `Tensor?[]` parameter, with `None` at absent positions.
    pub fn operand_list(&self, name: &str) -> Result<Vec<Option<Value>>, String> {
        let groups = self.view().operand_groups().map_err(|e| self.err(&e))?;
        Ok(groups.into_iter().find(|(n, _)| *n == name).map(|(_, v)| v).unwrap_or_default())
    }

    /// The attribute `name`, or the signature's default when absent.
    pub fn attr(&self, name: &str) -> Option<Attr> {
        let v = self.view();
        v.attr(name).cloned().or_else(|| v.def.signature().param(name).and_then(|p| p.default.clone()))
    }

    pub fn int(&self, name: &str) -> Result<i64, String> {
        self.attr(name)
            .and_then(|a| a.as_int())
            .ok_or_else(|| self.err(&format!("attribute `{name}` must be an integer")))
    }

    pub fn int_or(&self, name: &str, d: i64) -> Result<i64, String> {
        match self.attr(name) {
            None => Ok(d),
            Some(_) => self.int(name),
        }
    }

    pub fn bool_or(&self, name: &str, d: bool) -> bool {
        self.attr(name).and_then(|a| a.as_bool()).unwrap_or(d)
    }

    pub fn str_attr(&self, name: &str) -> Option<String> {
        self.attr(name).and_then(|a| a.as_str().map(str::to_string))
    }

    /// A size-list attribute (static or symbolic); a single int reads as a one-element list.
    pub fn dims_attr(&self, name: &str) -> Result<Vec<SymExpr>, String> {
        let a = self.attr(name).ok_or_else(|| self.err(&format!("missing attribute `{name}`")))?;
        a.as_dims()
            .or_else(|| a.as_sym().map(|s| vec![s]))
            .ok_or_else(|| self.err(&format!("attribute `{name}` must be a size list")))
    }

    /// A `dim` attribute (int or list) normalized to `0..rank`, sorted; None or [] means every dim.
    pub fn reduce_dims(&self, rank: usize) -> Result<Vec<usize>, String> {
        if rank == 0 {
            return Ok(vec![]);
        }
        let raw = match self.attr("dim") {
            None => vec![],
            Some(Attr::Int(i)) => vec![i],
            Some(Attr::Ints(v)) => v,
            Some(a) => return Err(self.err(&format!("attribute `dim` must be an integer or a list, found `{a}`"))),
        };
        if raw.is_empty() {
            return Ok((0..rank).collect());
        }
        let mut out =
            raw.iter().map(|&d| norm_dim(d, rank).map_err(|e| self.err(&e))).collect::<Result<Vec<_>, _>>()?;
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The type of the torch op's result `i`.
    pub fn out(&self, i: usize) -> Result<TensorType, String> {
        let r = self.m.op(self.op).results.get(i).copied().ok_or_else(|| self.err(&format!("missing result {i}")))?;
        self.m.ty(r).tensor().cloned().ok_or_else(|| self.err(&format!("result {i} is not a tensor")))
    }

    pub fn tt(&self, v: Value) -> TensorType {
        self.m.ty(v).tensor().cloned().expect("ten values are tensors")
    }

    // ---- building ten ops -----------------------------------------------------------------------

    /// Builds `op` in front of the torch op; returns its results.
    pub fn emit_n(&mut self, op: TenOp, operands: Vec<Value>, attrs: Vec<(&str, Attr)>) -> Result<Vec<Value>, String> {
        let attrs: Attrs = attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let op = build_op(self.m, op.name(), operands, attrs, self.loc.clone()).map_err(|e| self.err(&e))?;
        self.m.insert_op(self.block, self.pos, op);
        self.pos += 1;
        Ok(self.m.op(op).results.clone())
    }

    pub fn emit(&mut self, op: TenOp, operands: Vec<Value>, attrs: Vec<(&str, Attr)>) -> Result<Value, String> {
        Ok(self.emit_n(op, operands, attrs)?[0])
    }

    pub fn unary(&mut self, op: TenOp, x: Value) -> Result<Value, String> {
        self.emit(op, vec![x], vec![])
    }

    /// `x` as `dtype` (no op when it already is).
    pub fn convert(&mut self, x: Value, dtype: DType) -> Result<Value, String> {
        let t = self.tt(x);
        if t.dtype == dtype {
            return Ok(x);
        }
        if let Some(v) = self.constant_value(x).filter(|v| exact_in(v, t.dtype)) {
            return self.constant(&v, dtype, &t.dims);
        }
        self.emit(TenOp::Convert, vec![x], vec![("dtype", Attr::DType(dtype))])
    }

    /// Right-aligned (numpy) broadcast of `x` to `shape` (no op when it already has it).
    pub fn bcast(&mut self, x: Value, shape: &[SymExpr]) -> Result<Value, String> {
        let rank = self.tt(x).rank();
        if rank > shape.len() {
            return Err(self.err(&format!("cannot broadcast a rank-{rank} value to rank {}", shape.len())));
        }
        let off = shape.len() - rank;
        self.bcast_in_dim(x, shape, &(off..shape.len()).collect::<Vec<_>>())
    }

    /// `ten.broadcast` with operand dim i placed at result dim `map[i]` (no op when nothing changes).
    pub fn bcast_in_dim(&mut self, x: Value, shape: &[SymExpr], map: &[usize]) -> Result<Value, String> {
        let t = self.tt(x);
        if t.dims == shape {
            return Ok(x);
        }
        if let Some(v) = self.constant_value(x) {
            return self.constant(&v, t.dtype, shape);
        }
        let dims = Attr::Ints(map.iter().map(|&d| d as i64).collect());
        self.emit(TenOp::Broadcast, vec![x], vec![("shape", Attr::dims(shape.to_vec())), ("dims", dims)])
    }

    /// `x` converted to `dtype` and broadcast to `shape`.
    pub fn coerce(&mut self, x: Value, dtype: DType, shape: &[SymExpr]) -> Result<Value, String> {
        let x = self.convert(x, dtype)?;
        self.bcast(x, shape)
    }

    pub fn reshape(&mut self, x: Value, shape: &[SymExpr]) -> Result<Value, String> {
        if self.tt(x).dims == shape {
            return Ok(x);
        }
        self.emit(TenOp::Reshape, vec![x], vec![("shape", Attr::dims(shape.to_vec()))])
    }

    /// The value of `x` when a `ten.constant` defines it (broadcasts and conversions of splats
    /// fold into new splats).
    fn constant_value(&self, x: Value) -> Option<Attr> {
        let op = self.m.defining_op(x)?;
        let d = self.m.op(op);
        d.is(TenOp::Constant).then(|| d.attrs.get("value").cloned()).flatten()
    }

    /// A splat of the scalar `value` (a torch Scalar attribute) as `dtype`.
    pub fn constant(&mut self, value: &Attr, dtype: DType, shape: &[SymExpr]) -> Result<Value, String> {
        let value = scalar_as(value, dtype).ok_or_else(|| self.err(&format!("`{value}` is not a scalar")))?;
        self.emit(
            TenOp::Constant,
            vec![],
            vec![("value", value), ("shape", Attr::dims(shape.to_vec())), ("dtype", Attr::DType(dtype))],
        )
    }

    pub fn constf(&mut self, value: f64, dtype: DType, shape: &[SymExpr]) -> Result<Value, String> {
        self.constant(&Attr::Float(value), dtype, shape)
    }

    /// A splat of `value` with the shape and dtype of `like`.
    pub fn splat_like(&mut self, value: f64, like: Value) -> Result<Value, String> {
        let t = self.tt(like);
        self.constf(value, t.dtype, &t.dims)
    }

    /// Elementwise `op` after broadcasting both operands to their common shape. Both must
    /// already have the computation dtype.
    pub fn binary(&mut self, op: TenOp, a: Value, b: Value) -> Result<Value, String> {
        let (ta, tb) = (self.tt(a), self.tt(b));
        let shape = infer::broadcast(&[&ta.dims, &tb.dims]).map_err(|e| self.err(&e.0))?;
        let a = self.bcast(a, &shape)?;
        let b = self.bcast(b, &shape)?;
        self.emit(op, vec![a, b], vec![])
    }

    /// `x op value` with a splat constant of x's shape and dtype.
    pub fn binary_scalar(&mut self, op: TenOp, x: Value, value: f64) -> Result<Value, String> {
        let k = self.splat_like(value, x)?;
        self.emit(op, vec![x, k], vec![])
    }

    /// `ten.compare` after broadcasting; operands must share a dtype.
    pub fn compare(&mut self, direction: &str, a: Value, b: Value) -> Result<Value, String> {
        let (ta, tb) = (self.tt(a), self.tt(b));
        let shape = infer::broadcast(&[&ta.dims, &tb.dims]).map_err(|e| self.err(&e.0))?;
        let a = self.bcast(a, &shape)?;
        let b = self.bcast(b, &shape)?;
        self.emit(TenOp::Compare, vec![a, b], vec![("direction", Attr::Str(direction.into()))])
    }

    pub fn select(&mut self, pred: Value, on_true: Value, on_false: Value) -> Result<Value, String> {
        self.emit(TenOp::Select, vec![pred, on_true, on_false], vec![])
    }

    /// `x != 0` as bool (torch's truthiness); no op for bool `x`.
    pub fn truthy(&mut self, x: Value) -> Result<Value, String> {
        if self.tt(x).dtype == DType::Bool {
            return Ok(x);
        }
        let zero = self.splat_like(0.0, x)?;
        self.compare("NE", x, zero)
    }

    /// Where each element of the flat boolean mask `keep` [n] goes when the kept ones are packed
    /// into `len` slots in order: its rank among them (a running count), or `len` for the others,
    /// out of range, where `ten.scatter` skips them.
    pub fn packed_positions(&mut self, keep: Value, len: i64) -> Result<Value, String> {
        let shape = self.tt(keep).dims;
        let ones = self.convert(keep, DType::I64)?;
        let rank = self.emit(TenOp::Cumsum, vec![ones], vec![("dim", Attr::Int(0))])?;
        let rank = self.binary_scalar(TenOp::Sub, rank, 1.0)?;
        let skip = self.constant(&Attr::Int(len), DType::I64, &shape)?;
        self.select(keep, rank, skip)
    }

    /// `ten.reduce` over `dims` (no op when `dims` is empty).
    pub fn reduce(&mut self, x: Value, kind: &str, dims: &[usize]) -> Result<Value, String> {
        if dims.is_empty() {
            return Ok(x);
        }
        let dims = Attr::Ints(dims.iter().map(|&d| d as i64).collect());
        self.emit(TenOp::Reduce, vec![x], vec![("kind", Attr::Str(kind.into())), ("dims", dims)])
    }

    /// Reduces `dims` of `x` and broadcasts the result back to x's shape (for softmax and norms).
    pub fn reduce_bcast(&mut self, x: Value, kind: &str, dims: &[usize]) -> Result<Value, String> {
        let t = self.tt(x);
        let r = self.reduce(x, kind, dims)?;
        let kept: Vec<usize> = (0..t.rank()).filter(|d| !dims.contains(d)).collect();
        self.bcast_in_dim(r, &t.dims, &kept)
    }

    /// The element count of `dims` of `shape` as a `dtype` tensor of `out` shape. A symbolic
    /// count is the sum of a ones tensor over those dims (ten has no op reading a size).
    pub fn count(&mut self, shape: &[SymExpr], dims: &[usize], dtype: DType, out: &[SymExpr]) -> Result<Value, String> {
        let sel: Vec<SymExpr> = dims.iter().map(|&d| shape[d].clone()).collect();
        let n = sel.iter().cloned().fold(c(1), SymExpr::times);
        if let Some(n) = n.as_const() {
            return self.constf(n as f64, dtype, out);
        }
        let ones = self.constant(&Attr::Int(1), DType::I64, &sel)?;
        let all: Vec<usize> = (0..sel.len()).collect();
        let n = self.reduce(ones, "sum", &all)?;
        let n = self.convert(n, dtype)?;
        self.bcast(n, out)
    }
}

/// A torch Scalar attribute as a `ten.constant` value of `dtype`.
pub fn scalar_as(v: &Attr, dtype: DType) -> Option<Attr> {
    let f = v.as_float()?;
    Some(if dtype.is_float() {
        Attr::Float(f)
    } else if dtype == DType::Bool {
        Attr::Bool(f != 0.0)
    } else {
        match v {
            Attr::Int(i) => Attr::Int(*i),
            _ => Attr::Int(f as i64),
        }
    })
}

/// Whether a `dtype` splat holds `v` exactly, so converting it equals a splat of `v` itself.
fn exact_in(v: &Attr, dtype: DType) -> bool {
    match v {
        Attr::Float(f) => dtype == DType::F64 || (dtype == DType::F32 && (*f as f32) as f64 == *f) || !f.is_finite(),
        _ => true,
    }
}
