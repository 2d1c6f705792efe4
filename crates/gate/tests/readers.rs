//! The one-pass reader for native samples lines must read exactly what the general
//! reader does: same task, same error, over every data file we have. `parse_task_line`
//! takes the fast path when it can; `parse_task_line_general` never does.

use std::path::{Path, PathBuf};

use plangate_gate::jcs;
use plangate_gate::json::{Duplicates, parse_with};
use plangate_gate::task::{Observed, parse_task_line, parse_task_line_general};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Both readers agree on `line`; returns whether its results were kept as text (the
/// fast path read it).
fn same_either_way(line: &[u8]) -> bool {
    let fast = parse_task_line(line);
    assert_eq!(
        fast,
        parse_task_line_general(line),
        "{}",
        String::from_utf8_lossy(line)
    );
    fast.is_ok_and(|t| {
        t.samples
            .iter()
            .flat_map(|s| &s.calls)
            .any(|c| matches!(&c.observed, Observed::Result(p) if p.text().is_some()))
    })
}

#[test]
fn case_files_and_eval_lines_read_the_same() {
    let mut fast = 0;
    for entry in std::fs::read_dir(root().join("tests/cases")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            // cases/expect/ holds decisions, not tasks.
            continue;
        }
        let text = std::fs::read(path).unwrap();
        let doc = parse_with(&text, Duplicates::Flag).unwrap();
        if let Some(task) = doc.as_object().and_then(|o| o.get("task")) {
            fast += usize::from(same_either_way(jcs::to_string(task).as_bytes()));
        }
    }
    assert!(
        fast >= 20,
        "the case files are native lines with results: {fast}"
    );
    let eval = root().join("../../tests/e2e/cases/eval");
    for entry in std::fs::read_dir(eval).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in std::fs::read(&path).unwrap().split(|&b| b == b'\n') {
                same_either_way(line);
            }
        }
    }
}

/// Every JSONTestSuite document as a call's result: the fast path checks results
/// without building them, and must refuse and accept exactly what building does.
#[test]
fn json_test_suite_as_results_reads_the_same() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance/json-test-suite/test_parsing");
    let (mut seen, mut fast) = (0, 0);
    for entry in std::fs::read_dir(&dir).expect("JSONTestSuite in tests/conformance") {
        let doc = std::fs::read(entry.unwrap().path()).unwrap();
        let mut line = br#"{"task_id":"t","samples":[{"calls":[{"tool":"a","result":"#.to_vec();
        line.extend_from_slice(&doc);
        line.extend_from_slice(b"}]}]}");
        fast += usize::from(same_either_way(&line));
        seen += 1;
    }
    assert!(seen > 250, "{seen} documents");
    assert!(fast > 80, "{fast} documents read by the fast path");
}
