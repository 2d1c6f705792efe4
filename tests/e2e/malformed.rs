//! Malformed input through the CLI: every JSONTestSuite `n_` file as a samples file and
//! embedded raw in a call's arguments is refused with `file:line: field: message` and
//! exit 2, never a panic or a hang; every `y_` file parses; a file mixing good and bad
//! lines decides every good task and names every bad line; OpenAI argument strings that
//! are not JSON spoil their sample, not the run; broken catalogs and manifests name the
//! file and the field. Also checks docs/errors.md against crates/cli/src/exit.rs and
//! that each documented exit code comes out where the document says.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::exit;
use crate::hostile::{Run, bounded};
use crate::tools::repo;

const LIMIT: Duration = Duration::from_secs(60);

fn suite() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance/json-test-suite/test_parsing")
}

/// The suite's files whose names start with `prefix`, sorted, with their bytes.
fn files(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(suite())
        .unwrap_or_else(|e| panic!("{}: {e}", suite().display()))
        .map(|e| e.expect("dir entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            (name.starts_with(prefix) && name.ends_with(".json"))
                .then(|| (name, std::fs::read(&p).expect("read suite file")))
        })
        .collect();
    out.sort();
    assert!(
        out.len() > 50,
        "{prefix} files missing from {}",
        suite().display()
    );
    out
}

/// A score catalog: one tool, verified, any object as arguments.
fn score_catalog(dir: &Path) -> PathBuf {
    let p = dir.join("catalog.json");
    let doc = json!({"tools": [{"name": "echo", "deterministic": true, "verified": true,
                               "parameters": {"type": "object"}}]});
    std::fs::write(&p, doc.to_string()).expect("write catalog");
    p
}

fn score(catalog: &Path, samples: &Path, extra: &[&str]) -> Run {
    let mut args = vec![
        "score".to_string(),
        "--catalog".into(),
        catalog.display().to_string(),
        "--samples".into(),
        samples.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    bounded(&args, &[], LIMIT)
}

/// Lines as the CLI counts them: split at `\n`, a last piece without one counted if
/// non-empty; blank means only ASCII whitespace.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

fn stdout_records(run: &Run) -> Vec<Value> {
    String::from_utf8(run.stdout.clone())
        .expect("UTF-8 decisions")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// A task of five agreeing samples with results: accepted whatever surrounds it.
fn good_line(id: &str) -> String {
    let call = json!({"calls": [{"tool": "echo", "arguments": {"q": id}, "result": {"q": id}}]});
    json!({"task_id": id, "samples": [call, call, call, call, call]}).to_string()
}

#[test]
fn every_n_file_as_a_samples_file_is_refused_line_by_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = score_catalog(dir.path());
    let mut empty = Vec::new();
    for (name, bytes) in files("n_") {
        let samples = dir.path().join(&name);
        std::fs::write(&samples, &bytes).expect("write samples");
        let run = score(&catalog, &samples, &[]);
        let all = lines(&bytes);
        let bad: Vec<usize> = (1..=all.len()).filter(|n| !blank(all[n - 1])).collect();
        let src = samples.display().to_string();
        if bad.is_empty() {
            // Empty or whitespace only: no task, nothing to refuse, every line blank.
            assert_eq!(run.code, exit::OK, "{name}: {}", run.stderr);
            empty.push(name);
            continue;
        }
        assert_eq!(run.code, exit::USAGE, "{name}: {}", run.stderr);
        for n in &bad {
            assert!(
                run.stderr.contains(&format!("plangate: {src}:{n}: ")),
                "{name}: line {n} is not named:\n{}",
                run.stderr
            );
        }
        let records = stdout_records(&run);
        assert_eq!(records.len(), bad.len(), "{name}: one record per bad line");
        for (r, n) in records.iter().zip(&bad) {
            assert_eq!(r["line"], *n, "{name}: {r}");
            assert_eq!(r["error"]["kind"], "input", "{name}: {r}");
            assert!(r.get("decision").is_none(), "{name} was decided: {r}");
        }
        let summary = format!(
            "{src}: {} lines: 0 accepted, 0 rejected, 0 deferred, {} skipped (bad input)",
            all.len(),
            bad.len()
        );
        assert!(run.stderr.contains(&summary), "{name}: {}", run.stderr);
    }
    // The suite's only data-free files; anything else would be a silently accepted n_.
    assert!(
        empty.len() <= 2,
        "n_ files with no line to refuse: {empty:?}"
    );
}

#[test]
fn a_file_of_raw_n_and_y_arguments_between_good_lines_decides_all_but_the_n_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = score_catalog(dir.path());
    // Each suite file sits raw where a call's arguments go, and a good task follows it.
    // A file with a newline inside cannot be one line; those are covered above.
    let mut body: Vec<u8> = Vec::new();
    let mut expect: Vec<(usize, String, bool)> = Vec::new(); // (line, id, refused)
    let mut number = 0;
    for (prefix, refused) in [("n_", true), ("y_", false)] {
        for (name, bytes) in files(prefix) {
            if bytes.contains(&b'\n') || bytes.contains(&b'\r') {
                continue;
            }
            let call_start = br#"{"calls":[{"tool":"echo","arguments":"#;
            let sample: Vec<u8> = [&call_start[..], &bytes, br#","result":1}]}"#].concat();
            let mut line = format!(r#"{{"task_id":"{name}","samples":["#).into_bytes();
            for i in 0..5 {
                if i > 0 {
                    line.push(b',');
                }
                line.extend_from_slice(&sample);
            }
            line.extend_from_slice(b"]}\n");
            body.extend_from_slice(&line);
            number += 1;
            expect.push((number, name.clone(), refused));
            body.extend_from_slice(good_line(&format!("good-after-{name}")).as_bytes());
            body.push(b'\n');
            number += 1;
            expect.push((number, format!("good-after-{name}"), false));
        }
    }
    let samples = dir.path().join("mixed.jsonl");
    std::fs::write(&samples, &body).expect("write samples");
    let run = score(&catalog, &samples, &[]);
    assert_eq!(run.code, exit::USAGE, "bad lines exit 2:\n{}", run.stderr);
    let src = samples.display().to_string();
    let records = stdout_records(&run);
    assert_eq!(records.len(), expect.len(), "one record per line");
    let mut refused = 0;
    for (r, (line, id, bad)) in records.iter().zip(&expect) {
        let named = run.stderr.contains(&format!("plangate: {src}:{line}: "));
        if *bad {
            refused += 1;
            assert_eq!(r["line"], *line, "{id}: {r}");
            assert!(r.get("decision").is_none(), "{id} was decided: {r}");
            assert!(named, "{id}: line {line} not named");
        } else {
            assert_eq!(r["task_id"], id.as_str(), "line {line}: {r}");
            assert!(!named, "{id}: line {line} named as bad:\n{}", run.stderr);
            if id.starts_with("good-") {
                assert_eq!(r["decision"], "accept", "{id}: {r}");
            } else {
                // y_ arguments parse: not objects or not agreeing, but never unreadable.
                assert!(r["decision"].is_string(), "{id}: {r}");
                assert!(
                    !r["malformed"].to_string().contains("not JSON"),
                    "{id}: {r}"
                );
            }
        }
    }
    let decided = expect.len() - refused;
    assert!(
        run.stderr.contains(&format!(
            "{src}: {} lines: {decided_accept} accepted",
            expect.len(),
            decided_accept = records.iter().filter(|r| r["decision"] == "accept").count()
        )) && run
            .stderr
            .contains(&format!(", {refused} skipped (bad input)")),
        "the summary accounts for {decided} decided and {refused} skipped:\n{}",
        run.stderr
    );
}

#[test]
fn openai_argument_strings_from_the_suite_spoil_samples_never_the_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    crate::tools::build_tools();
    let echo = repo().join("sandbox-tools/target/wasm32-wasip1/release/echo.wasm");
    let catalog = dir.path().join("catalog.json");
    let doc = json!({"tools": [{"name": "echo", "module": echo.display().to_string(),
                               "deterministic": true, "parameters": {"type": "object"}}]});
    std::fs::write(&catalog, doc.to_string()).expect("write catalog");
    // The arguments string is the file's text; a file that is not UTF-8 cannot be a JSON
    // string at all, and is covered as a raw line above.
    let mut body = String::new();
    let mut expect = Vec::new();
    for (prefix, bad) in [("n_", true), ("y_", false)] {
        for (name, bytes) in files(prefix) {
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            let sample = json!({"role": "assistant", "tool_calls": [{"type": "function",
                "function": {"name": "echo", "arguments": text}}]});
            body.push_str(&json!({"task_id": name, "samples": vec![sample; 5]}).to_string());
            body.push('\n');
            expect.push((name, bad));
        }
    }
    let samples = dir.path().join("openai.jsonl");
    std::fs::write(&samples, body).expect("write samples");
    let out = dir.path().join("decisions.jsonl");
    let args = [
        "eval".to_string(),
        "--catalog".into(),
        catalog.display().to_string(),
        "--samples".into(),
        samples.display().to_string(),
        "--out".into(),
        out.display().to_string(),
    ];
    let run = bounded(&args, &[], LIMIT);
    assert_eq!(
        run.code,
        exit::OK,
        "no line is bad, nothing rejected:\n{}",
        run.stderr
    );
    let decisions: Vec<Value> = std::fs::read_to_string(&out)
        .expect("decisions")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(decisions.len(), expect.len());
    for (d, (name, bad)) in decisions.iter().zip(&expect) {
        assert_eq!(d["task_id"], name.as_str());
        let unreadable = d["malformed"]
            .as_array()
            .expect("malformed")
            .iter()
            .filter(|m| m["problems"].to_string().contains("not JSON"))
            .count();
        assert_eq!(unreadable, if *bad { 5 } else { 0 }, "{name}: {d}");
    }
}

/// Writes `text` as `name` in `dir`.
fn file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn broken_catalogs_and_manifests_exit_2_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let samples = file(d, "s.jsonl", &(good_line("t") + "\n"));
    let tool = r#""name":"echo","deterministic":true,"parameters":{}"#;
    let cases = [
        (
            "bad-schema.json",
            r#"{"tools":[{"name":"echo","deterministic":true,"parameters":{"type":"objekt"}}]}"#
                .to_string(),
            vec![
                r#"tools[0].parameters/type: "objekt" is not a JSON Schema type"#,
            ],
        ),
        (
            // Every problem of every tool, in one run.
            "many-problems.json",
            r#"{"tools":[{"name":"a","deterministic":1,"parameters":{"type":"object",
              "properties":{"n":{"type":"flaot"}}}},{"name":"b","deterministic":true,"clock":"now"}]}"#
                .to_string(),
            vec![
                "3 problems:",
                "tools[0].deterministic: expected true or false",
                r#"tools[0].parameters/properties/n/type: "flaot" is not a JSON Schema type"#,
                "tools[1].clock",
            ],
        ),
        (
            "duplicate.json",
            format!(r#"{{"tools":[{{{tool}}},{{{tool}}}]}}"#),
            vec!["tools[1].name", "duplicate tool name"],
        ),
        (
            "unknown-field.json",
            format!(r#"{{"tools":[{{{tool},"determinstic":false}}]}}"#),
            vec!["tools[0].determinstic", "unknown field"],
        ),
        (
            "not-json.json",
            r#"{"tools":[{"name":"echo",}]}"#.to_string(),
            vec!["failed to parse catalog", "column"],
        ),
        (
            "duplicate-key.json",
            format!(r#"{{"tools":[{{{tool},"name":"other"}}]}}"#),
            vec!["duplicate"],
        ),
    ];
    for (name, text, want) in &cases {
        let catalog = file(d, name, text);
        for cmd in ["score", "eval"] {
            let args = [
                cmd,
                "--catalog",
                catalog.to_str().expect("utf-8 path"),
                "--samples",
                samples.to_str().expect("utf-8 path"),
            ];
            let run = bounded(&args, &[], LIMIT);
            assert_eq!(run.code, exit::USAGE, "{cmd} {name}: {}", run.stderr);
            assert!(run.stderr.contains(name), "{cmd} {name}: {}", run.stderr);
            for w in want {
                assert!(
                    run.stderr.contains(w),
                    "{cmd} {name}: no {w:?}: {}",
                    run.stderr
                );
            }
        }
    }
    // eval needs the module; score does not.
    let missing = file(
        d,
        "missing-module.json",
        r#"{"tools":[{"name":"echo","module":"nowhere/echo.wasm","deterministic":true,"parameters":{}}]}"#,
    );
    let run = bounded(
        &[
            "eval",
            "--catalog",
            missing.to_str().unwrap(),
            "--samples",
            samples.to_str().unwrap(),
        ],
        &[],
        LIMIT,
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    for w in [
        "missing-module.json",
        "tools[0].module",
        "nowhere/echo.wasm",
    ] {
        assert!(run.stderr.contains(w), "no {w:?}: {}", run.stderr);
    }
    let run = score(&missing, &samples, &[]);
    assert_eq!(
        run.code,
        exit::OK,
        "score decides recorded results: {}",
        run.stderr
    );
    // A manifest that is not one.
    let catalog = file(d, "ok.json", &format!(r#"{{"tools":[{{{tool}}}]}}"#));
    let manifest = file(d, "epoch.json", r#"{"format":2,"seeed":2}"#);
    let run = bounded(
        &[
            "eval",
            "--catalog",
            catalog.to_str().unwrap(),
            "--samples",
            samples.to_str().unwrap(),
            "--epoch",
            manifest.to_str().unwrap(),
        ],
        &[],
        LIMIT,
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("epoch manifest") && run.stderr.contains("epoch.json"),
        "{}",
        run.stderr
    );
}

/// The exit codes in crates/cli/src/exit.rs, as (name, value).
fn exit_codes() -> Vec<(String, u8)> {
    let src = std::fs::read_to_string(repo().join("crates/cli/src/exit.rs")).expect("exit.rs");
    let codes: Vec<(String, u8)> = src
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("pub const ")?;
            let (name, value) = rest.split_once(": u8 = ")?;
            Some((name.to_string(), value.trim_end_matches(';').parse().ok()?))
        })
        .collect();
    assert!(!codes.is_empty(), "no exit codes found in exit.rs");
    codes
}

#[test]
fn docs_errors_md_lists_every_exit_code_and_each_comes_out_where_documented() {
    let doc = std::fs::read_to_string(repo().join("docs/errors.md")).expect("docs/errors.md");
    let named = [
        ("OK", exit::OK),
        ("REJECT", exit::REJECT),
        ("USAGE", exit::USAGE),
        ("INTERRUPTED", exit::INTERRUPTED),
    ];
    for (name, value) in exit_codes() {
        assert!(
            doc.contains(&format!("| {value} | `{name}` |")),
            "docs/errors.md has no row for exit code {value} ({name})"
        );
        // The tests name every code exit.rs has, with its value.
        assert!(
            named.contains(&(name.as_str(), i32::from(value))),
            "tests/e2e/main.rs's `exit` lacks {name} = {value}"
        );
    }
    // 130 (INTERRUPTED) needs a signal mid-run: tests/e2e/resume.rs sends it.
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let catalog = score_catalog(d);
    // 0: every task accepted or deferred.
    let ok = file(
        d,
        "ok.jsonl",
        &(good_line("a") + "\n" + &good_line("b") + "\n"),
    );
    let run = score(&catalog, &ok, &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    // 1: a task rejected (five different arguments on a verified deterministic tool;
    // arg_reject raised, since with N = 5 nothing is below the default 0.20).
    let calls: Vec<Value> = (0..5)
        .map(|i| json!({"calls": [{"tool": "echo", "arguments": {"q": i}, "result": 1}]}))
        .collect();
    let fabricated = json!({"task_id": "f", "samples": calls}).to_string();
    let reject = file(d, "reject.jsonl", &(fabricated + "\n"));
    let run = score(&catalog, &reject, &["--arg-reject", "0.30"]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    // 2: a bad line (even beside a reject: input errors win), a missing samples file,
    // an unknown flag, a missing required flag.
    let both = file(
        d,
        "both.jsonl",
        &(std::fs::read_to_string(&reject).unwrap() + "{\n"),
    );
    let run = score(&catalog, &both, &["--arg-reject", "0.30"]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("both.jsonl:2: "), "{}", run.stderr);
    let run = score(&catalog, &d.join("absent.jsonl"), &[]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("absent.jsonl"), "{}", run.stderr);
    let run = bounded(&["score", "--no-such-flag"], &[], LIMIT);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    let run = bounded(&["score", "--samples", "x"], &[], LIMIT);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("--catalog"), "{}", run.stderr);
    // --help and --version print to stdout and succeed.
    let run = bounded(&["--help"], &[], LIMIT);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert!(String::from_utf8_lossy(&run.stdout).contains("Usage"));
}

/// Flags that would make a run meaningless or crash it are usage errors, said plainly:
/// no thread, a typo'd thousand threads, limits of zero (every call would end at once
/// and probes would still say verified).
#[test]
fn nonsense_flags_are_usage_errors() {
    let catalog = repo().join("examples/score/catalog.json");
    let samples = repo().join("examples/score/samples.jsonl");
    let (catalog, samples) = (catalog.to_str().unwrap(), samples.to_str().unwrap());
    let base = ["--catalog", catalog, "--samples", samples];
    for (cmd, flag, value, says) in [
        ("score", "--jobs", "0", "from 1 to 1024"),
        ("score", "--jobs", "100000", "from 1 to 1024"),
        ("eval", "--jobs", "0", "from 1 to 1024"),
        ("eval", "--fuel", "0", "--fuel"),
        ("eval", "--memory-mb", "0", "--memory-mb"),
        ("eval", "--timeout-ms", "0", "--timeout-ms"),
    ] {
        let mut args = vec![cmd];
        args.extend(base);
        args.extend([flag, value]);
        let run = crate::eval::plangate(&args);
        assert_eq!(
            run.code,
            exit::USAGE,
            "{cmd} {flag} {value}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(says) && run.stderr.contains("invalid value"),
            "{cmd} {flag} {value}: {}",
            run.stderr
        );
    }
}
