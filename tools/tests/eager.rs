//! The eager scheduler's compiler half (`compiler/src/eager.rs`): regions of recorded ops become
//! torch-dialect modules, compile once for the CPU, and replay from the plan cache.

use ember_compiler::eager::{unlowered, write_region, Arg, Meta, PlanCache, QueuedOp, Region, RegionError};
use ember_ir::DType;
use ember_targets::cpu::TensorView;

fn meta(shape: &[i64]) -> Meta {
    Meta { shape: shape.to_vec(), dtype: DType::F32 }
}

fn op(target: &str, args: Vec<(&str, Arg)>, outs: Vec<Meta>, line: u32) -> QueuedOp {
    QueuedOp {
        target: target.into(),
        args: args.into_iter().map(|(n, a)| (n.to_string(), a)).collect(),
        outs,
        file: "user.py".into(),
        line,
    }
}

/// relu(x @ w * s + 1.0): inputs x [4, 8], w [8, 3], s (a rank-0 scalar buffer).
fn region(line: u32) -> Region {
    Region {
        inputs: vec![meta(&[4, 8]), meta(&[8, 3]), meta(&[])],
        ops: vec![
            op("aten.mm.default", vec![("self", Arg::Tensor(0)), ("mat2", Arg::Tensor(1))], vec![meta(&[4, 3])], line),
            op(
                "aten.mul.Tensor",
                vec![("self", Arg::Tensor(3)), ("other", Arg::Tensor(2))],
                vec![meta(&[4, 3])],
                line + 1,
            ),
            op(
                "aten.add.Tensor",
                vec![("self", Arg::Tensor(4)), ("other", Arg::Float(1.0))],
                vec![meta(&[4, 3])],
                line + 2,
            ),
            op("aten.relu.default", vec![("self", Arg::Tensor(5))], vec![meta(&[4, 3])], line + 3),
        ],
        outputs: vec![6],
    }
}

#[test]
fn eager_region_imports_with_user_lines() {
    let ep = region(10).to_program().unwrap();
    let m = ember_compiler::frontend::import_program(ep, None, "eager region").unwrap().module;
    insta::assert_snapshot!(m.to_string());
}

#[test]
fn eager_key_ignores_lines_and_keeps_shapes() {
    assert_eq!(region(10).key(), region(99).key());
    let mut other = region(10);
    other.inputs[0] = meta(&[5, 8]);
    other.ops[0].outs[0] = meta(&[5, 3]);
    assert_ne!(region(10).key(), other.key());
    let mut fewer = region(10);
    fewer.outputs = vec![5];
    assert_ne!(region(10).key(), fewer.key());
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn eager_plan_cache_compiles_once_and_replays_bit_identically() {
    let dir = std::env::temp_dir().join(format!("ember-eager-test-{}", std::process::id()));
    let mut cache = PlanCache::new(dir);
    let x: Vec<f32> = (0..32).map(|i| (i as f32 - 13.0) * 0.25).collect();
    let w: Vec<f32> = (0..24).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.125).collect();
    let mut results = Vec::new();
    for (i, s) in [0.5f32, 0.5, -2.0].into_iter().enumerate() {
        let r = region(10 + i as u32);
        let (p, hit) = cache.get(&r).unwrap();
        assert_eq!(hit, i > 0, "the second and third runs replay the first plan");
        let (xb, wb, sb) = (bytes(&x), bytes(&w), bytes(&[s]));
        let inputs = [
            TensorView { dtype: DType::F32, shape: &[4, 8], data: &xb },
            TensorView { dtype: DType::F32, shape: &[8, 3], data: &wb },
            TensorView { dtype: DType::F32, shape: &[], data: &sb },
        ];
        let mut out = vec![0f32; 12];
        // A buffer of the wrong size is refused before anything runs.
        // SAFETY: `out` holds 12 f32; nothing is written when the stated length is refused.
        let e = unsafe { p.run_into(&inputs, &[(out.as_mut_ptr() as *mut u8, 44)]) }.unwrap_err();
        assert!(e.contains("holds 44 bytes") && e.contains("needs 48"), "{e}");
        // SAFETY: `out` holds 12 f32 (the output's size), Vec memory is 16-byte aligned here.
        let shapes = unsafe { p.run_into(&inputs, &[(out.as_mut_ptr() as *mut u8, 48)]) }.unwrap();
        assert_eq!(shapes, vec![vec![4, 3]]);
        // The fixed path (addresses only; the buffer table built at the first call) writes
        // the same bits.
        let mut fixed = vec![0f32; 12];
        // SAFETY: the inputs are laid out as the plan declares; `fixed` holds the output.
        unsafe { p.run_fixed(&[xb.as_ptr(), wb.as_ptr(), sb.as_ptr()], &[fixed.as_mut_ptr() as *mut u8]) }.unwrap();
        assert_eq!(
            fixed.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
            out.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
        );
        // The eager scheduler's entry: the same fixed path, every length checked first.
        let ins = [(xb.as_ptr() as usize, 128), (wb.as_ptr() as usize, 96), (sb.as_ptr() as usize, 4)];
        let mut sized = vec![0f32; 12];
        let o = sized.as_mut_ptr() as usize;
        // SAFETY: as above; nothing runs when a length is refused.
        let e = unsafe { p.run_fixed_sized(&ins[..2], &[(o, 48)]) }.unwrap_err();
        assert!(e.contains("takes 3 inputs"), "{e}");
        let e = unsafe { p.run_fixed_sized(&[ins[0], (ins[1].0, 92), ins[2]], &[(o, 48)]) }.unwrap_err();
        assert!(e.contains("input 1 holds 92 bytes, the program reads 96"), "{e}");
        let e = unsafe { p.run_fixed_sized(&ins, &[(o, 52)]) }.unwrap_err();
        assert!(e.contains("output 0 holds 52 bytes, the program writes 48"), "{e}");
        unsafe { p.run_fixed_sized(&ins, &[(o, 48)]) }.unwrap();
        assert_eq!(
            sized.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
            out.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
        );
        for r in 0..4 {
            for c in 0..3 {
                let dot: f32 = (0..8).map(|k| x[r * 8 + k] * w[k * 3 + c]).sum();
                let want = (dot * s + 1.0).max(0.0);
                assert!(
                    (out[r * 3 + c] - want).abs() <= 1e-5 * (1.0 + want.abs()),
                    "[{r},{c}] {} vs {want}",
                    out[r * 3 + c]
                );
            }
        }
        results.push(out);
    }
    assert_eq!(
        results[0].iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
        results[1].iter().map(|f| f.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!((cache.stats.hits, cache.stats.misses), (2, 1));
}

#[test]
fn eager_ops_without_a_lowering_are_named() {
    let r = Region {
        inputs: vec![meta(&[3, 4])],
        ops: vec![op(
            "aten.nonzero.default",
            vec![("self", Arg::Tensor(0))],
            vec![Meta { shape: vec![12, 2], dtype: DType::I64 }],
            7,
        )],
        outputs: vec![1],
    };
    assert_eq!(unlowered(&r).unwrap(), vec!["aten.nonzero".to_string()]);
    let dir = std::env::temp_dir().join(format!("ember-eager-test-u-{}", std::process::id()));
    match PlanCache::new(dir).get(&r) {
        Err(RegionError::Unsupported(ops)) => assert_eq!(ops, vec!["aten.nonzero".to_string()]),
        other => panic!("expected Unsupported, got {:?}", other.map(|(_, hit)| hit)),
    }
}

#[test]
fn eager_region_writes_a_tpu_artifact() {
    // `ember.eager(target="tpu")`: the region's inputs are the artifact's, in order, no weights.
    let dir = std::env::temp_dir().join(format!("ember-eager-test-tpu-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_region(&region(10), "tpu", &dir).map_err(|e| e.to_string()).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["target"], "tpu");
    assert_eq!(manifest["inputs"].as_array().unwrap().len(), 3);
    assert!(manifest["weights"].as_array().unwrap().is_empty());
    let module = std::fs::read_to_string(dir.join("module.stablehlo.mlir")).unwrap();
    assert!(module.contains("stablehlo.dot_general %arg0, %arg1"), "{module}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn eager_bad_region_is_an_error_not_a_panic() {
    let mut r = region(1);
    r.ops[1].args[0].1 = Arg::Tensor(42);
    let e = r.to_program().err().unwrap();
    assert!(e.contains("value 42"), "{e}");
}

#[test]
fn native_recorder_regions_parse_to_the_same_region() {
    // The native recorder's JSON form of `region`: its key, and so its plan, is the same.
    let text = r#"{"inputs":[[[4,8],"f32"],[[8,3],"f32"],[[],"f32"]],
        "ops":[["aten.mm.default",[["self","t",0],["mat2","t",1]],[[[4,3],"f32"]]],
               ["aten.mul.Tensor",[["self","t",3],["other","t",2]],[[[4,3],"f32"]]],
               ["aten.add.Tensor",[["self","t",4],["other","f",1.0]],[[[4,3],"f32"]]],
               ["aten.relu.default",[["self","t",5]],[[[4,3],"f32"]]]],
        "outputs":[6]}"#;
    let parsed = Region::from_json(text).unwrap();
    assert_eq!(parsed.key(), region(10).key());
    // Every tag, and floats that are not finite.
    let all = r#"{"inputs":[],"ops":[["aten.x.default",[["a","n",null],["b","ts",[0,1]],["c","ots",[0,null]],["d","i",-3],
        ["e","f","-inf"],["f","b",true],["g","is",[1,2]],["h","fs",[0.5,"nan"]],["i","bs",[false]],["j","s","tanh"],
        ["k","dt","bf16"]],[]]],"outputs":[]}"#;
    let args = &Region::from_json(all).unwrap().ops[0].args;
    assert_eq!(args[3].1, Arg::Int(-3));
    assert_eq!(args[4].1, Arg::Float(f64::NEG_INFINITY));
    assert!(matches!(&args[7].1, Arg::Floats(v) if v[0] == 0.5 && v[1].is_nan()));
    assert_eq!(args[10].1, Arg::DType(DType::BF16));
    assert_eq!(args[2].1, Arg::OptTensors(vec![Some(0), None]));
    for bad in [
        r#"{"inputs":[[[2],"q8"]],"ops":[],"outputs":[]}"#,
        r#"{"inputs":[],"ops":[["t",[["a","zz",1]],[]]],"outputs":[]}"#,
        "{",
    ] {
        assert!(Region::from_json(bad).is_err(), "{bad}");
    }
}
