//! The `.npz` reader (`ember run --inputs`): any file must read or fail with a message, never
//! panic or allocate more than the file's declared sizes. What reads must write back and read
//! again to the same arrays (dtype, shape and bytes), since `ember run --outputs` writes them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

fn scratch() -> &'static (PathBuf, PathBuf) {
    static P: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    // One pair of files per fuzzing process: `-fork`/`-jobs` workers run side by side.
    P.get_or_init(|| {
        let d = std::env::temp_dir();
        let pid = std::process::id();
        (d.join(format!("ember-fuzz-{pid}-in.npz")), d.join(format!("ember-fuzz-{pid}-out.npz")))
    })
}

fuzz_target!(|data: &[u8]| {
    let (input, output) = scratch();
    std::fs::write(input, data).expect("write the scratch npz");
    let Ok(arrays) = ember_compiler::npz::read_npz(input) else { return };
    let list: Vec<(String, _)> = arrays.arrays.into_iter().collect();
    ember_compiler::npz::write_npz(output, &list, &arrays.complex).expect("write back arrays that were read");
    let back = ember_compiler::npz::read_npz(output).expect("read back an npz Ember wrote");
    assert_eq!(back.len(), list.len(), "array count changed in a round trip");
    assert_eq!(back.complex, arrays.complex, "complex arrays changed in a round trip");
    for ((n, t), (n2, t2)) in list.iter().zip(back.iter()) {
        assert_eq!(
            (n, t.dtype, &t.shape, &t.data),
            (n2, t2.dtype, &t2.shape, &t2.data),
            "array changed in a round trip"
        );
    }
});
