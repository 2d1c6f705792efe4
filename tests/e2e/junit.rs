//! `--junit` as CI reads it: whatever a task id, an argument or a bad line holds, the
//! file is XML 1.0 that a validating reader (Python's expat, through xml.etree) parses.
//! XML 1.0 has no U+FFFE, no U+FFFF and no control characters but tab and newlines.

use std::process::Command;

use serde_json::json;

use crate::eval::{plangate, seed_catalog};
use crate::exit;

/// The test cases' names and failure messages as expat read them, or its error.
fn parse_with_expat(xml: &std::path::Path) -> Result<Vec<String>, String> {
    let script = "import sys, xml.etree.ElementTree as E\n\
                  root = E.parse(sys.argv[1]).getroot()\n\
                  for c in root.iter('testcase'):\n\
                  \x20   f = c.find('failure')\n\
                  \x20   m = f.get('message') if f is not None else ''\n\
                  \x20   print(ascii(c.get('name')), ascii(m))\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(xml)
        .output()
        .expect("python3 runs");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn junit_parses_whatever_the_task_ids_hold() {
    let dir = tempfile::tempdir().unwrap();
    let odd = [
        "\u{FFFE}",
        "\u{FFFF}",
        "\u{1}",
        "\u{1b}[31m",
        "\u{7f}",
        "\u{85}",
    ];
    let mut lines = Vec::new();
    for (i, c) in odd.iter().enumerate() {
        // Each sample invents its own path, with the odd character in it: a reject whose
        // failure message quotes the arguments.
        let samples: Vec<_> = (0..5)
            .map(|k| {
                json!({"calls": [{"tool": "get_user",
                    "arguments": {"user_id": format!("u_{c}{k}")}}]})
            })
            .collect();
        lines.push(json!({"task_id": format!("t{i}-{c}-end"), "samples": samples}).to_string());
    }
    // A line that is not a task, its id kept for its error case.
    lines.push(json!({"task_id": "bad-\u{FFFF}", "samples": 7}).to_string());
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let junit = dir.path().join("junit.xml");
    let run = plangate(&[
        "eval".as_ref(),
        "--catalog".as_ref(),
        seed_catalog().as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
        "--junit".as_ref(),
        junit.as_os_str(),
    ]);
    assert_eq!(run.code, exit::USAGE, "a bad line exits 2: {}", run.stderr);
    let cases = parse_with_expat(&junit).unwrap_or_else(|e| {
        panic!(
            "the JUnit file does not parse: {e}\n{}",
            std::fs::read_to_string(&junit).unwrap()
        )
    });
    assert_eq!(cases.len(), odd.len() + 1, "{cases:?}");
    // Every task keeps its place and its id's readable parts; the characters XML cannot
    // hold are U+FFFD.
    assert!(cases[0].starts_with("'t0-\\ufffd-end'"), "{cases:?}");
    assert!(cases[1].starts_with("'t1-\\ufffd-end'"), "{cases:?}");
    assert!(cases[6].starts_with("'bad-\\ufffd'"), "{cases:?}");
    let fffd = cases.iter().filter(|c| c.contains("\\ufffd")).count();
    assert!(fffd >= 3, "{cases:?}");
}
