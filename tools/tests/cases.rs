//! The `testdata/**/*.mlir` cases, each with its snapshot next to it (`<case>.mlir.snap`).
//!
//! - A case's first line is `// RUN: <ember args>` (`%s` = the case, relative to `testdata/`); the
//!   command runs in `testdata/` and its exit code, stdout and stderr are the snapshot.
//! - `// RUN: <ember args> | summary` snapshots a summary of stdout (the functions' signatures,
//!   op counts, result element types) instead of all of it: for whole models, whose full dump
//!   nobody reads. The full output is still re-parsed and checked with mlir-opt.
//! - A file may hold several small cases separated by a `// -----` line (MLIR's
//!   `-split-input-file`). Each split runs alone, from a scratch copy of the file in which the
//!   other splits are blank lines (so messages name the file and its true line numbers; the RUN
//!   line may name no other file); a split may start with its own `// RUN:` line, otherwise it
//!   takes the file's. The file's one snapshot lists each split's output under
//!   `// ----- <file>:<line of the split>`.
//! - Every printed module parses back to the same text and `mlir-opt` accepts it.
//! - `snapshots_pair_with_cases`: every case has its snapshot and every snapshot a case.

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

/// A RUN line's arguments, `%s` replaced by `rel`, and whether it ends in `| summary`.
fn run_args(run: &str, rel: &str) -> (Vec<String>, bool) {
    let (cmd, summary) = match run.split_once('|') {
        Some((cmd, pipe)) if pipe.trim() == "summary" => (cmd, true),
        Some((_, pipe)) => panic!("`| {}`: the only filter a RUN line takes is `| summary`", pipe.trim()),
        None => (run, false),
    };
    (cmd.split_whitespace().map(|a| a.replace("%s", rel)).collect(), summary)
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
fn run_checked(case: &str, cwd: &Path, (args, summarize): (Vec<String>, bool)) -> String {
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
    if !summarize {
        return out.render();
    }
    let mut s = format!("exit: {}\n", out.code);
    if !out.stdout.is_empty() {
        s.push_str("--- stdout, summarized (run the RUN line for all of it)\n");
        s.push_str(&summary(&out.stdout));
    }
    if !out.stderr.is_empty() {
        s.push_str("--- stderr\n");
        s.push_str(&out.stderr);
    }
    s
}

fn run_case(path: &Path) -> CaseOut {
    let rel = path.strip_prefix(testdata()).unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let parts = splits(path, &text);
    if let [one] = &parts[..] {
        return CaseOut { parts: vec![(None, run_checked(&rel, &testdata(), run_args(&one.run, &rel)))] };
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
            let out = run_checked(&name, &scratch, run_args(&p.run, &rel));
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

/// `text` split at the commas outside brackets and quotes.
fn split_top(text: &str) -> Vec<&str> {
    let (mut depth, mut quoted, mut start, mut parts) = (0i32, false, 0, vec![]);
    let b = text.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'"' if i == 0 || b[i - 1] != b'\\' => quoted = !quoted,
            _ if quoted => {}
            b'(' | b'[' | b'{' | b'<' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'>' if i == 0 || b[i - 1] != b'-' => depth -= 1,
            b',' if depth == 0 => {
                parts.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        parts.push(text[start..].trim());
    }
    parts
}

/// The element type of each `tensor<...>` in `text`.
fn element_types(text: &str) -> Vec<String> {
    text.match_indices("tensor<")
        .map(|(i, m)| {
            let body = &text[i + m.len()..];
            let end = body.find([',', '>']).unwrap_or(body.len());
            body[..end].rsplit('x').next().unwrap().to_string()
        })
        .collect()
}

/// A printed module in a few screens: the module's attributes, each function's arguments and
/// results, its op count per op name and its op results' element types.
fn summary(module: &str) -> String {
    use std::collections::BTreeMap;
    let mut s = String::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut dtypes: BTreeMap<String, usize> = BTreeMap::new();
    let flush = |s: &mut String, counts: &mut BTreeMap<String, usize>, dtypes: &mut BTreeMap<String, usize>| {
        if counts.is_empty() {
            return;
        }
        let mut by_count: Vec<_> = std::mem::take(counts).into_iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        s.push_str(&format!("  ops: {}\n", by_count.iter().map(|c| c.1).sum::<usize>()));
        for (op, n) in by_count {
            s.push_str(&format!("    {n:5} {op}\n"));
        }
        s.push_str("  op results by element type:\n");
        for (t, n) in std::mem::take(dtypes) {
            s.push_str(&format!("    {n:5} {t}\n"));
        }
    };
    for line in module.lines() {
        let l = line.trim_start();
        if let Some(attrs) = l.strip_prefix("module").map(|r| r.trim_end_matches('{').trim()) {
            s.push_str(&format!("module {attrs}\n").replace("module \n", "module\n"));
        } else if let Some(f) = l.strip_prefix("func.func ") {
            flush(&mut s, &mut counts, &mut dtypes);
            let (name, rest) = f.split_once('(').unwrap();
            let close = rest.rfind(") -> ").or_else(|| rest.rfind(") {")).unwrap();
            let args = split_top(&rest[..close]);
            let results = rest[close + 1..].trim_end_matches('{').trim().trim_start_matches("-> ");
            let results = results.strip_prefix('(').and_then(|r| r.strip_suffix(')')).unwrap_or(results);
            s.push_str(&format!("func.func {name}: {} arguments\n", args.len()));
            for a in args {
                s.push_str(&format!("  {a}\n"));
            }
            s.push_str("  ->\n");
            for r in split_top(results) {
                s.push_str(&format!("  {r}\n"));
            }
        } else if let Some(q) = l.find("\"(").filter(|_| l.starts_with('%') || l.starts_with('"')) {
            let op = l[..q].rsplit('"').next().unwrap();
            *counts.entry(op.to_string()).or_default() += 1;
            let results = l.rsplit_once(") -> ").map_or("", |(_, r)| r);
            let results = results.split(" loc(").next().unwrap();
            for t in element_types(results) {
                *dtypes.entry(t).or_default() += 1;
            }
        }
    }
    flush(&mut s, &mut counts, &mut dtypes);
    s
}

/// Every case has its snapshot (`<case>.mlir.snap`; a tpu case also `<case>.stablehlo.snap`),
/// every snapshot under `testdata/` its case, and every snapshot of `tools/tests/snapshots/` (the
/// Rust tests' own) a test that writes it.
#[test]
fn snapshots_pair_with_cases() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out)
            } else {
                out.push(p)
            }
        }
    }
    let mut files = vec![];
    walk(&testdata(), &mut files);
    files.sort();
    let writing = std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always");
    let mut errors = vec![];
    let rel = |p: &Path| p.strip_prefix(repo()).unwrap().display().to_string();
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        if let Some(case) = name.strip_suffix(".snap") {
            let (case, tpu) = match case.strip_suffix(".stablehlo") {
                Some(c) => (format!("{c}.mlir"), true),
                None => (case.to_string(), false),
            };
            let in_tpu = f.parent().unwrap() == testdata().join("targets/tpu");
            if !case.ends_with(".mlir") || !f.with_file_name(&case).exists() || (tpu && !in_tpu) {
                errors.push(format!("{}: a snapshot without its case (delete it, or restore the case)", rel(f)));
            }
        } else if name.ends_with(".mlir") && !writing {
            let mut want = vec![format!("{name}.snap")];
            if f.parent().unwrap() == testdata().join("targets/tpu") {
                want.push(name.replace(".mlir", ".stablehlo.snap"));
            }
            for w in want {
                if !f.with_file_name(&w).exists() {
                    errors.push(format!("{}: no snapshot {w} (write it: INSTA_UPDATE=always cargo test)", rel(f)));
                }
            }
        }
    }
    // The Rust tests' snapshots: `ember_tests__<module>__<name>.snap`, written by a test of
    // `tools/tests/<module>.rs` named <name> or passing "<name>" (or a `format!` of its prefix).
    let dir = repo().join("tools/tests/snapshots");
    for e in std::fs::read_dir(&dir).into_iter().flatten() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let Some(stem) = name.strip_suffix(".snap") else { continue };
        let owner = stem.strip_prefix("ember_tests__").and_then(|s| s.split_once("__"));
        let written = owner.is_some_and(|(module, snap)| {
            let src = std::fs::read_to_string(repo().join(format!("tools/tests/{module}.rs"))).unwrap_or_default();
            src.contains(&format!("fn {snap}("))
                || src.contains(&format!("\"{snap}\""))
                || src.match_indices("!(format!(\"").any(|(i, m)| {
                    let lit = &src[i + m.len()..];
                    let prefix = &lit[..lit.find('{').unwrap_or(0)];
                    !prefix.is_empty() && snap.starts_with(prefix)
                })
        });
        if !written || stem.contains('@') {
            errors.push(format!("{}: no test writes this snapshot (delete it)", rel(&p)));
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

/// A lowering whose key is no torch op would never run: a misspelled key fails here.
#[test]
fn every_lowering_is_a_torch_op() {
    let mut seen = std::collections::HashSet::new();
    for key in ember_passes::lowered_ops() {
        let name = format!("torch.aten.{key}");
        assert!(ember_ir::dialect::lookup(&name).is_some(), "`{name}` has a lowering but no torch table row");
        assert!(seen.insert(key), "`{key}` has two lowerings");
    }
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
