//! Inputs too big to hold are refused by size, not by running out of memory: a samples
//! line over `--max-line-bytes` is one bad line (the rest are decided), a catalog over
//! its bound is an error, and a task ID used twice is warned about.

use std::path::Path;
use std::process::Command;

use crate::eval::{plangate, seed_catalog};
use crate::exit;

const CATALOG: &str = r#"{"tools":[{"name":"echo","deterministic":true,"verified":true}]}"#;

fn good(id: &str) -> String {
    let call = r#"{"calls":[{"tool":"echo","arguments":{"q":1},"result":{"q":1}}]}"#;
    format!(
        r#"{{"task_id":"{id}","samples":[{}]}}"#,
        [call; 5].join(",")
    )
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A 1 GiB line with no newline (a sparse file: no disk used) between good lines is one
/// bad line, under an address-space limit that reading it whole would break.
#[test]
fn a_line_without_end_is_skipped_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).expect("catalog");
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, good("a") + "\n").expect("samples");
    let f = std::fs::OpenOptions::new()
        .append(true)
        .open(&samples)
        .expect("open");
    f.set_len(1 << 30).expect("a sparse 1 GiB tail");
    drop(f);
    let bin = env!("CARGO_BIN_EXE_plangate");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 900000 && exec '{bin}' score --catalog '{}' --samples '{}' --jobs 1",
            s(&catalog),
            s(&samples)
        ))
        .output()
        .expect("sh runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::USAGE), "{stderr}");
    assert!(
        stderr.contains("samples.jsonl:2: the line is longer than 67108864 bytes"),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 lines: 1 accepted, 0 rejected, 0 deferred, 1 skipped"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 2, "a record per line: {stdout}");
}

#[test]
fn eval_skips_a_line_over_the_limit_and_decides_the_rest() {
    let dir = tempfile::tempdir().expect("temp dir");
    let samples = dir.path().join("samples.jsonl");
    let fine = r#"{"task_id":"t1","samples":[{"calls":[{"tool":"get_weather","arguments":{"city":"Paris"}}]}]}"#;
    let long = format!(
        r#"{{"task_id":"t2","samples":[{{"calls":[{{"tool":"get_weather","arguments":{{"city":"{}"}}}}]}}]}}"#,
        "x".repeat(500)
    );
    std::fs::write(&samples, format!("{fine}\n{long}\n{fine}\n")).expect("samples");
    let run = plangate(&[
        "eval",
        "--catalog",
        s(&seed_catalog()),
        "--samples",
        s(&samples),
        "--max-line-bytes",
        "300",
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("samples.jsonl:2: the line is longer than 300 bytes"),
        "{}",
        run.stderr
    );
    let records = run.lines();
    assert_eq!(records.len(), 3, "{}", run.stdout);
    assert_eq!(records[1]["line"], 2);
    assert_eq!(records[0]["task_id"], "t1");
    // Line 3 repeats line 1's ID: both are decided, with a warning.
    assert!(
        run.stderr
            .contains("samples.jsonl:3: task_id \"t1\" was already used on line 1"),
        "{}",
        run.stderr
    );
    let zero = plangate(&[
        "eval",
        "--catalog",
        s(&seed_catalog()),
        "--samples",
        s(&samples),
        "--max-line-bytes",
        "0",
    ]);
    assert_eq!(zero.code, exit::USAGE, "{}", zero.stderr);
    assert!(zero.stderr.contains("--max-line-bytes"), "{}", zero.stderr);
}

#[test]
fn a_catalog_without_end_is_refused_by_size() {
    let run = plangate(&["score", "--catalog", "/dev/zero", "--samples", "/dev/null"]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("failed to read catalog /dev/zero: it is larger than 256 MiB"),
        "{}",
        run.stderr
    );
}

#[test]
fn repeated_task_ids_are_warned_about_and_counted_past_twenty() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).expect("catalog");
    let samples = dir.path().join("samples.jsonl");
    let text: String = (0..30).map(|_| good("same") + "\n").collect();
    std::fs::write(&samples, text).expect("samples");
    let run = plangate(&["score", "--catalog", s(&catalog), "--samples", s(&samples)]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert_eq!(run.lines().len(), 30, "every line is decided");
    let warned = run
        .stderr
        .lines()
        .filter(|l| l.contains("was already used on line 1"))
        .count();
    assert_eq!(warned, 20, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("29 lines repeat an earlier task_id (20 shown above)"),
        "{}",
        run.stderr
    );
}
