//! The trainium target from the CLI: artifacts are deterministic, and a model with symbolic dims
//! compiles to one module per padded bucket. (Kernel and legalization cases are `testdata/targets/
//! trainium/*.mlir` snapshots; numerics are checked in `tools/python/tests/test_trainium.py`.)
//! Compiling needs the Python env (XLA's StableHLO -> HLO converter through `ember.xla`).

use super::*;

fn files(dir: &Path, prefix: &str, out: &mut Vec<(String, Vec<u8>)>) {
    let mut names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for p in names {
        let name = format!("{prefix}{}", p.file_name().unwrap().to_string_lossy());
        if p.is_dir() {
            files(&p, &format!("{name}/"), out);
        } else {
            out.push((name, std::fs::read(&p).unwrap()));
        }
    }
}

#[test]
fn trainium_artifacts_are_deterministic() {
    let base = std::env::temp_dir().join(format!("ember-trn-det-{}", std::process::id()));
    for model in ["models/gpt2_block.pt2", "models/mlp_dynamic.pt2", "targets/trainium/legalize_int64.mlir"] {
        let mut runs = Vec::new();
        for k in 0..2 {
            let out = base.join(format!("a{k}"));
            let r = ember(&testdata(), &["compile", model, "--target", "trainium", "-o", out.to_str().unwrap()]);
            assert_eq!(r.code, 0, "{model}: {}", r.stderr);
            let mut f = Vec::new();
            files(&out, "", &mut f);
            runs.push(f);
        }
        let names: Vec<&str> = runs[0].iter().map(|(n, _)| n.as_str()).collect();
        assert!(names.contains(&"model.hlo_module.pb") && names.contains(&"model.neuron.hlo_module.pb"), "{names:?}");
        assert_eq!(runs[0].len(), runs[1].len());
        for (a, b) in runs[0].iter().zip(&runs[1]) {
            assert!(a == b, "{model}: {:?} differs between two compiles", a.0);
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// A model with symbolic dims compiles to one module per padded bucket (the tpu target's
/// buckets): the artifact's files, bucket list and per-bucket kernels are the snapshot, and two
/// compiles are byte-identical (`trainium_artifacts_are_deterministic`).
#[test]
fn symbolic_dims_compile_to_buckets_for_trainium() {
    let out = std::env::temp_dir().join(format!("ember-trn-dyn-{}", std::process::id()));
    let r =
        ember(&testdata(), &["compile", "models/mlp_dynamic.pt2", "--target", "trainium", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut f = Vec::new();
    files(&out, "", &mut f);
    let man: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let mut s = String::from("files:\n");
    for (name, _) in &f {
        s.push_str(&format!("  {name}\n"));
    }
    s.push_str(&format!(
        "module: {}\nbuckets: {}\nkernels:\n",
        man["module"],
        serde_json::to_string_pretty(&man["buckets"]).unwrap()
    ));
    for k in man["kernels"].as_array().unwrap() {
        s.push_str(&format!("  {} {} inputs {} output {}\n", k["name"], k["symbols"], k["inputs"], k["output"]));
    }
    std::fs::remove_dir_all(&out).unwrap();
    insta::assert_snapshot!("compile_dynamic_for_trainium", s);
}

/// `--auto-cast matmult`: every f32 matmul of the HLO multiplies bf16 operands, the manifest
/// says so, neuronx-cc gets `--auto-cast none` (with and without it, so that it casts nothing on
/// its own), and the result moves off the f32 one by a bf16-sized amount; the cpu target
/// rejects the option.
#[test]
fn auto_cast_matmult_computes_f32_matmuls_in_bf16() {
    let base = std::env::temp_dir().join(format!("ember-trn-ac-{}", std::process::id()));
    let mut outs = Vec::new();
    for mode in ["none", "matmult"] {
        let out = base.join(mode);
        let r = ember(
            &testdata(),
            &[
                "compile",
                "models/gpt2_block.pt2",
                "--target",
                "trainium",
                "--auto-cast",
                mode,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let man: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(man["auto_cast"], mode);
        let flags: Vec<&str> =
            man["neuronx_cc_flags"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert!(flags.windows(2).any(|w| w == ["--auto-cast", "none"]), "{flags:?}");
        // HLO text names a dot's operands, whose types their own lines give (`x = bf16[..] ...`).
        let hlo = std::fs::read_to_string(out.join("model.hlo.txt")).unwrap();
        let types: std::collections::HashMap<&str, &str> = hlo
            .lines()
            .filter_map(|l| l.trim().split_once(" = "))
            .map(|(n, t)| (n.trim_start_matches("ROOT "), t))
            .collect();
        let dots: Vec<&str> = hlo.lines().filter(|l| l.contains(" dot(")).collect();
        assert!(!dots.is_empty());
        let bf16_operands = |l: &&&str| {
            let args = l.split(" dot(").nth(1).unwrap().split(')').next().unwrap();
            args.split(", ").all(|a| types.get(a).is_some_and(|t| t.starts_with("bf16[")))
        };
        let bf16_dots = dots.iter().filter(bf16_operands).count();
        assert_eq!(bf16_dots, if mode == "matmult" { dots.len() } else { 0 }, "{mode}: {dots:#?}");
        // The product accumulates in f32 (Neuron's PSUM), whatever the operands.
        assert!(dots.iter().all(|l| l.split(" = ").nth(1).is_some_and(|t| t.starts_with("f32["))), "{dots:#?}");
        let got = base.join(format!("{mode}.npz"));
        let r = ember(
            &testdata(),
            &["run", out.to_str().unwrap(), "--inputs", "models/gpt2_block.npz", "--outputs", got.to_str().unwrap()],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        outs.push(ember_compiler::npz::read_npz(&got).unwrap().remove("out0").unwrap());
    }
    let want =
        ember_compiler::npz::read_npz(&testdata().join("models/gpt2_block.npz")).unwrap().remove("out0").unwrap();
    let f64s = crate::cpu::as_f64;
    let (w, none, cast) = (f64s(&want), f64s(&outs[0]), f64s(&outs[1]));
    let scale = w.iter().fold(0f64, |m, v| m.max(v.abs()));
    let err = |g: &[f64]| g.iter().zip(&w).fold(0f64, |m, (a, b)| m.max((a - b).abs())) / scale;
    assert!(err(&none) < 1e-5, "f32: {}", err(&none));
    assert!(err(&cast) > 1e-5 && err(&cast) < 1.6e-2, "bf16 matmuls: {} of the output's scale", err(&cast));
    let r = ember(
        &testdata(),
        &[
            "compile",
            "models/mlp.pt2",
            "--target",
            "cpu",
            "--auto-cast",
            "matmult",
            "-o",
            base.join("cpu").to_str().unwrap(),
        ],
    );
    assert!(r.code == 2 && r.stderr.contains("trainium options; not for the cpu target"), "{}", r.stderr);
    std::fs::remove_dir_all(&base).unwrap();
}
