//! Benchmark results files through `plangate score`, as published: tau-bench's gpt-4o
//! airline trajectories (tests/realworld/tau-bench/, from scripts/realworld; source and
//! license in its NOTICE.md), 50 tasks x 4 trials with reused call ids and a reward per
//! trial, and the same trials written as a tau2-bench results object. Every trial is
//! read, none refused for its ids, the rewards travel as outcomes and split the
//! summary, and the two benchmarks' shapes of the same trials decide alike.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::exit;
use crate::tools::repo;

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/realworld/tau-bench").join(name)
}

/// The published trials, as a list of JSON objects.
fn trials() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("gpt-4o-airline.json")).expect("fixture");
    let v: Value = serde_json::from_str(&text).expect("fixture is JSON");
    v.as_array().expect("a list of trials").clone()
}

struct Run {
    code: i32,
    /// The decision records, in output order.
    records: Vec<Value>,
    stderr: String,
}

/// `plangate score` on `samples` with the fixture's catalog, its decisions written
/// under `dir`.
fn score(samples: &Path, dir: &Path, extra: &[&str]) -> Run {
    score_with(&fixture("catalog.json"), samples, dir, extra)
}

/// [`score`] with another catalog.
fn score_with(catalog: &Path, samples: &Path, dir: &Path, extra: &[&str]) -> Run {
    let stem = samples
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("samples");
    // Flags name the output apart; a flag's path is no part of a file name.
    let flags = extra
        .join("")
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '-', "_");
    let out = dir.join(format!("{stem}-{flags}.out.jsonl"));
    let output = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(["score", "--jobs", "2", "--catalog"])
        .arg(catalog)
        .arg("--samples")
        .arg(samples)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .output()
        .expect("plangate runs");
    let records = std::fs::read_to_string(&out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record is JSON"))
        .collect();
    Run {
        code: output.status.code().unwrap_or(-1),
        records,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Each task's rewards in trial order, computed here from the file.
fn rewards_by_task(trials: &[Value]) -> BTreeMap<String, Vec<f64>> {
    let mut by: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
    for t in trials {
        let id = t["task_id"].to_string().trim_matches('"').to_string();
        let trial = t["trial"].as_i64().expect("trial");
        by.entry(id)
            .or_default()
            .push((trial, t["reward"].as_f64().expect("reward")));
    }
    by.into_iter()
        .map(|(id, mut v)| {
            v.sort_by_key(|&(t, _)| t);
            (id, v.into_iter().map(|(_, r)| r).collect())
        })
        .collect()
}

#[test]
fn tau_bench_results_are_read_whole_with_rewards_as_outcomes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = score(&fixture("gpt-4o-airline.json"), dir.path(), &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("a tau-bench results list: 200 trials of 50 tasks"),
        "{}",
        run.stderr
    );
    // Reused call ids are read, and said once for the run.
    assert_eq!(run.stderr.matches("call id other calls carry").count(), 1);
    assert!(run.stderr.contains("50 lines: "), "{}", run.stderr);
    assert!(run.stderr.contains(" 0 skipped"), "{}", run.stderr);

    let rewards = rewards_by_task(&trials());
    assert_eq!(rewards.len(), 50);
    let mut groups = [0usize; 3];
    for r in &run.records {
        let id = r["task_id"].as_str().expect("a decided task");
        let outcomes: Vec<f64> = (r["outcomes"].as_array().expect("outcomes").iter())
            .map(|x| x.as_f64().expect("a reward"))
            .collect();
        assert_eq!(outcomes, rewards[id], "task {id}");
        let good = outcomes.iter().filter(|&&x| x >= 1.0).count();
        groups[if good == 4 {
            0
        } else if good == 0 {
            2
        } else {
            1
        }] += 1;
        // Four trials are fewer than the default five: deferred, and still analysed.
        assert_eq!(r["reasons"], json!(["insufficient_samples"]), "task {id}");
        if r["arg_agreement"]["count"].as_u64() < Some(4) {
            assert!(
                !r["divergent_paths"].as_array().expect("paths").is_empty(),
                "task {id}: {r}"
            );
        }
    }
    assert_eq!(run.records.len(), 50);
    let line = format!(
        "by outcome: {} tasks where every sample succeeded: 0 accepted, 0 rejected, {} deferred; \
         {} tasks where some samples failed: 0 accepted, 0 rejected, {} deferred; \
         {} tasks where every sample failed: 0 accepted, 0 rejected, {} deferred",
        groups[0], groups[0], groups[1], groups[1], groups[2], groups[2]
    );
    assert!(run.stderr.contains(&line), "{line}\n{}", run.stderr);

    // With --min-samples 4 the four trials decide.
    let four = score(
        &fixture("gpt-4o-airline.json"),
        dir.path(),
        &["--min-samples", "4"],
    );
    assert!(
        matches!(four.code, exit::OK | exit::REJECT),
        "{}",
        four.stderr
    );
    assert!(
        four.records
            .iter()
            .all(|r| r["reasons"] != json!(["insufficient_samples"]))
    );
}

/// tau-bench's OpenAI messages as tau2-bench writes its own: calls with object
/// arguments, tool messages naming their call by `id`, and one call of the simulated
/// user's own (which is not the agent's plan) in each trial.
fn as_tau2(messages: &[Value]) -> Vec<Value> {
    let mut out = vec![
        json!({"role": "user", "content": "hi", "tool_calls": [
        {"id": "user-1", "name": "toggle_airplane_mode", "arguments": {}, "requestor": "user"}]}),
        json!({"role": "tool", "id": "user-1", "content": "done", "requestor": "user"}),
    ];
    for m in messages {
        let role = m["role"].as_str().expect("role");
        out.push(match role {
            "assistant" => {
                let calls: Vec<Value> = (m["tool_calls"].as_array().into_iter().flatten())
                    .map(|c| {
                        let args: Value = serde_json::from_str(
                            c["function"]["arguments"].as_str().expect("arguments text"),
                        )
                        .expect("arguments are JSON");
                        json!({"id": c["id"], "name": c["function"]["name"],
                               "arguments": args, "requestor": "assistant"})
                    })
                    .collect();
                json!({"role": "assistant", "content": m["content"], "turn_idx": 1,
                       "tool_calls": if calls.is_empty() { Value::Null } else { json!(calls) }})
            }
            // tau2 flags a tool's error itself, where tau-bench writes `Error: ...`.
            "tool" => json!({"role": "tool", "id": m["tool_call_id"], "content": m["content"],
                             "requestor": "assistant",
                             "error": m["content"].as_str().is_some_and(|c| c.starts_with("Error: "))}),
            _ => json!({"role": role, "content": m["content"]}),
        });
    }
    out
}

#[test]
fn tau2_results_decide_as_the_same_trials_from_tau_bench() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trials = trials();
    let simulations: Vec<Value> = trials
        .iter()
        .map(|t| {
            json!({"id": format!("sim-{}-{}", t["task_id"], t["trial"]),
                   "task_id": t["task_id"].to_string(), "trial": t["trial"],
                   "termination_reason": "user_stop",
                   "reward_info": {"reward": t["reward"], "db_check": null},
                   "messages": as_tau2(t["traj"].as_array().expect("traj"))})
        })
        .collect();
    let doc = json!({"timestamp": "2025-06-01T00:00:00",
                     "info": {"num_trials": 4, "agent_info": {"llm": "gpt-4o"}},
                     "tasks": [], "simulations": simulations});
    let path = dir.path().join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
    let tau2 = score(&path, dir.path(), &["--min-samples", "4"]);
    assert!(
        tau2.stderr
            .contains("a tau2-bench results object: 200 trials of 50 tasks"),
        "{}",
        tau2.stderr
    );
    let tau = score(
        &fixture("gpt-4o-airline.json"),
        dir.path(),
        &["--min-samples", "4"],
    );
    assert_eq!(tau2.code, tau.code, "{}", tau2.stderr);
    assert_eq!(tau2.records.len(), 50);
    // Record for record, byte for byte once parsed: same plans, same results (tau2's
    // error flag and tau-bench's `Error: ` strings alike), same outcomes, same verdicts,
    // same invented references.
    assert_eq!(tau2.records, tau.records);
    let summary = dir.path().join("tau2-summary.json");
    let with = score(
        &path,
        dir.path(),
        &[
            "--min-samples",
            "4",
            "--summary-json",
            summary.to_str().unwrap(),
        ],
    );
    assert_eq!(with.records, tau.records);
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    // tau2 names its model; the count is kept by it.
    assert_eq!(
        s["invented_references"]["by_model"],
        json!({"gpt-4o": 4}),
        "{s}"
    );
}

/// The not-found answers of the published trials, each with its call's message index:
/// (index of the trial in the file, message index, tool, arguments).
fn not_found_calls(trials: &[Value]) -> Vec<(usize, usize, String, Value)> {
    let mut out = Vec::new();
    for (i, t) in trials.iter().enumerate() {
        let traj = t["traj"].as_array().expect("traj");
        for (k, m) in traj.iter().enumerate() {
            let content = m["content"].as_str().unwrap_or_default();
            if m["role"] != "tool"
                || !(content.starts_with("Error: ") && content.contains("not found"))
            {
                continue;
            }
            // The assistant message that made the call: the last one before with its id.
            let (at, call) = (0..k)
                .rev()
                .find_map(|j| {
                    let calls = traj[j]["tool_calls"].as_array()?;
                    let c = calls.iter().find(|c| c["id"] == m["tool_call_id"])?;
                    Some((j, c.clone()))
                })
                .expect("the call a result answers");
            let args: Value =
                serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
            out.push((
                i,
                at,
                call["function"]["name"].as_str().unwrap().to_string(),
                args,
            ));
        }
    }
    out
}

/// On the published trials, every invented id a `not found` answers is listed, and no
/// value the conversation supplied is: each not-found call's id-like values are looked
/// for, as text, in every message before the one that made the call.
#[test]
fn tau_bench_invented_references_are_the_unsupplied_ids() {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let run = score(
        &fixture("gpt-4o-airline.json"),
        dir.path(),
        &["--summary-json", summary.to_str().unwrap()],
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let trials = trials();
    let mut want = Vec::new();
    for (i, at, tool, args) in not_found_calls(&trials) {
        let t = &trials[i];
        let task = t["task_id"].to_string();
        let before = serde_json::to_string(&t["traj"].as_array().unwrap()[..at]).unwrap();
        for (name, v) in args.as_object().unwrap() {
            let Some(v) = v.as_str() else { continue };
            if name.ends_with("id") && !before.contains(v) {
                want.push((task.clone(), tool.clone(), name.clone(), v.to_string()));
            }
        }
    }
    let mut got = Vec::new();
    for r in &run.records {
        for i in r["invented_references"]
            .as_array()
            .expect("every record lists them")
        {
            got.push((
                r["task_id"].as_str().unwrap().to_string(),
                i["tool"].as_str().unwrap().to_string(),
                i["parameter"].as_str().unwrap().to_string(),
                i["value"].as_str().unwrap().to_string(),
            ));
        }
    }
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // The published figures: 7 not-found answers, 4 of them for a payment id nothing
    // supplied; the 3 certificate ids came from an earlier get_user_details result.
    assert_eq!(not_found_calls(&trials).len(), 7);
    let values: Vec<&str> = got.iter().map(|g| g.3.as_str()).collect();
    assert_eq!(
        values,
        [
            "credit_card_5634230",
            "credit_card_5634230",
            "credit_card_7334",
            "credit_card_7334"
        ]
    );
    assert!(
        run.stderr
            .contains("4 invented reference(s) in 4 sample(s) of 2 task(s)")
    );
    let s: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["invented_references"]["references"], 4);
    assert_eq!(s["invented_references"]["by_model"], json!({}));
    // No task is accepted below --min-samples 5, so none is accepted with all failed.
    assert_eq!(s["accepted_all_failed"], 0);
}

#[test]
fn a_bad_trial_is_reported_where_it_sits_and_the_rest_decided() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut trials = trials();
    // The 38th trial's conversation is not a list; another's reward is text.
    trials[37]["traj"] = json!(5);
    trials[120]["reward"] = json!("passed");
    let path = dir.path().join("broken.json");
    std::fs::write(&path, serde_json::to_string_pretty(&trials).expect("json")).expect("write");
    let run = score(&path, dir.path(), &[]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains(": [37].traj: "), "{}", run.stderr);
    assert!(run.stderr.contains(": [120].reward: "), "{}", run.stderr);
    let bad: Vec<&Value> = run
        .records
        .iter()
        .filter(|r| r.get("error").is_some())
        .collect();
    let mut fields: Vec<&str> = (bad.iter())
        .filter_map(|r| r["error"]["field"].as_str())
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, ["[120].reward", "[37].traj"]);
    assert_eq!(run.records.len(), 50);
    assert!(
        run.stderr.contains("2 skipped (bad input)"),
        "{}",
        run.stderr
    );

    // A JSON document of another shape is refused whole, saying what is read.
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\n  \"task_id\": \"t\",\n  \"samples\": []\n}\n").expect("write");
    let run = score(&other, dir.path(), &[]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("tau2-bench results object"),
        "{}",
        run.stderr
    );
}

#[test]
fn prose_marked_parameters_are_never_divergent_paths() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The fixture's catalog marks `think.thought` and `transfer_to_human_agents.summary`
    // as prose.
    let marked = score(
        &fixture("gpt-4o-airline.json"),
        dir.path(),
        &["--min-samples", "4"],
    );
    for r in &marked.records {
        for p in r["divergent_paths"].as_array().expect("paths") {
            let path = p["path"].as_str().expect("path");
            assert!(
                !path.ends_with(".thought") && !path.ends_with(".summary"),
                "{}: {path}",
                r["task_id"]
            );
        }
    }
    assert!(!marked.stderr.contains("$.thought"), "{}", marked.stderr);

    // Unmarked, the same trials say where prose keeps tasks apart, and how to mark it.
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("catalog.json")).expect("catalog"))
            .expect("catalog is JSON");
    let plain = catalog
        .to_string()
        .replace(r#","x-plangate":{"canon":["prose"]}"#, "");
    assert!(!plain.contains("prose"), "the hints are removed");
    let plain_path = dir.path().join("plain.json");
    std::fs::write(&plain_path, plain).expect("write");
    let plain = score_with(
        &plain_path,
        &fixture("gpt-4o-airline.json"),
        dir.path(),
        &["--min-samples", "4"],
    );
    let stderr = &plain.stderr;
    assert_eq!(stderr.matches("looks like prose").count(), 1, "{stderr}");
    assert!(stderr.contains(r#"tool "think" $.thought"#), "{stderr}");
    assert!(
        stderr.contains(r#"tool "transfer_to_human_agents" $.summary"#),
        "{stderr}"
    );
    let accepted = |records: &[Value]| {
        (records.iter())
            .filter(|r| r["decision"] == "accept")
            .count()
    };
    assert!(
        accepted(&marked.records) > accepted(&plain.records),
        "marking prose lets agreeing plans accept"
    );
}
