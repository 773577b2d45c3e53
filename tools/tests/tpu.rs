//! The TPU target (StableHLO): snapshot cases and artifacts.
//!
//! - `stablehlo_cases`: every `testdata/targets/tpu/*.mlir` (a `ten`-dialect module) goes through
//!   the TPU pipeline and emitter; the StableHLO text (or the error) is an insta snapshot next to
//!   it, `<case>.stablehlo.snap` (beside the RUN line's `<case>.mlir.snap`). The
//!   file's `// RUN:` line runs the same pipeline, so `testdata_cases` snapshots (and round-trips)
//!   the module the StableHLO is emitted from. `tools/python/tests/test_tpu.py` parses and verifies every
//!   such snapshot with jaxlib's MLIR bindings and compiles it on XLA, and runs the bundled models
//!   on XLA against torch eager.
//! - Artifacts: layout, manifest, weights, determinism, the CLI.

use super::*;
use ember_targets::tpu::Manifest;

/// Models the tpu target cannot compile yet, with the reason; the test checks the reason stays true.
const NOT_YET: &[(&str, &str)] = &[];

fn emit_file(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut m = ember_ir::parse_module(&text).map_err(|e| e.to_string())?;
    ember_ir::verify::verify(&m).map_err(|e| format!("{e:?}"))?;
    ember_compiler::tpu::stablehlo_buckets(&mut m)
}

#[test]
fn stablehlo_cases() {
    insta::glob!("../../testdata", "targets/tpu/*.mlir", |path| {
        let out = match emit_file(path) {
            Ok(text) => {
                assert_eq!(emit_file(path).unwrap(), text, "{}: two emissions differ", path.display());
                assert!(text.starts_with("module @main") || text.starts_with("// bucket "), "{}", path.display());
                text
            }
            Err(e) => format!("error: {e}\n"),
        };
        let name = path.file_name().unwrap().to_str().unwrap().replace(".mlir", ".stablehlo");
        next_to_case(path, || insta::assert_snapshot!(name, out));
    });
}

fn compile(name: &str, out: &Path) -> Result<Manifest, String> {
    let imported = ember_compiler::import_path(&testdata().join(format!("models/{name}.pt2"))).unwrap();
    compile_for(imported, "tpu", out, &[])?;
    Ok(manifest(out))
}

fn manifest(out: &Path) -> Manifest {
    serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap()
}

#[test]
fn bundled_models_compile_for_tpu() {
    let dir = std::env::temp_dir().join(format!("ember-tpu-{}", std::process::id()));
    let mut checked = 0;
    for (name, _) in bundled_models() {
        let out = dir.join(&name);
        let r = compile(&name, &out);
        if let Some((_, why)) = NOT_YET.iter().find(|(n, _)| *n == name) {
            let err = r.err().unwrap_or_else(|| panic!("{name} now compiles for tpu: remove it from NOT_YET"));
            assert!(err.contains(why), "{name}: {err}");
            assert!(!out.exists(), "{name}: a failed compile left {}", out.display());
            continue;
        }
        let man = r.unwrap_or_else(|e| panic!("{name}: {e}"));
        // The header every reader checks first.
        let h = ember_compiler::artifact::read_header(&out).unwrap();
        assert_eq!((h.format_version.as_str(), h.target.as_str()), ("2.1", "tpu"));
        let on_disk: Manifest =
            serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(on_disk, man);
        let text = std::fs::read_to_string(out.join(&man.module)).unwrap();
        assert!(text.starts_with("module @main") && text.contains("func.func public @main("), "{name}");
        assert!(!text.contains("ten."), "{name}: a ten op reached the StableHLO");
        // Every argument is exactly one input or weight; weights are 64-byte aligned, in argument
        // order, and tile weights.bin.
        let mut args: Vec<usize> = man.inputs.iter().map(|i| i.arg).chain(man.weights.iter().map(|w| w.arg)).collect();
        args.sort();
        assert_eq!(args, (0..args.len()).collect::<Vec<_>>(), "{name}");
        for i in 0..=args.len() {
            assert_eq!(text.contains(&format!("%arg{i}: ")), i < args.len(), "{name}: @main's argument {i}");
        }
        let blob = std::fs::metadata(out.join("weights.bin")).unwrap().len();
        let mut end = 0;
        for w in man.weights.windows(2) {
            assert!(w[0].arg < w[1].arg, "{name}: weights out of argument order");
        }
        for w in &man.weights {
            assert_eq!(w.offset % 64, 0, "{name}: {} is not 64-byte aligned", w.name);
            assert!(w.offset >= end && w.offset - end < 64, "{name}: gap before {}", w.name);
            let numel: u64 = w.dims.iter().map(|d| d.parse::<u64>().unwrap()).product();
            let size = match w.dtype.as_str() {
                "f64" | "i64" => 8,
                "f32" | "i32" => 4,
                "f16" | "bf16" => 2,
                _ => 1,
            };
            assert_eq!(w.bytes, numel * size, "{name}: {}", w.name);
            end = w.offset + w.bytes;
        }
        assert_eq!(end, blob, "{name}: weights.bin has trailing bytes");
        checked += 1;
    }
    assert!(checked >= 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tpu_artifacts_are_deterministic() {
    let base = std::env::temp_dir().join(format!("ember-tpu-det-{}", std::process::id()));
    // gpt2_block: 4 files; mlp_dynamic: 4 plus 5 smaller padded buckets.
    for (name, n_files) in [("gpt2_block", 4), ("mlp_dynamic", 9)] {
        let mut files = Vec::new();
        for k in 0..2 {
            let out = base.join(format!("{name}{k}"));
            compile(name, &out).unwrap();
            let mut names: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name()).collect();
            names.sort();
            files.push(names.iter().map(|n| (n.clone(), std::fs::read(out.join(n)).unwrap())).collect::<Vec<_>>());
        }
        assert_eq!(files[0].len(), n_files, "{name}");
        assert_eq!(files[0].len(), files[1].len());
        for (a, b) in files[0].iter().zip(&files[1]) {
            assert!(a == b, "{name}: {:?} differs between two compiles", a.0);
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

fn ember_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd)
        .output()
        .expect("run ember");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn cli_compile_tpu_and_run_without_python() {
    let dir = std::env::temp_dir().join(format!("ember-tpu-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let art = dir.join("art");
    let r = ember(&testdata(), &["compile", "models/mlp.pt2", "--target", "tpu", "-o", art.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("python -m ember.xla run"), "{}", r.stderr);
    for f in ["manifest.json", "module.stablehlo.mlir", "weights.bin", "module.mlir"] {
        assert!(art.join(f).exists(), "{f}");
    }
    // A symbolic batch compiles to padded buckets, one module file each, listed in the manifest.
    let dynamic = dir.join("dyn");
    let r =
        ember(&testdata(), &["compile", "models/mlp_dynamic.pt2", "--target", "tpu", "-o", dynamic.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let man: Manifest = serde_json::from_str(&std::fs::read_to_string(dynamic.join("manifest.json")).unwrap()).unwrap();
    let buckets = man.buckets.expect("a bucketed artifact");
    let sizes: Vec<i64> = buckets.iter().map(|b| b.symbols["s77"]).collect();
    assert_eq!(sizes, [2, 4, 8, 16, 32, 64]);
    assert_eq!(buckets.last().unwrap().module, man.module);
    for b in &buckets {
        let text = std::fs::read_to_string(dynamic.join(&b.module)).unwrap();
        assert!(
            text.contains(&format!("%arg4: tensor<{}x32xf32> {{ember.input = \"x\"}}", b.symbols["s77"])),
            "{}",
            b.module
        );
    }
    assert_eq!(man.inputs[0].dims, ["s77", "32"]);
    // `ember run` hands tpu artifacts to `python -m ember.xla`; a missing Python is a clear error.
    let a = art.to_str().unwrap();
    let r = ember_env(
        &testdata(),
        &["run", a, "--inputs", "models/mlp.npz", "--outputs", "/dev/null"],
        &[("EMBER_PYTHON", "/nonexistent/python3")],
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("python -m ember.xla run") && r.stderr.contains("/nonexistent/python3"), "{}", r.stderr);
    // `--portable` needs the Python env for the VHLO serializer; without it, nothing is written.
    let port = dir.join("port");
    let r = ember_env(
        &testdata(),
        &["compile", "models/mlp.pt2", "--target", "tpu", "--portable", "-o", port.to_str().unwrap()],
        &[("EMBER_PYTHON", "/nonexistent/python3")],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--portable: module.stablehlo.mlir: cannot start `/nonexistent/python3`"),
        "{}",
        r.stderr
    );
    assert!(!port.exists());
    // Compiling over a directory that is not an artifact is refused.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    let r = ember(&testdata(), &["compile", "models/mlp.pt2", "--target", "tpu", "-o", other.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is not an Ember artifact; refusing to overwrite it"), "{}", r.stderr);
    assert!(other.join("notes.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every `ten` op has a StableHLO mapping exercised by a `testdata/targets/tpu` case: a new `ten`
/// op needs its StableHLO form (the table's `Hlo` column, or a case in `ember_targets::tpu::stablehlo`)
/// and a line in one of those cases.
#[test]
fn every_ten_op_has_a_tpu_case() {
    let mut text = String::new();
    for e in std::fs::read_dir(testdata().join("targets/tpu")).unwrap() {
        text.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    let missing: Vec<&str> =
        ember_ir::dialect::ten::OPS.iter().map(|d| d.name).filter(|n| !text.contains(&format!("\"{n}\""))).collect();
    assert!(missing.is_empty(), "ten ops without a testdata/targets/tpu case: {missing:?}");
}

/// `--mesh x=2,y=4 --shard dp,tp,fsdp` on the GPT-2 block: the annotated StableHLO (snapshot), and
/// the shardings the rules chose, recorded in the manifest. `tools/python/tests/test_tpu.py` runs
/// it on 8 virtual devices against eager and checks the collectives XLA inserted.
#[test]
fn sharded_gpt2_block() {
    let dir = std::env::temp_dir().join(format!("ember-tpu-shard-{}", std::process::id()));
    let imported = ember_compiler::import_path(&testdata().join("models/gpt2_block.pt2")).unwrap();
    compile_for(imported, "tpu", &dir, &[("mesh", "x=2,y=4"), ("shard", "dp,tp"), ("shard", "fsdp")]).unwrap();
    let man = manifest(&dir);
    let text = std::fs::read_to_string(dir.join(&man.module)).unwrap();
    assert!(text.contains("mhlo.num_partitions = 8 : i32") && text.contains("sdy.mesh @mesh = <[\"x\"=2, \"y\"=4]>"));
    insta::assert_snapshot!("sharded_gpt2_block_stablehlo", text);
    let mesh: Vec<(String, i64)> = man.mesh.clone().unwrap().into_iter().map(|a| (a.name, a.size)).collect();
    assert_eq!(mesh, [("x".to_string(), 2), ("y".to_string(), 4)]);
    let spec = |name: &str| -> Vec<Option<&str>> {
        let w = man.weights.iter().find(|w| w.name == name).unwrap();
        w.sharding.as_ref().unwrap().iter().map(|a| a.as_deref()).collect()
    };
    // Megatron: qkv and fc column-parallel (output features on "y"), the projections after them
    // row-parallel (input features on "y"); FSDP puts "x" on the other dim.
    assert_eq!(spec("attn.c_attn.weight"), [Some("y"), Some("x")]);
    assert_eq!(spec("attn.c_proj.weight"), [Some("x"), Some("y")]);
    assert_eq!(spec("mlp.c_fc.weight"), [Some("y"), Some("x")]);
    assert_eq!(spec("mlp.c_proj.weight"), [Some("x"), Some("y")]);
    assert_eq!(spec("ln_1.weight"), [Some("x")]);
    assert_eq!(man.inputs[0].sharding.as_ref().unwrap(), &[Some("x".to_string()), None, None]);
    assert_eq!(man.outputs[0].sharding.as_ref().unwrap(), &[Some("x".to_string()), None, None]);
    // Unsharded artifacts keep the single-device manifest (no mesh or sharding keys).
    let json = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(json.contains("\"mesh\"") && json.contains("\"sharding\""));
    std::fs::remove_dir_all(&dir).unwrap();
    compile("mlp", &dir).unwrap();
    let json = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(!json.contains("\"mesh\"") && !json.contains("\"sharding\""), "{json}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--param-inputs`: weights that arrive as user inputs (torch.compile's graphs) are sharded as
/// parameters: Megatron and FSDP splits instead of the batch split of data. `--replicate-outputs`
/// keeps the output whole.
#[test]
fn param_inputs_are_sharded_as_parameters() {
    let dir = std::env::temp_dir().join(format!("ember-tpu-param-inputs-{}", std::process::id()));
    type Spec = Vec<Option<String>>;
    let specs = |extra: &[(&str, &str)]| -> (Vec<Spec>, Spec) {
        let imported = ember_compiler::load(&testdata().join("targets/tpu/param_inputs.mlir")).unwrap();
        let mut opts = vec![("mesh", "x=2,y=4"), ("shard", "dp,tp,fsdp")];
        opts.extend_from_slice(extra);
        compile_for(imported, "tpu", &dir, &opts).unwrap();
        let man = manifest(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        (man.inputs.iter().map(|i| i.sharding.clone().unwrap()).collect(), man.outputs[0].sharding.clone().unwrap())
    };
    let (x, y) = (Some("x".to_string()), Some("y".to_string()));
    // x: batch on "x"; w1 column-parallel (outputs on "y"), w2 row-parallel (inputs on "y"),
    // FSDP's "x" on their other dim.
    let (inputs, output) = specs(&[("param-inputs", "w1,w2")]);
    assert_eq!(inputs, [vec![x.clone(), None], vec![y.clone(), x.clone()], vec![x.clone(), y]]);
    assert_eq!(output, [x.clone(), None]);
    // Without it they are data: split along dim 0 like the batch.
    assert_eq!(specs(&[]).0, [vec![x.clone(), None], vec![x.clone(), None], vec![x.clone(), None]]);
    assert_eq!(specs(&[("replicate-outputs", "")]), (vec![vec![x.clone(), None]; 3], vec![None, None]));
}

/// Bad `--mesh` / `--shard` values are clear errors.
#[test]
fn mesh_and_shard_errors() {
    use ember_targets::tpu::sharding::Options;
    let cases: &[(&str, &[&str])] = &[
        ("x2", &[]),
        ("x=two", &[]),
        ("x=0", &[]),
        ("x=2,x=4", &[]),
        ("1x=2", &[]),
        ("x=2,y=4", &["pp"]),
        ("x=2,y=4", &["tp=z"]),
        ("x=2,y=4", &["tp", "tp=x"]),
        ("x=2,y=4", &["tp=x", "fsdp"]),
    ];
    let mut out = String::new();
    for (mesh, shard) in cases {
        let shard: Vec<String> = shard.iter().map(|s| s.to_string()).collect();
        let e = Options::parse(mesh, &shard, None, false).unwrap_err();
        out.push_str(&format!("--mesh {mesh} --shard {shard:?}\n  {e}\n"));
    }
    let a = Options::parse("x=2,y=4", &["tp".into(), "dp,fsdp".into()], None, false).unwrap();
    let axes: Vec<String> = a.rules.iter().map(|r| format!("{}={}", r.strategy, r.axis)).collect();
    out.push_str(&format!("defaults: {}\n", axes.join(" ")));
    for args in [
        "compile models/mlp.pt2 --target tpu -o /nonexistent/x --shard tp",
        "compile models/mlp.pt2 --target cpu -o /nonexistent/x --mesh x=2",
        "compile models/mlp.pt2 --target tpu -o /nonexistent/x --mesh x=2 --shard zz",
        "compile models/mlp.pt2 --target tpu -o /nonexistent/x --param-inputs x",
        "compile models/mlp.pt2 --target tpu -o /nonexistent/x --mesh x=2 --param-inputs x,",
        "compile targets/tpu/param_inputs.mlir --target tpu -o /nonexistent/x --mesh x=2 --param-inputs w3",
    ] {
        let args: Vec<&str> = args.split(' ').collect();
        out.push_str(&format!("ember {}\n{}", args.join(" "), ember(&testdata(), &args).render()));
    }
    insta::assert_snapshot!(out);
}

/// `--precision` sets the f32 `dot_general` precision (default HIGHEST); only the emitted
/// attribute can be checked here (XLA's CPU backend computes f32 matmuls in f32 whatever it says).
#[test]
fn precision_flag() {
    let dir = std::env::temp_dir().join(format!("ember-tpu-precision-{}", std::process::id()));
    let mut out = String::new();
    for p in [None, Some("default"), Some("high"), Some("highest")] {
        let art = dir.join(p.unwrap_or("unset"));
        let mut args = vec!["compile", "models/mlp.pt2", "--target", "tpu", "-o", art.to_str().unwrap()];
        args.extend(p.iter().flat_map(|p| ["--precision", *p]));
        let r = ember(&testdata(), &args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let text = std::fs::read_to_string(art.join("module.stablehlo.mlir")).unwrap();
        out.push_str(&format!("--precision {}\n", p.unwrap_or("(unset)")));
        for l in text.lines().filter(|l| l.contains("dot_general")) {
            out.push_str(l.trim());
            out.push('\n');
        }
    }
    let r = ember(
        &testdata(),
        &[
            "compile",
            "models/mlp.pt2",
            "--target",
            "cpu",
            "-o",
            dir.join("cpu").to_str().unwrap(),
            "--precision",
            "high",
        ],
    );
    out.push_str(&r.render());
    insta::assert_snapshot!(out);
    std::fs::remove_dir_all(&dir).unwrap();
}
