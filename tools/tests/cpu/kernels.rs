//! Kernel edge cases against references computed in the test: convolutions, pools and scans at
//! their boundaries, scatter, atan2, row groups, NaN and signed zero through min/max, reduction
//! vectorization, narrow-dtype npz. Kept apart from the end-to-end model checks in `cpu`
//! because each one pins a code generator decision rather than a model.

use super::*;
use ember_targets::cpu::plan::Step;
use ember_targets::cpu::{HostTensor, Program};

/// Edge cases against references computed here, one compile for every batch size: a convolution
/// with asymmetric stride/padding/dilation over a symbolic batch, a ceil-mode max pool whose
/// last windows hang over the input, and exact ties and NaNs for cumsum and the arg-reductions.
#[test]
fn conv_pool_scan_edge_cases_match_reference() {
    let x_ty = "tensor<?x2x6x5xf32, #ember.dims<[\"s0\", 2, 6, 5]>>";
    let conv_ty = "tensor<?x3x2x8xf32, #ember.dims<[\"s0\", 3, 2, 8]>>";
    let pool_ty = "tensor<?x2x4x3xf32, #ember.dims<[\"s0\", 2, 4, 3]>>";
    let pool_i_ty = "tensor<?x2x4x3xi64, #ember.dims<[\"s0\", 2, 4, 3]>>";
    let text = format!(
        r#"module attributes {{ember.symbols = {{s0 = array<i64: 1, 4>}}}} {{
  func.func @main(%x: {x_ty} {{ember.input = "x"}}, %w: tensor<3x2x3x2xf32> {{ember.input = "w"}}, %t: tensor<4x6xf32> {{ember.input = "t"}}) -> ({conv_ty}, {pool_ty}, tensor<4x6xf32>, tensor<4xi64>, tensor<6xi64>, tensor<4xf32>, tensor<4xi64>, tensor<i64>) {{
    %0 = "torch.aten.convolution"(%x, %w) {{dilation = array<i64: 2, 1>, groups = 1 : i64, operandSegmentSizes = array<i64: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 2>, stride = array<i64: 2, 1>, transposed = false}} : ({x_ty}, tensor<3x2x3x2xf32>) -> {conv_ty}
    %1:2 = "torch.aten.max_pool2d_with_indices"(%x) {{kernel_size = array<i64: 2, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, ceil_mode = true}} : ({x_ty}) -> ({pool_ty}, {pool_i_ty})
    %2 = "torch.aten.cumsum"(%t) {{dim = 0 : i64}} : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %3 = "torch.aten.argmax"(%t) {{dim = 1 : i64, keepdim = false}} : (tensor<4x6xf32>) -> tensor<4xi64>
    %4 = "torch.aten.argmin"(%t) {{dim = 0 : i64, keepdim = false}} : (tensor<4x6xf32>) -> tensor<6xi64>
    %5:2 = "torch.aten.min.dim"(%t) {{dim = 1 : i64, keepdim = false}} : (tensor<4x6xf32>) -> (tensor<4xf32>, tensor<4xi64>)
    %6 = "torch.aten.argmax"(%t) {{keepdim = false}} : (tensor<4x6xf32>) -> tensor<i64>
    return %0, %1#0, %2, %3, %4, %5#0, %5#1, %6 : {conv_ty}, {pool_ty}, tensor<4x6xf32>, tensor<4xi64>, tensor<6xi64>, tensor<4xf32>, tensor<4xi64>, tensor<i64>
  }}
}}
"#
    );
    let prog = compile_text(&text, "edge");
    let nan = f32::NAN;
    // Rows: ties (first wins), NaN (first NaN wins, values NaN), all equal, -inf and +inf.
    let t: Vec<f32> = vec![
        2.0,
        5.0,
        1.0,
        5.0,
        1.0,
        0.0, //
        3.0,
        nan,
        9.0,
        nan,
        -9.0,
        3.0, //
        4.0,
        4.0,
        4.0,
        4.0,
        4.0,
        4.0, //
        f32::NEG_INFINITY,
        -1.0,
        f32::INFINITY,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.5,
    ];
    let w: Vec<f32> = (0..36).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.25).collect();
    for n in [1usize, 3] {
        let x: Vec<f32> = (0..n * 60).map(|i| ((i * 13 % 17) as f32 - 8.0) * 0.5).collect();
        let outs = prog.run(&[f32_nd(&[n, 2, 6, 5], &x), f32_nd(&[3, 2, 3, 2], &w), f32_nd(&[4, 6], &t)]).unwrap();
        let xat = |b: usize, c: usize, h: i64, ww: i64| -> Option<f32> {
            ((0..6).contains(&h) && (0..5).contains(&ww)).then(|| x[((b * 2 + c) * 6 + h as usize) * 5 + ww as usize])
        };
        // conv: stride (2, 1), padding (1, 2), dilation (2, 1) -> [n, 3, 2, 8]
        assert_eq!(outs[0].shape, vec![n, 3, 2, 8]);
        let got = f32s(&outs[0]);
        for b in 0..n {
            for co in 0..3 {
                for oh in 0..2 {
                    for ow in 0..8 {
                        let mut want = 0.0f64;
                        for ci in 0..2 {
                            for kh in 0..3 {
                                for kw in 0..2 {
                                    let (h, ww) = (oh as i64 * 2 + kh as i64 * 2 - 1, ow as i64 + kw as i64 - 2);
                                    if let Some(v) = xat(b, ci, h, ww) {
                                        want += v as f64 * w[((co * 2 + ci) * 3 + kh) * 2 + kw] as f64;
                                    }
                                }
                            }
                        }
                        let g = got[((b * 3 + co) * 2 + oh) * 8 + ow] as f64;
                        assert!(
                            (g - want).abs() <= 1e-5 * (1.0 + want.abs()),
                            "conv n={n} [{b},{co},{oh},{ow}]: {g} vs {want}"
                        );
                    }
                }
            }
        }
        // max pool 2x2, stride 2, padding 1, ceil_mode: windows start at -1, 1, 3, 5 (rows) and
        // -1, 1, 3 (columns); only in-input elements count.
        assert_eq!(outs[1].shape, vec![n, 2, 4, 3]);
        let got = f32s(&outs[1]);
        for b in 0..n {
            for c in 0..2 {
                for oh in 0..4i64 {
                    for ow in 0..3i64 {
                        let vals: Vec<f32> = (0..2)
                            .flat_map(|kh| (0..2).filter_map(move |kw| xat(b, c, oh * 2 - 1 + kh, ow * 2 - 1 + kw)))
                            .collect();
                        let want = vals.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                        assert_eq!(
                            got[((b * 2 + c) * 4 + oh as usize) * 3 + ow as usize],
                            want,
                            "max pool n={n} [{b},{c},{oh},{ow}]"
                        );
                    }
                }
            }
        }
    }
    let outs = prog.run(&[f32_nd(&[1, 2, 6, 5], &[0.0; 60]), f32_nd(&[3, 2, 3, 2], &w), f32_nd(&[4, 6], &t)]).unwrap();
    // cumsum along dim 0 (a NaN poisons the rest of its column)
    let cs = f32s(&outs[2]);
    for col in 0..6 {
        let mut acc = 0.0f64;
        for row in 0..4 {
            acc += t[row * 6 + col] as f64;
            let g = cs[row * 6 + col];
            assert!(
                (g.is_nan() && acc.is_nan()) || g as f64 == acc as f32 as f64,
                "cumsum [{row},{col}]: {g} vs {acc}"
            );
        }
    }
    assert_eq!(i64s(&outs[3]), vec![1, 1, 0, 2], "argmax dim 1");
    assert_eq!(i64s(&outs[4]), vec![3, 1, 0, 1, 3, 0], "argmin dim 0");
    let mins = f32s(&outs[5]);
    assert_eq!((mins[0], mins[2], mins[3]), (0.0, 4.0, f32::NEG_INFINITY));
    assert!(mins[1].is_nan(), "min over a row with NaN is NaN");
    assert_eq!(i64s(&outs[6]), vec![5, 1, 0, 0], "min.dim indices");
    assert_eq!(i64s(&outs[7]), vec![7], "argmax over everything: the first NaN");
}

#[test]
fn empty_matmuls_give_empty_or_zero_results() {
    let text = "module {\n  func.func @main(%a: tensor<0x5x5xf32> {ember.input = \"a\"}, %b: tensor<0x5x7xf32> {ember.input = \"b\"}, %c: tensor<3x0xf32> {ember.input = \"c\"}, %d: tensor<0x4xf32> {ember.input = \"d\"}) -> (tensor<0x5x7xf32>, tensor<3x4xf32>) {\n    %0 = \"ten.dot_general\"(%a, %b) {lhs_batch = array<i64: 0>, lhs_contract = array<i64: 2>, rhs_batch = array<i64: 0>, rhs_contract = array<i64: 1>} : (tensor<0x5x5xf32>, tensor<0x5x7xf32>) -> tensor<0x5x7xf32>\n    %1 = \"ten.dot_general\"(%c, %d) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>\n    return %0, %1 : tensor<0x5x7xf32>, tensor<3x4xf32>\n  }\n}\n";
    let prog = compile_text(text, "empty");
    let t = |shape: Vec<usize>| HostTensor { dtype: ember_ir::DType::F32, shape, data: vec![] };
    for _ in 0..2 {
        let outs = prog.run(&[t(vec![0, 5, 5]), t(vec![0, 5, 7]), t(vec![3, 0]), t(vec![0, 4])]).unwrap();
        assert_eq!(outs[0].shape, vec![0, 5, 7]);
        assert_eq!(f32_values(&outs[1]), vec![0.0; 12]);
    }
}

/// A product with a transposed rhs large enough that the runtime copies the rhs row-major first
/// (`transpose_rows`: 8×8 register blocks plus the edges, here 37 rows and 2053 columns, neither
/// a multiple of 8), against a sequential reference; small integers keep every sum exact.
#[test]
fn transposed_rhs_products_match_reference() {
    let (m, k, n) = (260usize, 37usize, 2053usize);
    let text = format!(
        r#"func.func @main(%x: tensor<{m}x{k}xf32> {{ember.input = "x"}}, %w: tensor<{n}x{k}xf32> {{ember.input = "w"}}) -> tensor<{m}x{n}xf32> {{
  %0 = "ten.dot_general"(%x, %w) {{lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 1>}} : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}
"#
    );
    let prog = compile_text(&text, "nt-product");
    let x: Vec<f32> = (0..m * k).map(|i| (i * 7 % 13) as f32 - 6.0).collect();
    let w: Vec<f32> = (0..n * k).map(|i| (i * 5 % 11) as f32 - 5.0).collect();
    let t = |shape: Vec<usize>, v: &[f32]| HostTensor {
        dtype: ember_ir::DType::F32,
        shape,
        data: v.iter().flat_map(|f| f.to_le_bytes()).collect(),
    };
    let out = prog.run(&[t(vec![m, k], &x), t(vec![n, k], &w)]).unwrap();
    let got = f32_values(&out[0]);
    for (i, row) in got.chunks(n).enumerate() {
        for (j, &g) in row.iter().enumerate() {
            let want: f32 = (0..k).map(|p| x[i * k + p] * w[j * k + p]).sum();
            assert_eq!(g, want, "[{i}, {j}]");
        }
    }
}

#[test]
fn unused_symbols_are_not_bound() {
    // torch.export can record symbols no tensor of the graph uses; they must not block a run.
    let text = "module attributes {ember.symbols = {s0 = array<i64: 1, 8>, s9 = array<i64: 2, 4>}} {\n  func.func @main(%x: tensor<?x2xf32, #ember.dims<[\"s0\", 2]>> {ember.input = \"x\"}) -> (tensor<?x2xf32, #ember.dims<[\"s0\", 2]>>) {\n    %0 = \"ten.neg\"(%x) : (tensor<?x2xf32, #ember.dims<[\"s0\", 2]>>) -> tensor<?x2xf32, #ember.dims<[\"s0\", 2]>>\n    return %0 : tensor<?x2xf32, #ember.dims<[\"s0\", 2]>>\n  }\n}\n";
    let prog = compile_text(text, "unused-sym");
    assert_eq!(prog.manifest.symbols.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["s0"]);
    let out = prog.run(&[HostTensor { dtype: ember_ir::DType::F32, shape: vec![3, 2], data: vec![0; 24] }]).unwrap();
    assert_eq!(out[0].shape, vec![3, 2]);
}

/// `ten.scatter` against a sequential reference: a 65536-element operand (so the runtime splits
/// the result's rows across threads and only the first call may scatter), duplicate indices for
/// the combining kinds, out-of-range and negative indices skipped, two scatters chained, and an
/// elementwise consumer of a scatter.
#[test]
fn scatter_matches_reference() {
    let n = 1usize << 16;
    let text = format!(
        r#"func.func @main(%x: tensor<{n}xf32> {{ember.input = "x"}}, %i: tensor<64x8xi64> {{ember.input = "i"}}, %u: tensor<64x8xf32> {{ember.input = "u"}}) -> (tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>) {{
  %0 = "ten.scatter"(%x, %i, %u) {{kind = "set"}} : (tensor<{n}xf32>, tensor<64x8xi64>, tensor<64x8xf32>) -> tensor<{n}xf32>
  %1 = "ten.scatter"(%x, %i, %u) {{kind = "sum"}} : (tensor<{n}xf32>, tensor<64x8xi64>, tensor<64x8xf32>) -> tensor<{n}xf32>
  %2 = "ten.scatter"(%x, %i, %u) {{kind = "prod"}} : (tensor<{n}xf32>, tensor<64x8xi64>, tensor<64x8xf32>) -> tensor<{n}xf32>
  %3 = "ten.scatter"(%0, %i, %u) {{kind = "max"}} : (tensor<{n}xf32>, tensor<64x8xi64>, tensor<64x8xf32>) -> tensor<{n}xf32>
  %4 = "ten.scatter"(%x, %i, %u) {{kind = "min"}} : (tensor<{n}xf32>, tensor<64x8xi64>, tensor<64x8xf32>) -> tensor<{n}xf32>
  %5 = "ten.neg"(%1) : (tensor<{n}xf32>) -> tensor<{n}xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>, tensor<{n}xf32>
}}
"#
    );
    let prog = compile_text(&text, "scatter");
    let x: Vec<f32> = (0..n).map(|k| ((k * 37 % 101) as f32 - 50.0) * 0.125).collect();
    // Every 7th entry repeats an earlier position; a few fall outside [0, n).
    let idx: Vec<i64> = (0..512i64)
        .map(|k| {
            if k % 61 == 5 {
                -3
            } else if k % 67 == 9 {
                n as i64 + k
            } else if k % 7 == 0 {
                (k / 7) * 13
            } else {
                k * 13 % n as i64
            }
        })
        .collect();
    let u: Vec<f32> = (0..512).map(|k| ((k * 29 % 43) as f32 - 21.0) * 0.25).collect();
    let it = HostTensor {
        dtype: ember_ir::DType::I64,
        shape: vec![64, 8],
        data: idx.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let outs = prog.run(&[f32_nd(&[n], &x), it, f32_nd(&[64, 8], &u)]).unwrap();
    let reference = |base: &[f32], f: &dyn Fn(f32, f32) -> f32| -> Vec<f32> {
        let mut r = base.to_vec();
        for (&j, &v) in idx.iter().zip(&u) {
            if (0..n as i64).contains(&j) {
                r[j as usize] = f(r[j as usize], v);
            }
        }
        r
    };
    let set = reference(&x, &|_, v| v);
    let sum = reference(&x, &|a, v| a + v);
    let want = [
        set.clone(),
        sum.clone(),
        reference(&x, &|a, v| a * v),
        reference(&set, &|a, v| a.max(v)),
        reference(&x, &|a, v| a.min(v)),
        sum.iter().map(|v| -v).collect(),
    ];
    for (k, w) in want.iter().enumerate() {
        assert_eq!(&f32s(&outs[k]), w, "output {k}");
    }
}

/// The inline f32 `ten.atan2` against f64 over a grid of (y, x) in [-8, 8]² (every octant and
/// the axes) plus signed zeros, infinities, NaN and huge/tiny ratios: within 4 ulp of the
/// reference, exact quadrant and sign for the special values.
#[test]
fn atan2_matches_f64_reference() {
    let special = [0.0f32, -0.0, 1e-30, -1e-30, 1.0, -1.0, 3e30, -3e30, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    let grid: Vec<f32> = (0..161).map(|i| -8.0 + i as f32 * 0.1).collect();
    let mut pairs: Vec<(f32, f32)> = grid.iter().flat_map(|&y| grid.iter().map(move |&x| (y, x))).collect();
    pairs.extend(special.iter().flat_map(|&y| special.iter().map(move |&x| (y, x))));
    let n = pairs.len();
    let t = format!("tensor<{n}xf32>");
    let text = format!("func.func @main(%y: {t} {{ember.input = \"y\"}}, %x: {t} {{ember.input = \"x\"}}) -> {t} {{\n  %0 = \"ten.atan2\"(%y, %x) : ({t}, {t}) -> {t}\n  return %0 : {t}\n}}\n");
    let prog = compile_text(&text, "atan2");
    let ys: Vec<f32> = pairs.iter().map(|p| p.0).collect();
    let xs: Vec<f32> = pairs.iter().map(|p| p.1).collect();
    let out = prog.run(&[f32_tensor(&ys), f32_tensor(&xs)]).unwrap();
    for (&(y, x), &got) in pairs.iter().zip(&f32_values(&out[0])) {
        let want = (y as f64).atan2(x as f64);
        if want.is_nan() {
            assert!(got.is_nan(), "atan2({y}, {x}): got {got}, want NaN");
            continue;
        }
        assert_eq!(got.is_sign_negative(), want.is_sign_negative(), "atan2({y}, {x}): got {got}, want {want}");
        let tol = 4.0 * f32::EPSILON as f64 * want.abs() + f32::MIN_POSITIVE as f64;
        assert!((got as f64 - want).abs() <= tol, "atan2({y}, {x}): got {got}, want {want}");
    }
}

/// LayerNorm + softmax (and a relu of the LayerNorm output, read by a non-reduction pass) as one
/// row group: the normalized row and the exp row are each computed once per row into a stack row
/// shared by the later passes, and a value pass shares its loop with the reduction over it. The
/// row length (300) is not a multiple of the vector width and long enough for interleaved
/// loops; one row holds a NaN (it must stay NaN throughout), one signed zeros.
#[test]
fn row_group_shares_rows_between_passes() {
    let (r, n) = (5usize, 300usize);
    let v = |s: &str| s.replace("{R}", &r.to_string()).replace("{N}", &n.to_string());
    let x2 = v("tensor<{R}x{N}xf32>");
    let x1 = v("tensor<{R}xf32>");
    let w1 = v("tensor<{N}xf32>");
    let text = v(&format!(
        r#"module {{
  func.func @main(%x: {x2} {{ember.input = "x"}}, %w: {w1} {{ember.input = "w"}}) -> ({x2}, {x2}) {{
    %0 = "ten.reduce"(%x) {{dims = array<i64: 1>, kind = "sum"}} : ({x2}) -> {x1}
    %1 = "ten.constant"() {{dtype = f32, shape = array<i64: {{R}}>, value = {{N}}.0 : f64}} : () -> {x1}
    %2 = "ten.div"(%0, %1) : ({x1}, {x1}) -> {x1}
    %3 = "ten.broadcast"(%2) {{dims = array<i64: 0>, shape = array<i64: {{R}}, {{N}}>}} : ({x1}) -> {x2}
    %4 = "ten.sub"(%x, %3) : ({x2}, {x2}) -> {x2}
    %5 = "ten.mul"(%4, %4) : ({x2}, {x2}) -> {x2}
    %6 = "ten.reduce"(%5) {{dims = array<i64: 1>, kind = "sum"}} : ({x2}) -> {x1}
    %7 = "ten.div"(%6, %1) : ({x1}, {x1}) -> {x1}
    %8 = "ten.constant"() {{dtype = f32, shape = array<i64: {{R}}>, value = 1.0e-5 : f64}} : () -> {x1}
    %9 = "ten.add"(%7, %8) : ({x1}, {x1}) -> {x1}
    %10 = "ten.rsqrt"(%9) : ({x1}) -> {x1}
    %11 = "ten.broadcast"(%10) {{dims = array<i64: 0>, shape = array<i64: {{R}}, {{N}}>}} : ({x1}) -> {x2}
    %12 = "ten.mul"(%4, %11) : ({x2}, {x2}) -> {x2}
    %13 = "ten.broadcast"(%w) {{dims = array<i64: 1>, shape = array<i64: {{R}}, {{N}}>}} : ({w1}) -> {x2}
    %14 = "ten.mul"(%12, %13) : ({x2}, {x2}) -> {x2}
    %15 = "ten.reduce"(%14) {{dims = array<i64: 1>, kind = "max"}} : ({x2}) -> {x1}
    %16 = "ten.broadcast"(%15) {{dims = array<i64: 0>, shape = array<i64: {{R}}, {{N}}>}} : ({x1}) -> {x2}
    %17 = "ten.sub"(%14, %16) : ({x2}, {x2}) -> {x2}
    %18 = "ten.exp"(%17) : ({x2}) -> {x2}
    %19 = "ten.reduce"(%18) {{dims = array<i64: 1>, kind = "sum"}} : ({x2}) -> {x1}
    %20 = "ten.broadcast"(%19) {{dims = array<i64: 0>, shape = array<i64: {{R}}, {{N}}>}} : ({x1}) -> {x2}
    %21 = "ten.div"(%18, %20) : ({x2}, {x2}) -> {x2}
    %22 = "ten.constant"() {{dtype = f32, shape = array<i64: {{R}}, {{N}}>, value = 0.0 : f64}} : () -> {x2}
    %23 = "ten.max"(%14, %22) : ({x2}, {x2}) -> {x2}
    return %21, %23 : {x2}, {x2}
  }}
}}
"#
    ));
    // The plan: one kernel over rows; the normalized row (%14) and the exp row (%18) are shared
    // stack rows of N elements, each right before its first reader.
    let m = ember_ir::parse_module(&text).unwrap();
    let f = m.func_by_name("main").unwrap();
    let plan = ember_targets::cpu::plan::plan(&m, f, &[]).unwrap();
    assert_eq!(plan.kernels.len(), 1, "one row-group kernel");
    let k = &plan.kernels[0];
    let rows: Vec<_> = k.scratch.iter().filter(|&&s| m.ty(s).tensor().unwrap().rank() == 2).copied().collect();
    let names: Vec<String> = rows.iter().map(|&s| m.op(m.defining_op(s).unwrap()).name.clone()).collect();
    assert_eq!(names, ["ten.mul", "ten.exp"], "shared rows: the affine LayerNorm output and the exp");
    assert!(rows.iter().all(|s| !plan.buf_of.contains_key(s)), "shared rows have no buffer");
    let pos = |v| k.roots.iter().position(|&r| r == v).unwrap();
    assert!(pos(rows[0]) < pos(rows[1]), "the LayerNorm row is computed before the exp row");

    let mut xs: Vec<f32> = (0..r * n).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.07).collect();
    xs[3 * n + 17] = f32::NAN;
    for j in 0..n {
        xs[4 * n + j] = if j % 2 == 0 { 0.0 } else { -0.0 };
    }
    let ws: Vec<f32> = (0..n).map(|j| 0.5 + (j % 7) as f32 * 0.15).collect();
    let prog = compile_text(&text, "rowshare");
    let x = HostTensor {
        dtype: ember_ir::DType::F32,
        shape: vec![r, n],
        data: xs.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let outs = prog.run(&[x, f32_tensor(&ws)]).unwrap();
    let (sm, relu) = (f32_values(&outs[0]), f32_values(&outs[1]));
    for i in 0..r {
        let row: Vec<f64> = xs[i * n..(i + 1) * n].iter().map(|&v| v as f64).collect();
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let z: Vec<f64> = row.iter().zip(&ws).map(|(v, &w)| (v - mean) / (var + 1e-5).sqrt() * w as f64).collect();
        let mx = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = z.iter().map(|v| (v - mx).exp()).sum();
        for j in 0..n {
            let (got_sm, got_r) = (sm[i * n + j] as f64, relu[i * n + j] as f64);
            if i == 3 {
                assert!(got_sm.is_nan() && got_r.is_nan(), "NaN row [{i},{j}]: softmax {got_sm}, relu {got_r}");
                continue;
            }
            let want_sm = (z[j] - mx).exp() / s;
            let want_r = z[j].max(0.0);
            assert!(
                (got_sm - want_sm).abs() <= 1e-6 + 1e-5 * want_sm.abs(),
                "softmax [{i},{j}]: got {got_sm}, want {want_sm}"
            );
            assert!((got_r - want_r).abs() <= 1e-5 + 1e-5 * want_r.abs(), "relu [{i},{j}]: got {got_r}, want {want_r}");
        }
    }
}

/// Maximum/minimum against a constant take a compare-and-select path; it must keep
/// `ten.max`/`ten.min`'s IEEE maximum/minimum semantics: NaN propagates and -0 < +0.
#[test]
fn min_max_against_constants_keep_nan_and_signed_zero() {
    let xs = [f32::NAN, 0.0, -0.0, 3.5, -3.5, 7.0, -7.0, f32::INFINITY, f32::NEG_INFINITY, 1e-30];
    let n = xs.len();
    let t = format!("tensor<{n}xf32>");
    let consts = [0.0f64, -0.0, 4.0, -4.0];
    let mut body = String::new();
    let mut rets = Vec::new();
    for (i, c) in consts.iter().enumerate() {
        body += &format!("    %c{i} = \"ten.constant\"() {{dtype = f32, shape = array<i64: {n}>, value = {c:?} : f64}} : () -> {t}\n");
        body += &format!("    %mx{i} = \"ten.max\"(%x, %c{i}) : ({t}, {t}) -> {t}\n    %mn{i} = \"ten.min\"(%c{i}, %x) : ({t}, {t}) -> {t}\n");
        rets.push(format!("%mx{i}"));
        rets.push(format!("%mn{i}"));
    }
    let tys = vec![t.clone(); rets.len()].join(", ");
    let text = format!("module {{\n  func.func @main(%x: {t} {{ember.input = \"x\"}}) -> ({tys}) {{\n{body}    return {} : {tys}\n  }}\n}}\n", rets.join(", "));
    let prog = compile_text(&text, "minmax");
    let outs = prog.run(&[f32_tensor(&xs)]).unwrap();
    let maximum = |a: f32, b: f32| {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else if a == b {
            if a.is_sign_negative() {
                b
            } else {
                a
            }
        } else {
            a.max(b)
        }
    };
    let minimum = |a: f32, b: f32| {
        if a.is_nan() || b.is_nan() {
            f32::NAN
        } else if a == b {
            if a.is_sign_negative() {
                a
            } else {
                b
            }
        } else {
            a.min(b)
        }
    };
    for (i, &c) in consts.iter().enumerate() {
        let c = c as f32;
        for (k, (out, f)) in
            [(&outs[2 * i], &maximum as &dyn Fn(f32, f32) -> f32), (&outs[2 * i + 1], &minimum)].into_iter().enumerate()
        {
            for (&x, &got) in xs.iter().zip(&f32_values(out)) {
                let want = f(x, c);
                let same = (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits();
                assert!(same, "{} of {x:?} and {c:?}: got {got:?}, want {want:?}", ["max", "min"][k]);
            }
        }
    }
}

#[test]
fn multi_dim_reductions_vectorize_their_innermost_loop() {
    // LLVM fully unrolled a short innermost reduction loop and vectorized the loop around it
    // with strided gathers (15x slower than torch on BatchNorm's statistics).
    let text = "module {\n  func.func @main(%arg0: tensor<2x3x64x64xf32> {ember.input = \"x\"}) -> (tensor<3xf32> {ember.output = \"y\"}) {\n    %0 = \"ten.reduce\"(%arg0) {dims = array<i64: 0, 2, 3>, kind = \"sum\"} : (tensor<2x3x64x64xf32>) -> tensor<3xf32>\n    return %0 : tensor<3xf32>\n  }\n}\n";
    let (p, ll) = compile_with_ir(text, "reduce-vector");
    assert!(!ll.contains("llvm.masked.gather"), "the reduction gathers across its outer loop");
    assert!(ll.contains("llvm.loop.unroll.disable"));
    let x: Vec<f32> = (0..2 * 3 * 64 * 64).map(|i| ((i * 7919) % 1000) as f32 / 1000.0).collect();
    let input = HostTensor {
        dtype: ember_ir::DType::F32,
        shape: vec![2, 3, 64, 64],
        data: x.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    let got = f32_values(&p.run(&[input]).unwrap()[0]);
    for (c, &g) in got.iter().enumerate().take(3) {
        let want: f64 = (0..2).flat_map(|n| (0..4096).map(move |j| (n * 3 + c) * 4096 + j)).map(|i| x[i] as f64).sum();
        assert!((g as f64 - want).abs() < 1e-3 * want.abs(), "channel {c}: {g} vs {want}");
    }
}

/// `.npz` bf16 is ml_dtypes' convention, `<V2` holding the bit patterns: what Ember writes reads
/// back bit-exact, a numpy-written `|V2` array (the bundled tiny_llama_bf16 reference) reads as
/// bfloat16, and f16 stays `<f2`.
#[test]
fn npz_bf16_f16_and_complex_round_trip() {
    use ember_ir::DType;
    let bits: Vec<u16> = vec![0x3F80, 0xC000, 0x7FC0, 0xFF80, 0x0001, 0x0000];
    let data: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
    let arrays = vec![
        ("b".to_string(), HostTensor { dtype: DType::BF16, shape: vec![2, 3], data: data.clone() }),
        ("h".to_string(), HostTensor { dtype: DType::F16, shape: vec![6], data: data.clone() }),
        // complex64 [3]: its real view [3, 2].
        (
            "c".to_string(),
            HostTensor { dtype: DType::F32, shape: vec![3, 2], data: [data.clone(), data.clone()].concat() },
        ),
    ];
    let path = std::env::temp_dir().join(format!("ember-npz-bf16-{}.npz", std::process::id()));
    let complex = std::collections::BTreeSet::from(["c".to_string()]);
    ember_compiler::npz::write_npz(&path, &arrays, &complex).unwrap();
    let raw = std::fs::read(&path).unwrap();
    let has = |s: &str| raw.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(
        has("'descr': '<V2'") && has("'descr': '<f2'") && has("'descr': '<c8', 'fortran_order': False, 'shape': (3,)")
    );
    let back = ember_compiler::npz::read_npz(&path).unwrap();
    assert_eq!(back.complex, complex);
    std::fs::remove_file(&path).unwrap();
    for (name, t) in &arrays {
        assert_eq!((back[name].dtype, &back[name].shape, &back[name].data), (t.dtype, &t.shape, &t.data), "{name}");
    }
    let reference = ember_compiler::npz::read_npz(&testdata().join("models/tiny_llama_bf16.npz")).unwrap();
    assert_eq!(reference["out0"].dtype, DType::BF16);
    assert!(
        as_f64(&reference["out0"]).iter().all(|v| v.is_finite())
            && as_f64(&reference["out0"]).iter().any(|&v| v != 0.0)
    );
}

/// Short rows (8 to 64 elements: a head's dims, a few keys) as small models have them: a max
/// over 16 is a tree (exact, NaN and -0 < +0 included), RoPE's rotated half with sin/cos stays
/// a loop the vectorizer widens (buffers carry alias scopes, so its shifted reads need no
/// bounds check), and a returned reshape of a GEMM result is that result (no copy kernel).
#[test]
fn short_rows_vectorize_and_returned_gemm_reshapes_are_not_copied() {
    let text = r#"module {
  func.func @main(%x: tensor<4x16xf32> {ember.input = "x"}, %w: tensor<16x16xf32> {ember.input = "w"}) -> (tensor<4xf32> {ember.output = "mx"}, tensor<4x16xf32> {ember.output = "rope"}, tensor<2x2x16xf32> {ember.output = "mm"}) {
    %0 = "ten.reduce"(%x) {dims = array<i64: 1>, kind = "max"} : (tensor<4x16xf32>) -> tensor<4xf32>
    %1 = "ten.slice"(%x) {start = array<i64: 0, 8>, shape = array<i64: 4, 8>, step = array<i64: 1, 1>} : (tensor<4x16xf32>) -> tensor<4x8xf32>
    %2 = "ten.slice"(%x) {start = array<i64: 0, 0>, shape = array<i64: 4, 8>, step = array<i64: 1, 1>} : (tensor<4x16xf32>) -> tensor<4x8xf32>
    %3 = "ten.concat"(%1, %2) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
    %4 = "ten.cos"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %5 = "ten.sin"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %6 = "ten.mul"(%x, %4) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %7 = "ten.mul"(%3, %5) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %8 = "ten.add"(%6, %7) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %9 = "ten.dot_general"(%x, %w) {lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %10 = "ten.reshape"(%9) {shape = array<i64: 2, 2, 16>} : (tensor<4x16xf32>) -> tensor<2x2x16xf32>
    return %0, %8, %10 : tensor<4xf32>, tensor<4x16xf32>, tensor<2x2x16xf32>
  }
}
"#;
    let (p, ll) = compile_with_ir(text, "short-rows");
    assert!(ll.contains("!alias.scope"), "kernel accesses carry no alias scopes");
    let chained = ll.lines().filter(|l| l.contains("call float @llvm.maximum.f32")).count();
    assert!(chained < 15, "the max over 16 is a chain of {chained} scalar maximums");
    if std::env::consts::ARCH == "x86_64" {
        assert!(ll.contains("@_ZGV") && ll.contains("_sinf"), "RoPE's sin was not vectorized");
    }
    let steps = &p.manifest.steps;
    assert!(
        steps.iter().filter(|s| matches!(s, Step::Kernel { .. })).count() <= 2,
        "a copy kernel after the GEMM: {steps:?}"
    );
    let mut xs: Vec<f32> = (0..64).map(|i| ((i * 37 % 64) as f32 - 30.0) * 0.37).collect();
    xs[3] = f32::NAN; // row 0 propagates NaN
    (16..32).for_each(|i| xs[i] = -1.0 - i as f32); // row 1: -0 and +0 are its largest
    xs[20] = -0.0;
    xs[27] = 0.0;
    let w: Vec<f32> = (0..256).map(|i| ((i * 11 % 17) as f32 - 8.0) * 0.125).collect();
    let outs = p.run(&[f32_nd(&[4, 16], &xs), f32_nd(&[16, 16], &w)]).unwrap();
    let (mx, rope, mm) = (f32s(&outs[0]), f32s(&outs[1]), f32s(&outs[2]));
    assert!(mx[0].is_nan(), "max of a row with NaN: {}", mx[0]);
    assert_eq!(mx[1].to_bits(), 0f32.to_bits(), "max of -0 and +0 is +0: {}", mx[1]);
    for r in 2..4 {
        let want = xs[r * 16..(r + 1) * 16].iter().copied().fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(mx[r], want, "row {r}");
    }
    for r in 0..4 {
        for d in 0..16 {
            let x = xs[r * 16 + d] as f64;
            let rot = xs[r * 16 + (d + 8) % 16] as f64;
            let want = x * x.cos() + rot * x.sin();
            let got = rope[r * 16 + d] as f64;
            assert!(
                (got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "rope[{r},{d}]: {got} vs {want}"
            );
            let want: f64 = (0..16).map(|k| xs[r * 16 + k] as f64 * w[k * 16 + d] as f64).sum();
            let got = mm[r * 16 + d] as f64;
            assert!(
                (got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "mm[{r},{d}]: {got} vs {want}"
            );
        }
    }
    assert_eq!(outs[2].shape, vec![2, 2, 16]);
}

/// A batch of one splits across threads at its next dim: the kernels' range runs past leading
/// static 1s (a [1, T, D] activation was one task, so one thread, before), for a single value
/// and for a row group, with the same results.
#[test]
fn leading_unit_dims_do_not_stop_the_thread_split() {
    let text = r#"module {
  func.func @main(%x: tensor<1x64x1024xf32> {ember.input = "x"}) -> (tensor<1x64x1024xf32> {ember.output = "e"}, tensor<1x64x1024xf32> {ember.output = "s"}) {
    %0 = "ten.exp"(%x) : (tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
    %1 = "ten.reduce"(%x) {dims = array<i64: 2>, kind = "max"} : (tensor<1x64x1024xf32>) -> tensor<1x64xf32>
    %2 = "ten.reshape"(%1) {shape = array<i64: 1, 64, 1>} : (tensor<1x64xf32>) -> tensor<1x64x1xf32>
    %3 = "ten.broadcast"(%2) {dims = array<i64: 0, 1, 2>, shape = array<i64: 1, 64, 1024>} : (tensor<1x64x1xf32>) -> tensor<1x64x1024xf32>
    %4 = "ten.sub"(%x, %3) : (tensor<1x64x1024xf32>, tensor<1x64x1024xf32>) -> tensor<1x64x1024xf32>
    return %0, %4 : tensor<1x64x1024xf32>, tensor<1x64x1024xf32>
  }
}
"#;
    let p = compile_text(text, "unit-split");
    let splits: Vec<usize> = p
        .manifest
        .steps
        .iter()
        .filter_map(|s| if let Step::Kernel { split, .. } = s { Some(*split) } else { None })
        .collect();
    assert!(!splits.is_empty() && splits.iter().all(|&s| s == 1), "kernels split at dims {splits:?}, not 1");
    let xs: Vec<f32> = (0..64 * 1024).map(|i| ((i * 7919) % 2000) as f32 / 500.0 - 2.0).collect();
    let outs = p.run(&[f32_nd(&[1, 64, 1024], &xs)]).unwrap();
    let (e, s) = (f32s(&outs[0]), f32s(&outs[1]));
    for r in 0..64 {
        let row = &xs[r * 1024..(r + 1) * 1024];
        let mx = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        for (c, &x) in row.iter().enumerate() {
            let i = r * 1024 + c;
            assert!((e[i] as f64 - (x as f64).exp()).abs() <= 1e-6 * (x as f64).exp(), "exp at {i}: {}", e[i]);
            assert_eq!(s[i], x - mx, "x - rowmax at {i}");
        }
    }
}

/// Compiles a one-function `ten` module for the CPU: the program and its optimized LLVM IR.
fn compile_with_ir(text: &str, name: &str) -> (Program, String) {
    let m = ember_ir::parse_module(text).unwrap();
    ember_ir::verify::verify(&m).unwrap();
    let out = std::env::temp_dir().join(format!("ember-{name}-{}", std::process::id()));
    compile_for(ember_compiler::Imported { module: m, weights: vec![] }, "cpu", &out, &[]).unwrap();
    let ll = std::fs::read_to_string(out.join("kernels.ll")).unwrap();
    let p = Program::load(&out).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    (p, ll)
}

#[test]
fn outer_loops_with_static_trip_counts_stay_loops() {
    // A ResNet's batch norm + ReLU backward on channels-last activations, as torch.compile hands
    // it over: LLVM fully unrolled the loops around its short rows (16 columns) into
    // 3,200-instruction blocks whose scheduling took 2 s of a 2.2 s compile, for no speed.
    let text = std::fs::read_to_string(testdata().join("cpu/bn_relu_backward_nhwc.mlir")).unwrap();
    let (p, ll) = compile_with_ir(&text, "rolled-outer");
    let longest = ll.split("\n\n").map(|block| block.lines().count()).max().unwrap_or(0);
    assert!(longest < 400, "a basic block of {longest} lines: an outer loop was unrolled");
    let (n, c) = (16 * 16 * 16, 128);
    let v = |seed: usize, len: usize| -> Vec<f32> {
        (0..len).map(|i| (((i * 7919 + seed) % 1000) as f32 - 400.0) / 500.0).collect()
    };
    let relu: Vec<f32> = v(1, n * c).iter().map(|x| x.max(0.0)).collect();
    let (g, x, mean) = (v(2, n * c), v(3, n * c), v(4, c));
    let invstd: Vec<f32> = v(5, c).iter().map(|s| 1.0 + s.abs()).collect();
    let weight = v(6, c);
    let outs = p
        .run(&[
            f32_nd(&[16, 16, 16, 128], &relu),
            f32_nd(&[], &[0.0]),
            f32_nd(&[16, 16, 16, 128], &g),
            f32_nd(&[16, 16, 16, 128], &x),
            f32_nd(&[1, 128, 1, 1], &mean),
            f32_nd(&[128], &invstd),
            f32_nd(&[128], &weight),
        ])
        .unwrap();
    let (sum_g, sum_gx, dx) = (f32s(&outs[0]), f32s(&outs[1]), f32s(&outs[2]));
    // Channels-last: element i is channel i % 128.
    let masked = |i: usize| if relu[i] <= 0.0 { 0.0 } else { g[i] as f64 };
    let (mut sg, mut sgx) = (vec![0f64; c], vec![0f64; c]);
    for i in 0..n * c {
        sg[i % c] += masked(i);
        sgx[i % c] += masked(i) * (x[i] - mean[i % c]) as f64;
    }
    for ch in 0..c {
        assert!((sum_g[ch] as f64 - sg[ch]).abs() <= 1e-3 * (1.0 + sg[ch].abs()), "sum of g, channel {ch}");
        assert!(
            (sum_gx[ch] as f64 - sgx[ch]).abs() <= 1e-3 * (1.0 + sgx[ch].abs()),
            "sum of g (x - mean), channel {ch}"
        );
    }
    for i in 0..n * c {
        let ch = i % c;
        let (is, nf) = (invstd[ch] as f64, n as f64);
        let want =
            (masked(i) - (x[i] - mean[ch]) as f64 * sgx[ch] / nf * is * is - sg[ch] / nf) * is * weight[ch] as f64;
        assert!((dx[i] as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "dx at {i}: {} against {want}", dx[i]);
    }
}

#[test]
fn merged_heads_are_copied_before_a_concat_reads_them() {
    // Attention's head merge ([b, h, t, d] -> [b, t, h * d]) into a concat, as in the q/k/v
    // gradients of a GPT-2 backward: the reshape read the transpose through divisions of the
    // linear index, a gather per element (12 ms a step each).
    let piece = "tensor<2x4x8x16xf32>";
    let mut text = String::from("module {\n  func.func @main(");
    text += &(0..3).map(|i| format!("%a{i}: {piece} {{ember.input = \"a{i}\"}}")).collect::<Vec<_>>().join(", ");
    text += ") -> (tensor<2x8x192xf32> {ember.output = \"y\"}) {\n";
    for i in 0..3 {
        text += &format!("    %t{i} = \"ten.transpose\"(%a{i}) {{dims = array<i64: 0, 2, 1, 3>}} : ({piece}) -> tensor<2x8x4x16xf32>\n");
        text += &format!("    %r{i} = \"ten.reshape\"(%t{i}) {{shape = array<i64: 2, 8, 64>}} : (tensor<2x8x4x16xf32>) -> tensor<2x8x64xf32>\n");
    }
    text += "    %y = \"ten.concat\"(%r0, %r1, %r2) {dim = 2 : i64} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x192xf32>\n    return %y : tensor<2x8x192xf32>\n  }\n}\n";
    let (p, ll) = compile_with_ir(&text, "merged-heads");
    assert!(!ll.contains("sdiv") && !ll.contains("srem"), "an index is divided per element");
    let n = 2 * 4 * 8 * 16;
    let xs: Vec<Vec<f32>> = (0..3).map(|i| (0..n).map(|j| (i * n + j) as f32).collect()).collect();
    let ins: Vec<HostTensor> = xs.iter().map(|x| f32_nd(&[2, 4, 8, 16], x)).collect();
    let got = f32s(&p.run(&ins).unwrap()[0]);
    for b in 0..2 {
        for t in 0..8 {
            for c in 0..192 {
                let (i, h, d) = (c / 64, (c % 64) / 16, c % 16);
                assert_eq!(got[(b * 8 + t) * 192 + c], xs[i][((b * 4 + h) * 8 + t) * 16 + d], "y[{b}, {t}, {c}]");
            }
        }
    }
}

/// `testdata/cpu/in_place.mlir`: an optimizer-like step whose updates of `m` and `p` are computed
/// in those inputs' memory (the second reading the first's new value), while the transposed
/// update of `w` and the update of `s` that is read again afterwards get memory of their own.
/// Both calling conventions give torch's values: outputs in the inputs' memory (the torch.compile
/// backend's), and outputs elsewhere with the inputs left as they were (`ember run`'s).
#[test]
fn input_updates_are_computed_in_place_only_where_nothing_reads_the_old_value_after() {
    let text = std::fs::read_to_string(testdata().join("cpu/in_place.mlir")).unwrap();
    let prog = compile_text(&text, "in_place");
    let man = &prog.manifest;
    let output_of = |b: usize| man.outputs.iter().position(|o| o.buf == b).unwrap();
    let input_of = |b: usize| man.inputs.iter().position(|x| x.buf == b).unwrap();
    let granted: Vec<(usize, usize)> = man.in_place.iter().map(|&(o, x)| (output_of(o), input_of(x))).collect();
    assert_eq!(granted, [(0, 2), (1, 0)], "m (output 0) over input 2 and p (output 1) over input 0, nothing else");
    assert_eq!(man.format_version, "3.0", "a reader of 2.x would not set up the shared memory");

    let vals = |n: usize, k: usize| -> Vec<f32> { (0..n).map(|i| ((i * k % 97) as f32 - 48.0) * 0.03).collect() };
    let (p, g, m, w, s) = (vals(64 * 32, 7), vals(64 * 32, 11), vals(64 * 32, 13), vals(32 * 32, 17), vals(8, 19));
    let m2: Vec<f32> = m.iter().zip(&g).map(|(m, g)| m * 0.9 + g * 0.1).collect();
    let p2: Vec<f32> = p.iter().zip(&m2).map(|(p, m)| p - m * 0.01).collect();
    let w2: Vec<f32> = (0..32 * 32).map(|i| w[(i % 32) * 32 + i / 32] + 1.0).collect();
    let s2: Vec<f32> = s.iter().map(|x| x * 2.0).collect();
    let total: f32 = s.iter().zip(&s2).map(|(a, b)| a * b).sum();
    let want = [m2, p2, w2, s2, vec![total]];
    let check = |got: &[Vec<f32>], how: &str| {
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g.len(), w.len());
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{how}: output {k}[{i}] = {a}, want {b}");
            }
        }
    };
    let tensor = |v: &[f32], shape: &[usize]| HostTensor {
        dtype: ember_ir::DType::F32,
        shape: shape.to_vec(),
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let shapes: [&[usize]; 5] = [&[64, 32], &[64, 32], &[64, 32], &[32, 32], &[8]];
    let mut ins: Vec<HostTensor> = [&p, &g, &m, &w, &s].iter().zip(shapes).map(|(v, sh)| tensor(v, sh)).collect();
    let outs = prog.run(&ins).unwrap();
    check(&outs.iter().map(f32_values).collect::<Vec<_>>(), "outputs of their own");
    let before: Vec<Vec<f32>> = ins.iter().map(f32_values).collect();
    assert_eq!(before, [p.clone(), g.clone(), m.clone(), w.clone(), s.clone()], "run leaves its inputs as they were");

    // The updates of m and p into those inputs, the other outputs into memory of their own.
    let mut others: Vec<Vec<u8>> = [32 * 32 * 4, 8 * 4, 4].iter().map(|&n| vec![0u8; n]).collect();
    let in_ptrs: Vec<*const u8> = ins.iter().map(|t| t.data.as_ptr()).collect();
    let (pp, mp) = (ins[0].data.as_mut_ptr(), ins[2].data.as_mut_ptr());
    let out_ptrs = [mp, pp, others[0].as_mut_ptr(), others[1].as_mut_ptr(), others[2].as_mut_ptr()];
    // SAFETY: each pointer holds its buffer's bytes; outputs 0 and 1 are the inputs they update.
    unsafe { prog.run_fixed(&in_ptrs, &out_ptrs) }.unwrap();
    let bytes_f32 = |b: &[u8]| b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<f32>>();
    let got =
        [f32_values(&ins[2]), f32_values(&ins[0]), bytes_f32(&others[0]), bytes_f32(&others[1]), bytes_f32(&others[2])];
    check(&got, "m and p updated in place");
    assert_eq!(
        [f32_values(&ins[1]), f32_values(&ins[3]), f32_values(&ins[4])],
        [g, w, s],
        "the other inputs are unchanged"
    );
}
