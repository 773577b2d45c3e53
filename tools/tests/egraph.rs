//! The e-graph optimizer end to end: `ember compile --report` explains every bundled model for
//! every target's cost model, deterministically; the GPT-2 block's CPU report is a snapshot.

use super::*;

#[test]
fn fusion_report_for_every_model_and_target() {
    let dir = std::env::temp_dir().join(format!("ember-report-{}", std::process::id()));
    for (name, p) in bundled_models() {
        for target in ["cpu", "tpu", "trainium"] {
            let out = dir.join(format!("{name}-{target}"));
            let r = ember(
                &repo(),
                &["compile", p.to_str().unwrap(), "--target", target, "-o", out.to_str().unwrap(), "--report"],
            );
            assert_eq!(r.code, 0, "{name} {target}: {}", r.stderr);
            let md = std::fs::read_to_string(out.join("report/fusion.md")).unwrap();
            assert!(md.contains(&format!("for {target}")) && md.contains("| k0 |"), "{name} {target}: {md}");
            let dot = std::fs::read_to_string(out.join("report/fusion.dot")).unwrap();
            assert!(
                dot.starts_with("digraph fusion {") && (dot.contains("k0 ->") || dot.contains("-> k0")),
                "{name}: {dot}"
            );
            if name == "gpt2_block" && target == "cpu" {
                // Same input, same report (and its picture source).
                let again = dir.join("again");
                ember(
                    &repo(),
                    &["compile", p.to_str().unwrap(), "--target", target, "-o", again.to_str().unwrap(), "--report"],
                );
                assert_eq!(std::fs::read(again.join("report/fusion.md")).unwrap(), md.as_bytes());
                assert_eq!(std::fs::read(again.join("report/fusion.dot")).unwrap(), dot.as_bytes());
                insta::assert_snapshot!("gpt2_block_cpu_fusion_report", md);
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
