//! Ember's result-type rules against torch's meta kernels: `testdata/shape_infer/cases.json`
//! (written by its `generate.py` from seeded random shapes, dtypes and attributes per op) gives
//! torch's result types for each call, or that torch rejects it. Each case's op is parsed with a
//! placeholder result type and its rule asked (`OpView::infer`, as the verifier does). Property
//! tests (proptest) check rules against reference models written here: broadcasting, permute
//! and its inverse, reductions, view.

use super::*;
use ember_ir::dialect::OpView;

fn tensor(dtype: &str, dims: &[serde_json::Value]) -> String {
    let mut s = String::from("tensor<");
    for d in dims {
        s.push_str(&format!("{d}x"));
    }
    format!("{s}{dtype}>")
}

fn ty(v: &serde_json::Value) -> String {
    tensor(v[0].as_str().unwrap(), v[1].as_array().unwrap())
}

/// Ember's result types for `op` on operands of the given types (`tensor<2x3xf32>`) and
/// attributes (MLIR text without braces), `n` results: the op is parsed with placeholder result
/// types and its rule asked.
fn infer(op: &str, operands: &[String], attrs: &str, n: usize) -> Result<Vec<String>, String> {
    let placeholder = vec![operands[0].clone(); n];
    let args: Vec<String> = operands.iter().enumerate().map(|(i, t)| format!("%a{i}: {t}")).collect();
    let names: Vec<String> = (0..operands.len()).map(|i| format!("%a{i}")).collect();
    let attrs = if attrs.is_empty() { String::new() } else { format!(" {{{attrs}}}") };
    let results: Vec<String> = (0..n).map(|i| format!("%r{i}")).collect();
    let module = format!(
        "func.func @main({}) -> ({}) {{\n  {} = \"{op}\"({}){attrs} : ({}) -> ({})\n  return {} : {}\n}}\n",
        args.join(", "),
        placeholder.join(", "),
        results.join(", "),
        names.join(", "),
        operands.join(", "),
        placeholder.join(", "),
        results.join(", "),
        placeholder.join(", ")
    );
    let m = ember_ir::parse_module(&module).unwrap_or_else(|e| panic!("{module}: {e}"));
    let mut found = None;
    m.walk(m.top, &mut |o| {
        if m.op(o).name == op {
            found = Some(o);
        }
    });
    let view = OpView::new(&m, found.unwrap()).unwrap_or_else(|| panic!("`{op}` is not an Ember op"));
    view.infer().map(|ts| ts.iter().map(|t| t.to_string()).collect()).map_err(|e| e.0)
}

#[test]
fn result_types_match_torch_meta_kernels() {
    let text = std::fs::read_to_string(testdata().join("shape_infer/cases.json")).unwrap();
    let cases: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
    let mut wrong = Vec::new();
    let (mut ok, mut rejected) = (0, 0);
    for c in &cases {
        let op = c["op"].as_str().unwrap();
        let operands: Vec<String> = c["operands"].as_array().unwrap().iter().map(ty).collect();
        let want: Option<Vec<String>> = c.get("results").map(|r| r.as_array().unwrap().iter().map(ty).collect());
        let attrs = c["attrs"].as_str().unwrap();
        let got = infer(op, &operands, attrs, want.as_ref().map_or(1, |w| w.len()));
        let case = format!("{op}({}) {{{attrs}}}", operands.join(", "));
        match (&want, got) {
            (Some(w), Ok(g)) if *w == g => ok += 1,
            (Some(w), Ok(g)) => wrong.push(format!("{case}: torch gives {w:?}, Ember {g:?}")),
            (Some(w), Err(e)) => wrong.push(format!("{case}: torch gives {w:?}, Ember rejects it: {e}")),
            (None, Err(_)) => rejected += 1,
            (None, Ok(g)) => {
                wrong.push(format!("{case}: torch rejects it ({}), Ember gives {g:?}", c["error"].as_str().unwrap()))
            }
        }
    }
    assert!(wrong.is_empty(), "{} of {} cases differ from torch:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
    assert!(ok > 800 && rejected > 40, "{ok} agreeing results and {rejected} rejections: the table is too small");
}

fn shape_text(dims: &[i64], dtype: &str) -> String {
    tensor(dtype, &dims.iter().map(|&d| serde_json::Value::from(d)).collect::<Vec<_>>())
}

fn arr(v: &[i64]) -> String {
    if v.is_empty() {
        "array<i64>".into()
    } else {
        format!("array<i64: {}>", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
    }
}

/// numpy's broadcasting, written out: the reference the rule is checked against.
fn broadcast_ref(a: &[i64], b: &[i64]) -> Option<Vec<i64>> {
    let n = a.len().max(b.len());
    let at = |s: &[i64], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Elementwise binary ops broadcast as numpy does, in either operand order, and reject what
    /// does not broadcast.
    #[test]
    fn binary_ops_broadcast(a in prop::collection::vec(1i64..4, 0..5), b in prop::collection::vec(1i64..4, 0..5)) {
        let (ta, tb) = (shape_text(&a, "f32"), shape_text(&b, "f32"));
        for (x, y) in [(&ta, &tb), (&tb, &ta)] {
            let got = infer("torch.aten.mul.Tensor", &[x.clone(), y.clone()], "", 1);
            match broadcast_ref(&a, &b) {
                Some(want) => prop_assert_eq!(got, Ok(vec![shape_text(&want, "f32")])),
                None => prop_assert!(got.is_err(), "{a:?} and {b:?} do not broadcast, Ember gives {got:?}"),
            }
        }
    }

    /// permute moves dims as the permutation says; the inverse permutation restores the shape.
    #[test]
    fn permute_and_its_inverse(s in prop::collection::vec(1i64..6, 1..6), seed in any::<u64>()) {
        let mut p: Vec<usize> = (0..s.len()).collect();
        let mut x = seed;
        for i in (1..p.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            p.swap(i, (x >> 33) as usize % (i + 1));
        }
        let pi: Vec<i64> = p.iter().map(|&d| d as i64).collect();
        let out = infer("torch.aten.permute", &[shape_text(&s, "i64")], &format!("dims = {}", arr(&pi)), 1).unwrap();
        let moved: Vec<i64> = p.iter().map(|&d| s[d]).collect();
        prop_assert_eq!(&out, &vec![shape_text(&moved, "i64")]);
        let mut inv = vec![0i64; p.len()];
        for (i, &d) in p.iter().enumerate() {
            inv[d] = i as i64;
        }
        let back = infer("torch.aten.permute", &out, &format!("dims = {}", arr(&inv)), 1).unwrap();
        prop_assert_eq!(back, vec![shape_text(&s, "i64")]);
    }

    /// A reduction over a set of dims (any order, negative or not) drops them, or keeps them as 1.
    #[test]
    fn reductions_drop_or_keep_their_dims(s in prop::collection::vec(1i64..6, 1..6), pick in any::<u32>(), neg in any::<u32>(), keep in any::<bool>()) {
        let n = s.len();
        let dims: Vec<usize> = (0..n).filter(|i| pick >> i & 1 == 1).collect();
        prop_assume!(!dims.is_empty());
        let written: Vec<i64> = dims.iter().rev().map(|&d| if neg >> d & 1 == 1 { d as i64 - n as i64 } else { d as i64 }).collect();
        let attrs = format!("dim = {}, keepdim = {keep}", arr(&written));
        let got = infer("torch.aten.sum.dim_IntList", &[shape_text(&s, "f32")], &attrs, 1);
        let want: Vec<i64> = (0..n).filter_map(|i| if dims.contains(&i) { keep.then_some(1) } else { Some(s[i]) }).collect();
        prop_assert_eq!(got, Ok(vec![shape_text(&want, "f32")]));
    }

    /// view to any factorization of the element count, one factor possibly -1.
    #[test]
    fn view_to_any_factorization(s in prop::collection::vec(1i64..5, 0..5), split in prop::collection::vec(any::<bool>(), 8), wild in any::<prop::sample::Index>()) {
        let mut rest: i64 = s.iter().product();
        let mut out = Vec::new();
        for (i, f) in [2i64, 3, 2, 3, 2, 3, 2, 3].iter().enumerate() {
            if split[i] && rest % f == 0 {
                out.push(*f);
                rest /= f;
            }
        }
        out.push(rest);
        let mut written = out.clone();
        written[wild.index(out.len())] = -1;
        let got = infer("torch.aten.view", &[shape_text(&s, "f32")], &format!("size = {}", arr(&written)), 1);
        prop_assert_eq!(got, Ok(vec![shape_text(&out, "f32")]));
    }
}
