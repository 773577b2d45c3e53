//! `torch-to-ten`: rewrites `torch` dialect ops into the `ten` dialect.
//!
//! `ten` makes explicit what torch does implicitly: broadcasts (`ten.broadcast`), dtype promotion
//! (`ten.convert`), wrapped scalars (`ten.constant`), keepdim (`ten.reshape`). Every rewrite keeps
//! the torch op's location, and its final values must have exactly the torch op's result types
//! (shape expressions and dtype): the pass checks this and fails naming the op otherwise.
//!
//! Ops without a row in `LOWERINGS` stay as torch ops; so do
//! variants a lowering cannot express (non-adjacent advanced indexing, ...).

mod build;
mod create;
mod elementwise;
mod linalg;
mod matmul;
mod random;
mod reduce;
mod scatter;
mod shape;
mod special;
mod window;

use build::Cx;
pub use build::RNG_SEED;
use elementwise as ew;
use ember_ir::dialect::ten::TenOp;
use ember_ir::module::{Module, OpId};
use std::collections::HashMap;
use std::sync::OnceLock;

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

/// A lowering: reads the torch op through `Cx` (the second argument is its key in `LOWERINGS`),
/// builds `ten` ops in front of it and gives the values that replace its results, or `Ok(None)`
/// to leave it as it is (variants the lowering cannot express).
type Lower = fn(&mut Cx, &str) -> build::Lowered;

/// The lowerings, keyed by torch op (the IR name after `torch.aten.`); a test
/// (`every_lowering_is_a_torch_op`) checks that every key is a row of the torch table. Ops without
/// a row stay torch ops.
#[rustfmt::skip]
static LOWERINGS: &[(&str, Lower)] = &[
    // Arithmetic with broadcasting, promotion, wrapped scalars and `alpha`.
    ("add.Tensor",                           |cx, _| ew::arith(cx, TenOp::Add)),
    ("add.Scalar",                           |cx, _| ew::arith(cx, TenOp::Add)),
    ("sub.Tensor",                           |cx, _| ew::arith(cx, TenOp::Sub)),
    ("sub.Scalar",                           |cx, _| ew::arith(cx, TenOp::Sub)),
    ("mul.Tensor",                           |cx, _| ew::arith(cx, TenOp::Mul)),
    ("mul.Scalar",                           |cx, _| ew::arith(cx, TenOp::Mul)),
    ("div.Tensor",                           |cx, _| ew::arith(cx, TenOp::Div)),
    ("div.Scalar",                           |cx, _| ew::arith(cx, TenOp::Div)),
    ("maximum",                              |cx, _| ew::arith(cx, TenOp::Max)),
    ("minimum",                              |cx, _| ew::arith(cx, TenOp::Min)),
    ("pow.Tensor_Tensor",                    |cx, _| ew::arith(cx, TenOp::Pow)),
    ("pow.Scalar",                           |cx, _| ew::arith(cx, TenOp::Pow)),
    ("atan2",                                |cx, _| ew::arith(cx, TenOp::Atan2)),
    ("fmod.Tensor",                          |cx, _| ew::arith(cx, TenOp::Rem)),
    ("fmod.Scalar",                          |cx, _| ew::arith(cx, TenOp::Rem)),
    ("bitwise_and.Tensor",                   |cx, _| ew::arith(cx, TenOp::And)),
    ("bitwise_and.Scalar",                   |cx, _| ew::arith(cx, TenOp::And)),
    ("bitwise_or.Tensor",                    |cx, _| ew::arith(cx, TenOp::Or)),
    ("bitwise_or.Scalar",                    |cx, _| ew::arith(cx, TenOp::Or)),
    ("bitwise_xor.Tensor",                   |cx, _| ew::arith(cx, TenOp::Xor)),
    ("bitwise_xor.Scalar",                   |cx, _| ew::arith(cx, TenOp::Xor)),
    ("bitwise_left_shift.Tensor",            |cx, _| ew::shift(cx, true)),
    ("bitwise_left_shift.Tensor_Scalar",     |cx, _| ew::shift(cx, true)),
    ("bitwise_right_shift.Tensor",           |cx, _| ew::shift(cx, false)),
    ("bitwise_right_shift.Tensor_Scalar",    |cx, _| ew::shift(cx, false)),
    ("div.Tensor_mode",                      |cx, _| ew::div_mode(cx)),
    ("div.Scalar_mode",                      |cx, _| ew::div_mode(cx)),
    ("remainder.Tensor",                     |cx, _| ew::remainder(cx)),
    ("remainder.Scalar",                     |cx, _| ew::remainder(cx)),
    ("pow.Tensor_Scalar",                    |cx, _| ew::pow_scalar(cx)),
    ("eq.Tensor",                            |cx, _| ew::compare(cx, "EQ")),
    ("eq.Scalar",                            |cx, _| ew::compare(cx, "EQ")),
    ("ne.Tensor",                            |cx, _| ew::compare(cx, "NE")),
    ("ne.Scalar",                            |cx, _| ew::compare(cx, "NE")),
    ("lt.Tensor",                            |cx, _| ew::compare(cx, "LT")),
    ("lt.Scalar",                            |cx, _| ew::compare(cx, "LT")),
    ("le.Tensor",                            |cx, _| ew::compare(cx, "LE")),
    ("le.Scalar",                            |cx, _| ew::compare(cx, "LE")),
    ("gt.Tensor",                            |cx, _| ew::compare(cx, "GT")),
    ("gt.Scalar",                            |cx, _| ew::compare(cx, "GT")),
    ("ge.Tensor",                            |cx, _| ew::compare(cx, "GE")),
    ("ge.Scalar",                            |cx, _| ew::compare(cx, "GE")),
    ("logical_and",                          |cx, _| ew::logical(cx, TenOp::And)),
    ("logical_or",                           |cx, _| ew::logical(cx, TenOp::Or)),
    ("logical_xor",                          |cx, _| ew::logical(cx, TenOp::Xor)),
    ("logical_not",                          |cx, _| ew::logical(cx, TenOp::Not)),
    ("bitwise_not",                          |cx, _| ew::unary(cx, TenOp::Not)),
    ("neg",                                  |cx, _| ew::math_op(cx, TenOp::Neg)),
    ("_neg_view",                            |cx, _| ew::math_op(cx, TenOp::Neg)),
    ("abs",                                  |cx, _| ew::math_op(cx, TenOp::Abs)),
    ("exp",                                  |cx, _| ew::math_op(cx, TenOp::Exp)),
    ("log",                                  |cx, _| ew::math_op(cx, TenOp::Log)),
    ("log1p",                                |cx, _| ew::math_op(cx, TenOp::Log1p)),
    ("sqrt",                                 |cx, _| ew::math_op(cx, TenOp::Sqrt)),
    ("rsqrt",                                |cx, _| ew::math_op(cx, TenOp::Rsqrt)),
    ("tanh",                                 |cx, _| ew::math_op(cx, TenOp::Tanh)),
    ("erf",                                  |cx, _| ew::math_op(cx, TenOp::Erf)),
    ("sin",                                  |cx, _| ew::math_op(cx, TenOp::Sin)),
    ("cos",                                  |cx, _| ew::math_op(cx, TenOp::Cos)),
    ("tan",                                  |cx, _| ew::math_op(cx, TenOp::Tan)),
    ("floor",                                |cx, _| ew::math_op(cx, TenOp::Floor)),
    ("ceil",                                 |cx, _| ew::math_op(cx, TenOp::Ceil)),
    ("round",                                |cx, _| ew::math_op(cx, TenOp::Round)),
    ("trunc",                                |cx, _| ew::math_op(cx, TenOp::Trunc)),
    ("sign",                                 |cx, _| ew::math_op(cx, TenOp::Sign)),
    ("angle",                                |cx, _| ew::angle(cx)),
    ("sigmoid",                              |cx, _| ew::math_op(cx, TenOp::Sigmoid)),
    ("reciprocal",                           ew::math),
    ("isnan",                                ew::math),
    ("isinf",                                ew::math),
    ("expm1",                                ew::math),
    ("lgamma",                               ew::math),
    ("exp2",                                 ew::math),
    ("log2",                                 ew::math),
    ("log10",                                ew::math),
    ("sinh",                                 ew::math),
    ("cosh",                                 ew::math),
    ("asinh",                                ew::math),
    ("acosh",                                ew::math),
    ("atanh",                                ew::math),
    ("asin",                                 ew::math),
    ("acos",                                 ew::math),
    ("atan",                                 ew::math),
    ("relu",                                 ew::activation),
    ("leaky_relu",                           ew::activation),
    ("hardtanh",                             ew::activation),
    ("clamp",                                ew::activation),
    ("clamp.Tensor",                         ew::activation),
    ("gelu",                                 ew::activation),
    ("silu",                                 ew::activation),
    ("elu",                                  ew::activation),
    ("where.self",                           |cx, _| ew::where_self(cx)),
    ("fmax",                                 ew::binary_special),
    ("fmin",                                 ew::binary_special),
    ("copysign.Tensor",                      ew::binary_special),
    ("hypot",                                ew::binary_special),
    ("ldexp.Tensor",                         ew::binary_special),
    ("round.decimals",                       |cx, _| ew::round_decimals(cx)),
    // Random ops: Philox on the seed input (`random.rs`).
    ("rand",                                  random::random),
    ("randn",                                 random::random),
    ("rand_like",                             random::random),
    ("randn_like",                            random::random),
    ("uniform",                               random::random),
    ("normal_functional",                     random::random),
    ("normal.Tensor_Tensor",                  random::random),
    ("normal.Tensor_float",                   random::random),
    ("normal.float_Tensor",                   random::random),
    ("normal.float_float",                    random::random),
    ("log_normal",                            random::random),
    ("exponential",                           random::random),
    ("cauchy",                                random::random),
    ("geometric",                             random::random),
    ("bernoulli",                             random::random),
    ("bernoulli.p",                           random::random),
    ("native_dropout",                        random::random),
    ("randint",                               random::random),
    ("randint.low",                           random::random),
    ("randint_like",                          random::random),
    ("randint_like.low_dtype",                random::random),
    ("rrelu_with_noise_functional",           random::random),
    ("multinomial",                           random::random),
    // Special functions and integer number theory (`special.rs`).
    ("digamma",                              special::gamma_family),
    ("polygamma",                            special::gamma_family),
    ("special_zeta",                         special::gamma_family),
    ("special_zeta.self_scalar",             |cx, _| special::gamma_family(cx, "special_zeta")),
    ("special_zeta.other_scalar",            |cx, _| special::gamma_family(cx, "special_zeta")),
    ("igamma",                               special::incomplete_gamma),
    ("igammac",                              special::incomplete_gamma),
    ("special_chebyshev_polynomial_t", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_t.x_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_t.n_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_u", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_u.x_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_u.n_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_v", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_v.x_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_v.n_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_w", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_w.x_scalar", special::orthogonal_polynomial),
    ("special_chebyshev_polynomial_w.n_scalar", special::orthogonal_polynomial),
    ("special_hermite_polynomial_h", special::orthogonal_polynomial),
    ("special_hermite_polynomial_h.x_scalar", special::orthogonal_polynomial),
    ("special_hermite_polynomial_h.n_scalar", special::orthogonal_polynomial),
    ("special_hermite_polynomial_he", special::orthogonal_polynomial),
    ("special_hermite_polynomial_he.x_scalar", special::orthogonal_polynomial),
    ("special_hermite_polynomial_he.n_scalar", special::orthogonal_polynomial),
    ("special_laguerre_polynomial_l", special::orthogonal_polynomial),
    ("special_laguerre_polynomial_l.x_scalar", special::orthogonal_polynomial),
    ("special_laguerre_polynomial_l.n_scalar", special::orthogonal_polynomial),
    ("special_legendre_polynomial_p", special::orthogonal_polynomial),
    ("special_legendre_polynomial_p.x_scalar", special::orthogonal_polynomial),
    ("special_legendre_polynomial_p.n_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_t", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_t.x_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_t.n_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_u", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_u.x_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_u.n_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_v", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_v.x_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_v.n_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_w", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_w.x_scalar", special::orthogonal_polynomial),
    ("special_shifted_chebyshev_polynomial_w.n_scalar", special::orthogonal_polynomial),
    ("i0",                                   special::bessel_i),
    ("special_i0e",                          special::bessel_i),
    ("special_i1",                           special::bessel_i),
    ("special_i1e",                          special::bessel_i),
    ("erfc",                                 special::erf_family),
    ("special_erfcx",                        special::erf_family),
    ("special_log_ndtr",                     special::erf_family),
    ("special_spherical_bessel_j0",          |cx, _| special::spherical_bessel_j0(cx)),
    ("special_bessel_j0",                    special::bessel),
    ("special_bessel_j1",                    special::bessel),
    ("special_bessel_y0",                    special::bessel),
    ("special_bessel_y1",                    special::bessel),
    ("special_modified_bessel_i0",           special::modified_bessel),
    ("special_modified_bessel_i1",           special::modified_bessel),
    ("special_modified_bessel_k0",           special::modified_bessel),
    ("special_modified_bessel_k1",           special::modified_bessel),
    ("special_scaled_modified_bessel_k0",    special::modified_bessel),
    ("special_scaled_modified_bessel_k1",    special::modified_bessel),
    ("special_airy_ai",                      |cx, _| special::airy_ai(cx)),
    ("erfinv",                               |cx, _| special::erfinv(cx)),
    ("special_ndtri",                        |cx, _| special::ndtri(cx)),
    ("gcd",                                  special::gcd_lcm),
    ("lcm",                                  special::gcd_lcm),
    ("nextafter",                            |cx, _| special::nextafter(cx)),
    ("frexp.Tensor",                         |cx, _| special::frexp(cx)),
    ("signbit",                              |cx, _| special::signbit(cx)),
    // Reductions and normalizations.
    ("sum",                                  reduce::reduction),
    ("sum.dim_IntList",                      reduce::reduction),
    ("prod",                                 reduce::reduction),
    ("prod.dim_int",                         reduce::reduction),
    ("amax",                                 reduce::reduction),
    ("amin",                                 reduce::reduction),
    ("any",                                  reduce::reduction),
    ("any.dim",                              reduce::reduction),
    ("any.dims",                             reduce::reduction),
    ("mean",                                 reduce::reduction),
    ("mean.dim",                             reduce::reduction),
    ("var.correction",                       reduce::variance),
    ("var.dim",                              reduce::variance),
    ("var_mean.correction",                  reduce::variance),
    ("_softmax",                             |cx, _| reduce::softmax(cx, false)),
    ("_log_softmax",                         |cx, _| reduce::softmax(cx, true)),
    ("native_layer_norm",                    |cx, _| reduce::layer_norm(cx)),
    ("native_group_norm",                    |cx, _| reduce::group_norm(cx)),
    ("_native_batch_norm_legit_no_training", reduce::batch_norm),
    ("_native_batch_norm_legit",             reduce::batch_norm),
    ("_native_batch_norm_legit.no_stats",    reduce::batch_norm_train),
    ("_native_batch_norm_legit_functional",  reduce::batch_norm_train),
    ("_batch_norm_with_update_functional",   reduce::batch_norm_train),
    ("dist",                                 |cx, _| reduce::dist(cx)),
    ("searchsorted.Tensor",                  reduce::searchsorted),
    ("bucketize.Tensor",                     reduce::searchsorted),
    ("cumsum",                               |cx, _| reduce::cumsum(cx, TenOp::Cumsum)),
    ("cummax",                               reduce::cum_extreme),
    ("cummin",                               reduce::cum_extreme),
    ("histc",                                |cx, _| reduce::histc(cx)),
    ("histogram.bin_ct",                     reduce::histogram),
    ("histogram.bins_tensor",                reduce::histogram),
    ("cumprod",                              |cx, _| reduce::cumsum(cx, TenOp::Cumprod)),
    ("logcumsumexp",                         |cx, _| special::logcumsumexp(cx)),
    ("_cdist_forward",                       |cx, _| reduce::cdist(cx)),
    ("_pdist_forward",                       |cx, _| reduce::pdist(cx)),
    ("argmax",                               reduce::arg_reduction),
    ("argmin",                               reduce::arg_reduction),
    ("max",                                  reduce::reduction),
    ("max.dim",                              reduce::arg_reduction),
    ("min",                                  reduce::reduction),
    ("min.dim",                              reduce::arg_reduction),
    // Sliding windows: convolution, pooling, padding.
    ("convolution",                          |cx, _| window::convolution(cx)),
    ("max_pool2d_with_indices",              |cx, _| window::max_pool(cx)),
    ("max_pool3d_with_indices",              |cx, _| window::max_pool(cx)),
    ("max_pool2d_with_indices_backward",     |cx, _| scatter::max_pool_backward(cx, 2)),
    ("max_pool3d_with_indices_backward",     |cx, _| scatter::max_pool_backward(cx, 3)),
    ("avg_pool2d",                           |cx, _| window::avg_pool(cx)),
    ("avg_pool3d",                           |cx, _| window::avg_pool(cx)),
    ("_adaptive_avg_pool2d",                 |cx, _| window::adaptive_avg_pool(cx)),
    ("_adaptive_avg_pool3d",                 |cx, _| window::adaptive_avg_pool(cx)),
    ("adaptive_max_pool2d",                  |cx, _| window::adaptive_max_pool(cx)),
    ("adaptive_max_pool3d",                  |cx, _| window::adaptive_max_pool(cx)),
    ("constant_pad_nd",                      |cx, _| window::constant_pad(cx)),
    ("upsample_bilinear2d.vec",              |cx, _| window::upsample_bilinear(cx)),
    ("upsample_nearest2d.vec",               |cx, _| window::upsample_nearest(cx)),
    ("_upsample_bilinear2d_aa",              |cx, _| window::upsample_bilinear_aa(cx)),
    ("grid_sampler_2d",                      |cx, _| window::grid_sampler(cx)),
    ("grid_sampler_3d",                      |cx, _| window::grid_sampler(cx)),
    // torch.linalg: factorizations and solves (`ten` linalg ops) and formulas over them.
    ("linalg_cholesky_ex",                   |cx, _| linalg::cholesky_ex(cx)),
    ("linalg_lu_factor_ex",                  |cx, _| linalg::lu_factor_ex(cx)),
    ("linalg_lu_solve",                      |cx, _| linalg::lu_solve(cx)),
    ("linalg_inv_ex",                        |cx, _| linalg::inv_ex(cx)),
    ("_linalg_solve_ex",                     |cx, _| linalg::solve_ex(cx)),
    ("_linalg_check_errors",                 |cx, _| linalg::check_errors(cx)),
    ("_linalg_det",                          |cx, _| linalg::det(cx, false)),
    ("_linalg_slogdet",                      |cx, _| linalg::det(cx, true)),
    ("_linalg_svd",                          |cx, _| linalg::svd(cx)),
    ("_linalg_eigh",                         |cx, _| linalg::eigh(cx)),
    ("linalg_qr",                            |cx, _| linalg::qr(cx)),
    ("linalg_solve_triangular",              |cx, _| linalg::solve_triangular(cx)),
    ("triangular_solve",                     |cx, _| linalg::triangular_solve(cx)),
    ("cholesky_solve",                       |cx, _| linalg::cholesky_solve(cx)),
    ("cholesky_inverse",                     |cx, _| linalg::cholesky_inverse(cx)),
    ("linalg_pinv.atol_rtol_tensor",         |cx, _| linalg::pinv(cx)),
    ("geqrf",                                |cx, _| linalg::geqrf(cx)),
    ("linalg_householder_product",           |cx, _| linalg::householder_product(cx)),
    ("ormqr",                                |cx, _| linalg::ormqr(cx)),
    ("linalg_lu",                            |cx, _| linalg::linalg_lu(cx)),
    ("lu_unpack",                            |cx, _| linalg::lu_unpack(cx)),
    ("linalg_polar",                         |cx, _| linalg::polar(cx)),
    ("linalg_matrix_sqrth",                  |cx, _| linalg::matrix_sqrth(cx)),
    // Matrix products.
    ("mm",                                   matmul::matmul),
    ("_trilinear",                           |cx, _| matmul::trilinear(cx)),
    ("bmm",                                  matmul::matmul),
    ("addmm",                                matmul::matmul),
    ("addbmm",                               |cx, _| matmul::addbmm(cx)),
    ("addmv",                                |cx, _| matmul::addmv(cx)),
    // Layout: reshapes, transposes, broadcasts, slices, concatenation, gathers.
    ("view",                                 |cx, _| shape::reshape(cx)),
    ("view_copy",                            |cx, _| shape::reshape(cx)),
    ("resize",                               |cx, _| shape::resize(cx)),
    ("_unsafe_view",                         |cx, _| shape::reshape(cx)),
    ("reshape",                              |cx, _| shape::reshape(cx)),
    ("unsqueeze",                            |cx, _| shape::reshape(cx)),
    ("unsqueeze_copy",                       |cx, _| shape::reshape(cx)),
    ("squeeze.dim",                          |cx, _| shape::reshape(cx)),
    ("squeeze.dims",                         |cx, _| shape::reshape(cx)),
    ("squeeze_copy.dims",                    |cx, _| shape::reshape(cx)),
    ("permute",                              shape::transpose),
    ("permute_copy",                         shape::transpose),
    ("transpose.int",                        shape::transpose),
    ("expand",                               |cx, _| shape::expand(cx)),
    ("expand_copy",                          |cx, _| shape::expand(cx)),
    ("slice.Tensor",                         shape::slice),
    ("slice_copy.Tensor",                    shape::slice),
    ("narrow_copy",                          shape::slice),
    ("select.int",                           shape::slice),
    ("select_copy.int",                      shape::slice),
    ("split_with_sizes",                     |cx, _| shape::split(cx)),
    ("split_with_sizes_copy",                |cx, _| shape::split(cx)),
    ("unbind_copy.int",                      |cx, _| shape::unbind(cx)),
    ("cat",                                  |cx, _| shape::cat(cx, false)),
    ("stack",                                |cx, _| shape::cat(cx, true)),
    ("flip",                                 |cx, _| shape::flip(cx)),
    ("repeat",                               |cx, _| shape::repeat(cx)),
    ("embedding",                            shape::gather),
    ("index_select",                         shape::gather),
    ("index.Tensor",                         shape::gather),
    ("gather",                               |cx, _| shape::gather_dim(cx)),
    ("sort",                                 shape::sort),
    ("sort.stable",                          shape::sort),
    ("topk",                                 shape::sort),
    ("kthvalue",                             shape::order_statistic),
    ("median",                               shape::order_statistic),
    ("median.dim",                           shape::order_statistic),
    ("nanmedian",                            shape::order_statistic),
    ("nanmedian.dim",                        shape::order_statistic),
    ("as_strided",                           |cx, _| shape::as_strided(cx)),
    ("as_strided_copy",                      |cx, _| shape::as_strided(cx)),
    ("as_strided_scatter",                   |cx, _| shape::as_strided_scatter(cx)),
    ("put",                                  |cx, _| shape::put(cx)),
    ("unfold",                               |cx, _| shape::unfold(cx)),
    ("diagonal",                             |cx, _| shape::diagonal(cx)),
    ("diagonal_copy",                        |cx, _| shape::diagonal(cx)),
    // Scatters: `ten.scatter` into the flattened input.
    ("scatter.src",                          scatter::scatter_dim),
    ("scatter.value",                        scatter::scatter_dim),
    ("scatter.reduce",                       scatter::scatter_dim),
    ("scatter_add",                          scatter::scatter_dim),
    ("scatter_reduce.two",                   scatter::scatter_dim),
    ("segment_reduce",                       |cx, _| scatter::segment_reduce(cx)),
    ("_embedding_bag",                       |cx, _| scatter::embedding_bag(cx)),
    ("_embedding_bag_forward_only",          |cx, _| scatter::embedding_bag(cx)),
    ("masked_scatter",                       |cx, _| scatter::masked_scatter(cx)),
    ("index_put",                            |cx, _| scatter::index_put(cx)),
    ("index_reduce",                         |cx, _| scatter::index_reduce(cx)),
    ("slice_scatter",                        scatter::view_scatter),
    ("select_scatter",                       scatter::view_scatter),
    ("diagonal_scatter",                     scatter::view_scatter),
    // Constants, conversions, identities.
    ("full",                                 create::fill),
    ("full_like",                            create::fill),
    ("scalar_tensor",                        create::fill),
    ("zeros",                                create::fill),
    ("zeros_like",                           create::fill),
    ("new_empty_strided",                    create::fill),
    ("nonzero_static",                       |cx, _| create::nonzero_static(cx)),
    ("tril_indices",                         create::tri_indices),
    ("triu_indices",                         create::tri_indices),
    ("ones",                                 create::fill),
    ("ones_like",                            create::fill),
    ("fill.Scalar",                          create::fill),
    ("empty.memory_format",                  create::fill),
    ("empty_strided",                        create::fill),
    ("empty_permuted",                       create::fill),
    ("arange",                               |cx, _| create::arange(cx)),
    ("arange.start",                         |cx, _| create::arange(cx)),
    ("arange.start_step",                    |cx, _| create::arange(cx)),
    ("_to_copy",                             create::to_copy),
    ("copy",                                 create::to_copy),
    ("clone",                                |cx, _| create::identity(cx)),
    ("alias",                                |cx, _| create::identity(cx)),
    ("alias_copy",                           |cx, _| create::identity(cx)),
    ("detach",                               |cx, _| create::identity(cx)),
    ("lift_fresh_copy",                      |cx, _| create::identity(cx)),
    ("_assert_tensor_metadata",              |_, _| Ok(Some(vec![]))),
];

/// The torch ops `torch-to-ten` has a lowering for (IR names after `torch.aten.`), in table order.
pub fn lowered_ops() -> impl Iterator<Item = &'static str> {
    LOWERINGS.iter().map(|(k, _)| *k)
}

fn lowering(name: &str) -> Option<Lower> {
    static BY_NAME: OnceLock<HashMap<&'static str, Lower>> = OnceLock::new();
    BY_NAME.get_or_init(|| LOWERINGS.iter().copied().collect()).get(name).copied()
}

fn lower(cx: &mut Cx) -> build::Lowered {
    let name = cx.name().strip_prefix("torch.aten.").unwrap_or("").to_string();
    match lowering(&name) {
        Some(f) => f(cx, &name),
        None => Ok(None),
    }
}
