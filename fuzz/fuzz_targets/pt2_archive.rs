//! The `.pt2` path end to end: the bytes become a file (the archive is memory-mapped, so it must
//! be one), `import_path` opens the zip, reads `model.json` and the weights config, and maps
//! every weight through its offset and strides. Every weight's bytes are then read, so a blob
//! pointing past the map faults here rather than in a later compile.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    // One file per fuzzing process: `-fork`/`-jobs` workers run side by side.
    P.get_or_init(|| std::env::temp_dir().join(format!("ember-fuzz-{}.pt2", std::process::id())))
}

fuzz_target!(|data: &[u8]| {
    let path = scratch();
    std::fs::write(path, data).expect("write the scratch archive");
    if let Ok(imported) = ember_compiler::import_path(path) {
        let mut sum = 0u8;
        for (_, w) in &imported.weights {
            if let Some(blob) = &w.data {
                let b = blob.bytes();
                // Weights have static shapes (the frontend rejects symbolic ones), and a blob
                // is the tensor's dense bytes: anything else would be read as wrong numbers.
                let numel: i64 = w.ty.static_shape().expect("a weight with a symbolic shape imported").iter().product();
                assert_eq!(
                    b.len() as i64,
                    numel * w.ty.dtype.byte_size() as i64,
                    "a weight's bytes are not its dense size"
                );
                sum = b.iter().fold(sum, |s, &x| s.wrapping_add(x));
            }
        }
        std::hint::black_box(sum);
        let _ = ember_ir::print_module(&imported.module);
    }
});
