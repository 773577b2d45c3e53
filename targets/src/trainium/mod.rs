//! The trainium target: HLO for neuronx-cc plus NKI kernels for fusion groups.
//!
//! - [`groups`] reads the `ember.fusion_group`s of `@main` (the optimizer's contract: kind,
//!   operands, parameters; see ARCHITECTURE.md) into [`Group`]s;
//! - [`kernels::generate`] builds each group's tile plan, checks it with [`verify`] and renders
//!   NKI Python source;
//! - the HLO side (portable and Neuron forms, legalization) is driven by
//!   `ember_compiler::trainium`, which reuses the tpu target's StableHLO emitter and XLA's own
//!   StableHLO -> HLO converter through `ember.xla`.
//!
//! Nothing here has run on Neuron hardware: kernels are checked in Ember's numpy reference
//! interpreter (`ember.nki_interp`, not AWS's simulator) and HLO on XLA's CPU client.

pub mod kernels;
pub mod verify;

use ember_ir::dialect::ten::TenOp;
use ember_ir::{Attr, Module, OpId};

pub const FUSION_GROUP: &str = "ember.fusion_group";
/// Kinds that get an NKI kernel; other groups (`loop`) stay plain HLO.
pub const KERNEL_KINDS: [&str; 5] = ["gemm", "softmax", "layer_norm", "rms_norm", "attention"];

/// One fusion group as a kernel sees it: static shapes and the parameters of its kind.
#[derive(Clone, Debug)]
pub struct Group {
    pub op: OpId,
    /// `<kind>_<index among @main's groups>`: the kernel's function and file name.
    pub name: String,
    pub kind: String,
    /// The group's location (`node `x` (from file.py:3)`), for messages.
    pub at: String,
    pub inputs: Vec<Vec<i64>>,
    pub output: Vec<i64>,
    /// gemm: `none`/`relu`/`gelu`/`gelu_tanh`/`silu`.
    pub activation: String,
    /// gemm: the rhs is `[..., N, K]` (contracted on its last dim).
    pub rhs_transposed: bool,
    /// gemm: leading batch dims shared by lhs `[B..., M, K]` and rhs `[B..., K, N]` (a bmm).
    pub batch_dims: usize,
    pub eps: f64,
    pub scale: f64,
    /// layer_norm / rms_norm: the role of each operand after x, `weight` or `bias`, read from the
    /// body (the operand's broadcast feeds a `ten.mul` or a `ten.add`).
    pub affine: Vec<&'static str>,
}

impl Group {
    /// `kernel `gemm_0` (gemm group at node `addmm` (from m.py:3))`.
    pub fn what(&self) -> String {
        let at = if self.at.is_empty() { String::new() } else { format!(" at {}", self.at) };
        format!("kernel `{}` ({} group{at})", self.name, self.kind)
    }
}

/// The fusion groups of `@main`'s body in program order that have a kernel kind, each read into a
/// [`Group`] or the reason no kernel fits it. Groups of other kinds are
/// skipped (they stay plain HLO).
pub fn groups(m: &Module) -> Result<Vec<Result<Group, String>>, String> {
    let f = m.func_by_name("main").ok_or("the module has no `@main` function")?;
    let mut out = Vec::new();
    let mut index = 0;
    for &op in &m.block(m.entry(f)).ops {
        let d = m.op(op);
        if d.name != FUSION_GROUP {
            continue;
        }
        let kind = d.attrs.get("kind").and_then(|a| a.as_str()).unwrap_or("").to_string();
        let name = format!("{kind}_{index}");
        index += 1;
        if !KERNEL_KINDS.contains(&kind.as_str()) {
            continue;
        }
        out.push(read_group(m, op, name, kind));
    }
    Ok(out)
}

fn read_group(m: &Module, op: OpId, name: String, kind: String) -> Result<Group, String> {
    let d = m.op(op);
    let at = d.loc.describe();
    let mut g = Group {
        op,
        name,
        kind,
        at,
        inputs: Vec::new(),
        output: Vec::new(),
        activation: "none".into(),
        rhs_transposed: false,
        batch_dims: 0,
        eps: 0.0,
        scale: 1.0,
        affine: Vec::new(),
    };
    let what = g.what();
    let shape = |v| -> Result<Vec<i64>, String> {
        let t = m.ty(v).tensor().ok_or_else(|| format!("{what}: operands and results must be tensors"))?;
        if t.dtype != ember_ir::DType::F32 {
            return Err(format!("{what}: NKI kernels are generated for f32 only, found {}", m.ty(v)));
        }
        t.static_shape()
            .ok_or_else(|| format!("{what}: symbolic shape {}; the trainium target needs static shapes", m.ty(v)))
    };
    for &v in &d.operands {
        g.inputs.push(shape(v)?);
    }
    if d.results.len() != 1 {
        return Err(format!("{what}: a kernel group must have exactly one result, found {}", d.results.len()));
    }
    g.output = shape(d.results[0])?;
    let attr_f = |k: &str| d.attrs.get(k).and_then(|a| a.as_float());
    if d.attrs.get("safe").and_then(|a| a.as_bool()) == Some(true) {
        // The kernels divide by the row sum; a fully masked row would give NaN, not 0.
        return Err(format!("{what}: a `safe` softmax (fully masked rows give 0) has no NKI kernel yet"));
    }
    let need = |n: usize| -> Result<(), String> {
        if g.inputs.len() < n {
            return Err(format!("{what}: needs at least {n} operands, found {}", g.inputs.len()));
        }
        Ok(())
    };
    match g.kind.as_str() {
        "gemm" => {
            need(2)?;
            g.activation = d.attrs.get("activation").and_then(|a| a.as_str()).unwrap_or("none").to_string();
            (g.rhs_transposed, g.batch_dims) = gemm_layout(m, op, &g.activation).map_err(|e| format!("{what}: {e}"))?;
        }
        "softmax" => {
            need(1)?;
            let rank = g.inputs[0].len() as i64;
            let dim = d.attrs.get("dim").and_then(|a| a.as_int()).unwrap_or(-1);
            if dim != -1 && dim != rank - 1 {
                return Err(format!("{what}: softmax over dim {dim}; the kernel normalizes the last dim only"));
            }
        }
        "layer_norm" | "rms_norm" => {
            need(1)?;
            g.eps = attr_f("eps").ok_or_else(|| format!("{what}: missing `eps`"))?;
            g.affine = norm_roles(m, op).map_err(|e| format!("{what}: {e}"))?;
        }
        _ => {
            need(3)?;
            g.scale = attr_f("scale").ok_or_else(|| format!("{what}: missing `scale`"))?;
        }
    }
    Ok(g)
}

/// The roles of a norm group's operands after x: each is broadcast once and the broadcast feeds a
/// `ten.mul` (`weight`) or a `ten.add` (`bias`); at most one of each, in any order.
fn norm_roles(m: &Module, group: OpId) -> Result<Vec<&'static str>, String> {
    let args = m.block(m.entry(group)).args.clone();
    let mut roles = Vec::new();
    for &a in &args[1..] {
        let role = match m.uses(a).as_slice() {
            [(b, 0)] if m.op(*b).is(TenOp::Broadcast) => match m.uses(m.op(*b).results[0]).as_slice() {
                [(c, _)] if m.op(*c).is(TenOp::Mul) => "weight",
                [(c, _)] if m.op(*c).is(TenOp::Add) => "bias",
                _ => "",
            },
            _ => "",
        };
        if role.is_empty() || roles.contains(&role) {
            return Err("each operand after x must be a weight (broadcast, multiplied) or a bias (broadcast, added), at most one of each".into());
        }
        roles.push(role);
    }
    Ok(roles)
}

/// Checks that a gemm group's body is what the kernel computes, and returns whether the rhs is
/// `[..., N, K]` and the number of batch dims. The `ten.dot_general` reads block arg 0 (lhs
/// `[..., M, K]`, contracted on its last dim; leading dims may be merged by a reshape) and block
/// arg 1 (rhs `[K, N]`, or `[N, K]` directly or through a `[1, 0]` transpose); or, batched,
/// lhs `[B..., M, K]` and rhs `[B..., K, N]` / `[B..., N, K]` directly, batch dims leading. The epilogue order is fixed:
/// the bias (a `[N]` operand) is broadcast and added to the product, the `activation` follows, and
/// the residual (an operand of the result's size) is added last; with `activation = "none"`
/// nothing else may sit between. Reshapes are allowed anywhere along that chain.
fn gemm_layout(m: &Module, group: OpId, activation: &str) -> Result<(bool, usize), String> {
    let body = m.entry(group);
    let args = m.block(body).args.clone();
    let ops = &m.block(body).ops;
    let def = |v| m.defining_op(v).map(|o| (o, m.op(o)));
    let through = |mut v| {
        while let Some((_, d)) = def(v) {
            if !d.is(TenOp::Reshape) {
                break;
            }
            v = d.operands[0];
        }
        v
    };
    let dots: Vec<OpId> = ops.iter().copied().filter(|&o| m.op(o).is(TenOp::DotGeneral)).collect();
    let [dot] = dots.as_slice() else {
        return Err(format!("a gemm group holds exactly one ten.dot_general, found {}", dots.len()));
    };
    let d = m.op(*dot);
    let last_dim = |v| m.ty(v).tensor().and_then(|t| t.dims.last().cloned());
    if through(d.operands[0]) != args[0] || last_dim(d.operands[0]) != last_dim(args[0]) {
        return Err(
            "the gemm kernel needs the dot_general's lhs to be the group's first operand (leading dims merged at most)"
                .into(),
        );
    }
    let mut flipped = false;
    if d.operands[1] != args[1] {
        match def(d.operands[1]) {
            Some((_, t)) if t.is(TenOp::Transpose) && t.operands[0] == args[1] && t.attrs.get("dims").and_then(Attr::as_ints) == Some(&[1, 0]) => {
                flipped = true
            }
            _ => return Err("the gemm kernel needs the dot_general's rhs to be the group's second operand (or its [1, 0] transpose)".into()),
        }
    }
    let ints = |k: &str| d.attrs.get(k).and_then(Attr::as_ints).map(|v| v.to_vec()).unwrap_or_default();
    let lhs_rank = m.ty(d.operands[0]).tensor().map_or(0, |t| t.dims.len()) as i64;
    let rhs_rank = m.ty(args[1]).tensor().map_or(0, |t| t.dims.len()) as i64;
    let batch = ints("lhs_batch");
    let nb = batch.len() as i64;
    let leading: Vec<i64> = (0..nb).collect();
    let direct = d.operands[0] == args[0] && d.operands[1] == args[1];
    if batch != leading
        || ints("rhs_batch") != leading
        || rhs_rank != nb + 2
        || (nb > 0 && (lhs_rank != nb + 2 || !direct))
        || ints("lhs_contract") != [lhs_rank - 1]
    {
        return Err("the gemm kernel supports lhs [..., M, K] x rhs [K, N] or [N, K], or lhs [B..., M, K] x rhs [B..., K, N] or [B..., N, K] with the batch dims leading".into());
    }
    let transposed = match ints("rhs_contract").as_slice() {
        [c] if *c == nb => false,
        [c] if *c == nb + 1 => true,
        other => return Err(format!("rhs contracting dims {other:?} are not supported")),
    };
    // Walk the epilogue back from the yielded value: residual add, activation, bias add, product.
    let (term, _) = ops.split_last().ok_or("empty fusion group")?;
    let mut v = through(m.op(*term).operands[0]);
    let epilogue = &args[2..];
    let is_rank1 = |a: ember_ir::Value| m.ty(a).tensor().is_some_and(|t| t.dims.len() == 1);
    let add_of = |v, pick: &dyn Fn(ember_ir::Value) -> bool| -> Option<ember_ir::Value> {
        let (_, d) = def(v)?;
        if !d.is(TenOp::Add) {
            return None;
        }
        let (a, b) = (d.operands[0], d.operands[1]);
        if pick(a) {
            Some(through(b))
        } else if pick(b) {
            Some(through(a))
        } else {
            None
        }
    };
    if let Some(&res) = epilogue.iter().find(|&&a| !is_rank1(a)) {
        v = add_of(v, &|x| through(x) == res)
            .ok_or("the residual must be added last (after the bias and the activation)")?;
    }
    let bias = epilogue.iter().copied().find(|&a| is_rank1(a));
    let is_bias =
        |x| bias.is_some_and(|b| matches!(def(x), Some((_, d)) if d.is(TenOp::Broadcast) && d.operands[0] == b));
    let dot_value = through(m.op(*dot).results[0]);
    if activation == "none" {
        if bias.is_some() {
            v = add_of(v, &is_bias).ok_or("the bias must be broadcast and added to the product")?;
        }
        if v != dot_value {
            return Err("with activation = \"none\" the epilogue may only add the bias and the residual".into());
        }
    } else if bias.is_some() {
        // The bias add is the one whose other operand is the product.
        let found = ops.iter().any(|&o| {
            let d = m.op(o);
            d.is(TenOp::Add)
                && ((is_bias(d.operands[0]) && through(d.operands[1]) == dot_value)
                    || (is_bias(d.operands[1]) && through(d.operands[0]) == dot_value))
        });
        if !found {
            return Err("the bias must be broadcast and added to the product before the activation".into());
        }
    }
    Ok((transposed != flipped, nb as usize))
}
