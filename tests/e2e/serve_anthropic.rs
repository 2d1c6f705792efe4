//! `plangate serve --anthropic-upstream` driven on loopback: `POST /v1/messages` in
//! front of a recorded Anthropic upstream that this file starts, answering each
//! request with the next of its recorded messages built from BFCL entries in
//! tests/realworld/ (the Messages API has no `n`: one message per request). Raw HTTP
//! checks the shapes; the official `anthropic` Python package checks that a client
//! nobody here wrote reads them. Every server stops by itself.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};

use crate::exit;
use crate::serve::{CATALOG, Recorded, Serving, bfcl, http, last_text};

/// A BFCL task's choices as Anthropic messages: a text block, then one `tool_use`
/// block per call, `stop_reason: "tool_use"`.
fn messages_of(choices: &[Value]) -> Vec<Value> {
    choices
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut content = vec![json!({"type": "text", "text": "I will compute it."})];
            for (j, call) in c["message"]["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
            {
                let input: Value =
                    serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
                content.push(json!({"type": "tool_use", "id": format!("toolu_{i}_{j}"),
                    "name": call["function"]["name"], "input": input}));
            }
            json!({"id": format!("msg_{i}"), "type": "message", "role": "assistant",
                   "model": "recorded", "content": content, "stop_reason": "tool_use",
                   "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 9}})
        })
        .collect()
}

fn prose(text: &str) -> Value {
    json!({"id": "msg_prose", "type": "message", "role": "assistant", "model": "recorded",
           "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
           "stop_sequence": null, "usage": {"input_tokens": 20, "output_tokens": 9}})
}

/// The recorded steps, by the last message's text: `correct` (BFCL's acceptable
/// answers, which agree), `fabricated` (BFCL's invented heights, which do not),
/// `invented_tool` (the acceptable answers calling a tool nobody offered), and the
/// model's answer once the tool's result (`25.0`) is back.
fn steps() -> BTreeMap<String, Vec<Value>> {
    let (_, correct) = bfcl("simple_python_0", "correct");
    let (_, fabricated) = bfcl("simple_python_0", "fabricated");
    let invented: Vec<Value> = messages_of(&correct[..6])
        .into_iter()
        .map(|mut m| {
            m["content"][1]["name"] = "calculate_triangle_volume".into();
            m
        })
        .collect();
    BTreeMap::from([
        ("correct".into(), messages_of(&correct[..6])),
        ("fabricated".into(), messages_of(&fabricated)),
        ("invented_tool".into(), invented),
        (
            "25.0".into(),
            vec![prose("The triangle's area is 25 square units.")],
        ),
        ("prose".into(), vec![prose("A triangle has three sides.")]),
    ])
}

/// An Anthropic upstream answering each request with the next recorded message of its
/// step; `garbage` and `slow` answer garbage and too late.
fn anthropic_upstream() -> Recorded {
    let steps = steps();
    let cursors = Mutex::new(BTreeMap::<String, usize>::new());
    Recorded::answering(move |request| {
        let key = last_text(request);
        match key.as_str() {
            "garbage" => "<html>not a message</html>".into(),
            "slow" => {
                std::thread::sleep(Duration::from_millis(1500));
                "{}".into()
            }
            _ => {
                let Some(all) = steps.get(&key) else {
                    return json!({"type": "error", "error": {"type": "not_found", "message": key}})
                        .to_string();
                };
                let mut cursors = cursors.lock().unwrap();
                let at = cursors.entry(key).or_default();
                *at += 1;
                all[(*at - 1) % all.len()].to_string()
            }
        }
    })
}

/// The BFCL entry's tool as Anthropic's `tools` give it.
fn tools() -> Value {
    let (tools, _) = bfcl("simple_python_0", "correct");
    Value::Array(
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                json!({"name": t["function"]["name"], "description": t["function"]["description"],
                       "input_schema": t["function"]["parameters"]})
            })
            .collect(),
    )
}

fn ask(server: &Serving, user: &str, extra: Value) -> crate::serve::Reply {
    let mut body = json!({"model": "recorded", "max_tokens": 256,
        "messages": [{"role": "user", "content": user}], "tools": tools()});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    http(
        &server.addr,
        "POST",
        "/v1/messages",
        &[
            ("x-api-key", "sk-ant-client"),
            ("anthropic-version", "2023-06-01"),
        ],
        body.to_string().as_bytes(),
    )
}

/// The agreeing step is the modal message as the upstream wrote it, N = 6 requests
/// sent with the client's key and version and without `stream`; the invented tool is
/// refused as a text block; the disagreeing step defers and, with `--on-defer refuse`,
/// is refused too; a streamed step is Anthropic's event stream; a step without tools
/// goes upstream once; garbage and a slow upstream are 502 and 504 in Anthropic's
/// error shape; the key is never on stderr.
#[test]
fn the_messages_proxy_judges_n_messages() {
    let upstream = anthropic_upstream();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--anthropic-upstream",
            &format!("http://{}", upstream.addr),
            "--on-defer",
            "refuse",
            "--upstream-timeout-ms",
            "500",
        ],
        &[],
    );
    let agreed = ask(&server, "correct", json!({"stream": false}));
    assert_eq!(agreed.status, 200, "{}", agreed.body);
    assert_eq!(agreed.headers["x-plangate-decision"], "accept");
    let a = agreed.json();
    assert_eq!(a["type"], "message");
    assert_eq!(a["stop_reason"], "tool_use");
    assert_eq!(a["content"][0]["text"], "I will compute it.");
    assert_eq!(a["content"][1]["name"], "calculate_triangle_area");
    assert_eq!(a["content"][1]["input"]["height"], 5);
    assert_eq!(a["plangate"]["decision"], "accept");
    assert_eq!(a["plangate"]["n"], 6);
    {
        let seen = upstream.requests.lock().unwrap();
        assert_eq!(seen.len(), 6, "one request per message");
        for (headers, body) in seen.iter() {
            assert_eq!(headers["x-api-key"], "sk-ant-client");
            assert_eq!(headers["anthropic-version"], "2023-06-01");
            assert!(body.get("stream").is_none(), "{body}");
            assert!(body.get("n").is_none(), "{body}");
        }
    }
    let invented = ask(&server, "invented_tool", json!({}));
    assert_eq!(invented.status, 200, "{}", invented.body);
    assert_eq!(invented.headers["x-plangate-decision"], "reject");
    let i = invented.json();
    assert_eq!(i["stop_reason"], "end_turn");
    assert_eq!(i["content"].as_array().unwrap().len(), 1);
    assert_eq!(i["content"][0]["type"], "text");
    assert!(
        i["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown_tool"),
        "{i}"
    );
    let fabricated = ask(&server, "fabricated", json!({}));
    assert_eq!(fabricated.headers["x-plangate-decision"], "defer");
    let text = fabricated.json()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    // The messages come back in any order: three of BFCL's six invented heights.
    let heights = ["424057", "968788", "643131", "912892", "435409", "539222"];
    assert!(
        text.contains("`calculate_triangle_area`'s `height`")
            && heights
                .iter()
                .filter(|h| text.contains(&format!("\"{h}\"")))
                .count()
                == 3,
        "{text}"
    );
    let streamed = ask(&server, "correct", json!({"stream": true}));
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    assert_eq!(streamed.headers["content-type"], "text/event-stream");
    let names: Vec<&str> = streamed
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert!(
        streamed.body.contains(r#""partial_json":"{\"base\":10"#),
        "{}",
        streamed.body
    );
    let before = upstream.requests.lock().unwrap().len();
    let plain = http(
        &server.addr,
        "POST",
        "/v1/messages",
        &[],
        json!({"model": "recorded", "max_tokens": 64, "temperature": 0,
               "messages": [{"role": "user", "content": "prose"}]})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(plain.status, 200, "{}", plain.body);
    assert!(!plain.headers.contains_key("x-plangate-decision"));
    assert!(plain.headers.contains_key("x-plangate-warning"));
    assert_eq!(upstream.requests.lock().unwrap().len(), before + 1);
    let garbage = ask(&server, "garbage", json!({}));
    assert_eq!(garbage.status, 502, "{}", garbage.body);
    assert_eq!(garbage.json()["type"], "error");
    assert_eq!(garbage.json()["error"]["type"], "upstream_garbage");
    let slow = ask(&server, "slow", json!({}));
    assert_eq!(slow.status, 504, "{}", slow.body);
    assert_eq!(slow.json()["error"]["type"], "upstream_timeout");
    let metrics = http(&server.addr, "GET", "/metrics", &[], b"");
    for series in [
        r#"plangate_verdicts_total{endpoint="messages",verdict="accept"} 2"#,
        r#"plangate_verdicts_total{endpoint="messages",verdict="reject"} 1"#,
        r#"plangate_requests_total{endpoint="messages",status="504"} 1"#,
    ] {
        assert!(
            metrics.body.contains(series),
            "{series} in\n{}",
            metrics.body
        );
    }
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    assert!(!stderr.contains("sk-ant-client"), "{stderr}");
}

/// With `--on-reject error` a rejected step is a 422 in Anthropic's error shape with
/// the record; `--anthropic-key-env`'s key replaces the client's `x-api-key`; without `--anthropic-upstream`, `/v1/messages` is a 404.
#[test]
fn the_messages_proxy_answers_errors_in_anthropic_shape() {
    let upstream = anthropic_upstream();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--anthropic-upstream",
            &format!("http://{}", upstream.addr),
            "--on-reject",
            "error",
            "--anthropic-key-env",
            "PLANGATE_TEST_ANTHROPIC_KEY",
        ],
        &[("PLANGATE_TEST_ANTHROPIC_KEY", "sk-ant-server")],
    );
    let r = ask(&server, "invented_tool", json!({}));
    assert_eq!(r.status, 422, "{}", r.body);
    let body = r.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "plangate_reject");
    assert_eq!(body["plangate"]["decision"], "reject");
    for (headers, _) in upstream.requests.lock().unwrap().iter() {
        assert_eq!(
            headers["x-api-key"], "sk-ant-server",
            "the server's key replaces the client's"
        );
    }
    let _ = server.stop();
    let bare = Serving::start(&["--catalog", CATALOG], &[]);
    let none = ask(&bare, "correct", json!({}));
    assert_eq!(none.status, 404, "{}", none.body);
    assert_eq!(none.json()["error"]["type"], "not_found_error");
    let _ = bare.stop();
}

/// The official `anthropic` Python package drives a task through the proxy: the
/// agreeing step's `tool_use` runs in the client's own executor and the model answers
/// from its result; the invented tool and the disagreeing step are refused as text
/// before it; `messages.stream` assembles the streamed step; a 502 is the SDK's own
/// error. Needs a Python with `anthropic` (tests/serve/requirements.txt), named by
/// `PLANGATE_SERVE_PYTHON` (scripts/test makes one); without it the test says it was
/// skipped.
#[test]
fn the_anthropic_sdk_drives_a_task_through_the_proxy() {
    let Some(python) = crate::serve::serve_python("anthropic SDK") else {
        return;
    };
    let upstream = anthropic_upstream();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--anthropic-upstream",
            &format!("http://{}", upstream.addr),
            "--on-defer",
            "refuse",
        ],
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let tools_file = dir.path().join("tools.json");
    std::fs::write(&tools_file, tools().to_string()).unwrap();
    let url = format!("http://{}", server.addr);
    let report = crate::serve::run_client(
        &python,
        "anthropic_client.py",
        &[std::ffi::OsStr::new(&url), tools_file.as_os_str()],
    );
    let steps = report["steps"].as_array().unwrap();
    let step = |name: &str| steps.iter().find(|s| s["step"] == name).unwrap();
    assert_eq!(step("agreeing")["decision"], "accept", "{report}");
    assert_eq!(step("agreeing")["tool_uses"], 1);
    assert_eq!(step("agreeing")["plangate"], "accept");
    assert_eq!(step("agreeing")["executed_so_far"], 1);
    assert_eq!(step("answer")["decision"], Value::Null, "{report}");
    assert_eq!(
        step("answer")["text"],
        "The triangle's area is 25 square units."
    );
    for refused in ["invented_tool", "fabricated"] {
        assert_eq!(step(refused)["tool_uses"], 0, "{report}");
        assert_eq!(step(refused)["stop_reason"], "end_turn");
        assert_eq!(
            step(refused)["executed_so_far"],
            1,
            "the refused step reached the executor"
        );
    }
    assert_eq!(step("invented_tool")["decision"], "reject");
    assert_eq!(step("fabricated")["decision"], "defer");
    assert_eq!(
        report["stream"]["tool_uses"],
        json!(["calculate_triangle_area"])
    );
    assert_eq!(report["stream"]["input"]["base"], 10);
    assert_eq!(report["stream"]["stop_reason"], "tool_use");
    assert_eq!(report["stream"]["plangate"], "accept");
    assert_eq!(report["error"]["status"], 502, "{report}");
    assert_eq!(report["error"]["type"], "upstream_garbage");
    assert_eq!(report["executed"].as_array().unwrap().len(), 1);
    {
        // The SDK sends its key as `x-api-key` or, in recent versions, as
        // `Authorization: Bearer`: either goes upstream as the client sent it.
        let seen = upstream.requests.lock().unwrap();
        for (h, _) in seen.iter() {
            let key = h.get("x-api-key").cloned().or_else(|| {
                h.get("authorization")
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .map(str::to_string)
            });
            assert_eq!(key.as_deref(), Some("sk-ant-test-client"), "{h:?}");
            assert!(h.contains_key("anthropic-version"), "{h:?}");
        }
    }
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    assert!(!stderr.contains("sk-ant-test-client"), "{stderr}");
}
