//! `plangate score` on the README's example: each task's verdict and reason, the exit
//! code, and the naive scorer compared in the summary (design.md section 8).

use std::collections::BTreeMap;
use std::process::Command;

use crate::tools::repo;

fn score(extra: &[&str], samples: &str) -> (i32, Vec<serde_json::Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args([
            "score",
            "--catalog",
            "examples/score/catalog.json",
            "--samples",
            samples,
        ])
        .args(extra)
        .output()
        .expect("plangate runs");
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
    assert_eq!(code, 1, "a reject exits 1: {stderr}");
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
