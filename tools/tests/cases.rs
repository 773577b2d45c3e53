use super::*;

/// Reads `// RUN: <args>` from the first line; `%s` is the case file (relative to testdata/).
fn run_line(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let first = text.lines().next().unwrap_or("");
    let args = first
        .strip_prefix("// RUN:")
        .unwrap_or_else(|| panic!("{} must start with `// RUN: <ember args>`", path.display()));
    let rel = path.strip_prefix(testdata()).unwrap().to_string_lossy().into_owned();
    args.split_whitespace().map(|a| a.replace("%s", &rel)).collect()
}

#[test]
fn testdata_cases() {
    insta::glob!("../../testdata", "**/*.mlir", |path| {
        let args = run_line(path);
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let out = ember(&testdata(), &refs);
        if out.code == 0 && out.stdout.starts_with("module") {
            // Every dump parses back to the same text and is valid MLIR.
            let m = ember_ir::parse_module(&out.stdout).unwrap_or_else(|e| panic!("{}: re-parse: {e}", path.display()));
            assert_eq!(m.to_string(), out.stdout, "{}: print -> parse -> print differs", path.display());
            if let Err(e) = mlir_opt_accepts(&out.stdout) {
                panic!("{}: mlir-opt rejects the dump:\n{e}", path.display());
            }
        }
        let name = path.file_name().unwrap().to_str().unwrap();
        next_to_case(path, || insta::assert_snapshot!(name, out.render()));
    });
}

#[test]
fn import_is_deterministic() {
    let a = ember(&testdata(), &["import", "models/gpt2_block.pt2"]);
    let b = ember(&testdata(), &["import", "models/gpt2_block.pt2"]);
    assert_eq!(a.code, 0, "{}", a.stderr);
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn every_model_is_imported_by_a_case() {
    for e in std::fs::read_dir(testdata().join("models")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pt2") {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let case = testdata().join("import").join(format!("{stem}.mlir"));
            assert!(case.exists(), "testdata/models/{stem}.pt2 has no import case at {}", case.display());
        }
    }
}

#[test]
fn output_file_is_written_whole() {
    let dir = std::env::temp_dir().join(format!("ember-test-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("m.mlir");
    let r = ember(&testdata(), &["import", "models/mlp.pt2", "-o", out.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with("module") && text.ends_with("}\n"));
    // A failing import leaves an existing output untouched and creates nothing new.
    let bad = dir.join("bad.mlir");
    let r = ember(&testdata(), &["import", "models/nonexistent.pt2", "-o", bad.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(!bad.exists());
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every e-graph rule has a case named after it whose trace shows it fired (the snapshot then
/// shows what extraction made of it).
#[test]
fn every_egraph_rule_has_a_case() {
    for rule in ember_passes::egraph::rules::all() {
        let path = crate::testdata().join("egraph").join(format!("{}.mlir", rule.name));
        assert!(path.exists(), "rule `{}` has no case {}", rule.name, path.display());
        let out = crate::ember(&crate::repo(), &["opt", path.to_str().unwrap(), "--passes=fuse", "--trace"]);
        let stderr = out.stderr;
        let fired = stderr.lines().find(|l| l.contains("rules fired:")).unwrap_or("");
        assert!(
            fired.split([':', ',']).any(|r| r.trim().starts_with(&format!("{} x", rule.name))),
            "rule `{}` did not fire on its case:\n{stderr}",
            rule.name
        );
    }
}
