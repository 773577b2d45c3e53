//! `torch-to-ten`: rewrites `torch` dialect ops into the `ten` dialect.
//!
//! `ten` makes explicit what torch does implicitly: broadcasts (`ten.broadcast`), dtype promotion
//! (`ten.convert`), wrapped scalars (`ten.constant`), keepdim (`ten.reshape`). Every rewrite keeps
//! the torch op's location, and its final values must have exactly the torch op's result types
//! (shape expressions and dtype): the pass checks this and fails naming the op otherwise.
//!
//! Ops without a lowering stay as torch ops (see `lower` for the list of what is handled); so do
//! variants a lowering cannot express (training-mode dropout, non-adjacent advanced indexing, ...).

mod build;
mod create;
mod elementwise;
mod matmul;
mod reduce;
mod scatter;
mod shape;
mod window;

use build::Cx;
use ember_ir::module::{Module, OpId};

/// The pass: lowers every torch op it knows, in program order.
pub fn torch_to_ten(m: &mut Module) -> Result<(), String> {
    let mut ops = Vec::new();
    m.walk(m.top, &mut |op| ops.push(op));
    for op in ops {
        if m.op(op).name.starts_with("torch.") {
            lower_one(m, op)?;
        }
    }
    Ok(())
}

fn lower_one(m: &mut Module, op: OpId) -> Result<(), String> {
    let mut cx = Cx::new(m, op);
    let start = cx.pos();
    let Some(new) = lower(&mut cx)? else {
        if cx.pos() != start {
            return Err(cx.err("internal error: a lowering built ops and then declined"));
        }
        return Ok(());
    };
    let results = cx.m.op(op).results.clone();
    if new.len() != results.len() {
        return Err(cx.err(&format!("the lowering gives {} values for {} results", new.len(), results.len())));
    }
    for (i, (&old, &v)) in results.iter().zip(&new).enumerate() {
        if cx.m.ty(old) != cx.m.ty(v) {
            return Err(cx.err(&format!(
                "lowered result {i} has type {} but the torch op's is {}",
                cx.m.ty(v),
                cx.m.ty(old)
            )));
        }
    }
    for (old, v) in results.into_iter().zip(new) {
        cx.m.replace_all_uses(old, v);
    }
    cx.m.erase_op(op);
    Ok(())
}

/// The dispatch table: one arm per op family. `Ok(None)` leaves the op as it is.
fn lower(cx: &mut Cx) -> build::Lowered {
    use elementwise as ew;
    let name = cx.name().strip_prefix("torch.aten.").unwrap_or("").to_string();
    match name.as_str() {
        // Arithmetic with broadcasting, promotion, wrapped scalars and `alpha`.
        "add.Tensor" | "add.Scalar" | "sub.Tensor" | "sub.Scalar" | "mul.Tensor" | "mul.Scalar" | "div.Tensor"
        | "div.Scalar" | "maximum" | "minimum" | "pow.Tensor_Tensor" | "pow.Scalar" | "fmod.Tensor" | "fmod.Scalar"
        | "bitwise_and.Tensor" | "atan2" | "bitwise_and.Scalar" | "bitwise_or.Tensor" | "bitwise_or.Scalar"
        | "bitwise_xor.Tensor" | "bitwise_xor.Scalar" => ew::arith(cx, &name),
        "div.Tensor_mode" | "div.Scalar_mode" => ew::div_mode(cx),
        "remainder.Tensor" | "remainder.Scalar" => ew::remainder(cx),
        "pow.Tensor_Scalar" => ew::pow_scalar(cx),
        "eq.Tensor" | "eq.Scalar" | "ne.Tensor" | "ne.Scalar" | "lt.Tensor" | "lt.Scalar" | "le.Tensor"
        | "le.Scalar" | "gt.Tensor" | "gt.Scalar" | "ge.Tensor" | "ge.Scalar" => ew::compare(cx, &name),
        "logical_and" | "logical_or" | "logical_xor" | "logical_not" => ew::logical(cx, &name),
        "bitwise_not" => ew::unary(cx, "ten.not"),
        "neg" | "abs" | "exp" | "log" | "log1p" | "sqrt" | "rsqrt" | "tanh" | "erf" | "sin" | "cos" | "tan"
        | "floor" | "ceil" | "round" | "trunc" | "sign" | "sigmoid" | "reciprocal" | "isnan" | "isinf" | "expm1"
        | "log2" | "log10" | "sinh" | "cosh" | "asinh" | "acosh" | "atanh" | "asin" | "acos" | "atan" => {
            ew::math(cx, &name)
        }
        "relu" | "leaky_relu" | "hardtanh" | "clamp" | "clamp.Tensor" | "gelu" | "silu" | "elu" => {
            ew::activation(cx, &name)
        }
        "where.self" => ew::where_self(cx),
        "fmax" | "fmin" | "copysign.Tensor" => ew::binary_special(cx, &name),
        "round.decimals" => ew::round_decimals(cx),
        // Reductions and normalizations.
        "sum" | "sum.dim_IntList" | "prod" | "prod.dim_int" | "amax" | "amin" | "any" | "any.dim" | "any.dims"
        | "mean" | "mean.dim" => reduce::reduction(cx, &name),
        "var.correction" | "var.dim" | "var_mean.correction" => reduce::variance(cx, &name),
        "_softmax" | "_log_softmax" => reduce::softmax(cx, name == "_log_softmax"),
        "native_layer_norm" => reduce::layer_norm(cx),
        "native_group_norm" => reduce::group_norm(cx),
        "_native_batch_norm_legit_no_training" | "_native_batch_norm_legit" => reduce::batch_norm(cx, &name),
        "_native_batch_norm_legit.no_stats"
        | "_native_batch_norm_legit_functional"
        | "_batch_norm_with_update_functional" => reduce::batch_norm_train(cx, &name),
        "dist" => reduce::dist(cx),
        "searchsorted.Tensor" | "bucketize.Tensor" => reduce::searchsorted(cx, &name),
        "cumsum" | "cumprod" => reduce::cumsum(cx, &name),
        "_cdist_forward" => reduce::cdist(cx),
        "argmax" | "argmin" | "max.dim" | "min.dim" => reduce::arg_reduction(cx, &name),
        // Sliding windows: convolution, pooling, padding.
        "convolution" => window::convolution(cx),
        "max_pool2d_with_indices" | "max_pool3d_with_indices" => window::max_pool(cx),
        "avg_pool2d" | "avg_pool3d" => window::avg_pool(cx),
        "_adaptive_avg_pool2d" | "_adaptive_avg_pool3d" => window::adaptive_avg_pool(cx),
        "constant_pad_nd" => window::constant_pad(cx),
        "upsample_bilinear2d.vec" => window::upsample_bilinear(cx),
        "upsample_nearest2d.vec" => window::upsample_nearest(cx),
        "grid_sampler_2d" => window::grid_sampler(cx),
        // Matrix products.
        "mm" | "bmm" | "addmm" => matmul::matmul(cx, &name),
        "addbmm" => matmul::addbmm(cx),
        // Layout: reshapes, transposes, broadcasts, slices, concatenation, gathers.
        "view" | "view_copy" | "_unsafe_view" | "reshape" | "unsqueeze" | "unsqueeze_copy" | "squeeze.dim"
        | "squeeze.dims" | "squeeze_copy.dims" => shape::reshape(cx),
        "permute" | "permute_copy" | "transpose.int" => shape::transpose(cx, &name),
        "expand" | "expand_copy" => shape::expand(cx),
        "slice.Tensor" | "slice_copy.Tensor" | "select.int" | "select_copy.int" => shape::slice(cx, &name),
        "split_with_sizes" | "split_with_sizes_copy" => shape::split(cx),
        "cat" | "stack" => shape::cat(cx, name == "stack"),
        "flip" => shape::flip(cx),
        "repeat" => shape::repeat(cx),
        "embedding" | "index_select" | "index.Tensor" => shape::gather(cx, &name),
        "gather" => shape::gather_dim(cx),
        "sort" | "sort.stable" | "topk" => shape::sort(cx, &name),
        "as_strided" => shape::as_strided(cx),
        "diagonal" | "diagonal_copy" => shape::diagonal(cx),
        // Scatters: `ten.scatter` into the flattened input.
        "scatter.src" | "scatter.value" | "scatter.reduce" | "scatter_add" | "scatter_reduce.two" => {
            scatter::scatter_dim(cx, &name)
        }
        "index_put" => scatter::index_put(cx),
        "slice_scatter" | "select_scatter" | "diagonal_scatter" => scatter::view_scatter(cx, &name),
        // Constants, conversions, identities.
        "full"
        | "full_like"
        | "scalar_tensor"
        | "zeros"
        | "zeros_like"
        | "ones"
        | "ones_like"
        | "fill.Scalar"
        | "empty.memory_format"
        | "empty_strided"
        | "empty_permuted" => create::fill(cx, &name),
        "arange" | "arange.start" | "arange.start_step" => create::arange(cx),
        "_to_copy" | "copy" => create::to_copy(cx, &name),
        "clone" | "alias" | "alias_copy" | "detach" | "lift_fresh_copy" => create::identity(cx),
        "_assert_tensor_metadata" => Ok(Some(vec![])),
        "native_dropout" => create::dropout(cx),
        _ => Ok(None),
    }
}
