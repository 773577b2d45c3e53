//! Inputs a fuzzer or a hostile file can produce, and interrupted or concurrent compiles: each
//! gives the right numbers or a clear error, never a crash, and an `-o` directory is always one
//! complete artifact.

use super::bad_input::{edit_json, read_entries, write_zip, write_zip_as, Entries};
use super::cpu::close;
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
    compile_for(ember_compiler::import_path(pt2).unwrap(), "cpu", out, &[]).unwrap();
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

/// Writes an .npz of raw entries.
fn write_npz_raw(path: &Path, arrays: &[(&str, Vec<u8>)], method: zip::CompressionMethod) {
    let e: Entries = arrays.iter().map(|(n, b)| (n.to_string(), b.clone())).collect();
    write_zip_as(path, &e, method);
}

fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    [b"\x93NUMPY\x01\x00".to_vec(), (h.len() as u16).to_le_bytes().to_vec(), h.into_bytes(), data.to_vec()].concat()
}

#[test]
fn npz_sizes_are_checked_against_the_file() {
    let dir = scratch("npz");
    let read = |name: &str, arrays: &[(&str, Vec<u8>)], method| {
        let p = dir.join(format!("{name}.npz"));
        write_npz_raw(&p, arrays, method);
        ember_compiler::npz::read_npz(&p).map_err(|e| e.replace(&dir.display().to_string(), "DIR"))
    };
    let stored = zip::CompressionMethod::Stored;
    let ok = read("ok", &[("a.npy", npy("<f4", "(2, 3)", &f32_bytes(&[1.0; 6])))], stored).unwrap();
    assert_eq!(ok["a"].shape, [2, 3]);
    // A shape whose byte size overflows, in a few hundred bytes.
    let e = read("huge", &[("a.npy", npy("<f4", "(4611686018427387904, 10)", &[0; 8]))], stored).unwrap_err();
    assert_eq!(e, "`DIR/huge.npz`: `a` holds 8 bytes of data, but a float32 array of shape [4611686018427387904, 10] needs more bytes than memory can address");
    // Short by fewer bytes than the header: the header is not data.
    let e = read("short", &[("a.npy", npy("<f4", "(2, 3)", &f32_bytes(&[1.0; 5])))], stored).unwrap_err();
    assert_eq!(e, "`DIR/short.npz`: `a` holds 20 bytes of data, but a float32 array of shape [2, 3] needs 24 bytes");
    // `a` and `a.npy` are one array to np.load.
    let e =
        read("dup", &[("a", npy("<f4", "(1,)", &[0; 4])), ("a.npy", npy("<f4", "(1,)", &[0; 4]))], stored).unwrap_err();
    assert_eq!(e, "`DIR/dup.npz` holds two arrays named `a`");
    // The same entry name twice, which the zip reader alone would resolve to the last.
    let p = dir.join("dup2.npz");
    write_npz_raw(&p, &[("a.npy", npy("<f4", "(1,)", &[0; 4])), ("b.npy", npy("<f4", "(1,)", &[0; 4]))], stored);
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.windows(5).rposition(|w| w == b"b.npy").unwrap();
    bytes[at] = b'a';
    std::fs::write(&p, &bytes).unwrap();
    let e = ember_compiler::npz::read_npz(&p).unwrap_err().replace(&dir.display().to_string(), "DIR");
    assert_eq!(e, "`DIR/dup2.npz` has 2 entries but only 1 distinct names: two entries share a name");
    let e = read("header", &[("a.npy", npy("<f4", "(2, é)", &[0; 4]))], stored).unwrap_err();
    assert!(e.contains("`a` is not a .npy array: shape entry `é` is not a size"), "{e}");
    // np.savez_compressed writes deflated entries.
    let big: Vec<f32> = (0..10000).map(|i| (i % 7) as f32).collect();
    let z = read("deflated", &[("a.npy", npy("<f4", "(10000,)", &f32_bytes(&big)))], zip::CompressionMethod::Deflated)
        .unwrap();
    assert_eq!(f32s(&z["a"].data), big);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sets the uncompressed size every header of a one-entry zip declares.
fn declare_size(zip: &mut [u8], size: u32) {
    for (sig, at) in [(b"PK\x03\x04", 22), (b"PK\x01\x02", 24)] {
        let h = zip.windows(4).position(|w| w == sig).unwrap();
        zip[h + at..h + at + 4].copy_from_slice(&size.to_le_bytes());
    }
}

#[test]
fn inflating_is_capped_by_the_declared_size() {
    let dir = scratch("inflate");
    let p = dir.join("bomb.npz");
    write_npz_raw(&p, &[("a.npy", npy("<f4", "(100000,)", &[0; 400000]))], zip::CompressionMethod::Deflated);
    let mut bytes = std::fs::read(&p).unwrap();
    // A declared size deflate cannot reach from this file is refused before inflating.
    declare_size(&mut bytes, u32::MAX);
    std::fs::write(&p, &bytes).unwrap();
    let e = ember_compiler::npz::read_npz(&p).unwrap_err();
    assert!(e.contains("`a` declares 4294967295 bytes") && e.contains("more than deflate can hold"), "{e}");
    // An entry that inflates past its declared size is caught, not read on.
    declare_size(&mut bytes, 1000);
    std::fs::write(&p, &bytes).unwrap();
    let e = ember_compiler::npz::read_npz(&p).unwrap_err();
    assert!(e.contains("`a` declares 1000 bytes but holds 1001"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `.pt2` written with deflate imports like the stored original.
#[test]
fn deflated_archives_import() {
    let dir = scratch("deflated-pt2");
    let p = dir.join("mlp.pt2");
    write_zip_as(&p, &read_entries(&testdata().join("models/mlp.pt2")), zip::CompressionMethod::Deflated);
    let got = ember(&dir, &["import", "mlp.pt2"]);
    assert_eq!(got.code, 0, "{}", got.stderr);
    assert_eq!(got.stdout, ember(&testdata(), &["import", "models/mlp.pt2"]).stdout);
    let got = run_mlp(&p, &dir.join("art"));
    let want = ember_compiler::npz::read_npz(&testdata().join("models/mlp.npz")).unwrap();
    assert!(close(&got, &want["out0"]).unwrap() <= 1.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An artifact with an unbounded dynamic dim (torch writes `max_val` 2^63-1 for one) and an
/// input whose declared shape overflows every size product.
#[test]
fn run_rejects_inputs_whose_sizes_overflow() {
    let dir = scratch("overflow");
    let mut e = read_entries(&testdata().join("models/mlp_dynamic.pt2"));
    crate::bad_input::edit_model(&mut e, |j| j["range_constraints"]["s77"]["max_val"] = i64::MAX.into());
    write_zip(&dir.join("unbounded.pt2"), &e);
    let r = ember(&dir, &["compile", "unbounded.pt2", "--target", "cpu", "-o", "art"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (rows, name) in [(1u64 << 62, "huge"), (1 << 61, "big")] {
        write_npz_raw(
            &dir.join(format!("{name}.npz")),
            &[("arg0.npy", npy("<f4", &format!("({rows}, 32)"), &[0; 64]))],
            zip::CompressionMethod::Stored,
        );
        let r = ember(&dir, &["run", "art", "--inputs", &format!("{name}.npz"), "--outputs", "out.npz"]);
        assert_eq!(r.code, 2, "{}", r.render());
        insta::assert_snapshot!(format!("run_input_size_overflow_{name}"), r.render());
    }
    // The runtime checks sizes itself, for callers that do not come through an .npz.
    let prog = Program::load(&dir.join("art")).unwrap();
    let t = HostTensor { dtype: ember_ir::DType::F32, shape: vec![1 << 62, 32], data: vec![0; 64] };
    assert_eq!(
        prog.run(&[t]).unwrap_err(),
        "input 0 holds 64 bytes, its shape [4611686018427387904, 32] needs more than memory can address"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Threads of one process (the eager runtime compiles on several) and processes writing one
/// `-o` at once: every write succeeds and the directory always holds one writer's whole set.
#[test]
fn concurrent_writes_leave_one_complete_artifact() {
    let dir = scratch("concurrent");
    let out = dir.join("art");
    std::thread::scope(|s| {
        for t in 0..8 {
            let out = &out;
            s.spawn(move || {
                for i in 0..20 {
                    let id = format!("{t}-{i}");
                    let files: [(&str, &[u8]); 2] = [("manifest.json", id.as_bytes()), ("weights.bin", id.as_bytes())];
                    ember_compiler::artifact::write_dir(out, &files).unwrap();
                }
            });
        }
    });
    let m = std::fs::read(out.join("manifest.json")).unwrap();
    assert_eq!(m, std::fs::read(out.join("weights.bin")).unwrap());
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["art"], "temporary directories left behind");

    let mut children: Vec<_> = (0..8)
        .map(|_| {
            std::process::Command::new(env!("CARGO_BIN_EXE_ember"))
                .args(["compile", "models/mlp.pt2", "--target", "cpu", "-o"])
                .arg(dir.join("cli"))
                .current_dir(testdata())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children.drain(..) {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut inputs = ember_compiler::npz::read_npz(&testdata().join("models/mlp.npz")).unwrap();
    Program::load(&dir.join("cli")).unwrap().run(&[inputs.remove("arg0").unwrap()]).unwrap();
    let mut left: Vec<_> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["art", "cli"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A compile killed with SIGKILL leaves its temporary artifact and link dir; the next compile
/// removes those of processes that are gone (and none of a live one).
#[test]
fn a_killed_compiles_leftovers_are_removed_by_the_next() {
    let dir = scratch("stale");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let dead = {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        c.wait().unwrap();
        c.id()
    };
    let live = std::process::id();
    let stale = [
        dir.join(format!(".art.tmp-{dead}")),
        dir.join(format!(".art.old-{dead}-3")),
        tmp.join(format!("ember-link-{dead}-0")),
    ];
    let kept = [dir.join(format!(".art.tmp-{live}-999")), tmp.join(format!("ember-link-{live}-999"))];
    for d in stale.iter().chain(&kept) {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("kernels.o"), b"partial").unwrap();
    }
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(["compile", "models/mlp.pt2", "--target", "cpu", "-o"])
        .arg(dir.join("art"))
        .env("TMPDIR", &tmp)
        .current_dir(testdata())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for d in &stale {
        assert!(!d.exists(), "{} was left", d.display());
    }
    for d in &kept {
        assert!(d.exists(), "{} belongs to a live process", d.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A weight whose strides overlap (stride 0) is copied dense; from a 24 KB archive that copy
/// could be 4 EiB (found by review while fuzzing: the allocation aborted the process). Over the
/// cap it is a clear error; a small expanded weight still reads as its expanded values.
#[test]
fn expanded_weights_are_capped() {
    let dir = scratch("expanded");
    let expand = |sizes: serde_json::Value, path: &Path| {
        let mut e = read_entries(&testdata().join("models/mlp.pt2"));
        edit_json(&mut e, "models/model.json", |j| {
            let tv = j["graph_module"]["graph"]["tensor_values"].as_object_mut().unwrap();
            let k = tv.keys().find(|k| k.contains("fc1_weight")).unwrap().clone();
            tv[&k]["sizes"] = sizes.clone();
        });
        edit_json(&mut e, "model_weights_config.json", |j| {
            let m = &mut j["config"]["fc1.weight"]["tensor_meta"];
            m["sizes"] = sizes.clone();
            m["strides"] = json!([{"as_int": 0}, {"as_int": 0}]);
        });
        write_zip(path, &e);
        ember_compiler::import_path(path)
    };
    let huge = expand(json!([{"as_int": 1u64 << 40}, {"as_int": 1u64 << 20}]), &dir.join("huge.pt2"));
    let err = huge.err().expect("a 4 EiB expanded weight must not import").msg;
    assert!(err.contains("fc1.weight") && err.contains("expanded tensor") && err.contains("contiguous"), "{err}");
    // [64, 32] from one stored element: every element is the first stored value.
    let small = expand(json!([{"as_int": 64}, {"as_int": 32}]), &dir.join("small.pt2")).unwrap();
    let w = small.weights.iter().find(|(n, _)| n == "fc1.weight").unwrap().1.data.as_ref().unwrap().bytes().to_vec();
    let first = f32s(entry(&mut read_entries(&testdata().join("models/mlp.pt2")), "data/weights/weight_0"))[0];
    assert_eq!(f32s(&w), vec![first; 64 * 32]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every file an artifact's manifest lists carries its size and SHA-256; a truncated or edited
/// one is refused before it is loaded (a damaged kernels.so would otherwise be run), naming it.
#[test]
fn damaged_artifacts_are_refused_naming_the_file() {
    let dir = scratch("damaged");
    let r =
        ember(&testdata(), &["compile", "models/mlp.pt2", "--target", "cpu", "-o", dir.join("art").to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.render());
    let man: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("art/manifest.json")).unwrap()).unwrap();
    let listed: Vec<&str> = man["files"].as_object().unwrap().keys().map(|k| k.as_str()).collect();
    assert_eq!(listed, ["kernels.ll", "kernels.so", "module.mlir", "weights.bin"]);
    let inputs = testdata().join("models/mlp.npz");
    let run = |art: &Path| {
        ember(&dir, &["run", art.to_str().unwrap(), "--inputs", inputs.to_str().unwrap(), "--outputs", "out.npz"])
    };
    assert_eq!(run(&dir.join("art")).code, 0);
    type Damage = fn(&mut Vec<u8>);
    let cases: [(&str, &str, Damage, &str); 5] = [
        ("so_truncated", "kernels.so", |b| b.truncate(b.len() / 2), "is truncated"),
        ("so_edited", "kernels.so", |b| b[100] ^= 1, "does not match its SHA-256"),
        ("weights_truncated", "weights.bin", |b| b.truncate(b.len() - 4), "is truncated"),
        ("weights_edited", "weights.bin", |b| b[0] ^= 0x40, "does not match its SHA-256"),
        ("mlir_edited", "module.mlir", |b| b.extend_from_slice(b"// edited\n"), "is longer than compiled"),
    ];
    for (case, file, damage, what) in cases {
        let art = dir.join(case);
        let _ = std::fs::remove_dir_all(&art);
        std::fs::create_dir_all(&art).unwrap();
        for e in std::fs::read_dir(dir.join("art")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, art.join(p.file_name().unwrap())).unwrap();
        }
        let mut bytes = std::fs::read(art.join(file)).unwrap();
        damage(&mut bytes);
        std::fs::write(art.join(file), &bytes).unwrap();
        let r = run(&art);
        assert_eq!(r.code, 2, "{case}: {}", r.render());
        assert!(
            r.stderr.contains(&format!("`{file}` {what}")) && r.stderr.contains("recompile"),
            "{case}: {}",
            r.stderr
        );
        let err = Program::load(&art).err().expect("a damaged artifact must not load");
        assert!(err.contains(file), "{case}: {err}");
    }
    // The same size, the same hash: one artifact's bytes, recompiled.
    let again = dir.join("again");
    assert_eq!(
        ember(&testdata(), &["compile", "models/mlp.pt2", "--target", "cpu", "-o", again.to_str().unwrap()]).code,
        0
    );
    assert_eq!(
        std::fs::read(again.join("manifest.json")).unwrap(),
        std::fs::read(dir.join("art/manifest.json")).unwrap()
    );
    // 2.0 artifacts predate the list and still load; a newer one without it is damaged.
    let mut old = man.clone();
    old.as_object_mut().unwrap().remove("files");
    old["format_version"] = "2.0".into();
    std::fs::write(dir.join("art/manifest.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    Program::load(&dir.join("art")).unwrap();
    old["format_version"] = "2.1".into();
    std::fs::write(dir.join("art/manifest.json"), serde_json::to_vec(&old).unwrap()).unwrap();
    assert!(Program::load(&dir.join("art")).err().unwrap().contains("lists no file checksums"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A gather index outside [-n, n) is an error naming the op, as torch raises (it used to read a
/// clamped row and exit 0); negative ones in range count from the end. embedding and
/// index_select gather with the index itself; index.Tensor and torch.gather through a linear
/// index, where an out-of-range component must not land on another element.
#[test]
fn out_of_range_gather_indices_are_errors() {
    let dir = scratch("gather");
    std::fs::write(
        dir.join("m.mlir"),
        r#"func.func @main(%w: tensor<5x3xf32> {ember.input = "w"}, %ids: tensor<2x2xi64> {ember.input = "ids"}, %k: tensor<2xi32> {ember.input = "k"}, %g: tensor<5x1xi64> {ember.input = "g"}, %xi: tensor<2x2xi64> {ember.input = "xi"}) -> (tensor<2x2x3xf32> {ember.output = "e"}, tensor<5x2xf32> {ember.output = "s"}, tensor<2x2x3xf32> {ember.output = "x"}, tensor<5x1xf32> {ember.output = "t"}) {
  %0 = "torch.aten.embedding"(%w, %ids) {padding_idx = -1 : i64, scale_grad_by_freq = false, sparse = false} : (tensor<5x3xf32>, tensor<2x2xi64>) -> tensor<2x2x3xf32> loc("embedding"("model.py":7:0))
  %1 = "torch.aten.index_select"(%w, %k) {dim = 1 : i64} : (tensor<5x3xf32>, tensor<2xi32>) -> tensor<5x2xf32> loc("index_select"("model.py":8:0))
  %2 = "torch.aten.index.Tensor"(%w, %xi) {indices = array<i64: 1>, operandSegmentSizes = array<i64: 1, 1>} : (tensor<5x3xf32>, tensor<2x2xi64>) -> tensor<2x2x3xf32> loc("index"("model.py":9:0))
  %3 = "torch.aten.gather"(%w, %g) {dim = 1 : i64, sparse_grad = false} : (tensor<5x3xf32>, tensor<5x1xi64>) -> tensor<5x1xf32> loc("gather"("model.py":10:0))
  return %0, %1, %2, %3 : tensor<2x2x3xf32>, tensor<5x2xf32>, tensor<2x2x3xf32>, tensor<5x1xf32>
}
"#,
    )
    .unwrap();
    compile_for(ember_compiler::load(&dir.join("m.mlir")).unwrap(), "cpu", &dir.join("art"), &[]).unwrap();
    let prog = Program::load(&dir.join("art")).unwrap();
    let w: Vec<f32> = (0..15).map(|i| i as f32).collect();
    let i64s = |shape: Vec<usize>, v: &[i64]| HostTensor {
        dtype: ember_ir::DType::I64,
        shape,
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let k = |v: [i32; 2]| HostTensor {
        dtype: ember_ir::DType::I32,
        shape: vec![2],
        data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    let wt = HostTensor { dtype: ember_ir::DType::F32, shape: vec![5, 3], data: f32_bytes(&w) };
    let run = |i: [i64; 4], j: [i32; 2], g: [i64; 5], x: [i64; 4]| {
        prog.run(&[wt.clone(), i64s(vec![2, 2], &i), k(j), i64s(vec![5, 1], &g), i64s(vec![2, 2], &x)])
    };
    // Negative indices wrap only in `index` (x[i]); embedding, index_select and gather raise on
    // them in torch.
    let ok = ([0, 4, 4, 0], [2, 0], [0, 1, 2, 2, 0]);
    let x_ok = [0, 4, -1, -5];
    let out = run(ok.0, ok.1, ok.2, x_ok).unwrap();
    let rows = [0., 1., 2., 12., 13., 14., 12., 13., 14., 0., 1., 2.];
    assert_eq!(f32s(&out[0].data), rows);
    assert_eq!(f32s(&out[1].data), [2., 0., 5., 3., 8., 6., 11., 9., 14., 12.]);
    assert_eq!(f32s(&out[2].data), rows);
    assert_eq!(f32s(&out[3].data), [0., 4., 8., 11., 12.]);
    let node =
        |at: &str| format!("node {at}: an index is out of range for the dim it indexes (torch raises IndexError here)");
    let embedding = node("`embedding` (from model.py:7)");
    // x[i] with -7 used to be wrapped twice (to row 3); torch.gather's 3 in row 0 used to read
    // element 3 of the flattened [5, 3], w[1, 0].
    let index = node("`index` (from model.py:9)");
    let select = node("`index_select` (from model.py:8)");
    let gather = node("`gather` (from model.py:10)");
    for (i, j, g, x, want) in [
        ([0, 5, 1, 1], ok.1, ok.2, x_ok, embedding.clone()),
        ([0, 1, -6, 1], ok.1, ok.2, x_ok, embedding.clone()),
        ([0, -1, 1, 1], ok.1, ok.2, x_ok, embedding),
        (ok.0, [0, 3], ok.2, x_ok, select.clone()),
        (ok.0, [0, -1], ok.2, x_ok, select),
        (ok.0, ok.1, ok.2, [0, -7, 1, 1], index.clone()),
        (ok.0, ok.1, ok.2, [0, 1, 5, 1], index),
        (ok.0, ok.1, [3, 0, 0, 0, 0], x_ok, gather.clone()),
        (ok.0, ok.1, [0, 0, 0, 0, -4], x_ok, gather.clone()),
        (ok.0, ok.1, [0, 0, 0, -1, 0], x_ok, gather),
    ] {
        assert_eq!(run(i, j, g, x).expect_err("an out-of-range index must be an error"), want);
    }
    // The program is fine after an error: the next in-range call runs.
    assert_eq!(run(ok.0, ok.1, ok.2, x_ok).unwrap(), out);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The artifact in `dir`, file by file (sorted by name; the report dir aside).
fn artifact_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    v
}

/// `ember compile` killed with SIGKILL at points spread over a whole compile, alternately of two
/// models into one `-o`: after every kill `-o` is absent (before the first compile finished) or
/// exactly one of the two complete artifacts, file for file, and it loads (checksums included).
#[test]
fn sigkilled_compiles_leave_no_artifact_or_a_complete_one() {
    let dir = scratch("sigkill");
    let models = ["models/mlp.pt2", "models/mlp_dynamic.pt2"];
    let compile = |model: &str, out: &Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ember"))
            .args(["compile", model, "--target", "cpu", "-o"])
            .arg(out)
            .env("TMPDIR", dir.join("tmp"))
            .current_dir(testdata())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let mut refs = Vec::new();
    let mut longest = std::time::Duration::ZERO;
    for (i, m) in models.iter().enumerate() {
        let t = std::time::Instant::now();
        assert!(compile(m, &dir.join(format!("ref{i}"))).wait().unwrap().success());
        longest = longest.max(t.elapsed());
        refs.push(artifact_files(&dir.join(format!("ref{i}"))));
    }
    let out = dir.join("art");
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for k in 0..16 {
        // Points from the start to past the end of a compile (xorshift: the same ones every run).
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = longest.mul_f64((seed % 1200) as f64 / 1000.0);
        let mut child = compile(models[k % 2], &out);
        // The last one runs to its end: under a loaded machine every kill point can fall
        // before a compile's end, and the complete case must be checked too.
        if k < 15 {
            std::thread::sleep(at);
            let _ = child.kill();
        }
        child.wait().unwrap();
        if !out.exists() {
            continue;
        }
        let got = artifact_files(&out);
        assert!(
            refs.contains(&got),
            "kill {k} at {at:?} left a mix: {:?}",
            got.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>()
        );
        Program::load(&out).unwrap_or_else(|e| panic!("kill {k} at {at:?}: {e}"));
    }
    // The next compile removes what the killed ones left (temp artifacts, link dirs).
    assert!(compile(models[0], &out).wait().unwrap().success());
    let mut left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["art", "ref0", "ref1", "tmp"]);
    assert_eq!(std::fs::read_dir(dir.join("tmp")).unwrap().count(), 0, "link dirs of killed compiles were left");
    std::fs::remove_dir_all(&dir).unwrap();
}
