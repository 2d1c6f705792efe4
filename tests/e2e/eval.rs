//! `plangate eval` end to end: the built binary over the seed world's real tools
//! (examples/seed-world), with plans and expectations kept as files in
//! tests/e2e/cases/eval/. Covers the input formats, rejection of fabricated arguments,
//! quarantine by probe, by witness and by an earlier run, `$from` chains, resolved IDs,
//! live sources, JUnit, exit codes and replay under one epoch.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::exit;
use crate::tools::{build_tools, live_copy, repo, world, writer};

pub(crate) fn cases() -> PathBuf {
    repo().join("tests/e2e/cases/eval")
}

pub(crate) fn seed_catalog() -> PathBuf {
    world().join("catalog.json")
}

/// What one run of the binary left behind.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// stdout as JSON lines.
    pub(crate) fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect()
    }

    /// Decisions by task ID.
    fn by_task(&self) -> BTreeMap<String, Value> {
        self.lines()
            .into_iter()
            .filter(|d| d.get("decision").is_some())
            .map(|d| (d["task_id"].as_str().expect("task_id").to_string(), d))
            .collect()
    }
}

/// Runs `plangate <args>` once the tools are built.
pub(crate) fn plangate<S: AsRef<OsStr>>(args: &[S]) -> Run {
    build_tools();
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(args)
        .output()
        .expect("plangate runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn eval(catalog: &Path, samples: &str, extra: &[&OsStr]) -> Run {
    let mut args: Vec<&OsStr> = vec![
        "eval".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--samples".as_ref(),
    ];
    let samples = cases().join(samples);
    args.push(samples.as_os_str());
    args.extend_from_slice(extra);
    plangate(&args)
}

/// `eval` over the seed world with `--summary-json`, and the summary it wrote.
fn eval_summary(samples: &str, extra: &[&OsStr]) -> (Run, Value) {
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let mut args: Vec<&OsStr> = vec!["--summary-json".as_ref(), summary.as_os_str()];
    args.extend_from_slice(extra);
    let run = eval(&seed_catalog(), samples, &args);
    let written = read_json(&summary);
    (run, written)
}

pub(crate) fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).expect("file written"))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A copy of the seed world's catalog in `dir`, paths made absolute, then `edit`ed
/// (tool name -> entry), so a test can change one declaration or remount live state.
pub(crate) fn catalog_copy(dir: &Path, edit: impl FnOnce(&mut BTreeMap<String, Value>)) -> PathBuf {
    let mut doc = read_json(&seed_catalog());
    let base = world();
    let mut tools: BTreeMap<String, Value> = BTreeMap::new();
    let mut order = Vec::new();
    for t in doc["tools"].as_array_mut().expect("tools") {
        let module = base.join(t["module"].as_str().expect("module"));
        t["module"] = Value::String(module.display().to_string());
        for m in t["mounts"].as_array_mut().expect("mounts") {
            let host = base.join(m["host"].as_str().expect("host"));
            m["host"] = Value::String(host.display().to_string());
        }
        let name = t["name"].as_str().expect("name").to_string();
        order.push(name.clone());
        tools.insert(name, t.clone());
    }
    edit(&mut tools);
    doc["tools"] = Value::Array(order.iter().filter_map(|n| tools.remove(n)).collect());
    let path = dir.join("catalog.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("JSON"))
        .expect("write catalog");
    path
}

fn expect_decisions(run: &Run, expect_file: &str) {
    let expect = read_json(&cases().join(expect_file));
    let got = run.by_task();
    let expect = expect.as_object().expect("task_id -> expectation");
    assert_eq!(got.len(), expect.len(), "{}", run.stdout);
    for (task, want) in expect {
        let d = got
            .get(task)
            .unwrap_or_else(|| panic!("no decision for {task}"));
        assert_eq!(
            (&d["decision"], &d["reasons"]),
            (&want["decision"], &want["reasons"]),
            "{task}: {d}"
        );
    }
}

#[test]
fn every_input_format_decides_like_the_native_one() {
    let native = eval(&seed_catalog(), "plans.jsonl", &[]);
    assert_eq!(
        native.code,
        exit::REJECT,
        "rejects exit 1: {}",
        native.stderr
    );
    expect_decisions(&native, "plans.expect.json");
    for n in native.lines() {
        assert_eq!(n["epoch_id"].as_str().map(str::len), Some(64), "{n}");
    }
    for format in ["openai", "anthropic", "mcp"] {
        let run = eval(&seed_catalog(), &format!("plans.{format}.jsonl"), &[]);
        assert_eq!(run.code, native.code, "{format}: {}", run.stderr);
        assert_eq!(run.lines(), native.lines(), "{format} decides differently");
    }
}

/// The naive scorer beside the gate on executed tasks: on by itself for labelled
/// tasks, asked for with `--baseline naive` otherwise. On the labelled plans it rejects
/// a correct plan whose SKU is spelled two ways; the gate rejects none of them.
#[test]
fn the_naive_baseline_is_compared_on_executed_tasks() {
    let (run, summary) = eval_summary("plans.jsonl", &[]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let b = &summary["baseline"];
    assert_eq!((&b["tasks"], &b["labelled"]), (&8.into(), &8.into()), "{b}");
    assert_eq!(
        (&b["gate_rejected"], &b["gate_rejected_correct"]),
        (&3.into(), &0.into()),
        "{b}"
    );
    assert!(b["naive_rejected_correct"].as_u64() >= Some(1), "{b}");
    assert!(
        b["naive_rejected"].as_u64() > b["gate_rejected"].as_u64(),
        "{b}"
    );
    assert!(
        run.stderr
            .contains("8 tasks (8 labelled): gate rejected 3, 0 of them labelled correct"),
        "{}",
        run.stderr
    );

    // Unlabelled tasks: only when asked for, and then without false-positive shares.
    let (quiet, summary) = eval_summary("defers.jsonl", &[]);
    assert!(summary["baseline"].is_null(), "{}", quiet.stderr);
    let (asked, summary) = eval_summary("defers.jsonl", &["--baseline".as_ref(), "naive".as_ref()]);
    let b = &summary["baseline"];
    assert_eq!(b["labelled"], 0, "{b}");
    assert_eq!(b["tasks"].as_u64(), Some(asked.lines().len() as u64), "{b}");
    assert!(
        asked.stderr.contains("naive scorer rejected"),
        "{}",
        asked.stderr
    );
}

#[test]
fn openai_arguments_that_are_not_json_spoil_one_sample_not_the_task() {
    let dir = tempfile::tempdir().expect("temp dir");
    let good = r#"{"type":"function","function":{"name":"get_user","arguments":"{\"user_id\":\"u_0001\"}"}}"#;
    let bad =
        r#"{"type":"function","function":{"name":"get_user","arguments":"{\"user_id\": u_0001"}}"#;
    let sample = |tc: &str| format!(r#"{{"role":"assistant","tool_calls":[{tc}]}}"#);
    let line = format!(
        r#"{{"task_id":"openai-malformed","samples":[{},{},{},{},{}]}}"#,
        sample(good),
        sample(good),
        sample(good),
        sample(good),
        sample(bad)
    );
    let samples = dir.path().join("malformed.jsonl");
    std::fs::write(&samples, line + "\n").expect("write samples");
    let run = plangate(&[
        "eval".as_ref(),
        "--catalog".as_ref(),
        seed_catalog().as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let d = &run.lines()[0];
    assert_eq!(d["decision"], "accept", "4 of 5 agree: {d}");
    assert_eq!(d["arg_agreement"]["count"], 4);
    assert_eq!(d["malformed"][0]["sample"], 4, "{d}");
    let why = d["malformed"][0]["problems"][0]
        .as_str()
        .expect("a problem");
    assert!(why.contains("not JSON"), "{why}");
}

#[test]
fn an_earlier_quarantine_turns_fabrications_on_those_tools_into_defers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let health = dir.path().join("health.json");
    let run = eval(
        &seed_catalog(),
        "plans.jsonl",
        &[
            "--quarantine".as_ref(),
            cases().join("quarantine.json").as_os_str(),
            "--tool-health".as_ref(),
            health.as_os_str(),
        ],
    );
    let d = run.by_task();
    for task in ["user-fabricated", "path-fabricated"] {
        assert_eq!(d[task]["decision"], "defer", "{task}: {}", d[task]);
        assert_eq!(d[task]["reasons"], serde_json::json!(["tool_quarantined"]));
    }
    // A fabricated tool name is a hallucination whatever the tools' health.
    assert_eq!(d["unknown-tool"]["decision"], "reject");
    assert_eq!(run.code, exit::REJECT);
    let h = read_json(&health);
    let get_user = h["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "get_user")
        .expect("get_user health");
    assert_eq!(get_user["quarantined"], true);
    assert_eq!(get_user["evidence"][0]["kind"], "earlier_run");
    assert_eq!(get_user["evidence"][1]["kind"], "witness", "carried over");
    let list_dir = h["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "list_dir")
        .expect("list_dir health");
    assert_eq!(list_dir["quarantined"], false);
}

/// Ten samples that invent the same user: a plain run rejects the task by referential
/// miss; with get_user quarantined, its agreeing `not_found`s support nothing, so the
/// task defers. A quarantine never turns a reject into an accept.
#[test]
fn a_quarantine_never_turns_a_consistent_fabrication_into_an_accept() {
    let plain = eval(&seed_catalog(), "consistent.jsonl", &[]);
    let d = &plain.by_task()["user-invented-consistently"];
    assert_eq!(d["decision"], "reject", "{d}");
    assert_eq!(d["reasons"], serde_json::json!(["referential_miss"]), "{d}");
    let quarantined = eval(
        &seed_catalog(),
        "consistent.jsonl",
        &[
            "--quarantine".as_ref(),
            cases().join("quarantine.json").as_os_str(),
        ],
    );
    let d = &quarantined.by_task()["user-invented-consistently"];
    assert_eq!(d["decision"], "defer", "{d}");
    assert_eq!(d["reasons"], serde_json::json!(["tool_quarantined"]), "{d}");
    assert_eq!(quarantined.code, exit::OK, "{}", quarantined.stderr);
}

fn misdeclared_catalog(dir: &Path) -> PathBuf {
    // random_sample reads live randomness; declaring it deterministic is false.
    catalog_copy(dir, |tools| {
        tools.get_mut("random_sample").expect("random_sample")["deterministic"] = Value::Bool(true);
    })
}

fn tool<'a>(health: &'a Value, name: &str) -> &'a Value {
    health["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no health for {name}"))
}

#[test]
fn a_false_declaration_is_quarantined_by_the_probe_and_its_tasks_defer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = misdeclared_catalog(dir.path());
    let health = dir.path().join("health.json");
    let run = eval(
        &catalog,
        "misdeclared.jsonl",
        &["--tool-health".as_ref(), health.as_os_str()],
    );
    assert_eq!(run.code, exit::OK, "nothing rejected: {}", run.stdout);
    let h = read_json(&health);
    let r = tool(&h, "random_sample");
    assert_eq!(
        (&r["verified"], &r["quarantined"]),
        (&Value::Bool(false), &Value::Bool(true)),
        "{r}"
    );
    let e = &r["evidence"][0];
    assert_eq!(e["kind"], "probe_drift", "{e}");
    assert!(e["difference"]["byte_offset"].as_u64().is_some(), "{e}");
    let path = e["difference"]["json_path"].as_str().expect("a JSON path");
    assert!(path.starts_with("$.ids"), "{path}");
    assert_eq!(e["outputs"].as_array().map(Vec::len), Some(2));
    assert_ne!(e["outputs"][0]["stdout"], e["outputs"][1]["stdout"]);
    assert_eq!(tool(&h, "get_user")["verified"], true);

    let d = run.by_task();
    assert_eq!(d["random-fabricated"]["decision"], "defer");
    assert_eq!(
        d["random-fabricated"]["reasons"],
        serde_json::json!(["tool_quarantined"])
    );
    assert_eq!(
        d["random-agreeing"]["decision"], "defer",
        "{}",
        d["random-agreeing"]
    );
    assert_eq!(d["user-ok"]["decision"], "accept");
    assert!(
        run.stderr.contains("quarantined: random_sample"),
        "{}",
        run.stderr
    );
}

#[test]
fn without_a_probe_a_witness_in_the_batch_quarantines_the_tool() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = misdeclared_catalog(dir.path());
    let health = dir.path().join("health.json");
    let run = eval(
        &catalog,
        "misdeclared.jsonl",
        &[
            "--probe-runs".as_ref(),
            "0".as_ref(),
            "--tool-health".as_ref(),
            health.as_os_str(),
        ],
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let h = read_json(&health);
    let r = tool(&h, "random_sample");
    assert_eq!(
        (&r["probed"], &r["quarantined"]),
        (&Value::Bool(false), &Value::Bool(true)),
        "{r}"
    );
    let e = &r["evidence"][0];
    assert_eq!(e["kind"], "witness", "{e}");
    assert_eq!(e["arguments"], r#"{"collection":"users","k":5}"#);
    // Honest tools repeated too, and none of them is a witness.
    assert_eq!(tool(&h, "get_user")["quarantined"], false);
    let d = run.by_task();
    assert_eq!(
        d["random-fabricated"]["reasons"],
        serde_json::json!(["tool_quarantined"])
    );
}

#[test]
fn from_chains_run_and_id_forms_agree_after_resolution() {
    let (run, s) = eval_summary("chains.jsonl", &[]);
    // The one reject: every sample asks for order o_9999, which get_order (verified,
    // `order_id` declared must_exist) says does not exist: a consistent fabrication.
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    // chain-resolved 10 calls; the broken pointer and the failed step run step 0 only
    // (5 + 5) and record step 1 as unresolved (5 + 5 not executed); two single-step
    // tasks of 5 calls each.
    assert_eq!(s["stats"]["calls_executed"], 30, "{}", s["stats"]);
    assert_eq!(s["stats"]["calls_not_executed"], 10, "{}", s["stats"]);
    let d = run.by_task();
    assert_eq!(
        d["chain-resolved"]["decision"], "accept",
        "{}",
        d["chain-resolved"]
    );
    assert_eq!(
        d["chain-resolved"]["modal_plan"][1]["arguments"],
        serde_json::json!({"user_id": {"$from": {"pointer": "/user_id", "step": 0}}}),
        "references stay symbolic in the plan"
    );
    // An email, a handle, a bare handle and the ID itself name one account.
    let forms = &d["id-forms"];
    assert_eq!(forms["arg_agreement"]["count"], 5, "{forms}");
    assert_eq!(forms["modal_plan"][0]["arguments"]["user_id"], "u_0001");
    // get_user keeps its hint's promise (it takes every form), so results agree too.
    assert_eq!(forms["decision"], "accept", "{forms}");
    // A value that does not resolve stays apart from the rest.
    assert_eq!(
        d["id-unresolved"]["arg_agreement"]["count"], 4,
        "{}",
        d["id-unresolved"]
    );
    let failed = &d["chain-failed-step"];
    assert_eq!(failed["decision"], "reject", "{failed}");
    assert_eq!(
        failed["reasons"],
        serde_json::json!(["referential_miss"]),
        "{failed}"
    );
    let rejected: Vec<&String> = d
        .iter()
        .filter(|(_, v)| v["decision"] == "reject")
        .map(|(k, _)| k)
        .collect();
    assert_eq!(rejected, ["chain-failed-step"]);
}

fn count(xml: &str, element: &str) -> usize {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut n = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e))
                if e.name().0 == element =>
            {
                n += 1;
            }
            Ok(quick_xml::events::Event::Eof) => return n,
            Ok(_) => {}
            Err(e) => panic!("the JUnit file is not XML: {e}"),
        }
    }
}

#[test]
fn junit_parses_and_exit_codes_follow_the_contract() {
    let dir = tempfile::tempdir().expect("temp dir");
    let junit = dir.path().join("junit.xml");
    let run = eval(
        &seed_catalog(),
        "plans.jsonl",
        &["--junit".as_ref(), junit.as_os_str()],
    );
    assert_eq!(run.code, exit::REJECT, "any reject exits 1");
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    let decisions = run.lines();
    let of = |v: &str| decisions.iter().filter(|d| d["decision"] == v).count();
    assert_eq!(count(&xml, "testcase"), decisions.len());
    assert_eq!(count(&xml, "failure"), of("reject"));
    assert_eq!(count(&xml, "skipped"), of("defer"));
    assert!(
        xml.contains("fabricated_arguments"),
        "reasons are in the report"
    );

    // Accepts and defers only: 0.
    let junit2 = dir.path().join("junit2.xml");
    let ok = eval(
        &seed_catalog(),
        "defers.jsonl",
        &["--junit".as_ref(), junit2.as_os_str()],
    );
    assert_eq!(ok.code, exit::OK, "{}", ok.stderr);
    let xml2 = std::fs::read_to_string(&junit2).expect("junit written");
    let defers = ok
        .lines()
        .iter()
        .filter(|d| d["decision"] == "defer")
        .count();
    assert!(defers > 0);
    assert_eq!(count(&xml2, "skipped"), defers);
    assert_eq!(count(&xml2, "failure"), 0);

    // A line that does not parse: reported and skipped, the rest decided, exit 2.
    let bad = eval(&seed_catalog(), "bad-line.jsonl", &[]);
    assert_eq!(bad.code, exit::USAGE, "{}", bad.stderr);
    let lines = bad.lines();
    assert_eq!(lines[0]["decision"], "accept");
    assert_eq!(lines[1]["line"], 2);
    assert_eq!(lines[1]["error"]["kind"], "input");
    assert!(bad.stderr.contains(":2:"), "{}", bad.stderr);

    // Usage and input errors: 2.
    let missing = plangate(&[
        "eval",
        "--catalog",
        "/nonexistent/catalog.json",
        "--samples",
        "-",
    ]);
    assert_eq!(missing.code, exit::USAGE, "{}", missing.stderr);
    assert_eq!(plangate(&["eval", "--no-such-flag"]).code, exit::USAGE);
}

#[test]
fn one_epoch_replays_to_identical_decisions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("epoch.json");
    let out = |n: &str| dir.path().join(n);
    let first = eval(
        &seed_catalog(),
        "plans.jsonl",
        &[
            "--write-epoch".as_ref(),
            manifest.as_os_str(),
            "--out".as_ref(),
            out("a.jsonl").as_os_str(),
        ],
    );
    assert_eq!(first.code, exit::REJECT, "{}", first.stderr);
    for (name, jobs) in [("b.jsonl", "1"), ("c.jsonl", "7")] {
        let again = eval(
            &seed_catalog(),
            "plans.jsonl",
            &[
                "--epoch".as_ref(),
                manifest.as_os_str(),
                "--jobs".as_ref(),
                jobs.as_ref(),
                "--out".as_ref(),
                out(name).as_os_str(),
            ],
        );
        assert_eq!(again.code, exit::REJECT, "{}", again.stderr);
        let a = std::fs::read(out("a.jsonl")).expect("a");
        let b = std::fs::read(out(name)).expect("replay");
        assert!(!a.is_empty());
        assert!(a == b, "a replay under the same epoch decided differently");
    }
}

#[test]
fn a_live_source_that_changes_during_the_epoch_unfixes_it_for_its_tasks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let live = live_copy();
    let catalog = catalog_copy(dir.path(), |tools| {
        let m = &mut tools.get_mut("read_config").expect("read_config")["mounts"][0];
        m["host"] = Value::String(live.path().join("config").display().to_string());
    });
    let manifest = dir.path().join("epoch.json");
    let before = eval(
        &catalog,
        "live.jsonl",
        &["--write-epoch".as_ref(), manifest.as_os_str()],
    );
    assert_eq!(
        before.by_task()["config-flag"]["decision"],
        "accept",
        "{}",
        before.stdout
    );
    // The config reloads after the epoch was pinned: its start digest no longer holds.
    writer(live.path(), &["reload-config"]);
    let summary = dir.path().join("summary.json");
    let after = eval(
        &catalog,
        "live.jsonl",
        &[
            "--epoch".as_ref(),
            manifest.as_os_str(),
            "--summary-json".as_ref(),
            summary.as_os_str(),
        ],
    );
    let d = after.by_task();
    assert_eq!(
        d["config-flag"]["decision"], "defer",
        "{}",
        d["config-flag"]
    );
    assert_eq!(
        d["config-flag"]["reasons"],
        serde_json::json!(["epoch_not_fixed"])
    );
    assert_eq!(
        d["user-ok"]["decision"], "accept",
        "untouched by the change"
    );
    let s = read_json(&summary);
    let changed: Vec<&Value> = s["live_mounts"]
        .as_array()
        .expect("live mounts")
        .iter()
        .filter(|m| m["changed"] == true)
        .map(|m| &m["guest"])
        .collect();
    assert_eq!(changed, [&Value::String("/config".into())]);
}

#[test]
fn a_tool_without_probe_arguments_is_probed_with_the_batchs_first_call() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = catalog_copy(dir.path(), |tools| {
        let t = tools.get_mut("random_sample").expect("random_sample");
        t["deterministic"] = Value::Bool(true);
        t.as_object_mut().expect("entry").remove("probe");
    });
    let health = dir.path().join("health.json");
    let run = eval(
        &catalog,
        "misdeclared.jsonl",
        &["--tool-health".as_ref(), health.as_os_str()],
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let r = tool(&read_json(&health), "random_sample").clone();
    assert_eq!(r["probed"], true, "{r}");
    let e = &r["evidence"][0];
    assert_eq!(e["kind"], "probe_drift", "{e}");
    // The first random_sample call in input order (task random-agreeing).
    assert_eq!(e["arguments"], r#"{"collection":"users","k":5}"#);
}

/// Catalog `probe` arguments can miss what a batch exercises, so every tool declared
/// deterministic is also probed once with the first plain call the batch makes to it:
/// the run's probe calls are the catalog's plus those.
#[test]
fn every_declared_tool_is_probed_with_the_batchs_arguments_too() {
    let (run, s) = eval_summary("plans.jsonl", &[]);
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{}",
        run.stderr
    );
    let catalog = read_json(&seed_catalog());
    let declared: BTreeMap<&str, usize> = catalog["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["deterministic"] == true)
        .map(|t| {
            let probes = t["probe"].as_array().map_or(0, Vec::len);
            (t["name"].as_str().expect("name"), probes)
        })
        .collect();
    let text = std::fs::read_to_string(cases().join("plans.jsonl")).expect("plans");
    let mut called = std::collections::BTreeSet::new();
    for line in text.lines() {
        let task: Value = serde_json::from_str(line).expect("a task");
        for sample in task["samples"].as_array().into_iter().flatten() {
            for call in sample["calls"].as_array().into_iter().flatten() {
                let tool = call["tool"].as_str().unwrap_or_default();
                let plain = !call["arguments"].to_string().contains("$from");
                if plain && declared.contains_key(tool) {
                    called.insert(tool.to_string());
                }
            }
        }
    }
    assert!(!called.is_empty());
    let runs = 2;
    let want = runs * (declared.values().sum::<usize>() + called.len());
    assert_eq!(s["stats"]["probe_calls"], want, "{}", s["stats"]);
}
