//! OpenAI's Agents SDK (`openai-agents`, pinned in tests/serve/requirements.txt) runs
//! its own multi-step loop through `plangate serve --upstream`, in chat-completions
//! mode, against a recorded upstream answering N choices built from BFCL's
//! `simple_python_0` (tests/realworld/bfcl.jsonl). The SDK's own tool executor runs
//! the tool; the server's `--out` says what was decided at each step. Every server
//! stops by itself, and every run stops at the SDK's `max_turns`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::exit;
use crate::serve::{CATALOG, Recorded, Serving, bfcl, completion, last_text};

/// The recorded model: `correct` (BFCL's acceptable answers, which agree), `fabricated`
/// (its invented heights, which do not), `invented_tool` (the acceptable answers
/// calling a tool nobody offered); once a tool's result is back, a plain answer
/// quoting it.
fn agent_upstream() -> Recorded {
    let (_, correct) = bfcl("simple_python_0", "correct");
    let (_, fabricated) = bfcl("simple_python_0", "fabricated");
    let invented: Vec<Value> = correct[..6]
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["message"]["tool_calls"][0]["function"]["name"] = "calculate_triangle_volume".into();
            c
        })
        .collect();
    let steps = BTreeMap::from([
        ("correct".to_string(), correct[..6].to_vec()),
        ("fabricated".to_string(), fabricated),
        ("invented_tool".to_string(), invented),
    ]);
    let cursors = Mutex::new(BTreeMap::<String, usize>::new());
    Recorded::answering(move |request| {
        let last = request["messages"].as_array().and_then(|m| m.last());
        if last.is_some_and(|m| m["role"] == "tool") {
            let said = format!("The tool says: {}.", last_text(request));
            let prose = json!({"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": said}});
            let steps = BTreeMap::from([("tool".to_string(), vec![prose])]);
            return completion("tool", request, &steps, &cursors, 8);
        }
        completion(&last_text(request), request, &steps, &cursors, 8)
    })
}

/// Runs tests/serve/agents_client.py over `steps` through a server started with
/// `policy`; the SDK's report, and the decisions the server wrote.
fn run_agent(python: &std::ffi::OsStr, policy: &[&str], steps: &[&str]) -> (Value, Vec<Value>) {
    let upstream = agent_upstream();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("decisions.jsonl");
    let url = upstream.url();
    let mut args = vec![
        "--catalog",
        CATALOG,
        "--upstream",
        &url,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(policy);
    let server = Serving::start(&args, &[]);
    let base = format!("http://{}/v1", server.addr);
    let client_args: Vec<&str> = std::iter::once(base.as_str())
        .chain(steps.iter().copied())
        .collect();
    let report = crate::serve::run_client(python, "agents_client.py", &client_args);
    let (code, said) = server.stop();
    assert_eq!(code, exit::OK, "{said}");
    let decisions = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (report, decisions)
}

/// With `--on-defer refuse`: the agreeing step is executed by the SDK and the model
/// answers from the tool's result; the invented tool (a reject) and the invented
/// heights (a deferral) are refused, so the SDK ends the run with plangate's text and
/// its executor never runs; a streamed run parses and executes the agreeing step; an
/// upstream answering garbage is the SDK's own `APIStatusError`, a 502.
#[test]
fn the_agents_sdk_runs_its_loop_through_the_proxy() {
    let Some(python) = crate::serve::serve_python("Agents SDK") else {
        return;
    };
    let steps = [
        "correct",
        "invented_tool",
        "fabricated",
        "stream",
        "garbage",
    ];
    let (report, decisions) = run_agent(&python, &["--on-defer", "refuse"], &steps);
    let run = |name: &str| {
        report
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["step"] == name)
            .unwrap()
    };
    assert_eq!(
        run("correct")["executed"],
        json!([{"base": 10, "height": 5, "unit": "units"}]),
        "{report}"
    );
    assert_eq!(
        run("correct")["final_output"],
        "The tool says: 25.0 square units."
    );
    for refused in ["invented_tool", "fabricated"] {
        assert_eq!(run(refused)["executed"], json!([]), "{report}");
        let text = run(refused)["final_output"].as_str().unwrap();
        assert!(text.starts_with("plangate "), "{text}");
    }
    assert!(
        run("invented_tool")["final_output"]
            .as_str()
            .unwrap()
            .contains("unknown_tool")
    );
    assert!(
        run("fabricated")["final_output"]
            .as_str()
            .unwrap()
            .contains("`height`")
    );
    assert_eq!(
        run("stream")["executed"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(
        run("stream")["final_output"],
        "The tool says: 25.0 square units."
    );
    assert!(
        run("stream")["events"]
            .as_array()
            .unwrap()
            .contains(&json!("run_item_stream_event"))
    );
    assert_eq!(run("garbage")["error"]["status"], 502, "{report}");
    assert_eq!(run("garbage")["executed"], json!([]));
    let verdicts: Vec<&str> = decisions
        .iter()
        .map(|d| d["decision"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["accept", "reject", "defer", "accept"]);
}

/// With the default `--on-defer pass`, the deferred step's modal choice reaches the
/// SDK, which executes it: a deferral is the absence of evidence, and the record
/// written says it was passed on.
#[test]
fn the_agents_sdk_executes_a_deferral_passed_on() {
    let Some(python) = crate::serve::serve_python("Agents SDK") else {
        return;
    };
    let (report, decisions) = run_agent(&python, &[], &["fabricated"]);
    let run = &report[0];
    assert_eq!(run["executed"].as_array().unwrap().len(), 1, "{report}");
    assert_eq!(run["executed"][0]["base"], 10);
    assert_ne!(run["executed"][0]["height"], 5, "an invented height ran");
    assert_eq!(decisions.len(), 1);
    assert_eq!(decisions[0]["decision"], "defer");
}
