//! The warm gate behind `plangate serve`, on the seed world: `/v1/eval` answers what
//! `plangate eval --epoch M` writes for each task alone; a call that runs out of fuel
//! is that call's outcome; fresh epochs, `--write-epoch` and the replayed epoch's 409;
//! a witness found by one request holds for the later ones; a live mount that changes
//! during a request unfixes that request only; and the proxy executes a
//! step's calls, so agreement on an invented ID is rejected before the client sees it.
//! Every server stops at the end of its test.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::eval::{catalog_copy, seed_catalog};
use crate::exit;
use crate::serve::{Recorded, Serving, chat, http};
use crate::tools::{build_tools, live_copy, repo, writer};

const PLANS: &str = "tests/e2e/cases/eval/plans.jsonl";

/// `plangate eval` of `line` alone in the epoch `manifest`: its one record.
fn eval_alone(catalog: &Path, manifest: &Path, line: &str, dir: &Path) -> String {
    let samples = dir.join("one.jsonl");
    std::fs::write(&samples, format!("{line}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .arg("eval")
        .args(["--catalog".as_ref(), catalog.as_os_str()])
        .args(["--samples".as_ref(), samples.as_os_str()])
        .args(["--epoch".as_ref(), manifest.as_os_str()])
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    stdout.trim_end().to_string()
}

/// Pins an epoch for `catalog` with `plangate epoch`.
fn pin(catalog: &Path, manifest: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .arg("epoch")
        .args(["--catalog".as_ref(), catalog.as_os_str()])
        .args(["--out".as_ref(), manifest.as_os_str()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Each `plans.jsonl` task posted alone answers, byte for byte, the record `plangate
/// eval --epoch M` writes for that task alone; a bad line is a 400 with the bad-line
/// record; a replayed epoch is never re-pinned (409); health names the epoch and every
/// tool's probe status; `--out` holds every record answered.
#[test]
fn eval_answers_what_eval_writes_for_each_task_alone() {
    build_tools();
    let dir = tempfile::tempdir().unwrap();
    let catalog = seed_catalog();
    let manifest = dir.path().join("epoch.json");
    pin(&catalog, &manifest);
    let plans = std::fs::read_to_string(repo().join(PLANS)).unwrap();
    let lines: Vec<&str> = plans.lines().filter(|l| !l.trim().is_empty()).collect();
    let want: Vec<String> = lines
        .iter()
        .map(|l| eval_alone(&catalog, &manifest, l, dir.path()))
        .collect();
    let out = dir.path().join("served.jsonl");
    let server = Serving::start(
        &[
            "--catalog",
            catalog.to_str().unwrap(),
            "--epoch",
            manifest.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    let verdicts: Vec<String> = lines
        .iter()
        .zip(&want)
        .map(|(line, want)| {
            let r = server.post("/v1/eval", line);
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(&r.body, want, "{line}");
            r.json()["decision"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(verdicts.contains(&"accept".to_string()), "{verdicts:?}");
    assert!(verdicts.contains(&"reject".to_string()), "{verdicts:?}");
    let first: Value = serde_json::from_str(&want[0]).unwrap();
    let bad = server.post(
        "/v1/eval",
        r#"{"task_id":"t","samples":[{"calls":[{"tool":7,"arguments":{}}]}]}"#,
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    let e = bad.json();
    assert_eq!((&e["line"], &e["task_id"]), (&json!(1), &json!("t")));
    assert_eq!(e["error"]["kind"], "input");
    assert!(
        e["error"]["field"]
            .as_str()
            .unwrap()
            .starts_with("samples[0].calls[0]"),
        "{e}"
    );
    let renew = server.post("/v1/epoch", "");
    assert_eq!(renew.status, 409, "{}", renew.body);
    assert_eq!(renew.json()["error"]["kind"], "replaying_epoch");
    let health = http(&server.addr, "GET", "/v1/health", &[], b"").json();
    assert_eq!(health["epoch_id"], first["epoch_id"]);
    assert_eq!(health["replaying"], true);
    let tools = health["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 12);
    let get_user = tools.iter().find(|t| t["name"] == "get_user").unwrap();
    assert_eq!(
        (&get_user["probed"], &get_user["verified"]),
        (&json!(true), &json!(true))
    );
    let metrics = http(&server.addr, "GET", "/metrics", &[], b"").body;
    assert!(
        metrics.contains(r#"plangate_calls_executed_total{tool="get_user",outcome="exit:0"}"#),
        "{metrics}"
    );
    assert!(
        metrics.contains("plangate_epochs_pinned_total 1"),
        "{metrics}"
    );
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        written,
        want.iter().map(|l| format!("{l}\n")).collect::<String>()
    );
}

/// A call that runs out of fuel (`--fuel` as `eval` takes it) is that call's outcome:
/// the request still answers, and the metrics count the outcome. `POST /v1/epoch` pins
/// a fresh epoch and probes again; `--write-epoch` keeps the current manifest (mode
/// 0600) and the retired one beside it; `--epoch-ttl-s` with `--epoch` is refused.
#[test]
fn fuel_outcomes_and_fresh_epochs() {
    build_tools();
    let dir = tempfile::tempdir().unwrap();
    let catalog = seed_catalog();
    let written = dir.path().join("current.json");
    let server = Serving::start(
        &[
            "--catalog",
            catalog.to_str().unwrap(),
            "--fuel",
            "2000",
            "--probe-runs",
            "0",
            "--write-epoch",
            written.to_str().unwrap(),
        ],
        &[],
    );
    let plans = std::fs::read_to_string(repo().join(PLANS)).unwrap();
    let r = server.post("/v1/eval", plans.lines().next().unwrap());
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.json();
    assert_eq!(d["task_id"], "user-ok");
    let metrics = http(&server.addr, "GET", "/metrics", &[], b"").body;
    assert!(
        metrics
            .contains(r#"plangate_calls_executed_total{tool="get_user",outcome="out_of_fuel"} 5"#),
        "{metrics}"
    );
    let first = d["epoch_id"].as_str().unwrap().to_string();
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&written).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let before = std::fs::read_to_string(&written).unwrap();
    let renewed = server.post("/v1/epoch", "");
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    let fresh = renewed.json()["epoch_id"].as_str().unwrap().to_string();
    assert_ne!(fresh, first);
    assert_eq!(renewed.json()["retired"], first.as_str());
    let health = http(&server.addr, "GET", "/v1/health", &[], b"").json();
    assert_eq!(health["epoch_id"], fresh.as_str());
    assert_eq!(health["epochs_pinned"], 2);
    let again = server
        .post("/v1/eval", plans.lines().next().unwrap())
        .json();
    assert_eq!(again["epoch_id"], fresh.as_str());
    assert_ne!(std::fs::read_to_string(&written).unwrap(), before);
    let retired = dir.path().join(format!("current.json.{}", &first[..12]));
    assert!(retired.is_file(), "{} is missing", retired.display());
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    let refused = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args([
            "serve",
            "--catalog",
            catalog.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--epoch", written.to_str().unwrap(), "--epoch-ttl-s", "5"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(exit::USAGE));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--epoch-ttl-s"));
}

/// A copy of the seed catalog in `dir` whose `search_index` reads the index of the live
/// copy `live`.
fn index_at(dir: &Path, live: &Path) -> std::path::PathBuf {
    catalog_copy(dir, |tools| {
        let m = &mut tools.get_mut("search_index").expect("search_index")["mounts"][0];
        m["host"] = Value::String(live.join("index").display().to_string());
    })
}

/// One query to `search_index` (declared deterministic, its index live) is accepted;
/// the index then gains a segment, and the same query answers otherwise: a
/// determinism witness. The tool is quarantined for every later request (the repeated
/// query and a new one defer), and health says so; the answer given first stands.
#[test]
fn a_witness_found_by_one_request_holds_for_the_later_ones() {
    build_tools();
    let dir = tempfile::tempdir().unwrap();
    let live = live_copy();
    let catalog = index_at(dir.path(), live.path());
    let server = Serving::start(&["--catalog", catalog.to_str().unwrap()], &[]);
    let search = |id: &str, query: &str| {
        let call = json!({"calls": [{"tool": "search_index", "arguments": {"query": query}}]});
        json!({"task_id": id, "samples": vec![call; 5]}).to_string()
    };
    let first = server.post("/v1/eval", &search("before", "refund"));
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.json()["decision"], "accept", "{}", first.body);
    writer(live.path(), &["append-segment"]);
    let after = server.post("/v1/eval", &search("after", "refund")).json();
    assert_eq!(after["decision"], "defer", "{after}");
    let later = server.post("/v1/eval", &search("later", "shipping")).json();
    assert_eq!(later["decision"], "defer", "{later}");
    let health = http(&server.addr, "GET", "/v1/health", &[], b"").json();
    let tool = health["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_index")
        .unwrap()
        .clone();
    assert_eq!(tool["quarantined"], true, "{tool}");
    assert!(tool["evidence"].to_string().contains("witness"), "{tool}");
    let metrics = http(&server.addr, "GET", "/metrics", &[], b"").body;
    assert!(
        metrics.contains(r#"plangate_quarantined{tool="search_index"} 1"#),
        "{metrics}"
    );
    // Each of the later request's five calls answered otherwise than the first did.
    assert!(metrics.contains("plangate_witnesses_total 5"), "{metrics}");
    let _ = server.stop();
    // With room for one call's first answer, a second query pushes the first out: the
    // drift is then not caught, as docs/design.md ("Serving") says of the bound.
    let fresh = live_copy();
    let catalog = index_at(dir.path(), fresh.path());
    let server = Serving::start(
        &[
            "--catalog",
            catalog.to_str().unwrap(),
            "--remember-calls",
            "1",
        ],
        &[],
    );
    for (id, query) in [("a", "refund"), ("b", "shipping")] {
        let r = server.post("/v1/eval", &search(id, query)).json();
        assert_eq!(r["decision"], "accept", "{r}");
    }
    writer(fresh.path(), &["append-segment"]);
    let forgotten = server.post("/v1/eval", &search("c", "refund")).json();
    assert_eq!(forgotten["decision"], "accept", "{forgotten}");
    let _ = server.stop();
}

/// `epoch_not_fixed` in a served answer means "changed while this request ran": a
/// request during which `search_index`'s live index gains segments defers with it, and a
/// request after the writer stopped does not carry it, though the index it reads is no
/// longer the one the epoch was pinned with.
#[test]
fn a_live_mount_that_changes_during_a_request_unfixes_that_request_only() {
    use std::sync::atomic::{AtomicBool, Ordering};
    build_tools();
    let dir = tempfile::tempdir().unwrap();
    let live = live_copy();
    let catalog = index_at(dir.path(), live.path());
    let server = Serving::start(&["--catalog", catalog.to_str().unwrap()], &[]);
    let queries = [
        "refund", "shipping", "approval", "orders", "labels", "business",
    ];
    let task = |id: &str| {
        let calls: Vec<Value> = queries
            .iter()
            .map(|q| json!({"tool": "search_index", "arguments": {"query": q}}))
            .collect();
        json!({"task_id": id, "samples": vec![json!({"calls": calls}); 24]}).to_string()
    };
    // The writer appends until the answer is in, so at least one whole append falls
    // between the request's two digests however the machine schedules them.
    let answered = AtomicBool::new(false);
    let during = std::thread::scope(|s| {
        let asked = s.spawn(|| {
            let r = server.post("/v1/eval", &task("during"));
            answered.store(true, Ordering::SeqCst);
            r
        });
        let mut appended = 0;
        while !answered.load(Ordering::SeqCst) {
            writer(live.path(), &["append-segment"]);
            appended += 1;
        }
        let r = asked.join().unwrap();
        assert!(appended >= 2, "{appended} appends in all");
        r
    });
    assert_eq!(during.status, 200, "{}", during.body);
    let during = during.json();
    assert_eq!(during["decision"], "defer", "{during}");
    let reasons = during["reasons"].to_string();
    assert!(reasons.contains("epoch_not_fixed"), "{during}");
    let after = server.post("/v1/eval", &task("after"));
    assert_eq!(after.status, 200, "{}", after.body);
    let after = after.json();
    assert!(
        !after["reasons"].to_string().contains("epoch_not_fixed"),
        "{after}"
    );
    let _ = server.stop();
}

/// A Chat Completions step over the seed world's tools.
fn tools_offered() -> Value {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(seed_catalog()).unwrap()).unwrap();
    doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {"name": t["name"],
                "description": t["description"], "parameters": t["parameters"]}})
        })
        .collect()
}

/// `n` choices each calling `tool` with `args`.
fn choices(n: usize, tool: &str, args: &Value) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"index": i, "finish_reason": "tool_calls", "message": {"role": "assistant",
                "content": null, "tool_calls": [{"id": format!("call_{i}"), "type": "function",
                "function": {"name": tool, "arguments": args.to_string()}}]}})
        })
        .collect()
}

/// The proxy executes: six choices that agree on an invented `u_0999` for `get_user`
/// (verified, `must_exist`) are rejected `referential_miss` before the client sees them
/// (agreement alone would accept); the same step after a conversation whose earlier
/// tool result holds `u_0999` only defers; a step on a tool misdeclared deterministic,
/// deferred for its quarantine, is executed again in a fully pinned epoch and its
/// record carries `history`; a tool only the request offers is judged on its arguments.
#[test]
fn the_proxy_executes_a_steps_calls() {
    build_tools();
    let dir = tempfile::tempdir().unwrap();
    let catalog = catalog_copy(dir.path(), |tools| {
        tools.get_mut("random_sample").expect("random_sample")["deterministic"] = json!(true);
    });
    let invented = choices(6, "get_user", &json!({"user_id": "u_0999"}));
    let random = choices(6, "random_sample", &json!({"collection": "users", "k": 3}));
    let mail = choices(6, "send_email", &json!({"to": "ada@example.com"}));
    let upstream = Recorded::start(
        BTreeMap::from([
            ("invented".to_string(), invented.clone()),
            ("seen before".to_string(), invented),
            ("random".to_string(), random),
            ("mail".to_string(), mail),
        ]),
        6,
    );
    let url = upstream.url();
    let server = Serving::start(
        &["--catalog", catalog.to_str().unwrap(), "--upstream", &url],
        &[],
    );
    let tools = tools_offered();
    let rejected = server.post("/v1/chat/completions", &chat("invented", &tools, json!({})));
    assert_eq!(rejected.status, 200, "{}", rejected.body);
    assert_eq!(rejected.headers["x-plangate-decision"], "reject");
    let r = rejected.json();
    assert!(
        r["choices"][0]["message"].get("tool_calls").is_none(),
        "{r}"
    );
    assert_eq!(r["plangate"]["reasons"], json!(["referential_miss"]), "{r}");
    assert!(r["plangate"]["epoch_id"].is_string(), "{r}");
    let earlier = json!({"messages": [
        {"role": "user", "content": "create an account"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c0", "type": "function",
            "function": {"name": "create_user", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c0", "content": "{\"user_id\": \"u_0999\"}"},
        {"role": "user", "content": "seen before"}]});
    let deferred = server.post("/v1/chat/completions", &chat("", &tools, earlier));
    assert_eq!(deferred.status, 200, "{}", deferred.body);
    assert_eq!(
        deferred.headers["x-plangate-decision"], "defer",
        "{}",
        deferred.body
    );
    let retried = server.post("/v1/chat/completions", &chat("random", &tools, json!({})));
    assert_eq!(retried.status, 200, "{}", retried.body);
    let record = &retried.json()["plangate"];
    let history = record["history"]
        .as_array()
        .unwrap_or_else(|| panic!("{record}"));
    assert_eq!(history.len(), 1, "{record}");
    assert_eq!(history[0]["decision"], "defer", "{record}");
    assert_ne!(history[0]["epoch_id"], record["epoch_id"], "{record}");
    assert_eq!(record["decision"], "accept", "{record}");
    // A tool only the request offers runs nowhere: judged on its arguments, accepted
    // when the choices agree, as without a warm gate.
    let mut offered = tools.as_array().unwrap().clone();
    offered.push(
        json!({"type": "function", "function": {"name": "send_email",
        "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}}),
    );
    let mailed = server.post(
        "/v1/chat/completions",
        &chat("mail", &Value::Array(offered), json!({})),
    );
    assert_eq!(mailed.status, 200, "{}", mailed.body);
    let m = mailed.json();
    assert_eq!(m["plangate"]["decision"], "accept", "{m}");
    assert_eq!(
        m["plangate"]["reasons"],
        json!(["arguments_agree", "no_deterministic_step"]),
        "{m}"
    );
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
}
