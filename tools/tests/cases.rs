//! The `testdata/**/*.mlir` cases, each with its snapshot next to it (`<case>.mlir.snap`).
//!
//! - A case's first line is `// RUN: <ember args>` (`%s` = the case, relative to `testdata/`); the
//!   command runs in `testdata/` and its exit code, stdout and stderr are the snapshot.
//! - A file may hold several small cases separated by a `// -----` line (MLIR's
//!   `-split-input-file`). Each split runs alone, from a scratch copy of the file in which the
//!   other splits are blank lines (so messages name the file and its true line numbers; the RUN
//!   line may name no other file); a split may start with its own `// RUN:` line, otherwise it
//!   takes the file's. The file's one snapshot lists each split's output under
//!   `// ----- <file>:<line of the split>`.
//! - Every printed module parses back to the same text and `mlir-opt` accepts it.

use super::*;

/// The line between two splits of a case file.
const SPLIT: &str = "// -----";

/// One split of a case file: the line it starts on (1-based), its RUN line, and the text ember
/// reads (the file with the other splits' lines blank, up to the end of this one).
struct Split {
    line: usize,
    run: String,
    text: String,
}

fn splits(path: &Path, text: &str) -> Vec<Split> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let file_run = lines
        .first()
        .and_then(|l| l.trim_end().strip_prefix("// RUN:"))
        .unwrap_or_else(|| panic!("{} must start with `// RUN: <ember args>`", path.display()))
        .to_string();
    let mut bounds = vec![0];
    bounds.extend((0..lines.len()).filter(|&i| lines[i].trim_end() == SPLIT).map(|i| i + 1));
    bounds.push(lines.len() + 1);
    if bounds.len() == 2 {
        return vec![Split { line: 1, run: file_run, text: text.to_string() }];
    }
    (0..bounds.len() - 1)
        .map(|k| {
            let (start, end) = (bounds[k], (bounds[k + 1] - 1).min(lines.len()));
            let chunk = &lines[start..end];
            let first = chunk.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
            let run = match chunk.get(first).and_then(|l| l.trim_end().strip_prefix("// RUN:")) {
                Some(r) => r.to_string(),
                None => file_run.clone(),
            };
            let mut text = "\n".repeat(start);
            text.extend(chunk.iter().copied().filter(|l| l.trim_end() != SPLIT));
            Split { line: start + first + 1, run, text }
        })
        .collect()
}

/// A RUN line's arguments, `%s` replaced by `rel`.
fn run_args(run: &str, rel: &str) -> Vec<String> {
    run.split_whitespace().map(|a| a.replace("%s", rel)).collect()
}

/// What a case (or one split of it) printed, as its snapshot shows it.
struct CaseOut {
    parts: Vec<(Option<String>, String)>,
}

impl CaseOut {
    fn render(&self) -> String {
        let mut s = String::new();
        for (header, text) in &self.parts {
            if let Some(h) = header {
                s.push_str(h);
                s.push('\n');
            }
            s.push_str(text);
        }
        s
    }
}

/// Runs `args` in `cwd`; checks what it prints; the snapshot text.
fn run_checked(case: &str, cwd: &Path, args: &[String]) -> String {
    let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    let out = ember(cwd, &refs);
    if out.code == 0 && out.stdout.starts_with("module") {
        // Every dump parses back to the same text and is valid MLIR.
        let m = ember_ir::parse_module(&out.stdout).unwrap_or_else(|e| panic!("{case}: re-parse: {e}"));
        assert_eq!(m.to_string(), out.stdout, "{case}: print -> parse -> print differs");
        if let Err(e) = mlir_opt_accepts(&out.stdout) {
            panic!("{case}: mlir-opt rejects the dump:\n{e}");
        }
    }
    out.render()
}

fn run_case(path: &Path) -> CaseOut {
    let rel = path.strip_prefix(testdata()).unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let parts = splits(path, &text);
    if let [one] = &parts[..] {
        return CaseOut { parts: vec![(None, run_checked(&rel, &testdata(), &run_args(&one.run, &rel)))] };
    }
    let parts = parts
        .iter()
        .map(|p| {
            let name = format!("{rel}:{}", p.line);
            let scratch =
                std::env::temp_dir().join(format!("ember-split-{}-{}", std::process::id(), name.replace('/', "_")));
            let file = scratch.join(&rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, &p.text).unwrap();
            let out = run_checked(&name, &scratch, &run_args(&p.run, &rel));
            std::fs::remove_dir_all(&scratch).unwrap();
            (Some(format!("{SPLIT} {name}")), out)
        })
        .collect();
    CaseOut { parts }
}

#[test]
fn testdata_cases() {
    insta::glob!("../../testdata", "**/*.mlir", |path| {
        let out = run_case(path);
        let name = path.file_name().unwrap().to_str().unwrap();
        crate::next_to_case(path, || insta::assert_snapshot!(name, out.render()));
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
