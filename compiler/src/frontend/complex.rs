//! Complex tensors inside a graph (RoPE as Llama 4, DeepSeek-V2 and TorchTitan write it:
//! `polar`, `view_as_complex`, a complex product, `view_as_real`).
//!
//! A complex value of shape S is imported as a real value of shape S + [2] holding (real,
//! imaginary) pairs: torch's own memory layout for complex tensors, so complex weights import
//! byte for byte and `view_as_complex` / `view_as_real` are aliases. Every node that reads or
//! makes a complex value is rewritten here into real torch ops with complex semantics, or refused
//! with an error naming the op: no op downstream ever reads a pair tensor as if it were real.
//! Graph inputs and outputs stay real (torch.view_as_real at the boundary).

use super::{Importer, Node};
use ember_ir::attr::{Attr, Loc};
use ember_ir::dialect::{self, OpDef, OpView};
use ember_ir::module::{Attrs, Value};
use ember_ir::sym::SymExpr;
use ember_ir::types::{DType, TensorType, Type};
use serde_json::Value as Json;
use std::collections::BTreeMap;

type R<T> = Result<T, String>;

/// The real element type of a serialized complex ScalarType (complex32, complex64, complex128).
pub fn complex_part(code: i64) -> Option<DType> {
    match code {
        9 => Some(DType::F16),
        10 => Some(DType::F32),
        11 => Some(DType::F64),
        _ => None,
    }
}

/// The pair type of a complex tensor of `dims`.
pub fn pair_type(mut dims: Vec<SymExpr>, part: DType) -> TensorType {
    dims.push(SymExpr::Const(2));
    TensorType::new(dims, part)
}

/// Ops rewritten here; any other op that touches a complex value is refused.
pub const SUPPORTED: &[&str] = &[
    "_assert_tensor_metadata",
    "_conj",
    "_conj_physical",
    "_fft_c2c",
    "_fft_c2r",
    "_fft_r2c",
    "_neg_view",
    "_to_copy",
    "_unsafe_view",
    "abs",
    "add.Scalar",
    "add.Tensor",
    "alias",
    "angle",
    "cat",
    "clone",
    "complex",
    "conj_physical",
    "constant_pad_nd",
    "detach",
    "div.Scalar",
    "div.Tensor",
    "exp",
    "expand",
    "index.Tensor",
    "lift_fresh_copy",
    "mean.dim",
    "mul.Scalar",
    "mul.Tensor",
    "neg",
    "permute",
    "polar",
    "real",
    "imag",
    "reshape",
    "resolve_conj",
    "resolve_neg",
    "select.int",
    "slice.Tensor",
    "squeeze.dim",
    "squeeze.dims",
    "stack",
    "sub.Scalar",
    "sub.Tensor",
    "sum.dim_IntList",
    "transpose.int",
    "unsqueeze",
    "view",
    "view_as_complex",
    "view_as_real",
];

/// Where rewritten ops go, and the node's arguments by parameter name.
struct At<'n> {
    block: ember_ir::BlockId,
    loc: Loc,
    def: &'static OpDef,
    given: &'n BTreeMap<&'n str, &'n Json>,
}

impl Importer<'_> {
    /// Whether `node` reads or makes a complex value (or names a complex dtype).
    pub(super) fn touches_complex(&self, node: &Node) -> bool {
        let complex_code = |j: &Json| j.get("as_scalar_type").and_then(|c| c.as_i64()).and_then(complex_part);
        let mut read = Vec::new();
        for a in &node.inputs {
            if complex_code(&a.arg).is_some() || a.arg.get("as_complex").is_some() {
                return true;
            }
            names(&a.arg, &mut read);
        }
        if read.iter().any(|n| self.values.get(n).is_some_and(|v| self.complex.contains(v))) {
            return true;
        }
        let mut made = Vec::new();
        node.outputs.iter().for_each(|o| names(o, &mut made));
        made.iter()
            .any(|n| self.ep.graph_module.graph.tensor_values.get(n).is_some_and(|m| complex_part(m.dtype).is_some()))
    }

    /// Rewrites one node on complex values into real ops (see the module doc).
    pub(super) fn complex_node(
        &mut self,
        block: ember_ir::BlockId,
        loc: &Loc,
        def: &'static OpDef,
        given: &BTreeMap<&str, &Json>,
        node: &Node,
    ) -> R<()> {
        let name = def.name.strip_prefix("torch.aten.").unwrap_or(def.name);
        if !SUPPORTED.contains(&name) {
            return Err(format!(
                "`{}` on complex tensors is not supported: Ember imports complex values as (real, imaginary) pairs and \
                 rewrites only {} into real ops",
                node.target,
                SUPPORTED.join(", ")
            ));
        }
        let at = At { block, loc: loc.clone(), def, given };
        // A result that is an operand itself (view_as_real of a pair) gets its own value, so
        // marking it complex or real cannot change what the operand is.
        let mut read = Vec::new();
        node.inputs.iter().for_each(|a| names(&a.arg, &mut read));
        let operands: Vec<Value> = read.iter().filter_map(|n| self.values.get(n).copied()).collect();
        let results = self.rewrite(&at, name)?;
        // Every result must have exactly the type torch recorded (as pairs where complex).
        let mut outs = Vec::new();
        for o in node.outputs.iter().filter(|o| o.get("as_none").is_none()) {
            match o.pointer("/as_tensor/name").and_then(|n| n.as_str()) {
                Some(n) => outs.push(n.to_string()),
                None => return Err(format!("unsupported output `{o}` of `{}` on complex tensors", node.target)),
            }
        }
        if outs.len() != results.len() {
            return Err(format!(
                "internal error: the complex rewrite of `{}` gives {} values for {} outputs",
                node.target,
                results.len(),
                outs.len()
            ));
        }
        for (n, v) in outs.into_iter().zip(results) {
            let meta = self.ep.graph_module.graph.tensor_values.get(&n).cloned();
            let want = match meta {
                Some(meta) => self.value_type(&meta, &format!("`{n}`")).map_err(|e| e.msg)?,
                None => return Err(format!("`{n}` has no recorded type")),
            };
            let got = self.m.ty(v).tensor().cloned();
            if got.as_ref() != Some(&want.0) {
                return Err(format!(
                    "internal error: the complex rewrite of `{}` gives {} where torch recorded {}{}",
                    node.target,
                    self.m.ty(v),
                    Type::Tensor(want.0.clone()),
                    if want.1 { " (complex, as pairs)" } else { "" }
                ));
            }
            let v = if operands.contains(&v) { self.emit(&at, "alias", vec![vec![v]], vec![])? } else { v };
            if want.1 {
                self.complex.insert(v);
            }
            if self.values.insert(n.clone(), v).is_some() {
                return Err(format!("defines `{n}`, which an earlier node or input already defines"));
            }
        }
        Ok(())
    }

    fn rewrite(&mut self, at: &At, name: &str) -> R<Vec<Value>> {
        let one = |v: Value| Ok(vec![v]);
        match name {
            "_assert_tensor_metadata" => {
                // A check of what the import already knows: the value is complex, of this part type.
                let a = self.complex_operand(at, "a")?;
                let code = at.given.get("dtype").and_then(|d| d.get("as_scalar_type")).and_then(|c| c.as_i64());
                match code.map(complex_part) {
                    None => Ok(vec![]),
                    Some(Some(part)) if part == self.tt(a).dtype => Ok(vec![]),
                    Some(_) => Err(format!(
                        "asserts dtype code {} of a complex {} value",
                        code.unwrap_or(-1),
                        self.tt(a).dtype.torch_name()
                    )),
                }
            }
            "_fft_c2r" => {
                // A complex-to-complex inverse over every dim but the last, then the real inverse
                // of a Hermitian signal over the last (pocketfft's order, which torch uses).
                let z = self.complex_operand(at, "self")?;
                let (mut dims, scale_mode) = self.fft_dims(at, z, false)?;
                let last = dims.pop().ok_or("`_fft_c2r` over no dim")?;
                let len = self
                    .attr(at, "last_dim_size")?
                    .and_then(|a| a.as_int())
                    .ok_or("`_fft_c2r` with a symbolic `last_dim_size`")?;
                let (mut re, mut im) = self.parts(at, z)?;
                for &d in dims.iter().rev() {
                    (re, im) = self.dft(at, re, Some(im), d as usize, false, false, scale_mode)?;
                }
                one(self.hermitian_inverse(at, re, im, last as usize, len, scale_mode)?)
            }
            "_fft_r2c" | "_fft_c2c" => {
                let x = self.operand(at, "self")?;
                let r2c = name == "_fft_r2c";
                let (dims, scale_mode) = self.fft_dims(at, x, r2c)?;
                let forward = r2c || self.attr(at, "forward")?.and_then(|a| a.as_int()).unwrap_or(1) != 0;
                let onesided = r2c && self.attr(at, "onesided")?.and_then(|a| a.as_int()).unwrap_or(0) != 0;
                // The last dim first: a one-sided transform halves it, as torch's does.
                let (mut re, mut im) = if r2c {
                    (x, None)
                } else {
                    let (r, i) = self.parts(at, x)?;
                    (r, Some(i))
                };
                for (i, &d) in dims.iter().rev().enumerate() {
                    let (r, j) = self.dft(at, re, im, d as usize, forward, onesided && i == 0, scale_mode)?;
                    (re, im) = (r, Some(j));
                }
                let im = match im {
                    Some(im) => im,
                    None => self.emit(at, "zeros_like", vec![vec![re]], vec![])?,
                };
                one(self.pair(at, re, im)?)
            }
            "view_as_complex" => {
                let x = self.operand(at, "self")?;
                let t = self.tt(x);
                if t.dims.last() != Some(&SymExpr::Const(2)) {
                    return Err(format!("view_as_complex needs a last dim of size 2, found {}", Type::Tensor(t)));
                }
                one(self.emit(at, "alias", vec![vec![x]], vec![])?)
            }
            "view_as_real" | "alias" | "detach" | "clone" | "lift_fresh_copy" | "resolve_conj" | "resolve_neg" => {
                let z = self.operand(at, "self")?;
                one(self.emit(at, "alias", vec![vec![z]], vec![])?)
            }
            "polar" => {
                let (r, theta) = (self.operand(at, "abs")?, self.operand(at, "angle")?);
                let c = self.emit(at, "cos", vec![vec![theta]], vec![])?;
                let s = self.emit(at, "sin", vec![vec![theta]], vec![])?;
                let re = self.bin(at, "mul.Tensor", r, c)?;
                let im = self.bin(at, "mul.Tensor", r, s)?;
                one(self.pair(at, re, im)?)
            }
            "complex" => {
                let (re, im) = (self.operand(at, "real")?, self.operand(at, "imag")?);
                let shape = broadcast(&self.tt(re).dims, &self.tt(im).dims)?;
                let re = self.expand_to(at, re, &shape)?;
                let im = self.expand_to(at, im, &shape)?;
                one(self.pair(at, re, im)?)
            }
            "real" | "imag" => {
                let z = self.complex_operand(at, "self")?;
                one(self.part(at, z, (name == "imag") as i64)?)
            }
            "abs" => {
                // hypot(re, im) as torch computes it: m·sqrt(1 + (n/m)²) with m = max(|re|, |im|)
                // and n the other, so neither overflows nor underflows where |z| is finite and
                // normal; 0 at 0 and inf where either part is.
                let z = self.complex_operand(at, "self")?;
                let (re, im) = self.parts(at, z)?;
                let (re, im) =
                    (self.emit(at, "abs", vec![vec![re]], vec![])?, self.emit(at, "abs", vec![vec![im]], vec![])?);
                let (m, n) = (self.bin(at, "maximum", re, im)?, self.bin(at, "minimum", re, im)?);
                let q = self.bin(at, "div.Tensor", n, m)?;
                let qq = self.bin(at, "mul.Tensor", q, q)?;
                let one_plus = self.emit(at, "add.Scalar", vec![vec![qq]], vec![("other", Attr::Float(1.0))])?;
                let root = self.emit(at, "sqrt", vec![vec![one_plus]], vec![])?;
                let h = self.bin(at, "mul.Tensor", m, root)?;
                let zero = self.emit(at, "eq.Scalar", vec![vec![m]], vec![("other", Attr::Float(0.0))])?;
                let h = self.emit(at, "where.self", vec![vec![zero], vec![m], vec![h]], vec![])?;
                let inf = self.emit(at, "isinf", vec![vec![m]], vec![])?;
                one(self.emit(at, "where.self", vec![vec![inf], vec![m], vec![h]], vec![])?)
            }
            "angle" => {
                let z = self.complex_operand(at, "self")?;
                let (re, im) = self.parts(at, z)?;
                one(self.bin(at, "atan2", im, re)?)
            }
            "_conj" | "conj_physical" | "_conj_physical" => {
                let z = self.complex_operand(at, "self")?;
                let (re, im) = self.parts(at, z)?;
                let im = self.emit(at, "neg", vec![vec![im]], vec![])?;
                one(self.pair(at, re, im)?)
            }
            "neg" | "_neg_view" => {
                let z = self.complex_operand(at, "self")?;
                one(self.emit(at, "neg", vec![vec![z]], vec![])?)
            }
            "exp" => {
                let z = self.complex_operand(at, "self")?;
                let (re, im) = self.parts(at, z)?;
                let e = self.emit(at, "exp", vec![vec![re]], vec![])?;
                let c = self.emit(at, "cos", vec![vec![im]], vec![])?;
                let s = self.emit(at, "sin", vec![vec![im]], vec![])?;
                let re = self.bin(at, "mul.Tensor", e, c)?;
                let im = self.bin(at, "mul.Tensor", e, s)?;
                one(self.pair(at, re, im)?)
            }
            "add.Tensor" | "sub.Tensor" => {
                let (a, b) = (self.operand(at, "self")?, self.operand(at, "other")?);
                let part = self.part_dtype(&[a, b])?;
                let (a, b) = (self.promote(at, a, part)?, self.promote(at, b, part)?);
                let mut attrs = vec![];
                if let Some(alpha) = self.real_attr(at, "alpha")? {
                    attrs.push(("alpha", alpha));
                }
                one(self.emit(at, name, vec![vec![a], vec![b]], attrs)?)
            }
            "add.Scalar" | "sub.Scalar" => {
                // A real scalar moves the real part only.
                let z = self.complex_operand(at, "self")?;
                let (re, im) = self.parts(at, z)?;
                let mut attrs = vec![("other", self.real_attr(at, "other")?.ok_or("missing `other`")?)];
                if let Some(alpha) = self.real_attr(at, "alpha")? {
                    attrs.push(("alpha", alpha));
                }
                let re = self.emit(at, name, vec![vec![re]], attrs)?;
                one(self.pair(at, re, im)?)
            }
            "mul.Scalar" | "div.Scalar" => {
                let z = self.complex_operand(at, "self")?;
                let other = self.real_attr(at, "other")?.ok_or("missing `other`")?;
                one(self.emit(at, name, vec![vec![z]], vec![("other", other)])?)
            }
            "mul.Tensor" => {
                let (a, b) = (self.operand(at, "self")?, self.operand(at, "other")?);
                match (self.complex.contains(&a), self.complex.contains(&b)) {
                    (true, true) => {
                        let (ar, ai) = self.parts(at, a)?;
                        let (br, bi) = self.parts(at, b)?;
                        let (rr, ii) = (self.bin(at, "mul.Tensor", ar, br)?, self.bin(at, "mul.Tensor", ai, bi)?);
                        let (ri, ir) = (self.bin(at, "mul.Tensor", ar, bi)?, self.bin(at, "mul.Tensor", ai, br)?);
                        let re = self.bin(at, "sub.Tensor", rr, ii)?;
                        let im = self.bin(at, "add.Tensor", ri, ir)?;
                        one(self.pair(at, re, im)?)
                    }
                    (true, false) => one(self.scale(at, "mul.Tensor", a, b)?),
                    (false, true) => one(self.scale(at, "mul.Tensor", b, a)?),
                    (false, false) => Err("internal error: no complex operand".into()),
                }
            }
            "div.Tensor" => {
                let (a, b) = (self.operand(at, "self")?, self.operand(at, "other")?);
                if !self.complex.contains(&b) {
                    return one(self.scale(at, "div.Tensor", a, b)?);
                }
                // a / b = a conj(b) / |b|^2.
                let part = self.part_dtype(&[a, b])?;
                let a = self.promote(at, a, part)?;
                let (ar, ai) = self.parts(at, a)?;
                let (br, bi) = self.parts(at, b)?;
                let (bb, cc) = (self.bin(at, "mul.Tensor", br, br)?, self.bin(at, "mul.Tensor", bi, bi)?);
                let d = self.bin(at, "add.Tensor", bb, cc)?;
                let (rr, ii) = (self.bin(at, "mul.Tensor", ar, br)?, self.bin(at, "mul.Tensor", ai, bi)?);
                let (ir, ri) = (self.bin(at, "mul.Tensor", ai, br)?, self.bin(at, "mul.Tensor", ar, bi)?);
                let re = self.bin(at, "add.Tensor", rr, ii)?;
                let im = self.bin(at, "sub.Tensor", ir, ri)?;
                let re = self.bin(at, "div.Tensor", re, d)?;
                let im = self.bin(at, "div.Tensor", im, d)?;
                one(self.pair(at, re, im)?)
            }
            "view" | "_unsafe_view" | "reshape" | "expand" => {
                let z = self.complex_operand(at, "self")?;
                let key = if name == "reshape" { "shape" } else { "size" };
                let mut dims =
                    self.attr(at, key)?.and_then(|a| a.as_dims()).ok_or_else(|| format!("missing `{key}`"))?;
                dims.push(SymExpr::Const(2));
                one(self.emit(at, name, vec![vec![z]], vec![(key, Attr::dims(dims))])?)
            }
            "constant_pad_nd" => {
                // The pair dim is the last, which `pad` lists first; the value pads the real part
                // and the imaginary part gets 0.
                let z = self.complex_operand(at, "self")?;
                let pad =
                    self.attr(at, "pad")?.and_then(|a| a.as_ints().map(<[i64]>::to_vec)).ok_or("missing `pad`")?;
                let value = self.real_attr(at, "value")?.and_then(|a| a.as_float()).unwrap_or(0.0);
                if value == 0.0 {
                    return one(self.emit(
                        at,
                        name,
                        vec![vec![z]],
                        vec![("pad", Attr::Ints([&[0, 0][..], &pad].concat()))],
                    )?);
                }
                let (re, im) = self.parts(at, z)?;
                let re = self.emit(
                    at,
                    name,
                    vec![vec![re]],
                    vec![("pad", Attr::Ints(pad.clone())), ("value", Attr::Float(value))],
                )?;
                let im = self.emit(at, name, vec![vec![im]], vec![("pad", Attr::Ints(pad))])?;
                one(self.pair(at, re, im)?)
            }
            "unsqueeze" => {
                let z = self.complex_operand(at, "self")?;
                let d = self.dim(at, z, "dim", 1)?;
                one(self.emit(at, name, vec![vec![z]], vec![("dim", Attr::Int(d))])?)
            }
            "squeeze.dim" | "select.int" | "slice.Tensor" | "transpose.int" => {
                let z = self.complex_operand(at, "self")?;
                let mut attrs = Vec::new();
                for p in &at.def.signature().params {
                    if p.kind.is_tensor() {
                        continue;
                    }
                    let Some(a) = self.attr(at, &p.name)? else { continue };
                    let a = if ["dim", "dim0", "dim1"].contains(&p.name.as_str()) {
                        Attr::Int(self.dim(at, z, &p.name, 0)?)
                    } else {
                        a
                    };
                    attrs.push((p.name.as_str(), a));
                }
                one(self.emit(at, name, vec![vec![z]], attrs)?)
            }
            "squeeze.dims" | "permute" => {
                let z = self.complex_operand(at, "self")?;
                let key = if name == "permute" { "dims" } else { "dim" };
                let mut dims = self.dims(at, z, key)?;
                if name == "permute" {
                    dims.push(self.tt(z).rank() as i64 - 1);
                }
                one(self.emit(at, name, vec![vec![z]], vec![(key, Attr::Ints(dims))])?)
            }
            "sum.dim_IntList" | "mean.dim" => {
                let z = self.complex_operand(at, "self")?;
                let rank = self.tt(z).rank() as i64 - 1;
                let mut dims = self.dims(at, z, "dim")?;
                if dims.is_empty() {
                    dims = (0..rank).collect();
                }
                if self.attr(at, "dtype")?.is_some() {
                    return Err(format!("`{name}` on complex tensors with a `dtype` is not supported"));
                }
                let keep = self.attr(at, "keepdim")?.unwrap_or(Attr::Bool(false));
                one(self.emit(at, name, vec![vec![z]], vec![("dim", Attr::Ints(dims)), ("keepdim", keep)])?)
            }
            "index.Tensor" => {
                let z = self.complex_operand(at, "self")?;
                let mut ops = Vec::new();
                let mut attrs = Attrs::new();
                let p = at.def.signature().param("indices").cloned().ok_or("no `indices`")?;
                let a = at.given.get("indices").ok_or("missing `indices`")?;
                self.tensor_arg(at.block, &at.loc, &p, a, &mut ops, &mut attrs)?;
                if ops.iter().any(|v| self.complex.contains(v)) {
                    return Err("complex index tensors are not supported".into());
                }
                let rank = self.tt(z).rank() - 1;
                let n = attrs.get("indices").and_then(|a| a.as_ints()).map_or(ops.len(), |m| m.len());
                if n > rank {
                    return Err(format!("{n} indices for a rank-{rank} complex tensor"));
                }
                let attrs: Vec<(&str, Attr)> = attrs.into_values().map(|v| ("indices", v)).collect();
                one(self.emit(at, name, vec![vec![z], ops], attrs)?)
            }
            "cat" | "stack" => {
                let p = at.def.signature().param("tensors").cloned().ok_or("no `tensors`")?;
                let a = at.given.get("tensors").ok_or("missing `tensors`")?;
                let mut list = Vec::new();
                self.tensor_arg(at.block, &at.loc, &p, a, &mut list, &mut Attrs::new())?;
                let part = self.part_dtype(&list)?;
                let list = list.into_iter().map(|v| self.promote(at, v, part)).collect::<R<Vec<_>>>()?;
                let d = self.dim(at, list[0], "dim", (name == "stack") as i64)?;
                one(self.emit(at, name, vec![list], vec![("dim", Attr::Int(d))])?)
            }
            "_to_copy" => {
                let x = self.operand(at, "self")?;
                let code = at.given.get("dtype").and_then(|d| d.get("as_scalar_type")).and_then(|c| c.as_i64());
                let to_complex = code.and_then(complex_part);
                match (self.complex.contains(&x), to_complex, code) {
                    (true, Some(part), _) => one(self.convert(at, x, part)?),
                    (true, None, None) => one(x),
                    // torch drops the imaginary part (with a warning).
                    (true, None, Some(c)) => {
                        let dt = super::serde_dtype(c).ok_or_else(|| format!("dtype code {c} is not supported"))?;
                        let (re, im) = self.parts(at, x)?;
                        if dt == DType::Bool {
                            // Non-zero if either part is.
                            let zero = Attr::Float(0.0);
                            let r = self.emit(at, "ne.Scalar", vec![vec![re]], vec![("other", zero.clone())])?;
                            let i = self.emit(at, "ne.Scalar", vec![vec![im]], vec![("other", zero)])?;
                            return one(self.bin(at, "logical_or", r, i)?);
                        }
                        one(self.convert(at, re, dt)?)
                    }
                    (false, Some(part), _) => one(self.promote(at, x, part)?),
                    (false, None, _) => Err("internal error: no complex operand".into()),
                }
            }
            _ => unreachable!("SUPPORTED lists every rewrite"),
        }
    }

    fn tt(&self, v: Value) -> TensorType {
        self.m.ty(v).tensor().cloned().expect("tensor values only")
    }

    /// A tensor argument (a Python number becomes a rank-0 tensor, as torch wraps it).
    fn operand(&mut self, at: &At, name: &str) -> R<Value> {
        let p = at.def.signature().param(name).cloned().ok_or_else(|| format!("`{}` has no `{name}`", at.def.name))?;
        let a = at.given.get(name).ok_or_else(|| format!("missing argument `{name}`"))?;
        let mut ops = Vec::new();
        self.tensor_arg(at.block, &at.loc, &p, a, &mut ops, &mut Attrs::new())?;
        ops.first().copied().ok_or_else(|| format!("missing argument `{name}`"))
    }

    fn complex_operand(&mut self, at: &At, name: &str) -> R<Value> {
        let v = self.operand(at, name)?;
        if !self.complex.contains(&v) {
            return Err(format!("internal error: `{name}` of `{}` is not complex", at.def.name));
        }
        Ok(v)
    }

    fn attr(&self, at: &At, name: &str) -> R<Option<Attr>> {
        let p = at.def.signature().param(name).cloned().ok_or_else(|| format!("`{}` has no `{name}`", at.def.name))?;
        match at.given.get(name).filter(|a| a.get("as_none").is_none()) {
            Some(a) => self.attr_arg(&p, a).map(Some),
            None => Ok(None),
        }
    }

    /// A real scalar argument (a complex one is refused).
    fn real_attr(&self, at: &At, name: &str) -> R<Option<Attr>> {
        if at.given.get(name).is_some_and(|a| a.get("as_complex").is_some()) {
            return Err(format!("a complex scalar `{name}` is not supported"));
        }
        self.attr(at, name)
    }

    /// A dim argument of complex `z`, non-negative; `extra` is 1 where the op adds a dim.
    fn dim(&self, at: &At, z: Value, name: &str, extra: i64) -> R<i64> {
        let rank = self.tt(z).rank() as i64 - 1 + extra;
        let d = self.attr(at, name)?.and_then(|a| a.as_int()).unwrap_or(0);
        norm(d, rank)
    }

    fn dims(&self, at: &At, z: Value, name: &str) -> R<Vec<i64>> {
        let rank = self.tt(z).rank() as i64 - 1;
        let ds = match self.attr(at, name)? {
            None => vec![],
            Some(Attr::Int(d)) => vec![d],
            Some(a) => a.as_ints().ok_or_else(|| format!("`{name}` should be a list of ints"))?.to_vec(),
        };
        ds.into_iter().map(|d| norm(d, rank)).collect()
    }

    /// The part dtype shared by the complex values among `vs`.
    fn part_dtype(&self, vs: &[Value]) -> R<DType> {
        let mut part = None;
        for &v in vs.iter().filter(|v| self.complex.contains(v)) {
            let dt = self.tt(v).dtype;
            part = Some(part.map_or(dt, |p| DType::promote(p, dt)));
        }
        part.ok_or_else(|| "internal error: no complex operand".into())
    }

    /// Builds a torch op after the current ones, its result type from the dialect's rule.
    /// `groups` holds the operands of each tensor parameter in signature order.
    fn emit(&mut self, at: &At, name: &str, groups: Vec<Vec<Value>>, attrs: Vec<(&str, Attr)>) -> R<Value> {
        let full = format!("torch.aten.{name}");
        let def = dialect::lookup(&full).ok_or_else(|| format!("internal error: no op `{full}`"))?;
        let mut at_map = Attrs::new();
        for (k, v) in attrs {
            at_map.insert(k.to_string(), v);
        }
        if def.signature().has_segments() {
            at_map.insert(dialect::SEGMENTS.into(), Attr::Ints(groups.iter().map(|g| g.len() as i64).collect()));
        }
        let operands: Vec<Value> = groups.into_iter().flatten().collect();
        let probe = self.m.create_op(def.name, operands.clone(), vec![], at_map.clone(), vec![], at.loc.clone());
        let types = OpView::new(&self.m, probe)
            .ok_or_else(|| format!("internal error: `{full}` has no view"))?
            .infer()
            .map_err(|e| format!("internal error: `{full}` in the complex rewrite: {e:?}"))?;
        let op = self.m.create_op(def.name, operands, types, at_map, vec![], at.loc.clone());
        let pos = self.m.block(at.block).ops.len();
        self.m.insert_op(at.block, pos, op);
        Ok(self.m.result(op, 0))
    }

    fn bin(&mut self, at: &At, name: &str, a: Value, b: Value) -> R<Value> {
        self.emit(at, name, vec![vec![a], vec![b]], vec![])
    }

    fn part(&mut self, at: &At, z: Value, i: i64) -> R<Value> {
        self.emit(at, "select.int", vec![vec![z]], vec![("dim", Attr::Int(-1)), ("index", Attr::Int(i))])
    }

    fn parts(&mut self, at: &At, z: Value) -> R<(Value, Value)> {
        Ok((self.part(at, z, 0)?, self.part(at, z, 1)?))
    }

    fn pair(&mut self, at: &At, re: Value, im: Value) -> R<Value> {
        self.emit(at, "stack", vec![vec![re, im]], vec![("dim", Attr::Int(-1))])
    }

    fn convert(&mut self, at: &At, x: Value, dt: DType) -> R<Value> {
        if self.tt(x).dtype == dt {
            return Ok(x);
        }
        self.emit(at, "_to_copy", vec![vec![x]], vec![("dtype", Attr::DType(dt))])
    }

    /// `x` as a complex value: itself, or (x, 0) for a real one.
    fn promote(&mut self, at: &At, x: Value, part: DType) -> R<Value> {
        if self.complex.contains(&x) {
            return self.convert(at, x, part);
        }
        let re = self.convert(at, x, part)?;
        let im = self.emit(at, "zeros_like", vec![vec![re]], vec![])?;
        self.pair(at, re, im)
    }

    /// Complex `z` times (or over) real `r`: both parts scaled.
    fn scale(&mut self, at: &At, name: &str, z: Value, r: Value) -> R<Value> {
        let r = if self.tt(r).rank() == 0 {
            r
        } else {
            self.emit(at, "unsqueeze", vec![vec![r]], vec![("dim", Attr::Int(-1))])?
        };
        self.bin(at, name, z, r)
    }

    /// The `dim` list of an FFT of `x` (real or complex pairs), normalized, and torch's
    /// fft_norm_mode (0 none, 1 1/√n, 2 1/n).
    fn fft_dims(&self, at: &At, x: Value, real: bool) -> R<(Vec<i64>, i64)> {
        let rank = self.tt(x).rank() as i64 - (!real) as i64;
        let dims = self.attr(at, "dim")?.and_then(|a| a.as_ints().map(<[i64]>::to_vec)).ok_or("missing `dim`")?;
        let dims = dims.into_iter().map(|d| norm(d, rank)).collect::<R<Vec<_>>>()?;
        Ok((dims, self.attr(at, "normalization")?.and_then(|a| a.as_int()).unwrap_or(0)))
    }

    /// `v` with `dim` and its last dim swapped (its own inverse: the same call moves it back).
    fn swap_last(&mut self, at: &At, v: Value, dim: usize) -> R<Value> {
        let last = self.tt(v).rank() - 1;
        if dim == last {
            return Ok(v);
        }
        self.emit(
            at,
            "transpose.int",
            vec![vec![v]],
            vec![("dim0", Attr::Int(dim as i64)), ("dim1", Attr::Int(last as i64))],
        )
    }

    /// The static length of `dim` of `v`, which an FFT over it needs.
    fn fft_len(&self, v: Value, dim: usize) -> R<i64> {
        let t = self.tt(v);
        t.dims[dim].as_const().ok_or_else(|| format!("an FFT over dim {dim} of symbolic size {}", t.dims[dim]))
    }

    /// The [rows, cols] angles 2π·(j·k mod n)/n of a transform of length n (reduced in integers, so
    /// every angle is exact), in `dt`, and the row index j as a column.
    fn angles(&mut self, at: &At, rows: i64, cols: i64, n: i64, dt: DType) -> R<(Value, Value)> {
        let int = |v: i64| Attr::Int(v);
        let mut arange = |end: i64| {
            self.emit(
                at,
                "arange.start_step",
                vec![],
                vec![("start", int(0)), ("end", int(end)), ("dtype", Attr::DType(DType::I64))],
            )
        };
        let (j, k) = (arange(rows)?, arange(cols)?);
        let j = self.emit(at, "unsqueeze", vec![vec![j]], vec![("dim", int(1))])?;
        let jk = self.bin(at, "mul.Tensor", j, k)?;
        let jk = self.emit(at, "remainder.Scalar", vec![vec![jk]], vec![("other", int(n))])?;
        let jk = self.convert(at, jk, dt)?;
        let turn = 2.0 * std::f64::consts::PI / n as f64;
        Ok((j, self.emit(at, "mul.Scalar", vec![vec![jk]], vec![("other", Attr::Float(turn))])?))
    }

    /// `v` scaled by fft_norm_mode `mode` for a transform of length n.
    fn fft_scale(&mut self, at: &At, v: Value, mode: i64, n: i64) -> R<Value> {
        let f = match mode {
            0 => return Ok(v),
            1 => 1.0 / (n as f64).sqrt(),
            2 => 1.0 / n as f64,
            other => return Err(format!("FFT normalization mode {other} is not one torch defines")),
        };
        self.emit(at, "mul.Scalar", vec![vec![v]], vec![("other", Attr::Float(f))])
    }

    /// The discrete Fourier transform of (re, im) along `dim` as two products with the cos and
    /// sin matrices of the transform. `half` keeps the n/2 + 1 non-redundant outputs of a real
    /// signal.
    #[allow(clippy::too_many_arguments)]
    fn dft(
        &mut self,
        at: &At,
        re: Value,
        im: Option<Value>,
        dim: usize,
        forward: bool,
        half: bool,
        scale_mode: i64,
    ) -> R<(Value, Value)> {
        let n = self.fft_len(re, dim)?;
        let m = if half { n / 2 + 1 } else { n };
        let re = self.swap_last(at, re, dim)?;
        let im = im.map(|i| self.swap_last(at, i, dim)).transpose()?;
        let (_, ang) = self.angles(at, n, m, n, self.tt(re).dtype)?;
        let c = self.emit(at, "cos", vec![vec![ang]], vec![])?;
        let s = self.emit(at, "sin", vec![vec![ang]], vec![])?;
        // Forward: (re + i·im)(C − i·S); inverse: (re + i·im)(C + i·S).
        let rc = self.times(at, re, c)?;
        let rs = self.times(at, re, s)?;
        let (out_re, out_im) = match im {
            None => {
                let im = if forward { self.emit(at, "neg", vec![vec![rs]], vec![])? } else { rs };
                (rc, im)
            }
            Some(im) => {
                let ic = self.times(at, im, c)?;
                let is = self.times(at, im, s)?;
                if forward {
                    (self.bin(at, "add.Tensor", rc, is)?, self.bin(at, "sub.Tensor", ic, rs)?)
                } else {
                    (self.bin(at, "sub.Tensor", rc, is)?, self.bin(at, "add.Tensor", ic, rs)?)
                }
            }
        };
        let (out_re, out_im) = (self.fft_scale(at, out_re, scale_mode, n)?, self.fft_scale(at, out_im, scale_mode, n)?);
        Ok((self.swap_last(at, out_re, dim)?, self.swap_last(at, out_im, dim)?))
    }

    /// The real signal of length `len` whose one-sided spectrum (`len`/2 + 1 values) is
    /// (re, im) along `dim`: x_t = Σ_k w_k (re_k cos 2πkt/len − im_k sin 2πkt/len), w_k = 1 for
    /// k = 0 and k = len/2 (even `len`), 2 for the frequencies whose conjugates are implied.
    fn hermitian_inverse(&mut self, at: &At, re: Value, im: Value, dim: usize, len: i64, scale_mode: i64) -> R<Value> {
        let n = self.fft_len(re, dim)?;
        if len < 1 || n != len / 2 + 1 {
            return Err(format!("`_fft_c2r` to {len} values from {n} frequencies (needs {})", len / 2 + 1));
        }
        let (re, im) = (self.swap_last(at, re, dim)?, self.swap_last(at, im, dim)?);
        let dt = self.tt(re).dtype;
        let (k, ang) = self.angles(at, n, len, len, dt)?;
        // w = 2 − [k = 0] − [k = len/2 for even len], as a column.
        let mut w = self.emit(at, "ne.Scalar", vec![vec![k]], vec![("other", Attr::Int(0))])?;
        if len % 2 == 0 {
            let mid = self.emit(at, "ne.Scalar", vec![vec![k]], vec![("other", Attr::Int(len / 2))])?;
            w = self.bin(at, "logical_and", w, mid)?;
        }
        let w = self.convert(at, w, dt)?;
        let w = self.emit(at, "add.Scalar", vec![vec![w]], vec![("other", Attr::Float(1.0))])?;
        let c = self.emit(at, "cos", vec![vec![ang]], vec![])?;
        let s = self.emit(at, "sin", vec![vec![ang]], vec![])?;
        let (c, s) = (self.bin(at, "mul.Tensor", c, w)?, self.bin(at, "mul.Tensor", s, w)?);
        let (rc, is) = (self.times(at, re, c)?, self.times(at, im, s)?);
        let x = self.bin(at, "sub.Tensor", rc, is)?;
        let x = self.fft_scale(at, x, scale_mode, len)?;
        self.swap_last(at, x, dim)
    }

    /// x[.., n] · w[n, m] as one `mm` over the flattened leading dims.
    fn times(&mut self, at: &At, x: Value, w: Value) -> R<Value> {
        let (xt, m) = (self.tt(x), self.tt(w).dims[1].clone());
        let (lead, n) = xt.dims.split_at(xt.rank() - 1);
        let rows = lead.iter().cloned().fold(SymExpr::Const(1), SymExpr::times);
        let flat = self.emit(at, "view", vec![vec![x]], vec![("size", Attr::dims(vec![rows, n[0].clone()]))])?;
        let y = self.bin(at, "mm", flat, w)?;
        let shape: Vec<SymExpr> = lead.iter().cloned().chain([m]).collect();
        self.emit(at, "view", vec![vec![y]], vec![("size", Attr::dims(shape))])
    }

    fn expand_to(&mut self, at: &At, x: Value, shape: &[SymExpr]) -> R<Value> {
        if self.tt(x).dims == shape {
            return Ok(x);
        }
        self.emit(at, "expand", vec![vec![x]], vec![("size", Attr::dims(shape.to_vec()))])
    }
}

/// The tensor names a node argument or output refers to.
fn names(j: &Json, out: &mut Vec<String>) {
    match j {
        Json::Object(o) => {
            for (k, v) in o {
                if k == "name" {
                    if let Some(s) = v.as_str() {
                        out.push(s.to_string());
                    }
                }
                names(v, out);
            }
        }
        Json::Array(a) => a.iter().for_each(|v| names(v, out)),
        _ => {}
    }
}

fn norm(d: i64, rank: i64) -> R<i64> {
    let n = if d < 0 { d + rank } else { d };
    if n < 0 || n >= rank.max(1) {
        return Err(format!("dim {d} is out of range for a rank-{rank} complex tensor"));
    }
    Ok(n)
}

fn broadcast(a: &[SymExpr], b: &[SymExpr]) -> R<Vec<SymExpr>> {
    let n = a.len().max(b.len());
    let one = SymExpr::Const(1);
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n { &a[i + a.len() - n] } else { &one };
            let y = if i + b.len() >= n { &b[i + b.len() - n] } else { &one };
            match (x, y) {
                (x, y) if x == y => Ok(x.clone()),
                (x, y) if *x == one => Ok(y.clone()),
                (x, y) if *y == one => Ok(x.clone()),
                (x, y) => Err(format!("shapes do not broadcast ({x} vs {y})")),
            }
        })
        .collect()
}
