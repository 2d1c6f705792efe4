//! `plangate probe` end to end: the tool author's check of `deterministic`
//! declarations over the seed world's real tools, across runs and epochs.

use serde_json::Value;

use crate::eval::{catalog_copy, plangate, seed_catalog};

fn statuses(stdout: &str) -> std::collections::BTreeMap<String, Value> {
    let report: Value = serde_json::from_str(stdout).expect("a JSON report");
    report["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_string(), t.clone()))
        .collect()
}

#[test]
fn the_seed_worlds_declarations_hold_when_no_one_writes() {
    let catalog = seed_catalog();
    let run = plangate(&["probe".as_ref(), "--catalog".as_ref(), catalog.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("every deterministic declaration verified"),
        "{}",
        run.stderr
    );
    // --strict holds too: every declared tool is verified.
    let strict = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--strict".as_ref(),
    ]);
    assert_eq!(strict.code, 0, "{}", strict.stderr);
    let s = statuses(&run.stdout);
    assert_eq!(s.len(), 12);
    for (name, t) in &s {
        let want = if t["declared_deterministic"] == true {
            "verified"
        } else {
            "not_declared"
        };
        assert_eq!(t["status"], want, "{name}: {t}");
    }
}

#[test]
fn a_false_declaration_fails_with_the_difference() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = catalog_copy(dir.path(), |tools| {
        tools.get_mut("random_sample").expect("random_sample")["deterministic"] = Value::Bool(true);
    });
    let run = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--tool".as_ref(),
        "random_sample".as_ref(),
        "--tool".as_ref(),
        "get_user".as_ref(),
        "--runs".as_ref(),
        "3".as_ref(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let s = statuses(&run.stdout);
    assert_eq!(s.keys().collect::<Vec<_>>(), ["get_user", "random_sample"]);
    assert_eq!(s["get_user"]["status"], "verified");
    let r = &s["random_sample"];
    assert_eq!(r["status"], "drift", "{r}");
    let e = &r["evidence"][0];
    assert_eq!(e["kind"], "probe_drift");
    assert!(
        e["difference"]["json_path"]
            .as_str()
            .is_some_and(|p| p.starts_with("$.ids")),
        "{e}"
    );
    assert!(run.stderr.contains("DRIFT"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("not verified: 1 drift (the declaration is false)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tool_that_reads_the_epoch_is_epoch_sensitive_not_drifting() {
    let dir = tempfile::tempdir().expect("temp dir");
    // get_current_time under a pinned clock: frozen within an epoch, and each epoch has
    // its own instant.
    let catalog = catalog_copy(dir.path(), |tools| {
        let t = tools.get_mut("get_current_time").expect("get_current_time");
        t["deterministic"] = Value::Bool(true);
        t["clock"] = Value::String("pinned".into());
    });
    let probe = |epochs: &str| {
        plangate(&[
            "probe".as_ref(),
            "--catalog".as_ref(),
            catalog.as_os_str(),
            "--tool".as_ref(),
            "get_current_time".as_ref(),
            "--epochs".as_ref(),
            epochs.as_ref(),
        ])
    };
    let two = probe("2");
    assert_eq!(two.code, 0, "stable within an epoch holds: {}", two.stderr);
    let t = &statuses(&two.stdout)["get_current_time"];
    assert_eq!(t["status"], "epoch_sensitive", "{t}");
    assert_eq!(t["evidence"][0]["kind"], "epoch_sensitive");
    assert!(
        two.stderr
            .contains("not verified: 1 epoch-sensitive, allowed without --strict"),
        "the closing line counts it: {}",
        two.stderr
    );
    // A tool author's CI runs --strict: epoch-sensitive fails it.
    let strict = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--tool".as_ref(),
        "get_current_time".as_ref(),
        "--strict".as_ref(),
    ]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    assert!(
        strict.stderr.contains("not verified: 1 epoch-sensitive\n")
            || strict
                .stderr
                .trim_end()
                .ends_with("not verified: 1 epoch-sensitive"),
        "{}",
        strict.stderr
    );
    let one = probe("1");
    assert_eq!(
        statuses(&one.stdout)["get_current_time"]["status"],
        "verified"
    );
}

#[test]
fn an_unknown_tool_is_a_usage_error() {
    let catalog = seed_catalog();
    let run = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--tool".as_ref(),
        "no_such_tool".as_ref(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no_such_tool"));
}
