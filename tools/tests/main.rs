//! The one integration test binary (every binary linking LLVM is large; see ARCHITECTURE.md).
//!
//! - `testdata_cases` (`cases.rs`): every `testdata/**/*.mlir` names an `ember` command in its first
//!   line (`// RUN: opt %s --passes=cse`); its exit code, stdout and stderr are an insta snapshot
//!   next to it (`<case>.mlir.snap`); `// -----` splits one file into several small cases;
//!   `snapshots_pair_with_cases` fails on a case without a snapshot and a snapshot without a case.
//! - Round-trip, mlir-opt acceptance and determinism over every module the cases produce.
//! - Bad-input classes for the frontend, built from a real archive.
//! - The TPU target (`tpu.rs`): StableHLO snapshot cases, artifacts, the CLI.
//! - The e-graph optimizer's report (`egraph.rs`) for every model and cost model.
//! - The trainium target (`trainium.rs`): deterministic artifacts, static shapes.
//! - Crafted inputs, and interrupted or concurrent compiles (`reliability.rs`).
//! - Result-type rules against torch's meta kernels (`shape_infer.rs`).

mod bad_input;
mod cases;
mod cpu;
mod eager;
mod egraph;
mod reliability;
mod shape_infer;
mod tpu;
mod trainium;

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

pub fn testdata() -> PathBuf {
    repo().join("testdata")
}

/// Runs `f` with insta's snapshot for `case` (a file under `testdata/`) next to it:
/// `<dir>/<file name>.snap` for `assert_snapshot!("<file name>", ..)`.
pub fn next_to_case<R>(case: &Path, f: impl FnOnce() -> R) -> R {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(case.parent().unwrap());
    s.set_prepend_module_to_snapshot(false);
    s.remove_snapshot_suffix();
    s.set_input_file(case);
    s.bind(f)
}

/// The bundled models (`testdata/models/*.pt2`) as (name, path), sorted by name.
pub fn bundled_models() -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = std::fs::read_dir(testdata().join("models"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pt2"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    v.sort();
    v
}

/// Compiles through the one entry `ember compile` uses; `options` as on the command line, without
/// the dashes (`("mesh", "x=2")`, a flag's value empty).
pub fn compile_for(
    model: ember_compiler::Imported,
    target: &str,
    out: &Path,
    options: &[(&str, &str)],
) -> Result<Vec<String>, String> {
    let mut opts = ember_compiler::CompileOptions::new(target, out);
    opts.options.0 = options.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    ember_compiler::compile(model, &opts)
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn render(&self) -> String {
        let mut s = format!("exit: {}\n", self.code);
        if !self.stdout.is_empty() {
            s.push_str("--- stdout\n");
            s.push_str(&self.stdout);
        }
        if !self.stderr.is_empty() {
            s.push_str("--- stderr\n");
            s.push_str(&self.stderr);
        }
        s
    }
}

/// Runs the `ember` binary in `cwd`.
pub fn ember(cwd: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_ember")).args(args).current_dir(cwd).output().expect("run ember");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `mlir-opt-22 --allow-unregistered-dialect` must accept every module Ember prints.
pub fn mlir_opt_accepts(text: &str) -> Result<(), String> {
    use std::io::Write;
    let tool = ["mlir-opt-22", "/usr/lib/llvm-22/bin/mlir-opt"]
        .into_iter()
        .find(|t| Command::new(t).arg("--version").output().is_ok())
        .expect("mlir-opt from LLVM 22 is required (make setup installs mlir-22-tools)");
    let mut child = Command::new(tool)
        .arg("--allow-unregistered-dialect")
        .arg("-o")
        .arg("/dev/null")
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn mlir-opt");
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}
