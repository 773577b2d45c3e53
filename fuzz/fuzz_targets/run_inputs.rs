//! `ember run`'s input validation on the CPU target: the artifact is compiled once, at start-up,
//! from `testdata/models/mlp_dynamic.pt2` (a dynamic batch, so sizes bind symbols and the
//! range checks run); every input is an `--inputs` npz run through the same entry point as the
//! CLI. Inputs must be rejected with a message or run, never crash, and a run must write all
//! outputs. LLVM runs only at start-up; each execution is the npz reader, the binding and size
//! checks, and a small kernel run on the inputs that pass.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Scratch {
    artifact: PathBuf,
    input: PathBuf,
    output: PathBuf,
}

fn scratch() -> &'static Scratch {
    static S: OnceLock<Scratch> = OnceLock::new();
    S.get_or_init(|| {
        // One directory per fuzzing process: `-fork`/`-jobs` workers run side by side.
        let dir = std::env::temp_dir().join(format!("ember-fuzz-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the scratch dir");
        let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/models/mlp_dynamic.pt2");
        let imported = ember_compiler::import_path(&model).expect("import mlp_dynamic.pt2");
        let artifact = dir.join("artifact");
        ember_compiler::compile(imported, &ember_compiler::CompileOptions::new("cpu", &artifact)).expect("compile mlp_dynamic.pt2 for the CPU");
        Scratch { artifact, input: dir.join("in.npz"), output: dir.join("out.npz") }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = scratch();
    std::fs::write(&s.input, data).expect("write the scratch npz");
    let _ = std::fs::remove_file(&s.output);
    if ember_compiler::run(&s.artifact, &s.input, &s.output, 1).is_ok() {
        let outs = ember_compiler::npz::read_npz(&s.output).expect("a successful run writes a readable npz");
        assert!(!outs.is_empty(), "a successful run wrote no outputs");
    }
});
