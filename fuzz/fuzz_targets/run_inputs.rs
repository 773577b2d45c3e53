//! `ember run`'s input validation on the CPU target: the artifact is compiled once, at start-up,
//! from `testdata/models/mlp_dynamic.pt2` (a dynamic batch, so sizes bind symbols and the
//! range checks run); every input is an `--inputs` npz run through the same entry point as the
//! CLI: `read_npz`, `arg<i>` by input, `Program::run` (binding, dtype/rank/shape and range checks,
//! buffer sizes), the kernels. The program is loaded once too (reloading it per input, as the CLI
//! does, costs a dlopen and an LLVM host query: 400 instead of thousands of runs a second); the
//! manifest and `kernels.so` are not fuzzed here. Inputs must be rejected with a message or run,
//! never crash, and a run must return every output at the shape the model gives it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Scratch {
    program: ember_compiler::runtime::Program,
    input: PathBuf,
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
        ember_compiler::compile(imported, &ember_compiler::CompileOptions::new("cpu", &artifact))
            .expect("compile mlp_dynamic.pt2 for the CPU");
        let program = ember_compiler::runtime::Program::load(&artifact).expect("load the compiled artifact");
        Scratch { program, input: dir.join("in.npz") }
    })
}

fuzz_target!(|data: &[u8]| {
    let s = scratch();
    std::fs::write(&s.input, data).expect("write the scratch npz");
    let Ok(mut arrays) = ember_compiler::npz::read_npz(&s.input) else { return };
    // As `ember run` does (compiler/src/cpu.rs): input i is the array `arg<i>`.
    let Some(args) =
        (0..s.program.manifest.inputs.len()).map(|i| arrays.remove(&format!("arg{i}"))).collect::<Option<Vec<_>>>()
    else {
        return;
    };
    if let Ok(outs) = s.program.run(&args) {
        // mlp_dynamic: [batch, 32] -> [batch, 16].
        assert_eq!(outs.len(), 1, "mlp_dynamic has one output");
        assert_eq!(outs[0].shape, vec![args[0].shape[0], 16], "output shape for input shape {:?}", args[0].shape);
        assert_eq!(outs[0].data.len(), args[0].shape[0] * 16 * 4, "output bytes");
    }
});
