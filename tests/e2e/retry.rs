//! The defer path end to end: tasks deferred because a live source changed are executed
//! again in a fresh epoch with every source pinned, and decided there (a fabrication is
//! rejected, agreement accepted), with the first deferral kept in the record; a tool the
//! retry epoch still quarantines keeps its tasks deferred.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::eval::plangate;
use crate::exit;
use crate::tools::{live_copy, world, writer};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The seed world's catalog with module paths made absolute and every live mount
/// pointed at `live` (a private copy a test may change).
fn catalog_over(live: &Path, dir: &Path) -> PathBuf {
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(world().join("catalog.json")).expect("catalog"))
            .expect("catalog is JSON");
    for t in doc["tools"].as_array_mut().expect("tools") {
        let module = world().join(t["module"].as_str().expect("module"));
        t["module"] = json!(module);
        for m in t["mounts"].as_array_mut().into_iter().flatten() {
            let host = m["host"].as_str().expect("host").to_string();
            m["host"] = match host.strip_prefix("live/") {
                Some(rest) => json!(live.join(rest)),
                None => json!(world().join(&host)),
            };
        }
    }
    let path = dir.join("catalog.json");
    std::fs::write(&path, doc.to_string()).expect("write catalog");
    path
}

fn task(id: &str, calls: impl Fn(usize) -> Value) -> String {
    let samples: Vec<Value> = (0..10).map(|i| json!({"calls": calls(i)})).collect();
    json!({"task_id": id, "samples": samples}).to_string()
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("decisions")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect()
}

#[test]
fn a_changed_live_source_is_retried_in_a_pinned_epoch_and_decided_there() {
    let dir = tempfile::tempdir().expect("temp dir");
    let live = live_copy();
    let catalog = catalog_over(live.path(), dir.path());
    let samples = dir.path().join("samples.jsonl");
    let lines = [
        task(
            "agree",
            |_| json!([{"tool": "search_index", "arguments": {"query": "refund policy"}}]),
        ),
        task(
            "fabricated",
            |i| json!([{"tool": "search_index", "arguments": {"query": format!("topic {i}")}}]),
        ),
        // Step 0 on get_user (quarantined by an earlier run, below), fabricated order ids
        // after it: the quarantined tool could have moved them, so nothing is rejected.
        task("after_quarantined", |i| {
            json!([
                {"tool": "get_user", "arguments": {"user_id": "u_0001"}},
                {"tool": "get_order", "arguments": {"order_id": format!("o_{}", 1001 + i)}},
            ])
        }),
    ];
    std::fs::write(&samples, lines.join("\n") + "\n").expect("samples");

    // The epoch as it was; then the index changes, as it would under a running service.
    let manifest = dir.path().join("epoch.json");
    let health = dir.path().join("health.json");
    let first = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--write-epoch",
        s(&manifest),
        "--tool-health",
        s(&health),
    ]);
    assert!(
        matches!(first.code, exit::OK | exit::REJECT),
        "{}",
        first.stderr
    );
    writer(live.path(), &["append-segment"]);
    // An earlier run's quarantine of get_user: the one quarantine a retry cannot lift
    // (in a fully pinned epoch nothing drifts, so nothing is newly quarantined).
    let mut h: Value =
        serde_json::from_slice(&std::fs::read(&health).expect("health")).expect("health is JSON");
    for t in h["tools"].as_array_mut().expect("tools") {
        if t["name"] == "get_user" {
            t["quarantined"] = json!(true);
        }
    }
    let quarantine = dir.path().join("quarantine.json");
    std::fs::write(&quarantine, h.to_string()).expect("quarantine file");

    let out = dir.path().join("decisions.jsonl");
    let summary = dir.path().join("summary.json");
    let junit = dir.path().join("junit.xml");
    let run = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--epoch",
        s(&manifest),
        "--quarantine",
        s(&quarantine),
        "--retry-deferred",
        "--out",
        s(&out),
        "--summary-json",
        s(&summary),
        "--junit",
        s(&junit),
    ]);
    assert_eq!(
        run.code,
        exit::REJECT,
        "the fabrication is rejected: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("defer path: 3 deferred tasks"),
        "{}",
        run.stderr
    );
    let rec = records(&out);
    let first_epoch = rec[0]["history"][0]["epoch_id"].as_str().expect("history");
    for (r, verdict) in rec.iter().zip(["accept", "reject", "defer"]) {
        assert_eq!(r["decision"], verdict, "{r}");
        let history = r["history"]
            .as_array()
            .expect("a retried task keeps its history");
        assert_eq!(history.len(), 1, "{r}");
        assert_eq!(history[0]["decision"], "defer");
        assert_eq!(history[0]["epoch_id"], first_epoch);
        assert_ne!(r["epoch_id"], first_epoch, "decided in the retry epoch");
    }
    assert!(
        rec[0]["history"][0]["reasons"]
            .as_array()
            .expect("reasons")
            .contains(&json!("epoch_not_fixed")),
        "{}",
        rec[0]
    );
    assert_eq!(rec[2]["history"][0]["reasons"], json!(["tool_quarantined"]));
    assert_eq!(rec[2]["reasons"], json!(["tool_quarantined"]), "{}", rec[2]);

    let sum: Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("JSON");
    let retry = &sum["retry"];
    assert_eq!(retry["tasks_retried"], 3, "{retry}");
    assert_eq!(
        retry["resolved"],
        json!({"epoch_not_fixed": {"accept": 1, "reject": 1}, "tool_quarantined": {"defer": 1}}),
        "{retry}"
    );
    assert_eq!(retry["rounds"].as_array().map(Vec::len), Some(1));
    assert!(retry["calls"].as_u64().expect("calls") >= 30, "{retry}");
    // In the pinned retry epoch a task's repeated call runs twice and is then reused:
    // 8 of "agree"'s 10 search_index calls and 8 of the 10 get_user steps; the fabricated
    // queries and order ids are all distinct, so each runs. The first epoch reuses none.
    assert_eq!(retry["reused"], 16, "{retry}");
    assert_eq!(retry["rounds"][0]["reused"], 16, "{retry}");
    assert_eq!(sum["stats"]["calls_executed"], 40, "{}", sum["stats"]);
    assert_eq!(sum["stats"]["calls_reused"], 0, "{}", sum["stats"]);
    assert_eq!(sum["lines"]["reject"], 1);
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert!(
        xml.contains("plangate.retry.resolved.epoch_not_fixed.reject"),
        "{xml}"
    );
    assert!(xml.contains("plangate.history.0"), "{xml}");
    assert!(
        xml.contains(r#"name="plangate.retry.reused" value="16""#),
        "{xml}"
    );

    // Without the flag nothing is retried: all three stay deferred, with no history.
    let plain = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--epoch",
        s(&manifest),
        "--quarantine",
        s(&quarantine),
    ]);
    assert_eq!(plain.code, exit::OK, "{}", plain.stderr);
    for r in plain.lines() {
        assert_eq!(r["decision"], "defer", "{r}");
        assert!(r.get("history").is_none(), "{r}");
    }
}

/// Samples that cannot be read a second time (a FIFO, a pipe) run without the retry,
/// with a warning, rather than losing the run when the retry reads them again.
#[test]
fn samples_that_cannot_be_read_twice_skip_the_retry() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fifo = dir.path().join("samples.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let line = task(
        "agree",
        |_| json!([{"tool": "get_user", "arguments": {"user_id": "u_0001"}}]),
    );
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, line + "\n").expect("feed the FIFO"))
    };
    let run = plangate(&[
        "eval",
        "--catalog",
        s(&world().join("catalog.json")),
        "--samples",
        s(&fifo),
        "--retry-deferred",
    ]);
    writer.join().expect("writer");
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--retry-deferred needs --samples to be a regular file"),
        "{}",
        run.stderr
    );
    assert_eq!(run.lines()[0]["decision"], "accept", "{}", run.stdout);
}

/// Reusing a task's repeated calls in the retry epoch changes no decision: each task the
/// defer path retries is decided exactly as a run that executes every one of its calls in
/// a fully pinned epoch over the same state decides it.
#[test]
fn reused_repeats_decide_as_executing_every_call() {
    let dir = tempfile::tempdir().expect("temp dir");
    let live = live_copy();
    let catalog = catalog_over(live.path(), dir.path());
    let samples = dir.path().join("samples.jsonl");
    // The demo's generator: every tool, chains with `$from`, agreeing and fabricated
    // samples, spelling variants.
    let demo = plangate(&[
        "demo",
        "--world",
        s(&world()),
        "--tasks",
        "160",
        "--seed",
        "5",
        "--no-driver",
        "--retry-deferred",
        "0",
        "--write-samples",
        s(&samples),
    ]);
    assert_eq!(demo.code, exit::OK, "{}", demo.stderr);

    // The first epoch as it was; then every live source changes, so every task that read
    // one is deferred and retried.
    let manifest = dir.path().join("epoch.json");
    let first = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--write-epoch",
        s(&manifest),
    ]);
    assert!(
        matches!(first.code, exit::OK | exit::REJECT),
        "{}",
        first.stderr
    );
    writer(live.path(), &["append-segment"]);
    writer(live.path(), &["reload-config"]);
    writer(live.path(), &["refresh-cache", "50"]);
    let summary = dir.path().join("summary.json");
    let retried = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--epoch",
        s(&manifest),
        "--retry-deferred",
        "--summary-json",
        s(&summary),
    ]);
    assert!(
        matches!(retried.code, exit::OK | exit::REJECT),
        "{}",
        retried.stderr
    );

    // The same state with every source pinned and the retry epoch's seed (the first
    // epoch's plus one), every call executed.
    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&catalog).expect("catalog")).expect("JSON");
    for t in doc["tools"].as_array_mut().expect("tools") {
        t["clock"] = json!("pinned");
        t["random"] = json!("pinned");
        for m in t["mounts"].as_array_mut().into_iter().flatten() {
            m["mode"] = json!("pinned");
        }
    }
    let pinned_catalog = dir.path().join("pinned.json");
    std::fs::write(&pinned_catalog, doc.to_string()).expect("write catalog");
    let pinned = plangate(&[
        "eval",
        "--catalog",
        s(&pinned_catalog),
        "--samples",
        s(&samples),
        "--seed",
        "1",
    ]);
    assert!(
        matches!(pinned.code, exit::OK | exit::REJECT),
        "{}",
        pinned.stderr
    );

    let sum: Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("JSON");
    assert!(
        sum["retry"]["reused"].as_u64() > Some(0),
        "{}",
        sum["retry"]
    );
    let mut compared = 0;
    for (mut r, mut p) in retried.lines().into_iter().zip(pinned.lines()) {
        if r.get("history").is_none() {
            continue;
        }
        for rec in [&mut r, &mut p] {
            let rec = rec.as_object_mut().expect("a record");
            rec.remove("epoch_id");
            rec.remove("history");
        }
        assert_eq!(
            r, p,
            "a retried task decided otherwise than with every call executed"
        );
        compared += 1;
    }
    assert_eq!(compared, sum["retry"]["tasks_retried"], "{}", sum["retry"]);
    assert!(compared > 20, "{compared} tasks retried");
}
