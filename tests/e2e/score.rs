//! `plangate score` on the README's example: each task's verdict and reason, the exit
//! code, and the naive scorer compared in the summary (docs/design.md, "Outputs").

use std::collections::BTreeMap;
use std::process::Command;

use crate::exit;
use crate::tools::repo;

/// `plangate score` over the README example's catalog, run from the checkout.
fn score_output(samples: impl AsRef<std::ffi::OsStr>, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args([
            "score",
            "--catalog",
            "examples/score/catalog.json",
            "--samples",
        ])
        .arg(samples)
        .args(extra)
        .output()
        .expect("plangate runs")
}

fn score(extra: &[&str], samples: &str) -> (i32, Vec<serde_json::Value>, String) {
    let out = score_output(samples, extra);
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        out.status.code().unwrap_or(-1),
        lines,
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn the_readme_example_decides_as_documented() {
    let (code, lines, stderr) = score(&[], "examples/score/samples.jsonl");
    assert_eq!(code, exit::REJECT, "a reject exits 1: {stderr}");
    let got: BTreeMap<&str, (&str, &str)> = lines
        .iter()
        .map(|d| {
            (
                d["task_id"].as_str().unwrap(),
                (
                    d["decision"].as_str().unwrap(),
                    d["reasons"][0].as_str().unwrap(),
                ),
            )
        })
        .collect();
    let want: BTreeMap<&str, (&str, &str)> = [
        ("agree", ("accept", "arguments_agree")),
        ("fabricated-paths", ("reject", "fabricated_arguments")),
        ("flaky-tool", ("defer", "tool_suspect")),
        ("clock", ("accept", "arguments_agree")),
        ("made-up-tool", ("reject", "unknown_tool")),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    // Labelled tasks bring the naive scorer into the summary on their own.
    assert!(
        stderr.contains("5 tasks (5 labelled): gate rejected 2, 0 of them labelled correct (0.0% false positives); naive scorer rejected 4, 3 of them labelled correct (75.0% false positives)"),
        "{stderr}"
    );
}

#[test]
fn baseline_naive_without_labels_counts_rejections_only() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let unlabelled: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("label");
            v.to_string() + "\n"
        })
        .collect();
    let path = dir.path().join("unlabelled.jsonl");
    std::fs::write(&path, unlabelled).unwrap();
    let (_, _, quiet) = score(&[], path.to_str().unwrap());
    assert!(
        !quiet.contains("naive scorer"),
        "no comparison unless asked: {quiet}"
    );
    let (_, _, stderr) = score(&["--baseline", "naive"], path.to_str().unwrap());
    assert!(
        stderr.contains("5 tasks (0 labelled): gate rejected 2; naive scorer rejected 4"),
        "{stderr}"
    );
}

/// 3,000 lines from the README example with fresh task ids, a bad line and a blank one
/// every 97: more than 4 x jobs chunks of 256 lines, so the pipeline's credits run out
/// and go round.
fn many_lines(dir: &std::path::Path) -> (std::path::PathBuf, Vec<String>) {
    let text = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let tasks: Vec<&str> = text.lines().collect();
    let lines: Vec<String> = (0..3000)
        .map(|i| match i % 97 {
            13 => "{\"task_id\": \"broken\", \"samples\": [".to_string(),
            41 => String::new(),
            _ => {
                tasks[i % tasks.len()].replacen("\"task_id\":\"", &format!("\"task_id\":\"{i}-"), 1)
            }
        })
        .collect();
    let samples = dir.join("many.jsonl");
    std::fs::write(&samples, lines.join("\n") + "\n").unwrap();
    (samples, lines)
}

/// A long file through the pipeline: workers may finish out of order, but decisions
/// come out in input order, byte for byte what one worker writes, with every line
/// accounted for (bad and blank ones included).
#[test]
fn many_workers_write_what_one_writes_in_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let (samples, lines) = many_lines(dir.path());
    let run = |jobs: &str| {
        let out = score_output(&samples, &["--jobs", jobs]);
        (
            out.status.code(),
            out.stdout,
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (code1, out1, err1) = run("1");
    let (code3, out3, err3) = run("3");
    assert_eq!(code1, Some(exit::USAGE), "bad lines exit 2: {err1}");
    assert_eq!((code1, &out1), (code3, &out3), "same decisions, same order");
    let summary = |e: &str| {
        e.lines()
            .filter(|l| l.contains(" lines: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(summary(&err1), summary(&err3));
    let blank = lines.iter().filter(|l| l.is_empty()).count();
    let bad = lines.iter().filter(|l| l.contains("broken")).count();
    assert!(
        err3.contains("3000 lines: ")
            && err3.contains(&format!("{bad} skipped (bad input), {blank} blank")),
        "{err3}"
    );
    // One record per non-blank line, in input order: task ids and line numbers rise.
    let records: Vec<serde_json::Value> = String::from_utf8(out3)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3000 - blank);
    let order: Vec<usize> = records
        .iter()
        .map(|r| match r["line"].as_u64() {
            Some(n) => n as usize - 1,
            None => r["task_id"]
                .as_str()
                .unwrap()
                .split('-')
                .next()
                .unwrap()
                .parse()
                .unwrap(),
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "input order kept");
}

/// A full disk stops the run with an error naming the output, instead of hanging the
/// workers or losing the failure.
#[test]
fn a_failed_write_stops_the_run_with_an_error() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    // Megabytes of decisions: the write fails while workers are still deciding.
    let dir = tempfile::tempdir().unwrap();
    let (samples, _) = many_lines(dir.path());
    let out = score_output(&samples, &["--out", "/dev/full", "--jobs", "2"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_ne!(out.status.code(), Some(exit::OK), "{err}");
    assert_ne!(out.status.code(), Some(exit::REJECT), "{err}");
    assert!(err.contains("failed to write decisions"), "{err}");
}

/// One OpenAI conversation per sample: two `get_user` calls in one turn, each answered
/// by its tool message in order, with call ids spelled by `id` (None: no id at all).
fn conversations(id: impl Fn(usize) -> Option<String>) -> String {
    let samples: Vec<serde_json::Value> = (0..6)
        .map(|s| {
            let user = if s == 5 { "u_7" } else { "u_42" };
            let call = |k: usize, who: &str| {
                let mut c = serde_json::json!({"type": "function", "function": {
                    "name": "get_user", "arguments": format!("{{\"user_id\":\"{who}\"}}")}});
                if let Some(i) = id(k) {
                    c["id"] = i.into();
                }
                c
            };
            let answer = |k: usize, name: &str| {
                let mut m = serde_json::json!({"role": "tool", "content": format!("{{\"name\":\"{name}\"}}")});
                if let Some(i) = id(k) {
                    m["tool_call_id"] = i.into();
                }
                m
            };
            serde_json::json!({"messages": [
                {"role": "user", "content": "Who are u_42 and u_1?"},
                {"role": "assistant", "content": null,
                 "tool_calls": [call(0, user), call(1, "u_1")]},
                answer(0, "Ada"),
                answer(1, "Bo"),
            ]})
        })
        .collect();
    serde_json::json!({"task_id": "ids", "samples": samples}).to_string() + "\n"
}

#[test]
fn reused_and_missing_call_ids_decide_as_unique_ones_and_are_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for (name, id) in [
        (
            "unique",
            (|k: usize| Some(format!("call_{k}"))) as fn(usize) -> Option<String>,
        ),
        ("same", |_| Some("call_0".to_string())),
        ("none", |_| None),
    ] {
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, conversations(id).repeat(3)).unwrap();
        let out = score_output(&path, &[]);
        let stderr = String::from_utf8(out.stderr).unwrap();
        runs.push((name, out.stdout, stderr));
    }
    let (_, unique, quiet) = &runs[0];
    assert!(!quiet.contains("call id"), "{quiet}");
    let decided: Vec<serde_json::Value> = String::from_utf8(unique.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(decided.len(), 3);
    assert_eq!(decided[0]["decision"], "accept", "{decided:?}");
    for (name, stdout, stderr) in &runs[1..] {
        assert_eq!(stdout, unique, "{name}: decisions differ from unique ids");
        // One warning for the run, with its counts: 3 tasks of 6 samples of 2 results.
        let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("call id")).collect();
        assert_eq!(warnings.len(), 1, "{name}: {stderr}");
        let want = match *name {
            "same" => {
                "36 tool results found their call by a call id other calls carry too and 0 by position"
            }
            _ => {
                "0 tool results found their call by a call id other calls carry too and 36 by position"
            }
        };
        assert!(warnings[0].contains(want), "{name}: {stderr}");
    }
    // A shard keeps its tasks for merge, and counts their ids all the same.
    let out = dir.path().join("shard.jsonl");
    let shard = score_output(
        dir.path().join("same.jsonl"),
        &["--shard", "1/1", "--out", out.to_str().unwrap()],
    );
    let stderr = String::from_utf8(shard.stderr).unwrap();
    assert!(
        stderr.contains("36 tool results found their call by a call id other calls carry too"),
        "{stderr}"
    );
}
