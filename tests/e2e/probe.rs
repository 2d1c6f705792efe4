//! `plangate probe` end to end: the tool author's check of `deterministic`
//! declarations over the seed world's real tools, across runs and epochs.

use serde_json::Value;

use crate::eval::{catalog_copy, plangate, seed_catalog};
use crate::exit;

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
fn the_seed_worlds_honest_declarations_hold_and_its_live_clock_is_a_contradiction() {
    let catalog = seed_catalog();
    let run = plangate(&["probe".as_ref(), "--catalog".as_ref(), catalog.as_os_str()]);
    assert_eq!(
        run.code,
        exit::REJECT,
        "resolve_user is contradicted: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("not verified: 1 contradicted by the catalog (live clock or randomness)"),
        "{}",
        run.stderr
    );
    let s = statuses(&run.stdout);
    assert_eq!(s.len(), 12);
    for (name, t) in &s {
        let want = match (name.as_str(), t["declared_deterministic"] == true) {
            // Declared deterministic on the host's clock: false without running.
            ("resolve_user", _) => "contradiction",
            (_, true) => "verified",
            (_, false) => "not_declared",
        };
        assert_eq!(t["status"], want, "{name}: {t}");
    }
    let findings = |name: &str| s[name]["findings"].to_string();
    assert!(
        findings("resolve_user").contains("clock"),
        "{}",
        findings("resolve_user")
    );
    assert!(
        findings("search_index").contains("live mount /index"),
        "a verdict that holds only while the live source stands still says so"
    );
    // The other tools are still probed beside the contradiction.
    assert_eq!(s["get_user"]["status"], "verified");
}

#[test]
fn live_randomness_declared_deterministic_fails_before_running() {
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
    ]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let s = statuses(&run.stdout);
    assert_eq!(s.keys().collect::<Vec<_>>(), ["get_user", "random_sample"]);
    assert_eq!(s["get_user"]["status"], "verified");
    let r = &s["random_sample"];
    assert_eq!(r["status"], "contradiction", "{r}");
    assert!(
        r["findings"][0]
            .as_str()
            .is_some_and(|f| f.contains("random")),
        "{r}"
    );
    assert_eq!(r["evidence"], serde_json::json!([]), "nothing ran: {r}");
    assert!(run.stderr.contains("CONTRADICTION"), "{}", run.stderr);
}

#[test]
fn pinned_randomness_is_epoch_sensitive_and_the_seed_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = catalog_copy(dir.path(), |tools| {
        let t = tools.get_mut("random_sample").expect("random_sample");
        t["deterministic"] = Value::Bool(true);
        t["random"] = Value::String("pinned".into());
    });
    let run = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--tool".as_ref(),
        "random_sample".as_ref(),
        "--strict".as_ref(),
    ]);
    assert_eq!(
        run.code,
        exit::REJECT,
        "--strict fails epoch-sensitive: {}",
        run.stderr
    );
    let r = &statuses(&run.stdout)["random_sample"];
    assert_eq!(r["status"], "epoch_sensitive", "{r}");
    assert_eq!(r["differs_by"], serde_json::json!(["seed"]), "{r}");
    assert!(
        run.stderr.contains("differs with the seed"),
        "{}",
        run.stderr
    );
}

#[test]
fn probe_arguments_that_break_the_schema_or_only_err_are_called_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = catalog_copy(dir.path(), |tools| {
        tools.get_mut("get_user").expect("get_user")["probe"] =
            serde_json::json!([{"user_id": 42}]);
        tools.get_mut("get_order").expect("get_order")["probe"] =
            serde_json::json!([{"order_id": "o_nope"}]);
    });
    let run = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--tool".as_ref(),
        "get_user".as_ref(),
        "--tool".as_ref(),
        "get_order".as_ref(),
    ]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let s = statuses(&run.stdout);
    let u = &s["get_user"];
    assert_eq!(u["status"], "invalid_probe_arguments", "{u}");
    assert!(
        u["findings"][0]
            .as_str()
            .is_some_and(|f| f.contains("user_id")),
        "{u}"
    );
    // A valid argument the tool answers with an error only checks the error path.
    let o = &s["get_order"];
    assert_eq!(o["status"], "verified", "{o}");
    assert!(
        o["findings"][0]
            .as_str()
            .is_some_and(|f| f.contains("every probe call ended in an error")),
        "{o}"
    );
}

/// `probe --strict` of a test guest declared deterministic as tool `price`, probed with
/// `{}`: the run, and the tool's report.
fn strict_probe_of(guest: &str) -> (crate::eval::Run, Value) {
    crate::tools::build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let module = crate::tools::repo().join(format!(
        "sandbox-tools/target/wasm32-wasip1/release/{guest}.wasm"
    ));
    let catalog = dir.path().join("catalog.json");
    let doc = serde_json::json!({"tools": [{
        "name": "price", "module": module, "deterministic": true, "probe": [{}],
    }]});
    std::fs::write(&catalog, doc.to_string()).expect("catalog");
    let run = plangate(&[
        "probe".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--strict".as_ref(),
    ]);
    let report = statuses(&run.stdout)["price"].clone();
    (run, report)
}

#[test]
fn an_hour_of_day_price_shows_in_the_second_epoch() {
    let (run, r) = strict_probe_of("hourly");
    assert_eq!(run.code, exit::REJECT, "--strict fails it: {}", run.stderr);
    assert_eq!(r["status"], "epoch_sensitive", "{r}");
    assert_eq!(r["differs_by"], serde_json::json!(["instant"]), "{r}");
}

/// A business-hours price agrees at epoch 0 (a Wednesday midnight) and epoch 1 (a
/// Saturday afternoon): only the calendar classes, a weekday in working hours among
/// them, catch it.
#[test]
fn a_working_hours_price_is_caught_by_the_calendar_classes() {
    let (run, r) = strict_probe_of("business_hours");
    assert_eq!(run.code, exit::REJECT, "--strict fails it: {}", run.stderr);
    assert_eq!(r["status"], "epoch_sensitive", "{r}");
    assert_eq!(
        r["differs_by"],
        serde_json::json!(["instant (a weekday in working hours)"]),
        "{r}"
    );
    assert!(
        run.stderr.contains("a weekday in working hours"),
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
    assert_eq!(
        two.code,
        exit::OK,
        "stable within an epoch holds: {}",
        two.stderr
    );
    let t = &statuses(&two.stdout)["get_current_time"];
    assert_eq!(t["status"], "epoch_sensitive", "{t}");
    assert_eq!(t["evidence"][0]["kind"], "epoch_sensitive");
    assert_eq!(t["differs_by"], serde_json::json!(["instant"]), "{t}");
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
    assert_eq!(strict.code, exit::REJECT, "{}", strict.stderr);
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
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("no_such_tool"));
}

#[test]
fn a_hash_order_shows_with_two_keys_and_the_seed_is_named() {
    crate::tools::build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let module =
        crate::tools::repo().join("sandbox-tools/target/wasm32-wasip1/release/hashorder.wasm");
    let probe_with = |probe: Value| {
        let catalog = dir.path().join("catalog.json");
        let doc = serde_json::json!({"tools": [{
            "name": "keys", "module": module, "deterministic": true, "probe": probe,
        }]});
        std::fs::write(&catalog, doc.to_string()).expect("catalog");
        plangate(&[
            "probe".as_ref(),
            "--catalog".as_ref(),
            catalog.as_os_str(),
            "--strict".as_ref(),
        ])
    };
    // One key: one order, whatever the seed. The probe cannot see it.
    let one = probe_with(serde_json::json!([{"a": 1}]));
    assert_eq!(one.code, exit::OK, "{}", one.stderr);
    assert_eq!(statuses(&one.stdout)["keys"]["status"], "verified");
    // Several keys: the second epoch's seed reorders them.
    let many = probe_with(serde_json::json!([{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}]));
    assert_eq!(many.code, exit::REJECT, "{}", many.stderr);
    let k = &statuses(&many.stdout)["keys"];
    assert_eq!(k["status"], "epoch_sensitive", "{k}");
    assert_eq!(k["differs_by"], serde_json::json!(["seed"]), "{k}");
}

/// The files under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A pinned mount the host changes while the probe runs shows in the next epoch's
/// snapshot: the finding names the mount, not the tool's clock or seed.
#[test]
fn a_pinned_mount_changed_on_the_host_is_named_not_blamed_on_the_tool() {
    crate::tools::build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    let file = data.join("policy.md");
    let original = "refunds within 30 days\n".repeat(200);
    std::fs::write(&file, &original).expect("data file");
    let module = crate::tools::world()
        .join("../../sandbox-tools/target/wasm32-wasip1/release/read_file.wasm");
    let catalog = dir.path().join("catalog.json");
    let doc = serde_json::json!({"tools": [{
        "name": "read_file", "module": module, "deterministic": true,
        "probe": [{"path": "/world/policy.md"}],
        "mounts": [{"host": data, "guest": "/world"}],
    }]});
    std::fs::write(&catalog, doc.to_string()).expect("catalog");
    // The epochs' snapshots land in a temp dir of the test's own, where a thread waits
    // for epoch 0's copy of the file to be whole, then changes the host's.
    let snaps = dir.path().join("snaps");
    std::fs::create_dir(&snaps).expect("snaps dir");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args([
            "probe",
            "--catalog",
            catalog.to_str().expect("utf-8"),
            "--runs",
            "150",
        ])
        .env("TMPDIR", &snaps)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("plangate runs");
    let started = std::time::Instant::now();
    loop {
        let copied = files_under(&snaps).into_iter().any(|p| {
            p.file_name().is_some_and(|n| n == "policy.md")
                && std::fs::metadata(&p).is_ok_and(|m| m.len() == original.len() as u64)
        });
        if copied {
            break;
        }
        assert!(
            started.elapsed().as_secs() < 60,
            "epoch 0 never snapshotted the mount"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::fs::write(&file, "refunds within 14 days\n").expect("the host changes the file");
    let out = child.wait_with_output().expect("plangate ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = &statuses(&stdout)["read_file"];
    assert_eq!(r["status"], "epoch_sensitive", "{r}");
    assert_eq!(
        r["differs_by"],
        serde_json::json!(["mount /world (changed on the host between the epochs)"]),
        "the tool's clock and seed are not blamed: {r}"
    );
}
