//! Inputs a fuzzer or a hostile file can produce, and interrupted or concurrent compiles: each
//! gives the right numbers or a clear error, never a crash, and an `-o` directory is always one
//! complete artifact.

use super::bad_input::{edit_json, read_entries, write_zip, Entries};
use super::*;
use ember_targets::cpu::{HostTensor, Program};
use serde_json::json;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-rel-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn entry<'a>(e: &'a mut Entries, suffix: &str) -> &'a mut Vec<u8> {
    &mut e.iter_mut().find(|(n, _)| n.ends_with(suffix)).unwrap().1
}

/// Compiles `pt2` for the CPU and runs it on `models/mlp.npz`'s input.
fn run_mlp(pt2: &Path, out: &Path) -> HostTensor {
    ember_compiler::cpu::compile(ember_compiler::import_path(pt2).unwrap(), out).unwrap();
    let mut inputs = ember_compiler::npz::read_npz(&testdata().join("models/mlp.npz")).unwrap();
    Program::load(out).unwrap().run(&[inputs.remove("arg0").unwrap()]).unwrap().remove(0)
}

/// torch saves a weight as its whole storage plus offset and strides: a column-major weight, a
/// bias at an offset into a larger storage and one with stride 2 give the same outputs.
#[test]
fn weights_are_read_through_their_offset_and_strides() {
    let dir = scratch("strided");
    let mut e = read_entries(&testdata().join("models/mlp.pt2"));
    // fc1.weight [64, 32] stored column-major (strides [1, 64]).
    let w = f32s(entry(&mut e, "data/weights/weight_0"));
    let t: Vec<f32> = (0..32 * 64).map(|i| w[(i % 64) * 32 + i / 64]).collect();
    *entry(&mut e, "data/weights/weight_0") = f32_bytes(&t);
    // fc1.bias [64] at element 16 of a storage whose other elements are garbage.
    let b = f32s(entry(&mut e, "data/weights/weight_1"));
    *entry(&mut e, "data/weights/weight_1") = f32_bytes(&[vec![1000.0; 16], b, vec![1000.0; 5]].concat());
    // fc2.bias [16] with stride 2.
    let b = f32s(entry(&mut e, "data/weights/weight_3"));
    *entry(&mut e, "data/weights/weight_3") = f32_bytes(&b.iter().flat_map(|&x| [x, -1000.0]).collect::<Vec<_>>());
    edit_json(&mut e, "model_weights_config.json", |j| {
        let c = &mut j["config"];
        c["fc1.weight"]["tensor_meta"]["strides"] = json!([{"as_int": 1}, {"as_int": 64}]);
        c["fc1.bias"]["tensor_meta"]["storage_offset"] = json!({"as_int": 16});
        c["fc2.bias"]["tensor_meta"]["strides"] = json!([{"as_int": 2}]);
    });
    let strided = dir.join("strided.pt2");
    write_zip(&strided, &e);
    let got = run_mlp(&strided, &dir.join("strided"));
    let want = run_mlp(&testdata().join("models/mlp.pt2"), &dir.join("plain"));
    assert_eq!(got.data, want.data, "a strided weight must give the dense weight's outputs");
    std::fs::remove_dir_all(&dir).unwrap();
}

