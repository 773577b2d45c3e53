//! Each class of malformed input gets a clear one-paragraph error and exit code 2, never a panic.
//! Cases are built from the real `testdata/models/mlp.pt2`.

use super::*;
use serde_json::Value as Json;
use std::io::{Read, Write};

pub type Entries = Vec<(String, Vec<u8>)>;

pub fn read_entries(path: &Path) -> Entries {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut v = Vec::new();
            f.read_to_end(&mut v).unwrap();
            (f.name().to_string(), v)
        })
        .collect()
}

pub fn write_zip(path: &Path, entries: &Entries) {
    write_zip_as(path, entries, zip::CompressionMethod::Stored)
}

pub fn write_zip_as(path: &Path, entries: &Entries, method: zip::CompressionMethod) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (n, b) in entries {
        w.start_file(n.as_str(), opts).unwrap();
        w.write_all(b).unwrap();
    }
    w.finish().unwrap();
}

pub fn edit_model(entries: &mut Entries, f: impl FnOnce(&mut Json)) {
    edit_json(entries, "models/model.json", f)
}

/// Edits the JSON entry whose name ends with `suffix`.
pub fn edit_json(entries: &mut Entries, suffix: &str, f: impl FnOnce(&mut Json)) {
    let e = entries.iter_mut().find(|(n, _)| n.ends_with(suffix)).unwrap();
    let mut j: Json = serde_json::from_slice(&e.1).unwrap();
    f(&mut j);
    e.1 = serde_json::to_vec(&j).unwrap();
}

fn nodes(j: &mut Json) -> &mut Vec<Json> {
    j.pointer_mut("/graph_module/graph/nodes").unwrap().as_array_mut().unwrap()
}

fn check(name: &str, file: &Path, dir: &Path) {
    let out = ember(dir, &["import", file.file_name().unwrap().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{name}: expected exit code 2, got {}\n{}", out.code, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{name}: panicked\n{}", out.stderr);
    assert!(out.stdout.is_empty(), "{name}: wrote output on failure");
    insta::assert_snapshot!(format!("bad_input__{name}"), out.stderr);
}

#[test]
fn bad_inputs_give_clear_errors() {
    let dir = std::env::temp_dir().join(format!("ember-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = testdata().join("models/mlp.pt2");
    let base = read_entries(&src);
    let bytes = std::fs::read(&src).unwrap();

    type Damage<'a> = Box<dyn Fn(&Path) + 'a>;
    let mut cases: Vec<(&str, Damage)> = Vec::new();
    cases.push(("truncated", Box::new(|p: &Path| std::fs::write(p, &bytes[..bytes.len() / 2]).unwrap())));
    cases.push(("not_a_zip", Box::new(|p: &Path| std::fs::write(p, b"this is not an archive\n").unwrap())));
    cases.push((
        "path_traversal",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            e.push(("mlp/../../escape.txt".into(), b"x".to_vec()));
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "no_model_json",
        Box::new(|p: &Path| {
            let e: Entries = base.iter().filter(|(n, _)| !n.ends_with("model.json")).cloned().collect();
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "invalid_json",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            e.iter_mut().find(|(n, _)| n.ends_with("models/model.json")).unwrap().1 = b"{\"graph_module\": [".to_vec();
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "unknown_schema_major",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| j["schema_version"]["major"] = 99.into());
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "unknown_op",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| nodes(j)[1]["target"] = "torch.ops.aten.frobnicate.default".into());
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "missing_weight_file",
        Box::new(|p: &Path| {
            let e: Entries = base.iter().filter(|(n, _)| !n.ends_with("data/weights/weight_0")).cloned().collect();
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "wrong_sized_weight",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            e.iter_mut().find(|(n, _)| n.ends_with("data/weights/weight_0")).unwrap().1.truncate(10);
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "size_overflow",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| {
                let tv = j.pointer_mut("/graph_module/graph/tensor_values").unwrap();
                let first = tv.as_object_mut().unwrap().keys().next().unwrap().clone();
                tv[&first]["sizes"] = serde_json::json!([{"as_int": 1i64 << 40}, {"as_int": 1i64 << 40}]);
            });
            write_zip(p, &e)
        }),
    ));
    let weight_meta = |p: &Path, f: &dyn Fn(&mut Json)| {
        let mut e = base.clone();
        edit_json(&mut e, "model_weights_config.json", |j| f(&mut j["config"]["fc1.weight"]["tensor_meta"]));
        write_zip(p, &e)
    };
    cases.push((
        "negative_weight_stride",
        Box::new(move |p: &Path| weight_meta(p, &|m| m["strides"][0]["as_int"] = (-(1i64 << 62)).into())),
    ));
    cases.push((
        "weight_span_overflow",
        Box::new(move |p: &Path| weight_meta(p, &|m| m["strides"][0]["as_int"] = (1i64 << 62).into())),
    ));
    cases.push((
        "weight_offset_past_end",
        Box::new(move |p: &Path| weight_meta(p, &|m| m["storage_offset"]["as_int"] = 1.into())),
    ));
    cases.push((
        "dangling_reference",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| {
                nodes(j)[1]["inputs"][1]["arg"] = serde_json::json!({"as_tensor": {"name": "nowhere"}})
            });
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "cyclic_reference",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| {
                // The first node reads the last node's output: a cycle once the graph is read in order.
                let ns = nodes(j);
                let last = ns.last().unwrap()["outputs"][0]["as_tensor"]["name"].clone();
                ns[0]["inputs"][0]["arg"] = serde_json::json!({"as_tensor": {"name": last}});
            });
            write_zip(p, &e)
        }),
    ));
    cases.push((
        "wrong_argument_kind",
        Box::new(|p: &Path| {
            let mut e = base.clone();
            edit_model(&mut e, |j| nodes(j)[0]["inputs"][1]["arg"] = serde_json::json!({"as_string": "sideways"}));
            write_zip(p, &e)
        }),
    ));

    // Complex values are computed by the ops the import rewrites only.
    let complex2 = read_entries(&testdata().join("cpu/complex_ops.pt2"));
    cases.push((
        "complex_unsupported_op",
        Box::new(move |p: &Path| {
            let mut e = complex2.clone();
            edit_model(&mut e, |j| {
                let exp = nodes(j).iter_mut().find(|n| n["target"] == "torch.ops.aten.exp.default").unwrap();
                exp["target"] = "torch.ops.aten.sin.default".into();
            });
            write_zip(p, &e)
        }),
    ));

    // A runtime assertion the import cannot prove is refused: `lengths.max().item() <= 7` where
    // a length counts 8 tokens.
    let asserts = read_entries(&testdata().join("import/asserts.pt2"));
    cases.push((
        "unprovable_assert",
        Box::new(move |p: &Path| {
            let mut e = asserts.clone();
            edit_model(&mut e, |j| {
                let le = nodes(j).iter_mut().find(|n| n["target"] == "_operator.le").unwrap();
                le["inputs"][1]["arg"] = serde_json::json!({"as_int": 7});
            });
            write_zip(p, &e)
        }),
    ));

    // A tensor assertion (`_assert_async.msg`) the import cannot prove is refused: one_hot's
    // `argmax < 3` over 4 classes.
    let async_asserts = read_entries(&testdata().join("import/async_asserts.pt2"));
    cases.push((
        "unprovable_async_assert",
        Box::new(move |p: &Path| {
            let mut e = async_asserts.clone();
            edit_model(&mut e, |j| {
                let lt = nodes(j).iter_mut().find(|n| n["target"] == "torch.ops.aten.lt.Scalar").unwrap();
                lt["inputs"][1]["arg"] = serde_json::json!({"as_int": 3});
            });
            write_zip(p, &e)
        }),
    ));

    for (name, make) in &cases {
        let file = dir.join(format!("{name}.pt2"));
        make(&file);
        check(name, &file, &dir);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bare_model_json_is_read_and_checked() {
    let dir = std::env::temp_dir().join(format!("ember-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = read_entries(&testdata().join("models/mlp.pt2"));
    let json = &e.iter().find(|(n, _)| n.ends_with("models/model.json")).unwrap().1;
    std::fs::write(dir.join("model.json"), json).unwrap();
    let ok = ember(&dir, &["import", "model.json"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let from_archive = ember(&testdata(), &["import", "models/mlp.pt2"]);
    assert_eq!(ok.stdout, from_archive.stdout, "a bare model.json imports like its archive");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reserved_commands_answer_clearly() {
    let dir = std::env::temp_dir().join(format!("ember-art-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("manifest.json"), r#"{"format_version": "9.0", "target": "cpu"}"#).unwrap();
    let out = ember(&dir, &["run", ".", "--inputs", "in.npz", "--outputs", "out.npz"]);
    assert_eq!(out.code, 2);
    insta::assert_snapshot!("run_unknown_format_major", out.render());
    std::fs::write(dir.join("manifest.json"), r#"{"format_version": "2.0", "target": "trainium"}"#).unwrap();
    let out = ember(&dir, &["run", ".", "--inputs", "in.npz", "--outputs", "out.npz"]);
    assert_eq!(out.code, 2);
    insta::assert_snapshot!("run_trainium_without_module", out.render());
    std::fs::remove_dir_all(&dir).unwrap();
}
