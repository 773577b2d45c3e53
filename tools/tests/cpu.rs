//! The CPU target end to end: every bundled model compiles, runs, and matches torch eager's
//! outputs stored next to it (`testdata/models/<name>.npz`).

use super::*;
use ember_targets::cpu::{HostTensor, Program};

/// Models the CPU target cannot compile yet, with the reason; the test checks the reason stays true.
const NOT_YET: &[(&str, &str)] = &[("resnet", "torch.aten.convolution"), ("tiny_llama", "torch.aten.cumsum")];

fn as_f64(t: &HostTensor) -> Vec<f64> {
    let n = t.shape.iter().product::<usize>();
    (0..n)
        .map(|i| {
            let b = &t.data[i * t.dtype.byte_size()..(i + 1) * t.dtype.byte_size()];
            match t.dtype {
                ember_ir::DType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
                ember_ir::DType::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
                ember_ir::DType::Bool | ember_ir::DType::U8 => b[0] as f64,
                d => panic!("compare {d}"),
            }
        })
        .collect()
}

/// max |got - want| / (atol + rtol * |want|) over all elements; <= 1 passes.
pub fn close(got: &HostTensor, want: &HostTensor) -> Result<f64, String> {
    if got.shape != want.shape || got.dtype != want.dtype {
        return Err(format!("got {:?} {:?}, want {:?} {:?}", got.dtype, got.shape, want.dtype, want.shape));
    }
    let (atol, rtol) = if got.dtype == ember_ir::DType::F64 { (1e-10, 1e-7) } else { (1e-5, 1e-4) };
    let (g, w) = (as_f64(got), as_f64(want));
    Ok(g.iter().zip(&w).map(|(a, b)| if a.is_nan() && b.is_nan() { 0.0 } else { (a - b).abs() / (atol + rtol * b.abs()) }).fold(0.0, f64::max))
}

#[test]
fn bundled_models_match_eager() {
    let dir = std::env::temp_dir().join(format!("ember-cpu-{}", std::process::id()));
    let mut checked = 0;
    for e in std::fs::read_dir(testdata().join("models")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "pt2") {
            continue;
        }
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let out = dir.join(&name);
        let imported = ember_compiler::import_path(&p).unwrap();
        let r = ember_compiler::cpu::compile(imported, &out);
        if let Some((_, why)) = NOT_YET.iter().find(|(n, _)| *n == name) {
            let err = r.err().unwrap_or_else(|| panic!("{name} now compiles: remove it from NOT_YET"));
            assert!(err.contains(why), "{name}: {err}");
            continue;
        }
        r.unwrap_or_else(|e| panic!("{name}: {e}"));
        let prog = Program::load(&out).unwrap();
        let mut arrays = ember_compiler::npz::read_npz(&p.with_extension("npz")).unwrap();
        let args: Vec<HostTensor> = (0..prog.manifest.inputs.len()).map(|i| arrays.remove(&format!("arg{i}")).unwrap()).collect();
        let outs = prog.run(&args).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, got) in outs.iter().enumerate() {
            let want = &arrays[&format!("out{i}")];
            let err = close(got, want).unwrap_or_else(|e| panic!("{name} out{i}: {e}"));
            assert!(err <= 1.0, "{name} out{i}: error {err:.3} x tolerance");
        }
        checked += 1;
    }
    assert!(checked >= 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dynamic_batch_runs_every_size_in_range_without_recompiling() {
    let dir = std::env::temp_dir().join(format!("ember-dyn-{}", std::process::id()));
    let imported = ember_compiler::import_path(&testdata().join("models/mlp_dynamic.pt2")).unwrap();
    ember_compiler::cpu::compile(imported, &dir).unwrap();
    let prog = Program::load(&dir).unwrap();
    let x = |b: usize| HostTensor { dtype: ember_ir::DType::F32, shape: vec![b, 32], data: (0..b * 32).flat_map(|i| ((i % 7) as f32 * 0.1).to_le_bytes()).collect() };
    for b in [2, 5, 64] {
        let out = prog.run(&[x(b)]).unwrap();
        assert_eq!(out[0].shape, vec![b, 16]);
    }
    // Row i of a batch does not depend on the batch size (up to GEMM summation order).
    let (small, big) = (prog.run(&[x(2)]).unwrap(), prog.run(&[x(5)]).unwrap());
    let head = HostTensor { dtype: big[0].dtype, shape: vec![2, 16], data: big[0].data[..small[0].data.len()].to_vec() };
    assert!(close(&small[0], &head).unwrap() <= 1.0);
    // Replays of one program on one input are bit-identical.
    assert_eq!(prog.run(&[x(5)]).unwrap(), big);
    let err = prog.run(&[x(65)]).unwrap_err();
    assert!(err.contains("outside the compiled range [2, 64]"), "{err}");
    let err = prog.run(&[HostTensor { dtype: ember_ir::DType::F64, shape: vec![2, 32], data: vec![0; 512] }]).unwrap_err();
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
        ember_compiler::cpu::compile(imported, &out).unwrap();
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
    let r = ember(&testdata(), &["run", art.to_str().unwrap(), "--inputs", "models/mlp.npz", "--outputs", got.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let g = ember_compiler::npz::read_npz(&got).unwrap();
    let w = ember_compiler::npz::read_npz(&testdata().join("models/mlp.npz")).unwrap();
    assert!(close(&g["out0"], &w["out0"]).unwrap() <= 1.0);
    // Missing input arrays are named.
    let r = ember(&testdata(), &["run", art.to_str().unwrap(), "--inputs", got.to_str().unwrap(), "--outputs", got.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no array `arg0`"), "{}", r.stderr);
    std::fs::remove_dir_all(&dir).unwrap();
}
