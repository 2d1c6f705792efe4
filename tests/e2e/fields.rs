//! Samples lines that carry fields of their own (an agent log's trial, reward, model,
//! timestamps) at every level decide exactly as they do without them, through
//! `plangate score` and `plangate eval`, and the run names each such field once on
//! stderr. A misspelt field plangate reads refuses its line alone, named with the name
//! it misses (docs/inputs.md, "Unknown fields").

use std::path::Path;

use serde_json::{Value, json};

use crate::eval::{Run, cases, plangate, seed_catalog};
use crate::exit;
use crate::tools::repo;

/// Foreign fields, by the level they are put at.
fn put(o: &mut Value, fields: Value) {
    let (Some(o), Value::Object(fields)) = (o.as_object_mut(), fields) else {
        return;
    };
    o.extend(fields);
}

/// The items of the array under `key`, if there is one (indexing would add the key).
fn array<'a>(v: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    v.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// A native call, with its error.
fn native_call(c: &mut Value) {
    if let Some(e) = c.get_mut("error") {
        put(e, json!({"code": 404}));
    }
    put(c, json!({"id": "c-1", "timestamp": "2025-01-01T00:00:00Z"}));
}

/// A provider message: OpenAI tool calls and their functions, Anthropic blocks.
fn message(m: &mut Value) {
    for tc in array(m, "tool_calls") {
        if let Some(f) = tc.get_mut("function") {
            put(f, json!({"strict": true}));
        }
        put(tc, json!({"status": "done"}));
    }
    for b in array(m, "content") {
        match b["type"].as_str() {
            Some("tool_use") => put(b, json!({"caller": {"type": "direct"}})),
            Some("tool_result") => put(b, json!({"duration_ms": 12})),
            _ => {}
        }
    }
    put(m, json!({"timestamp": "t"}));
}

/// The line with foreign fields at every level its shapes have, and the line as it was
/// (both written by serde_json, so they differ only by those fields).
fn with_foreign_fields(line: &str) -> (String, String) {
    let plain: Value = serde_json::from_str(line).unwrap();
    let mut extra = plain.clone();
    for s in extra["samples"].as_array_mut().unwrap() {
        if let Some(items) = s.as_array_mut() {
            items
                .iter_mut()
                .for_each(|c| put(c, json!({"server": "files"})));
            continue;
        }
        array(s, "calls").for_each(native_call);
        for turn in array(s, "turns") {
            turn.as_array_mut()
                .unwrap()
                .iter_mut()
                .for_each(native_call);
        }
        array(s, "messages").for_each(message);
        if s.get("role").is_some() {
            message(s);
        } else {
            put(s, json!({"id": "s-1", "model": "m-1"}));
        }
    }
    put(
        &mut extra,
        json!({"trial": 3, "reward": 0.5, "info": {"steps": [1, {"a": null}]}}),
    );
    (plain.to_string(), extra.to_string())
}

/// A file of `lines`, each spelled both ways: (without, with foreign fields).
fn files(dir: &Path, name: &str, lines: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (mut plain, mut extra) = (String::new(), String::new());
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let (p, e) = with_foreign_fields(line);
        plain += &(p + "\n");
        extra += &(e + "\n");
    }
    let (p, e) = (
        dir.join(format!("{name}.jsonl")),
        dir.join(format!("{name}.extra.jsonl")),
    );
    std::fs::write(&p, plain).unwrap();
    std::fs::write(&e, extra).unwrap();
    (p, e)
}

fn score(samples: &Path, jobs: &str) -> Run {
    let catalog = repo().join("examples/score/catalog.json");
    plangate(&[
        "score".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
        "--jobs".as_ref(),
        jobs.as_ref(),
    ])
}

/// The stderr lines that name an unknown field.
fn field_warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("warning: unknown field"))
        .collect()
}

/// One OpenAI conversation per sample for the example catalog's `get_user`.
fn conversation() -> String {
    let sample = json!({"messages": [
        {"role": "user", "content": "Who is u_42?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_user", "arguments": "{\"user_id\":\"u_42\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{\"name\":\"Ada\"}"}]});
    json!({"task_id": "conversation", "samples": vec![sample; 5]}).to_string()
}

#[test]
fn foreign_fields_decide_as_without_them_and_are_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let lines = format!("{example}\n{}\n", conversation());
    let (plain, extra) = files(dir.path(), "score", &lines);
    let tasks = lines.lines().filter(|l| !l.trim().is_empty()).count();
    let without = score(&plain, "1");
    assert!(
        field_warnings(&without.stderr).is_empty(),
        "{}",
        without.stderr
    );
    for jobs in ["1", "3"] {
        let with = score(&extra, jobs);
        assert_eq!(with.code, without.code, "{}", with.stderr);
        assert_eq!(
            with.stdout, without.stdout,
            "decisions differ with foreign fields"
        );
        let warnings = field_warnings(&with.stderr);
        let want = [
            ("code", "call errors", 1),
            ("id", "samples and calls", tasks),
            ("info", "tasks", tasks),
            ("model", "samples", tasks),
            ("reward", "tasks", tasks),
            ("status", "tool calls", 1),
            ("strict", "tool call functions", 1),
            ("timestamp", "calls and messages", tasks),
            ("trial", "tasks", tasks),
        ];
        assert_eq!(warnings.len(), want.len(), "{}", with.stderr);
        for (line, (name, levels, n)) in warnings.iter().zip(want) {
            let lines = if n == 1 { "line" } else { "lines" };
            let said = format!("unknown field \"{name}\" in {levels} passed over on {n} {lines} (");
            assert!(line.contains(&said), "{said}: {}", with.stderr);
        }
        // The summary is the run's last line, as without them.
        assert_eq!(
            with.stderr.lines().last(),
            without.stderr.lines().last(),
            "{}",
            with.stderr
        );
    }
}

#[test]
fn foreign_fields_decide_as_without_them_in_eval() {
    let dir = tempfile::tempdir().unwrap();
    for format in [
        "plans.jsonl",
        "plans.openai.jsonl",
        "plans.anthropic.jsonl",
        "plans.mcp.jsonl",
        "chains.jsonl",
    ] {
        let text = std::fs::read_to_string(cases().join(format)).unwrap();
        let (plain, extra) = files(dir.path(), format, &text);
        let run = |samples: &Path| {
            plangate(&[
                "eval".as_ref(),
                "--catalog".as_ref(),
                seed_catalog().as_os_str(),
                "--samples".as_ref(),
                samples.as_os_str(),
            ])
        };
        let (without, with) = (run(&plain), run(&extra));
        assert_eq!(with.code, without.code, "{format}: {}", with.stderr);
        assert_eq!(with.lines(), without.lines(), "{format} decides otherwise");
        let warnings = field_warnings(&with.stderr);
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("unknown field \"trial\" in tasks")),
            "{format}: {}",
            with.stderr
        );
        let mut names: Vec<&str> = warnings
            .iter()
            .map(|w| w.split('"').nth(1).unwrap())
            .collect();
        let said = names.len();
        names.dedup();
        assert_eq!(names.len(), said, "one warning per name: {}", with.stderr);
    }
}

#[test]
fn a_misspelt_field_refuses_its_line_alone_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let good: Vec<&str> = example.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut lines = good.clone();
    let misspelt = good[1].replacen("\"samples\"", "\"sampels\"", 1);
    lines[1] = &misspelt;
    let path = dir.path().join("misspelt.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, good.join("\n") + "\n").unwrap();
    let (run, whole) = (score(&path, "1"), score(&plain, "1"));
    assert_eq!(run.code, exit::USAGE, "a bad line exits 2: {}", run.stderr);
    let at = format!(
        "{}:2: sampels: unknown field: did you mean \"samples\"?",
        path.display()
    );
    assert!(run.stderr.contains(&at), "{}", run.stderr);
    // The line's record in its place, the other lines decided as in the whole file.
    let (got, want) = (run.lines(), whole.lines());
    assert_eq!(got.len(), want.len());
    assert_eq!(got[1]["error"]["field"], "sampels", "{}", got[1]);
    assert_eq!(got[1]["task_id"], "fabricated-paths");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if i != 1 {
            assert_eq!(g, w);
        }
    }
    let summary = format!(
        "{}: {} lines: 2 accepted, 1 rejected, 1 deferred, 1 skipped (bad input)",
        path.display(),
        good.len()
    );
    assert!(run.stderr.contains(&summary), "{}", run.stderr);
}
