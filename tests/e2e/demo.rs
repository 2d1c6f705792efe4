//! `plangate demo` end to end: on real WASM tools with the world driver changing live
//! state, the naive scorer is fooled, the gate is not, exactly the three mis-declared
//! tools are quarantined, each with evidence, and the defer path settles deferrals.

use std::process::Command;

use crate::tools::{build_tools, repo};

#[test]
fn the_gate_is_not_fooled_where_the_naive_scorer_is() {
    build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("demo.json");
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args(["demo", "--tasks", "1200", "--seed", "3", "--json"])
        .arg(&json)
        .output()
        .expect("plangate demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("false-positive share"), "{stdout}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let f = |path: &str| r.pointer(path).and_then(serde_json::Value::as_f64).unwrap();
    assert_eq!(f("/tasks"), 1200.0);
    // The naive scorer rejects many correct plans; the gate at most 2% of its rejections.
    assert!(f("/naive/false_positive_rate") > 0.3, "{r}");
    assert!(f("/gate/false_positive_rate") <= 0.02, "{r}");
    assert!(f("/gate/hallucinations_caught") > 0.0, "{r}");
    assert_eq!(f("/gate/accepted_hallucinated"), 0.0, "{r}");
    // Consistent fabrications (one invented value in nearly every sample): the seed's
    // rule accepts them, the gate never does, and catches them by referential miss.
    assert!(f("/consistent_fabrications") > 0.0, "{r}");
    assert!(f("/seed_rule/consistent_accepted") > 0.0, "{r}");
    assert_eq!(f("/gate/consistent_accepted"), 0.0, "{r}");
    assert!(
        f("/gate/consistent_caught_by_referential_miss") > 0.0,
        "{r}"
    );
    assert!(f("/seed_rule/false_positive_rate") <= 0.02, "{r}");
    let mut quarantined: Vec<&str> = r["quarantined"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    quarantined.sort();
    assert_eq!(
        quarantined,
        ["read_config", "resolve_user", "search_index"],
        "{r}"
    );
    for tool in quarantined {
        let evidence = r["quarantine_evidence"][tool].as_array().unwrap();
        assert!(!evidence.is_empty(), "{tool} quarantined without evidence");
    }
    assert!(f("/calls") >= 12_000.0, "{r}");
    // The defer path: deferrals of the changed live sources, executed again in a fully
    // pinned epoch, are decided there; nothing drifts in it, so nothing is quarantined.
    assert!(f("/retry/tasks_retried") > 0.0, "{r}");
    assert!(
        f("/gate/hallucinations_caught") > f("/gate_one_epoch/hallucinations_caught"),
        "{r}"
    );
    assert!(f("/gate/deferred") < f("/gate_one_epoch/deferred"), "{r}");
    assert_eq!(
        r["retry"]["rounds"][0]["quarantined"],
        serde_json::json!([]),
        "{r}"
    );
    assert!(f("/retry/resolved/epoch_not_fixed/reject") > 0.0, "{r}");
    // The retry's repeated calls are reused, and its price counts them beside the
    // executed ones against the first epoch's calls; both wall times are from this run.
    assert!(f("/retry/reused") > 0.0, "{r}");
    assert_eq!(
        f("/retry_price/retry_calls"),
        f("/retry/calls") + f("/retry/reused"),
        "{r}"
    );
    assert_eq!(
        f("/retry_price/first_epoch_calls") + f("/retry/calls"),
        f("/calls"),
        "{r}"
    );
    let share = f("/retry_price/retry_calls") / f("/retry_price/first_epoch_calls");
    assert!((f("/retry_price/calls_share") - share).abs() < 1e-9, "{r}");
    let retry_wall = f("/retry_price/retry_wall_s");
    assert!(retry_wall > 0.0 && retry_wall < f("/elapsed_s"), "{r}");
    assert!(stdout.contains("its price:"), "{stdout}");
    assert!(stdout.contains("gate + retry"), "{stdout}");
}
