//! Free text in arguments: `score` (whole and as a shard) and `eval` say once per run
//! which parameters look like prose written anew in most samples, with the hint to
//! mark them; marked as the warning says, the same samples agree and the run is quiet.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::eval::{Run, plangate};
use crate::exit;
use crate::tools::repo;

/// Three tasks that look Ada up and notify her, six samples each, every summary in its
/// own words; the results agree.
fn samples(dir: &Path) -> PathBuf {
    let lines: Vec<String> = (0..3)
        .map(|t| {
            let samples: Vec<Value> = (0..6)
                .map(|s| {
                    let summary = format!(
                        "Sample {s} of task {t} tells Ada, in words of its own, that her report is on its way."
                    );
                    json!({"calls": [{"tool": "notify",
                        "arguments": {"user_id": "u_42", "summary": summary},
                        "result": {"sent": true}}]})
                })
                .collect();
            json!({"task_id": format!("t{t}"), "samples": samples}).to_string()
        })
        .collect();
    let p = dir.join("samples.jsonl");
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

/// An MCP `tools/list` result with `notify`, its summary schema `summary`.
fn catalog(dir: &Path, name: &str, summary: Value, plangate: Value) -> PathBuf {
    let doc = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{
        "name": "notify",
        "description": "Tells a user something, in a summary written for a human.",
        "inputSchema": {"type": "object",
            "properties": {"user_id": {"type": "string"}, "summary": summary},
            "required": ["user_id", "summary"]},
        "x-plangate": plangate}]}});
    let p = dir.join(name);
    std::fs::write(&p, doc.to_string()).unwrap();
    p
}

/// The run's warnings about prose.
fn prose_warnings(run: &Run) -> Vec<&str> {
    (run.stderr.lines())
        .filter(|l| l.contains("looks like prose"))
        .collect()
}

/// The schema the warning's snippet gives: the text after "presence only: " up to the
/// docs reference, read as the JSON member it is.
fn snippet(warning: &str) -> (String, Value) {
    let (_, after) = warning.split_once("presence only: ").expect("a snippet");
    let (member, _) = after
        .split_once(" (docs/design.md")
        .expect("the docs named");
    let doc: Value = serde_json::from_str(&format!("{{{member}}}")).expect("a JSON member");
    let (key, schema) = doc.as_object().unwrap().iter().next().unwrap();
    (key.clone(), schema.clone())
}

fn score(catalog: &Path, samples: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["score".to_string(), "--catalog".into()];
    args.push(catalog.display().to_string());
    args.push("--samples".into());
    args.push(samples.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    plangate(&args)
}

#[test]
fn prose_written_anew_is_said_once_and_the_hint_it_gives_makes_the_samples_agree() {
    let dir = tempfile::tempdir().unwrap();
    let samples = samples(dir.path());
    let declared = json!({"deterministic": true, "verified": true});
    let unmarked = catalog(
        dir.path(),
        "unmarked.json",
        json!({"type": "string"}),
        declared.clone(),
    );
    let run = score(&unmarked, &samples, &[]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let rejected = run.lines();
    assert!(
        rejected.iter().all(|d| d["decision"] == "reject"),
        "{rejected:?}"
    );
    let warnings = prose_warnings(&run);
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains(r#"at tool "notify" $.summary in 3 tasks:"#),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("most samples of 3 tasks"),
        "{}",
        warnings[0]
    );
    let (key, schema) = snippet(warnings[0]);
    assert_eq!(key, "summary");
    assert_eq!(
        schema,
        json!({"type": "string", "x-plangate": {"canon": ["prose"]}})
    );

    // A shard keeps its tasks for merge and says the same of them.
    let out = dir.path().join("shard.jsonl");
    let shard = score(
        &unmarked,
        &samples,
        &["--shard", "1/1", "--out", out.to_str().unwrap()],
    );
    assert_eq!(prose_warnings(&shard), warnings, "{}", shard.stderr);

    // The hint as the warning gives it: the same samples agree, and nothing is said.
    let marked = catalog(dir.path(), "marked.json", schema, declared);
    let run = score(&marked, &samples, &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    for d in run.lines() {
        assert_eq!(d["decision"], "accept", "{d}");
        assert_eq!(d["divergent_paths"], json!([]), "{d}");
    }
    assert_eq!(prose_warnings(&run), Vec::<&str>::new(), "{}", run.stderr);
}

/// `eval` reads the same tasks before executing them, and says the same once.
#[test]
fn eval_says_it_once_too() {
    let dir = tempfile::tempdir().unwrap();
    let samples = samples(dir.path());
    let echo = repo().join("sandbox-tools/target/wasm32-wasip1/release/echo.wasm");
    let unmarked = catalog(
        dir.path(),
        "eval.json",
        json!({"type": "string"}),
        json!({"deterministic": false, "module": echo}),
    );
    let args: [&std::ffi::OsStr; 5] = [
        "eval".as_ref(),
        "--catalog".as_ref(),
        unmarked.as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
    ];
    let run = plangate(&args);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let warnings = prose_warnings(&run);
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains(r#"at tool "notify" $.summary in 3 tasks:"#),
        "{}",
        warnings[0]
    );
}
