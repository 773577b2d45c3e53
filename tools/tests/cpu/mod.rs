//! The CPU target end to end: every bundled model compiles, runs, and matches torch eager's
//! outputs stored next to it (`testdata/models/<name>.npz`).

use super::*;
use ember_targets::cpu::{HostTensor, Program};

mod kernels;

/// Models the CPU target cannot compile yet, with the reason; the test checks the reason stays true.
const NOT_YET: &[(&str, &str)] = &[];

pub fn as_f64(t: &HostTensor) -> Vec<f64> {
    let n = t.shape.iter().product::<usize>();
    (0..n)
        .map(|i| {
            let b = &t.data[i * t.dtype.byte_size()..(i + 1) * t.dtype.byte_size()];
            match t.dtype {
                ember_ir::DType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
                ember_ir::DType::F16 => half::f16::from_le_bytes(b.try_into().unwrap()).to_f64(),
                ember_ir::DType::BF16 => half::bf16::from_le_bytes(b.try_into().unwrap()).to_f64(),
                ember_ir::DType::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::I16 => i16::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::I8 => b[0] as i8 as f64,
                ember_ir::DType::Bool | ember_ir::DType::U8 => b[0] as f64,
                d => panic!("compare {d}"),
            }
        })
        .collect()
}

/// max |got - want| / (atol + rtol * |want|) over all elements; <= 1 passes. NaN must meet NaN
/// and an infinity the same infinity (anything else is an infinite error). f16 and bf16 use
/// torch.testing's rtol for the dtype times the output's largest magnitude: two evaluations
/// that round each layer differently differ by about an ulp of the layer's scale, also at the
/// elements near 0.
pub fn close(got: &HostTensor, want: &HostTensor) -> Result<f64, String> {
    use ember_ir::DType;
    if got.shape != want.shape || got.dtype != want.dtype {
        return Err(format!("got {:?} {:?}, want {:?} {:?}", got.dtype, got.shape, want.dtype, want.shape));
    }
    let (g, w) = (as_f64(got), as_f64(want));
    let scale = w.iter().filter(|v| v.is_finite()).fold(0.0f64, |m, v| m.max(v.abs()));
    let (atol, rtol) = match got.dtype {
        DType::F64 => (1e-10, 1e-7),
        DType::BF16 => (1e-5 + 1.6e-2 * scale, 0.0),
        DType::F16 => (1e-5 + 1e-3 * scale, 0.0),
        _ => (1e-5, 1e-4),
    };
    let err = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (true, true) => 0.0,
        (false, false) if a == b => 0.0,
        (false, false) if a.is_finite() && b.is_finite() => (a - b).abs() / (atol + rtol * b.abs()),
        _ => f64::INFINITY,
    };
    Ok(g.iter().zip(&w).map(|(&a, &b)| err(a, b)).fold(0.0, f64::max))
}

#[test]
fn bundled_models_match_eager() {
    let dir = std::env::temp_dir().join(format!("ember-cpu-{}", std::process::id()));
    let mut checked = 0;
    // Both kernel formations: the e-graph optimizer's and the planner's greedy rule.
    for (fusion, (name, p)) in
        ["egraph", "greedy"].into_iter().flat_map(|f| bundled_models().into_iter().map(move |m| (f, m)))
    {
        let name = format!("{name} ({fusion})");
        let out = dir.join(&name);
        let imported = ember_compiler::import_path(&p).unwrap();
        let r = compile_for(imported, "cpu", &out, &[("fusion", fusion)]);
        if let Some((_, why)) = NOT_YET.iter().find(|(n, _)| name.starts_with(n)) {
            let err = r.err().unwrap_or_else(|| panic!("{name} now compiles: remove it from NOT_YET"));
            assert!(err.contains(why), "{name}: {err}");
            continue;
        }
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
        let prog = Program::load(&out).unwrap();
        let mut arrays = ember_compiler::npz::read_npz(&p.with_extension("npz")).unwrap();
        let args: Vec<HostTensor> =
            (0..prog.manifest.inputs.len()).map(|i| arrays.remove(&format!("arg{i}")).unwrap()).collect();
        let outs = prog.run(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, got) in outs.iter().enumerate() {
            let want = &arrays[&format!("out{i}")];
            let err = close(got, want).unwrap_or_else(|e| panic!("{name} out{i}: {e}"));
            assert!(err <= 1.0, "{name} out{i}: error {err:.3} x tolerance");
        }
        checked += 1;
    }
    assert!(checked >= 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dynamic_batch_runs_every_size_in_range_without_recompiling() {
    let dir = std::env::temp_dir().join(format!("ember-dyn-{}", std::process::id()));
    let imported = ember_compiler::import_path(&testdata().join("models/mlp_dynamic.pt2")).unwrap();
    compile_for(imported, "cpu", &dir, &[]).unwrap();
    let prog = Program::load(&dir).unwrap();
    let x = |b: usize| HostTensor {
        dtype: ember_ir::DType::F32,
        shape: vec![b, 32],
        data: (0..b * 32).flat_map(|i| ((i % 7) as f32 * 0.1).to_le_bytes()).collect(),
    };
    for b in [2, 5, 64] {
        let out = prog.run(&[x(b)]).unwrap();
        assert_eq!(out[0].shape, vec![b, 16]);
    }
    // Row i of a batch does not depend on the batch size (up to GEMM summation order).
    let (small, big) = (prog.run(&[x(2)]).unwrap(), prog.run(&[x(5)]).unwrap());
    let head =
        HostTensor { dtype: big[0].dtype, shape: vec![2, 16], data: big[0].data[..small[0].data.len()].to_vec() };
    assert!(close(&small[0], &head).unwrap() <= 1.0);
    // Replays of one program on one input are bit-identical.
    assert_eq!(prog.run(&[x(5)]).unwrap(), big);
    let err = prog.run(&[x(65)]).unwrap_err();
    assert!(err.contains("outside the compiled range [2, 64]"), "{err}");
    let err =
        prog.run(&[HostTensor { dtype: ember_ir::DType::F64, shape: vec![2, 32], data: vec![0; 512] }]).unwrap_err();
    assert!(err.contains("must be float32"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn cpu_artifacts_are_deterministic() {
    let base = std::env::temp_dir().join(format!("ember-det-{}", std::process::id()));
    let mut files = Vec::new();
    for k in 0..2 {
        let out = base.join(format!("a{k}"));
        let imported = ember_compiler::import_path(&testdata().join("models/gpt2_block.pt2")).unwrap();
        compile_for(imported, "cpu", &out, &[]).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        files.push(names.iter().map(|n| (n.clone(), std::fs::read(out.join(n)).unwrap())).collect::<Vec<_>>());
    }
    assert_eq!(files[0].len(), files[1].len());
    for (a, b) in files[0].iter().zip(&files[1]) {
        assert!(a == b, "{:?} differs between two compiles", a.0);
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn cli_compile_and_run_round_trip() {
    let dir = std::env::temp_dir().join(format!("ember-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let art = dir.join("art");
    let got = dir.join("got.npz");
    let r = ember(&testdata(), &["compile", "models/mlp.pt2", "--target", "cpu", "-o", art.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = ember(
        &testdata(),
        &["run", art.to_str().unwrap(), "--inputs", "models/mlp.npz", "--outputs", got.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = ember_compiler::npz::read_npz(&got).unwrap();
    let w = ember_compiler::npz::read_npz(&testdata().join("models/mlp.npz")).unwrap();
    assert!(close(&g["out0"], &w["out0"]).unwrap() <= 1.0);
    // Missing input arrays are named.
    let r = ember(
        &testdata(),
        &["run", art.to_str().unwrap(), "--inputs", got.to_str().unwrap(), "--outputs", got.to_str().unwrap()],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no array `arg0`"), "{}", r.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn f32_tensor(v: &[f32]) -> HostTensor {
    HostTensor {
        dtype: ember_ir::DType::F32,
        shape: vec![v.len()],
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn f32_values(t: &HostTensor) -> Vec<f32> {
    t.data.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Compiles a one-function `ten` module with one f32 input of `n` elements.
fn compile_text(text: &str, name: &str) -> Program {
    let m = ember_ir::parse_module(text).unwrap();
    ember_ir::verify::verify(&m).unwrap();
    let out = std::env::temp_dir().join(format!("ember-{name}-{}", std::process::id()));
    compile_for(ember_compiler::Imported { module: m, weights: vec![] }, "cpu", &out, &[]).unwrap();
    let p = Program::load(&out).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    p
}

/// float32 -> uint8/int8/int16 as torch's CPU kernels convert (x86's: truncation to int32, INT_MIN
/// for NaN and beyond ±2³¹, then the low bits), out of range included: a direct conversion to
/// the narrow type is undefined and gave other bytes. (The tpu target converts as XLA does,
/// saturating; torch leaves out-of-range conversions undefined.)
#[test]
fn narrowing_float_to_int_conversions_wrap_as_torch() {
    let xs = [-78.5f32, 300.7, -1.0, 255.9, 127.5, -129.0, 1e10, f32::NAN, -3e9, 65535.9, 2147483520.0, 0.5, -0.5];
    let n = xs.len();
    let t = format!("tensor<{n}xf32>");
    let text = format!(
        "module {{\n  func.func @main(%x: {t} {{ember.input = \"x\"}}) -> (tensor<{n}xui8>, tensor<{n}xi8>, tensor<{n}xi16>) {{\n    %0 = \"ten.convert\"(%x) {{dtype = ui8}} : ({t}) -> tensor<{n}xui8>\n    %1 = \"ten.convert\"(%x) {{dtype = i8}} : ({t}) -> tensor<{n}xi8>\n    %2 = \"ten.convert\"(%x) {{dtype = i16}} : ({t}) -> tensor<{n}xi16>\n    return %0, %1, %2 : tensor<{n}xui8>, tensor<{n}xi8>, tensor<{n}xi16>\n  }}\n}}\n"
    );
    let p = compile_text(&text, "narrowing");
    let outs = p.run(&[f32_tensor(&xs)]).unwrap();
    let x86 = |x: f32| if x.is_nan() || !(-2147483648.0..2147483648.0).contains(&x) { i32::MIN } else { x as i32 };
    let want_u8: Vec<u8> = xs.iter().map(|&x| x86(x) as u8).collect();
    let want_i8: Vec<u8> = xs.iter().map(|&x| x86(x) as i8 as u8).collect();
    let want_i16: Vec<u8> = xs.iter().flat_map(|&x| (x86(x) as i16).to_le_bytes()).collect();
    assert_eq!(outs[0].data, want_u8, "uint8");
    assert_eq!(outs[1].data, want_i8, "int8");
    assert_eq!(outs[2].data, want_i16, "int16");
    // torch's own bytes for the first values (x.to(torch.uint8)): -78.5 -> 178, 300.7 -> 44.
    assert_eq!(&outs[0].data[..2], &[178, 44]);
}

#[test]
fn inline_math_matches_f64_reference() {
    let mut xs: Vec<f32> = (0..20001).map(|i| -20.0 + i as f32 * 0.002).collect();
    xs.extend([0.0, -0.0, 1e-30, -1e-7, 1e-4, 88.0, -88.0, 100.0, -100.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let n = xs.len();
    let t = format!("tensor<{n}xf32>");
    let text = format!(
        "module {{\n  func.func @main(%x: {t} {{ember.input = \"x\"}}) -> ({t}, {t}, {t}, {t}) {{\n    %0 = \"ten.exp\"(%x) : ({t}) -> {t}\n    %1 = \"ten.tanh\"(%x) : ({t}) -> {t}\n    %2 = \"ten.erf\"(%x) : ({t}) -> {t}\n    %3 = \"ten.sigmoid\"(%x) : ({t}) -> {t}\n    return %0, %1, %2, %3 : {t}, {t}, {t}, {t}\n  }}\n}}\n"
    );
    let prog = compile_text(&text, "math");
    let outs = prog.run(&[f32_tensor(&xs)]).unwrap();
    fn erf64(x: f64) -> f64 {
        // High-precision reference: series for small |x|, continued fraction complement otherwise.
        if x.abs() < 3.0 {
            let (mut sum, mut term, mut k) = (x, x, 0.0);
            while term.abs() > 1e-17 * sum.abs() {
                k += 1.0;
                term *= -x * x / k;
                sum += term / (2.0 * k + 1.0);
            }
            sum * std::f64::consts::FRAC_2_SQRT_PI
        } else {
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = k as f64 / 2.0 / (x.abs() + f);
            }
            let erfc = (-x * x).exp() / (x.abs() + f) / std::f64::consts::PI.sqrt();
            (1.0 - erfc).copysign(x)
        }
    }
    let refs: [&dyn Fn(f64) -> f64; 4] =
        [&|x: f64| x.exp(), &|x: f64| x.tanh(), &erf64, &|x: f64| 1.0 / (1.0 + (-x).exp())];
    for (k, (out, f)) in outs.iter().zip(refs).enumerate() {
        for (&x, &got) in xs.iter().zip(&f32_values(out)) {
            let want = f(x as f64);
            if want.is_nan() {
                assert!(got.is_nan(), "fn {k} at {x}: got {got}, want NaN");
                continue;
            }
            if want.is_infinite() || want.abs() > f32::MAX as f64 {
                assert!(got.is_infinite() && (got > 0.0) == (want > 0.0), "fn {k} at {x}: got {got}, want {want}");
                continue;
            }
            let err = (got as f64 - want).abs();
            // Results below f32::MIN_POSITIVE (denormals) may flush to zero.
            let tol =
                4.0 * f32::EPSILON as f64 * want.abs() + f32::MIN_POSITIVE as f64 + if k == 2 { 2e-7 } else { 0.0 };
            assert!(err <= tol, "fn {k} at {x}: got {got}, want {want} (error {err:e}, tolerance {tol:e})");
        }
    }
}

/// Error of `got` against the f64 reference `want` in units in the last place of `want` in the
/// result type (`mant` mantissa bits, `min_exp` the smallest normal exponent: denormals have the
/// ulp of the smallest normal). NaN and infinities must match exactly (0 or `f64::INFINITY`).
fn ulp_error(got: f64, want: f64, mant: i32, min_exp: i32) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got == want { 0.0 } else { f64::INFINITY };
    }
    let e = if want == 0.0 { min_exp } else { (want.abs().log2().floor() as i32).max(min_exp) };
    (got - want).abs() / 2f64.powi(e - mant)
}

/// The transcendentals that are libm calls with libmvec vector variants (sin, cos, tan, log,
/// log1p, pow; f32 and f64) against f64 (f32) or glibc's scalar libm (f64), on a grid and on the
/// edge cases: huge arguments for sin/cos/tan (range reduction), denormals, ±0, ±inf, NaN, pow's
/// special pairs. The edge cases come first so that they run through the vector loop, not the
/// scalar remainder.
#[test]
fn vector_math_matches_f64_reference() {
    let mut xs: Vec<f64> = vec![0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-45, -1e-45, 1e-40, 1e-38];
    xs.extend([
        std::f64::consts::PI,
        std::f64::consts::FRAC_PI_2,
        1e4,
        1e6,
        1e10,
        1e20,
        -1e30,
        3.4e38,
        -1.0,
        -0.999_999,
        -2.0,
        1e-7,
        0.5,
    ]);
    for k in -44..=38 {
        xs.extend([10f64.powi(k), -(10f64.powi(k) * 1.37)]);
    }
    xs.extend((0..20001).map(|i| -20.0 + i as f64 * 0.002));
    xs.extend((0..4001).map(|i| -1.0 + i as f64 * 0.000_5));
    let mut pw: Vec<(f64, f64)> = vec![
        (-2.0, 3.0),
        (-2.0, 0.5),
        (0.0, -1.0),
        (-0.0, -3.0),
        (f64::NAN, 0.0),
        (1.0, f64::NAN),
        (f64::INFINITY, -1.0),
        (f64::NEG_INFINITY, 3.0),
        (2.0, 128.0),
        (2.0, -140.0),
        (2.0, -160.0),
        (0.5, f64::INFINITY),
        (1e-40, 0.5),
        (10.0, 38.5),
        (-1.0, f64::INFINITY),
    ];
    pw.extend((0..10000).map(|i| (0.01 + (i % 100) as f64 * 0.1, -10.0 + (i / 100) as f64 * 0.2)));
    let n = xs.len();
    for (dt, mant, min_exp) in [("f32", 23, -126), ("f64", 52, -1022)] {
        let t = format!("tensor<{n}x{dt}>");
        let pt = format!("tensor<{}x{dt}>", pw.len());
        let text = format!(
            "module {{\n  func.func @main(%x: {t} {{ember.input = \"x\"}}, %a: {pt} {{ember.input = \"a\"}}, %b: {pt} {{ember.input = \"b\"}}) -> ({t}, {t}, {t}, {t}, {t}, {pt}) {{\n    %0 = \"ten.sin\"(%x) : ({t}) -> {t}\n    %1 = \"ten.cos\"(%x) : ({t}) -> {t}\n    %2 = \"ten.tan\"(%x) : ({t}) -> {t}\n    %3 = \"ten.log\"(%x) : ({t}) -> {t}\n    %4 = \"ten.log1p\"(%x) : ({t}) -> {t}\n    %5 = \"ten.pow\"(%a, %b) : ({pt}, {pt}) -> {pt}\n    return %0, %1, %2, %3, %4, %5 : {t}, {t}, {t}, {t}, {t}, {pt}\n  }}\n}}\n"
        );
        let prog = compile_text(&text, &format!("vmath-{dt}"));
        let tensor = |v: &[f64]| -> HostTensor {
            if dt == "f32" {
                f32_tensor(&v.iter().map(|&x| x as f32).collect::<Vec<_>>())
            } else {
                HostTensor {
                    dtype: ember_ir::DType::F64,
                    shape: vec![v.len()],
                    data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                }
            }
        };
        let values = |t: &HostTensor| -> Vec<f64> {
            if dt == "f32" {
                f32_values(t).into_iter().map(f64::from).collect()
            } else {
                t.data.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
            }
        };
        // Inputs as the kernel sees them (rounded to f32 for the f32 run).
        let round = |x: f64| if dt == "f32" { x as f32 as f64 } else { x };
        let xr: Vec<f64> = xs.iter().map(|&x| round(x)).collect();
        let (a, b): (Vec<f64>, Vec<f64>) = pw.iter().map(|&(a, b)| (round(a), round(b))).unzip();
        let outs = prog.run(&[tensor(&xr), tensor(&a), tensor(&b)]).unwrap();
        let fns: [(&str, &dyn Fn(f64) -> f64); 5] =
            [("sin", &f64::sin), ("cos", &f64::cos), ("tan", &f64::tan), ("log", &f64::ln), ("log1p", &f64::ln_1p)];
        let mut report = Vec::new();
        let mut check = |name: &str, args: &[String], got: &[f64], want: &[f64]| {
            let mut worst = (0.0f64, 0);
            for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
                // Against the exact value, unless it is out of the result type's range.
                let w = if round(w).is_infinite() { round(w) } else { w };
                // A result below the smallest normal may flush to zero.
                let flushed = w.abs() < 2f64.powi(min_exp) && g.abs() < 2f64.powi(min_exp) && dt == "f32";
                let e = if flushed { 0.0 } else { ulp_error(g, w, mant, min_exp) };
                if e > worst.0 {
                    worst = (e, i);
                }
            }
            let (e, i) = worst;
            report.push(format!("{name} {dt}: {e:.2} ulp (at {})", args[i]));
            assert!(e <= 4.0, "{name} {dt} at {}: got {}, want {} ({e:.2} ulp)", args[i], got[i], want[i]);
        };
        let xnames: Vec<String> = xr.iter().map(|x| format!("{x:e}")).collect();
        for (out, (name, f)) in outs.iter().zip(fns) {
            let want: Vec<f64> = xr.iter().map(|&x| f(x)).collect();
            check(name, &xnames, &values(out), &want);
        }
        let pnames: Vec<String> = a.iter().zip(&b).map(|(a, b)| format!("({a:e}, {b:e})")).collect();
        let want: Vec<f64> = a.iter().zip(&b).map(|(&a, &b)| a.powf(b)).collect();
        check("pow", &pnames, &values(&outs[5]), &want);
        eprintln!("{}", report.join("\n"));
    }
}

/// Compiles `testdata/cpu/<stem>.pt2` for the CPU, runs it on the `argN` arrays of `<stem>.npz`
/// and asserts every user output is within tolerance (see `close`) of its `outN` array.
fn assert_archive_matches_eager(stem: &str) {
    let pt2 = testdata().join(format!("cpu/{stem}.pt2"));
    let out = std::env::temp_dir().join(format!("ember-{stem}-{}", std::process::id()));
    let imported = ember_compiler::import_path(&pt2).unwrap();
    compile_for(imported, "cpu", &out, &[]).unwrap_or_else(|e| panic!("{stem}: {e}"));
    let prog = Program::load(&out).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    let mut arrays = ember_compiler::npz::read_npz(&pt2.with_extension("npz")).unwrap();
    let args: Vec<HostTensor> =
        (0..prog.manifest.inputs.len()).map(|i| arrays.remove(&format!("arg{i}")).unwrap()).collect();
    let outs = prog.run(&args).unwrap_or_else(|e| panic!("{stem}: {e}"));
    // In-place updates of inputs are extra results; the archive's references are the user outputs.
    let mutates: Vec<Option<String>> = prog.manifest.outputs.iter().map(|o| o.mutates.clone()).collect();
    let names = ember_compiler::artifact::output_array_names(&mutates);
    let user: Vec<(String, &HostTensor)> = names.into_iter().zip(&outs).filter(|(n, _)| n.starts_with("out")).collect();
    assert_eq!(user.len(), arrays.len(), "{stem}: output count");
    for (n, got) in &user {
        let e = close(got, &arrays[n]).unwrap_or_else(|e| panic!("{stem} {n}: {e}"));
        assert!(e <= 1.0, "{stem} {n}: error {e:.3} x tolerance");
    }
}

/// Every random op Ember lowers, through the seed input `torch-to-ten` adds
/// (`testdata/cpu/random_ops.py`): each output's mean and variance within six standard errors
/// of its distribution's (Cauchy's median and quartiles, which it has instead), its range, the
/// same draws from the same seed and others from another seed, and independent streams.
#[test]
fn random_ops_draw_their_distributions() {
    let pt2 = testdata().join("cpu/random_ops.pt2");
    let out = std::env::temp_dir().join(format!("ember-random-ops-{}", std::process::id()));
    compile_for(ember_compiler::import_path(&pt2).unwrap(), "cpu", &out, &[]).unwrap();
    let prog = Program::load(&out).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    let ins = &prog.manifest.inputs;
    assert!(ins.last().is_some_and(|i| i.rng_seed && i.name == "ember_seed" && i.dtype == "i64"), "{ins:?}");
    let n = 1usize << 16;
    let f32s = |v: f32| HostTensor { dtype: ember_ir::DType::F32, shape: vec![n], data: v.to_le_bytes().repeat(n) };
    let run = |seed: i64| -> Vec<Vec<f64>> {
        let seed = HostTensor { dtype: ember_ir::DType::I64, shape: vec![], data: seed.to_le_bytes().to_vec() };
        let wts = HostTensor {
            dtype: ember_ir::DType::F32,
            shape: vec![4],
            data: [0.1f32, 0.0, 0.6, 0.3].iter().flat_map(|w| w.to_le_bytes()).collect(),
        };
        let args = vec![f32s(0.3), f32s(1.0), f32s(1.0), f32s(3.0), wts, seed];
        prog.run(&args).unwrap().iter().map(as_f64).collect()
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a, run(1), "a seed repeats its draws");
    let moments = |i: usize| {
        let m = a[i].iter().sum::<f64>() / n as f64;
        (m, a[i].iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64)
    };
    let ln = (0.25f64.exp() - 1.0) * 0.25f64.exp();
    // Uniforms are on [0, 1): 1 itself is never drawn.
    const BELOW_1: f64 = 1.0 - 1e-9;
    // (output, mean, variance, min, max) of each distribution with moments.
    let want: [(usize, f64, f64, f64, f64); 21] = [
        (0, 0.5, 1.0 / 12.0, 0.0, BELOW_1),
        (1, 0.0, 1.0, f64::MIN, f64::MAX),
        (2, 0.5, 1.0 / 12.0, 0.0, BELOW_1),
        (3, 0.0, 1.0, f64::MIN, f64::MAX),
        (4, 2.0, 64.0 / 12.0, -2.0, 6.0 - 1e-6),
        (5, 1.0, 9.0, f64::MIN, f64::MAX),
        (6, 1.0, 9.0, f64::MIN, f64::MAX),
        (7, 1.0, 9.0, f64::MIN, f64::MAX),
        (8, 1.0, 9.0, f64::MIN, f64::MAX),
        (9, 0.125f64.exp(), ln, 0.0, f64::MAX),
        (10, 0.5, 0.25, 0.0, f64::MAX),
        (12, 4.0, 12.0, 1.0, f64::MAX),
        (13, 0.3, 0.21, 0.0, 1.0),
        (14, 0.8, 0.16, 0.0, 1.0),
        (15, 1.0, 1.0 / 3.0, 0.0, 4.0 / 3.0 + 1e-6),
        (16, 5.5, 35.0 / 12.0, 3.0, 8.0),
        (17, 3.0, 4.0, 0.0, 6.0),
        (18, 2.0, 2.0, 0.0, 4.0),
        (19, 0.5, 1.0 / 12.0, 0.0, BELOW_1),
        (20, -0.2, 0.04 / 12.0, -0.3, -0.1 + 1e-7),
        // Categories 0..3 with weights 0.1, 0, 0.6, 0.3.
        (21, 2.1, 0.69, 0.0, 3.0),
    ];
    for (i, mean, var, lo, hi) in want {
        let (m, v) = moments(i);
        let se = (var / n as f64).sqrt();
        assert!((m - mean).abs() < 6.0 * se, "out{i}: mean {m} vs {mean}");
        assert!((v - var).abs() < 0.1 * var, "out{i}: variance {v} vs {var}");
        let (min, max) = a[i].iter().fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
        assert!(min >= lo && max <= hi, "out{i}: range [{min}, {max}]");
        assert_ne!(a[i], b[i], "out{i}: another seed, other draws");
    }
    // Cauchy(1, 2): half below the median, half within median ± sigma.
    let frac = |f: &dyn Fn(f64) -> bool| a[11].iter().filter(|&&x| f(x)).count() as f64 / n as f64;
    assert!((frac(&|x| x < 1.0) - 0.5).abs() < 0.012, "cauchy median");
    assert!((frac(&|x| (-1.0..=3.0).contains(&x)) - 0.5).abs() < 0.012, "cauchy quartiles");
    // Category 1 has no weight; without replacement each row's two draws differ, the first
    // drawn with the weights' probabilities and the second from what is left.
    assert!(!a[21].contains(&1.0));
    let pairs: Vec<(usize, usize)> = a[22].chunks(2).map(|r| (r[0] as usize, r[1] as usize)).collect();
    assert!(pairs.iter().all(|&(x, y)| x != y && x != 1 && y != 1), "multinomial without replacement");
    let first = |c: usize| pairs.iter().filter(|p| p.0 == c).count() as f64 / n as f64;
    for (c, w) in [(0, 0.1), (2, 0.6), (3, 0.3)] {
        assert!((first(c) - w).abs() < 6.0 * (w * (1.0 - w) / n as f64).sqrt(), "multinomial first draw {c}");
    }
    // Two ops of the same distribution draw from different streams.
    assert_ne!(a[0], a[2].iter().map(|&x| x as f32 as f64).collect::<Vec<_>>());
    assert_ne!(a[5], a[6]);
}

/// Convolutions (padding, stride 2, dilation, groups, 1-d, bias), batch norm, max/avg pools
/// (padding, ceil_mode, dilation, count_include_pad, divisor_override), adaptive pools (sizes
/// that do not divide), constant padding (incl. cropping), cumsum (both dims, bool) and
/// argmax/argmin/max.dim/min.dim on inputs with ties and NaNs, against torch eager
/// (`testdata/cpu/window_ops.py` generates the archive and its references).
#[test]
fn window_ops_match_eager() {
    assert_archive_matches_eager("window_ops");
}

/// `aten.as_strided` on computed values: the channels-last pooling of ConvNeXt/Swin (`mean` +
/// `as_strided`) and a read of a value whose eager layout is transposed (`testdata/cpu/strided_ops.py`).
#[test]
fn strided_ops_match_eager() {
    assert_archive_matches_eager("strided_ops");
}

/// Complex values inside a graph (RoPE through `polar` and `view_as_complex`, a complex64
/// buffer, complex arithmetic, parts and shape ops), imported as (real, imaginary) pairs
/// (`testdata/cpu/complex_ops.py` generates the archive and its references).
#[test]
fn complex_ops_match_eager() {
    assert_archive_matches_eager("complex_ops");
}

/// Complex graph inputs and outputs (complex64 and complex128), taken and returned as their
/// real views (`testdata/cpu/complex_io.py` generates the archive and its references).
#[test]
fn complex_io_matches_eager() {
    assert_archive_matches_eager("complex_io");
}

/// Reductions that keep the last dim (bias and LayerNorm weight gradients, a middle dim under
/// kept outer dims, max/min with a NaN, prod, int64, a kept dim under 8) over a symbolic batch
/// (`testdata/cpu/column_ops.py`), at the archive's size.
#[test]
fn column_ops_match_eager() {
    assert_archive_matches_eager("column_ops");
}

/// Mean, var, max and softmax over a symbolic batch (`testdata/cpu/batch_stats.py`), at the
/// archive's size.
#[test]
fn batch_stats_match_eager() {
    assert_archive_matches_eager("batch_stats");
}

/// histc (values at `max`, outside the range, NaN) and transformers' `grouped_mm_fallback`
/// through Ember's decomposition, against transformers' own fallback (`testdata/cpu/moe_ops.py`).
#[test]
fn moe_ops_match_eager() {
    assert_archive_matches_eager("moe_ops");
}

/// expm1, log2, log10, sinh, cosh, asinh, acosh, atanh, asin, acos, atan, elu/selu/celu on a
/// grid with infinities, NaN and values outside each domain, plus f(s)/s on tiny s for the
/// functions that behave like x near 0, and cdist for p = 0, 1, 2, 3, inf (`testdata/cpu/math_ops.py`).
#[test]
fn math_ops_match_eager() {
    assert_archive_matches_eager("math_ops");
}

/// digamma, polygamma (n = 1..4), Hurwitz zeta (negative q, poles, x at and below 1), i0/i0e/
/// i1/i1e on both sides of 8, erfc/erfcx/log_ndtr across their formula switches,
/// spherical_bessel_j0, gcd/lcm for every integer width with its extremes and Fibonacci pairs,
/// logcumsumexp with infinities and NaN, f64 digamma, and nextafter/frexp in f32 and f64 at
/// zeros, subnormals and the extremes, bessel_j0/j1/y0/y1, the modified Bessel functions and
/// ndtri, airy_ai and erfinv at their formula switches, and signbit of -0.0 and -NaN
/// (`testdata/cpu/special_ops.py`).
#[test]
fn special_ops_match_eager() {
    assert_archive_matches_eager("special_ops");
}

/// The orthogonal polynomials (Chebyshev of four kinds, plain and shifted, Hermite, Laguerre,
/// Legendre) in f32 and f64 at their special values, around the switches to closed forms, past
/// overflow and Hermite's degree limits, with NaN and ±inf degrees (`testdata/cpu/polynomial_ops.py`).
#[test]
fn polynomial_ops_match_eager() {
    assert_archive_matches_eager("polynomial_ops");
}

/// igamma/igammac (torch.special.gammainc/gammaincc) in f32, f64 and through f32 from f16/bf16:
/// a grid of a against x over the kernel's special values (zero, negative, tiny, huge, ±inf,
/// NaN) and pairs at each branch's edges (the asymptotic series around x = a for a > 20, the
/// Lanczos prefactor, the switches between the two series and the continued fraction)
/// (`testdata/cpu/igamma_ops.py`).
#[test]
fn igamma_ops_match_eager() {
    assert_archive_matches_eager("igamma_ops");
}

/// sort/argsort/msort along every dim, both directions, with ties (stable order), NaN, ±inf
/// and integers, and topk largest/smallest (`testdata/cpu/sort_ops.py`).
#[test]
fn sort_ops_match_eager() {
    assert_archive_matches_eager("sort_ops");
}

/// torch.linalg against eager in float32 and float64 over batches: Cholesky (info of a matrix
/// that is not positive-definite), LU (square, wide, tall, singular; P/L/U), LU, triangular and
/// Cholesky solves from both sides, inv, det and slogdet of a singular matrix, QR, geqrf/orgqr/
/// ormqr, eigh and SVD (values, and products of their vectors), pinv, matrix_rank, cond and
/// norms (`testdata/cpu/linalg_ops.py`).
#[test]
fn linalg_ops_match_eager() {
    assert_archive_matches_eager("linalg_ops");
}

/// Where torch raises (a matrix that is not positive-definite for cholesky, a singular one for
/// inv), the linalg step raises torch's error at run time, naming the batch element; a batch
/// that factorizes runs.
#[test]
fn linalg_errors_raise_at_run_time() {
    let t = "tensor<2x3x3xf32>";
    let program = |name: &str, op: &str| {
        let text = format!(
            "module {{\n  func.func @main(%a: {t} {{ember.input = \"a\"}}) -> {t} {{\n    {op}\n    return %0#0 : {t}\n  }}\n}}\n"
        );
        compile_text(&text, name)
    };
    let chol = program("linalg_cholesky_check", &format!(
        "%0:2 = \"torch.aten.linalg_cholesky_ex\"(%a) {{upper = false, check_errors = false}} : ({t}) -> ({t}, tensor<2xi32>)\n    \"torch.aten._linalg_check_errors\"(%0#1) {{api_name = \"linalg.cholesky\", is_matrix = true}} : (tensor<2xi32>) -> ()"
    ));
    let inv = program(
        "linalg_inv_check",
        &format!("%0:2 = \"torch.aten.linalg_inv_ex\"(%a) {{check_errors = true}} : ({t}) -> ({t}, tensor<2xi32>)"),
    );
    let eye = [1., 0., 0., 0., 1., 0., 0., 0., 1.];
    let good = f32_nd(&[2, 3, 3], &[eye, [4., 2., 0., 2., 5., 0., 0., 0., 1.]].concat());
    assert!(chol.run(std::slice::from_ref(&good)).is_ok());
    assert!(inv.run(std::slice::from_ref(&good)).is_ok());
    let not_pd = f32_nd(&[2, 3, 3], &[eye, [1., 2., 0., 2., 1., 0., 0., 0., 1.]].concat());
    let e = chol.run(&[not_pd]).unwrap_err();
    assert!(e.contains("linalg.cholesky: (Batch element 1): The factorization could not be completed because the input is not positive-definite (the leading minor of order 2"), "{e}");
    let singular = f32_nd(&[2, 3, 3], &[eye, [1., 2., 3., 2., 4., 6., 1., 0., 1.]].concat());
    let e = inv.run(&[singular]).unwrap_err();
    assert!(e.contains("linalg.inv_ex: (Batch element 1): The diagonal element 3 is zero"), "{e}");
}

/// unfold along every kind of dim, index_reduce (prod, mean, amax without self, amin) with a
/// repeated index, hypot at ±inf, NaN, zeros and magnitudes whose squares overflow or underflow,
/// ldexp, exp2, narrow_copy, unbind_copy and as_strided_copy (`testdata/cpu/gather_ops.py`).
#[test]
fn gather_ops_match_eager() {
    assert_archive_matches_eager("gather_ops");
}

/// grid_sampler_3d in every mode, padding and alignment, grid_sampler_2d's reflection padding
/// (grids reaching past the input), antialiased bilinear resize (down, up, align_corners, an
/// unchanged dim), embedding_bag's four results in sum, mean and max mode (empty bags,
/// padding_idx, include_last_offset, per_sample_weights, ties, NaN, -inf), masked_scatter with
/// a broadcast mask, histc over the data's range and histogram (bin counts, edges, weights,
/// density) (`testdata/cpu/misc_ops.py`).
#[test]
fn misc_ops_match_eager() {
    assert_archive_matches_eager("misc_ops");
}

/// fmax/fmin and copysign with NaN and signed zeros, round(decimals) both ways, dist for
/// p = 2, 1, inf, 0, 3, addbmm, searchsorted/bucketize (exact hits, NaN, right side, int32) and
/// training batch norm with its running-stat outputs (`testdata/cpu/extra_ops.py`).
#[test]
fn extra_ops_match_eager() {
    assert_archive_matches_eager("extra_ops");
}

/// `ember run` writes user outputs as out0.. and a functionalized in-place update of an input
/// as mutated_input.NAME (extra_ops.py doubles `vals` in place after using it).
#[test]
fn run_names_user_outputs_and_input_mutations() {
    let dir = std::env::temp_dir().join(format!("ember-mutation-{}", std::process::id()));
    let (art, got) = (dir.join("art"), dir.join("got.npz"));
    let td = testdata();
    let r = ember(&td, &["compile", "cpu/extra_ops.pt2", "--target", "cpu", "-o", art.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = ember(
        &td,
        &["run", art.to_str().unwrap(), "--inputs", "cpu/extra_ops.npz", "--outputs", got.to_str().unwrap()],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut got = ember_compiler::npz::read_npz(&got).unwrap();
    let want = ember_compiler::npz::read_npz(&td.join("cpu/extra_ops.npz")).unwrap();
    let n_out = want.keys().filter(|k| k.starts_with("out")).count();
    assert_eq!(got.len(), n_out + 1, "{:?}", got.keys().collect::<Vec<_>>());
    let vals = got.remove("mutated_input.vals").expect("mutated_input.vals");
    let doubled: Vec<f32> = f32s(&want["arg3"]).iter().map(|v| v * 2.0).collect();
    assert_eq!(
        f32s(&vals).iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        doubled.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `y = y * y` sixty times: every value is read twice, so a planner or emitter that walks an
/// expression once per path takes 2^60 steps (compile hung at 40 before `collect_reads` kept
/// what it had visited). Every target plans it; the CPU result equals the same squarings in f32.
#[test]
fn a_value_read_along_many_paths_compiles_in_linear_time() {
    let t = "tensor<64xf32>";
    let mut body = String::new();
    let mut prev = "%x".to_string();
    for i in 0..60 {
        body += &format!("    %{i} = \"ten.mul\"({prev}, {prev}) : ({t}, {t}) -> {t}\n");
        prev = format!("%{i}");
    }
    let text = format!(
        "module {{\n  func.func @main(%x: {t} {{ember.input = \"x\"}}) -> {t} {{\n{body}    return {prev} : {t}\n  }}\n}}\n"
    );
    let dir = std::env::temp_dir().join(format!("ember-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("paths.mlir"), &text).unwrap();
    for target in ["tpu", "trainium"] {
        let r = ember(&dir, &["compile", "paths.mlir", "--target", target, "-o", target]);
        assert_eq!(r.code, 0, "{target}: {}", r.stderr);
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let prog = compile_text(&text, "paths");
    let xs: Vec<f32> = (0..64).map(|i| 1.0 + (i as f32 - 32.0) * 1e-9).collect();
    let got = f32_values(&prog.run(&[f32_tensor(&xs)]).unwrap()[0]);
    let want: Vec<f32> = xs.iter().map(|&x| (0..60).fold(x, |y, _| y * y)).collect();
    assert_eq!(got, want);
}

/// x @ w.T with w an input (not a weight, so not stored transposed at compile time) and a
/// product large enough that the runtime repacks w row-major first: against an f64 reference.
#[test]
fn gemm_with_a_transposed_input_rhs_matches_reference() {
    let (m, k, n) = (300usize, 96usize, 700usize);
    let text = format!(
        "func.func @main(%x: tensor<{m}x{k}xf32> {{ember.input = \"x\"}}, %w: tensor<{n}x{k}xf32> {{ember.input = \"w\"}}) -> tensor<{m}x{n}xf32> {{\n  %0 = \"ten.transpose\"(%w) {{dims = array<i64: 1, 0>}} : (tensor<{n}x{k}xf32>) -> tensor<{k}x{n}xf32>\n  %1 = \"ten.dot_general\"(%x, %0) {{lhs_batch = array<i64>, lhs_contract = array<i64: 1>, rhs_batch = array<i64>, rhs_contract = array<i64: 0>}} : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n  return %1 : tensor<{m}x{n}xf32>\n}}\n"
    );
    let prog = compile_text(&text, "repack");
    let x: Vec<f32> = (0..m * k).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let w: Vec<f32> = (0..n * k).map(|i| ((i * 53 % 97) as f32 - 48.0) / 31.0).collect();
    let out = prog.run(&[f32_nd(&[m, k], &x), f32_nd(&[n, k], &w)]).unwrap();
    let got = f32s(&out[0]);
    for i in (0..m).step_by(7) {
        for j in 0..n {
            let want: f64 = (0..k).map(|p| x[i * k + p] as f64 * w[j * k + p] as f64).sum();
            assert!(
                (got[i * n + j] as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "[{i}, {j}]: got {}, want {want}",
                got[i * n + j]
            );
        }
    }
}

fn f32s(t: &HostTensor) -> Vec<f32> {
    assert_eq!(t.dtype, ember_ir::DType::F32);
    f32_values(t)
}

fn i64s(t: &HostTensor) -> Vec<i64> {
    assert_eq!(t.dtype, ember_ir::DType::I64);
    t.data.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32_nd(shape: &[usize], v: &[f32]) -> HostTensor {
    assert_eq!(shape.iter().product::<usize>(), v.len());
    HostTensor {
        dtype: ember_ir::DType::F32,
        shape: shape.to_vec(),
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}
