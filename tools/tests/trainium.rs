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
    let r = ember(&testdata(), &["compile", "models/mlp_dynamic.pt2", "--target", "trainium", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut f = Vec::new();
    files(&out, "", &mut f);
    let man: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    let mut s = String::from("files:\n");
    for (name, _) in &f {
        s.push_str(&format!("  {name}\n"));
    }
    s.push_str(&format!("module: {}\nbuckets: {}\nkernels:\n", man["module"], serde_json::to_string_pretty(&man["buckets"]).unwrap()));
    for k in man["kernels"].as_array().unwrap() {
        s.push_str(&format!("  {} {} inputs {} output {}\n", k["name"], k["symbols"], k["inputs"], k["output"]));
    }
    std::fs::remove_dir_all(&out).unwrap();
    insta::assert_snapshot!("compile_dynamic_for_trainium", s);
}
