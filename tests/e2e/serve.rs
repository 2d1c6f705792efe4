//! `plangate serve` driven on loopback: `/v1/decide` answers what `score` writes, the
//! body limit, the token, the metrics, a graceful stop with `--out` whole, and the
//! OpenAI-compatible proxy in front of a recorded upstream (a small server this file
//! starts, answering N choices built from BFCL entries in tests/realworld/). Every
//! server here stops by itself: the recorded upstream after its deadline, `plangate
//! serve` at the end of each test.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::exit;
use crate::tools::repo;

/// One HTTP answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

/// One request on its own connection (`Connection: close`), read to the end.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before it has read the whole body.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a whole answer");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
    let body = if headers.get("transfer-encoding").map(String::as_str) == Some("chunked") {
        unchunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn unchunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// A running `plangate serve`, stopped (SIGTERM) when dropped.
pub(crate) struct Serving {
    child: Child,
    pub(crate) addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Serving {
    /// Starts the server on a port the system picks and waits for it to say where.
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Serving {
        let mut child = Command::new(env!("CARGO_BIN_EXE_plangate"))
            .current_dir(repo())
            .arg("serve")
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("plangate serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut said = String::new();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    said.push_str(&line);
                    said.push('\n');
                    if let Some(a) = line.strip_prefix("plangate: serving on http://") {
                        break a.to_string();
                    }
                }
                _ => panic!("plangate serve did not start: {said}"),
            }
        };
        let stderr = Arc::new(Mutex::new(said));
        let keep = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut s = keep.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        Serving {
            child,
            addr,
            stderr,
        }
    }

    pub(crate) fn post(&self, path: &str, body: &str) -> Reply {
        http(&self.addr, "POST", path, &[], body.as_bytes())
    }

    /// SIGTERM, then the exit code and what it said.
    pub(crate) fn stop(mut self) -> (i32, String) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        (code, self.stderr.lock().unwrap().clone())
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) const CATALOG: &str = "examples/score/catalog.json";

/// Each line of the README's example through `/v1/decide` is answered with the record
/// `plangate score` writes for it, byte for byte; a bad line is a 400 with score's
/// bad-line record; `--out` holds every decision answered once the server stopped.
#[test]
fn decide_answers_what_score_writes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("decisions.jsonl");
    let samples = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let scored = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args([
            "score",
            "--catalog",
            CATALOG,
            "--samples",
            "examples/score/samples.jsonl",
        ])
        .output()
        .unwrap();
    let want: Vec<&str> = std::str::from_utf8(&scored.stdout)
        .unwrap()
        .lines()
        .collect();
    let server = Serving::start(&["--catalog", CATALOG, "--out", out.to_str().unwrap()], &[]);
    let lines: Vec<&str> = samples.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), want.len());
    for (line, want) in lines.iter().zip(&want) {
        let r = server.post("/v1/decide", &format!("{line}\n"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body, *want);
        assert_eq!(r.headers["content-type"], "application/json");
    }
    let bad = server.post(
        "/v1/decide",
        r#"{"task_id":"t","samples":[{"calls":[{"tool":"get_user"}]}]}"#,
    );
    assert_eq!(bad.status, 400);
    let e = bad.json();
    assert_eq!(e["line"], 1);
    assert_eq!(e["task_id"], "t");
    assert_eq!(e["error"]["kind"], "input");
    assert!(
        e["error"]["field"]
            .as_str()
            .unwrap()
            .starts_with("samples[0].calls[0]"),
        "{e}"
    );
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        written,
        want.iter().map(|l| format!("{l}\n")).collect::<String>()
    );
}

/// A body posted to a path the server does not have is read before the 404, so the
/// client's kept-alive connection answers its next request (hyper closes a connection
/// whose request body has not all arrived when the answer is written).
#[test]
fn a_wrong_path_keeps_the_connection() {
    let line = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let line = line.lines().next().unwrap().to_string();
    let server = Serving::start(&["--catalog", CATALOG], &[]);
    let mut s = TcpStream::connect(&server.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut answers = BufReader::new(s.try_clone().unwrap());
    for (path, want) in [("/v1/none", 404), ("/v1/decide", 200), ("/v1/none", 404)] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n",
            server.addr,
            line.len()
        );
        // Head and body in two writes, as HTTP clients send them, the body late enough
        // that a server which answers without reading it has answered first.
        s.write_all(head.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        s.write_all(line.as_bytes()).unwrap();
        let mut status = String::new();
        answers.read_line(&mut status).unwrap();
        assert!(
            status.starts_with(&format!("HTTP/1.1 {want} ")),
            "{path}: {status:?}"
        );
        let mut length = 0;
        loop {
            let mut header = String::new();
            answers.read_line(&mut header).unwrap();
            if header.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        answers.read_exact(&mut body).unwrap();
    }
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
}

/// A body over `--max-body-bytes` is a 413 and the server goes on; without the token
/// every endpoint but health is a 401; the metrics count what was answered.
#[test]
fn limits_token_and_metrics() {
    let line = std::fs::read_to_string(repo().join("examples/score/samples.jsonl")).unwrap();
    let line = line.lines().next().unwrap().to_string();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--max-body-bytes",
            "4096",
            "--token-env",
            "PLANGATE_TEST_TOKEN",
        ],
        &[("PLANGATE_TEST_TOKEN", "s3cret")],
    );
    let auth = [("Authorization", "Bearer s3cret")];
    let big = http(
        &server.addr,
        "POST",
        "/v1/decide",
        &auth,
        &vec![b' '; 10_000],
    );
    assert_eq!(big.status, 413, "{}", big.body);
    assert_eq!(big.json()["error"]["kind"], "body_too_large");
    let no_token = server.post("/v1/decide", &line);
    assert_eq!(no_token.status, 401);
    let wrong = http(
        &server.addr,
        "POST",
        "/v1/decide",
        &[("Authorization", "Bearer s3cres")],
        line.as_bytes(),
    );
    assert_eq!(wrong.status, 401);
    let health = http(&server.addr, "GET", "/v1/health", &[], b"");
    assert_eq!(health.status, 200);
    assert_eq!(health.json()["status"], "ok");
    let ok = http(&server.addr, "POST", "/v1/decide", &auth, line.as_bytes());
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["decision"], "accept");
    let metrics = http(&server.addr, "GET", "/metrics", &auth, b"");
    assert_eq!(metrics.status, 200);
    for series in [
        r#"plangate_requests_total{endpoint="decide",status="200"} 1"#,
        r#"plangate_requests_total{endpoint="decide",status="413"} 1"#,
        r#"plangate_requests_total{endpoint="decide",status="401"} 2"#,
        r#"plangate_verdicts_total{endpoint="decide",verdict="accept"} 1"#,
        r#"plangate_reasons_total{endpoint="decide",reason="arguments_agree"} 1"#,
        "plangate_request_duration_seconds_bucket",
    ] {
        assert!(
            metrics.body.contains(series),
            "{series} in\n{}",
            metrics.body
        );
    }
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
}

/// Beyond loopback without a token, serve refuses to start.
#[test]
fn a_public_address_needs_a_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(repo())
        .args(["serve", "--catalog", CATALOG, "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(exit::USAGE));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token-env"), "{stderr}");
}

/// An output that names one of the server's inputs is refused before it serves, as
/// `eval` refuses it: `--out` on the catalog, `--write-epoch` on a module.
#[test]
fn an_output_naming_an_input_is_refused() {
    crate::tools::build_tools();
    let seed = "examples/seed-world/catalog.json";
    let module = "sandbox-tools/target/wasm32-wasip1/release/read_file.wasm";
    for (catalog, flag, path) in [(CATALOG, "--out", CATALOG), (seed, "--write-epoch", module)] {
        let before = std::fs::read(repo().join(path)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_plangate"))
            .current_dir(repo())
            .args(["serve", "--catalog", catalog, "--listen", "127.0.0.1:0"])
            .args([flag, path])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A server that took the output would serve on: stop it rather than wait.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(exit::USAGE), "{flag}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("{flag} {path} would overwrite an input")),
            "{stderr}"
        );
        assert_eq!(
            std::fs::read(repo().join(path)).unwrap(),
            before,
            "{path} untouched"
        );
    }
}

/// The Python with tests/serve/requirements.txt installed, named by
/// `PLANGATE_SERVE_PYTHON`; without it, `None`, and the test says it was skipped.
pub(crate) fn serve_python(what: &str) -> Option<std::ffi::OsString> {
    match std::env::var_os("PLANGATE_SERVE_PYTHON") {
        Some(p) if !p.is_empty() => Some(p),
        _ => {
            eprintln!(
                "{what} test SKIPPED: PLANGATE_SERVE_PYTHON is not set (a Python with tests/serve/requirements.txt; scripts/test makes one)"
            );
            None
        }
    }
}

/// Runs the client `script` (under tests/serve/) with `python` and `args`, and returns
/// the JSON report it prints; the client must exit 0.
pub(crate) fn run_client<S: AsRef<std::ffi::OsStr>>(
    python: &std::ffi::OsStr,
    script: &str,
    args: &[S],
) -> Value {
    let ran = Command::new(python)
        .arg(repo().join("tests/serve").join(script))
        .args(args)
        .output()
        .expect("run the client");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{stderr}");
    serde_json::from_slice(&ran.stdout).unwrap()
}

/// The requests a recorded upstream saw: each one's headers (names in lower case) and
/// body.
type Seen = Arc<Mutex<Vec<(BTreeMap<String, String>, Value)>>>;

/// A recorded upstream: a server on loopback that answers each request's JSON body
/// with the text its `reply` gives. It stops when the test drops it, or after two
/// minutes.
pub(crate) struct Recorded {
    pub(crate) addr: String,
    stop: Arc<AtomicBool>,
    pub(crate) requests: Seen,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Recorded {
    /// An OpenAI-compatible upstream answering each step (keyed by the last message's
    /// text) with the next of its recorded choices, at most `cap` per request whatever
    /// `n` asks, so the proxy must top up.
    pub(crate) fn start(steps: BTreeMap<String, Vec<Value>>, cap: usize) -> Recorded {
        let cursors = Mutex::new(BTreeMap::<String, usize>::new());
        Recorded::answering(move |request| {
            completion(&last_text(request), request, &steps, &cursors, cap)
        })
    }

    pub(crate) fn answering(reply: impl Fn(&Value) -> String + Send + Sync + 'static) -> Recorded {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stopping, seen) = (stop.clone(), requests.clone());
        let reply = Arc::new(reply);
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stopping.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (reply, seen) = (reply.clone(), seen.clone());
                        std::thread::spawn(move || answer(conn, &*reply, &seen));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Recorded {
            addr,
            stop,
            requests,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

/// Reads one request, notes it, and answers what `reply` gives for its body.
fn answer(
    mut conn: TcpStream,
    reply: &(dyn Fn(&Value) -> String + Send + Sync),
    seen: &Mutex<Vec<(BTreeMap<String, String>, Value)>>,
) {
    conn.set_nonblocking(false).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    if headers.is_empty() {
        // A connection closed before its request: a proxy that gave up on the step.
        return;
    }
    let length = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().unwrap().push((headers, request.clone()));
    let reply = reply(&request);
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
        reply.len()
    );
}

/// The text of a request's last message: its content when that is a string, else the
/// text of its first block that has one (a tool result's content included).
pub(crate) fn last_text(request: &Value) -> String {
    let Some(last) = request["messages"].as_array().and_then(|m| m.last()) else {
        return String::new();
    };
    match &last["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b["text"].as_str().or_else(|| b["content"].as_str()))
            .unwrap_or_default()
            .to_string(),
        _ => String::new(),
    }
}

/// A recorded completion for the step `key` (the next of its choices, at most `cap`);
/// `garbage` and `slow` are an upstream answering garbage and one too slow.
pub(crate) fn completion(
    key: &str,
    request: &Value,
    steps: &BTreeMap<String, Vec<Value>>,
    cursors: &Mutex<BTreeMap<String, usize>>,
    cap: usize,
) -> String {
    match key {
        "garbage" => "<html>not a completion</html>".to_string(),
        "slow" => {
            std::thread::sleep(Duration::from_millis(1500));
            "{}".to_string()
        }
        _ => {
            let all = steps.get(key).cloned().unwrap_or_default();
            let n = request["n"].as_u64().unwrap_or(1) as usize;
            let mut cursors = cursors.lock().unwrap();
            let at = cursors.entry(key.to_string()).or_default();
            let take = n.min(cap);
            let choices: Vec<Value> = (0..take)
                .map(|i| {
                    let mut c = all[(*at + i) % all.len().max(1)].clone();
                    c["index"] = i.into();
                    c
                })
                .collect();
            *at += take;
            json!({"id": "chatcmpl-recorded", "object": "chat.completion", "created": 1,
                   "model": "recorded", "choices": choices,
                   "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
            .to_string()
        }
    }
}

/// The BFCL entry `id`: its tools as a Chat Completions request gives them, and the
/// choices of its task `which` (`correct` or `fabricated`): one assistant message
/// with the sample's calls each.
pub(crate) fn bfcl(id: &str, which: &str) -> (Value, Vec<Value>) {
    let text = std::fs::read_to_string(repo().join("tests/realworld/bfcl.jsonl")).unwrap();
    let entry: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["id"] == id)
        .unwrap();
    let tools: Vec<Value> = entry["catalogs"]["openai_responses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
            "name": t["name"], "description": t["description"], "parameters": t["parameters"]}})
        })
        .collect();
    let task = entry["tasks"]["native"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task_id"] == format!("{id}/{which}"))
        .unwrap();
    let choices = task["samples"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let calls: Vec<Value> = s["calls"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    json!({"id": format!("call_{i}_{j}"), "type": "function",
                    "function": {"name": c["tool"], "arguments": c["arguments"].to_string()}})
                })
                .collect();
            json!({"index": i, "finish_reason": "tool_calls",
                   "message": {"role": "assistant", "content": null, "tool_calls": calls}})
        })
        .collect();
    (Value::Array(tools), choices)
}

pub(crate) fn chat(user: &str, tools: &Value, extra: Value) -> String {
    let mut body = json!({"model": "recorded", "temperature": 1.0,
        "messages": [{"role": "user", "content": user}], "tools": tools});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    body.to_string()
}

/// The proxy over BFCL's own entries, whose tools only the request declares (judged on
/// their arguments, never rejected): the acceptable answers pass as the modal choice,
/// the invented ones defer and are refused as configured, a streamed step parses as
/// OpenAI's chunks, and the upstream that returns 4 choices at a time is topped up to 6.
#[test]
fn the_proxy_judges_n_choices_from_a_recorded_upstream() {
    let (tools, correct) = bfcl("simple_python_0", "correct");
    let (_, fabricated) = bfcl("simple_python_0", "fabricated");
    let upstream = Recorded::start(
        BTreeMap::from([
            ("correct".to_string(), correct[..6].to_vec()),
            ("fabricated".to_string(), fabricated),
            (
                "prose".to_string(),
                vec![json!({"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "A triangle of base 10 and height 5 has area 25."}})],
            ),
        ]),
        4,
    );
    let url = upstream.url();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--upstream",
            &url,
            "--on-defer",
            "refuse",
        ],
        &[],
    );
    let agreed = server.post("/v1/chat/completions", &chat("correct", &tools, json!({})));
    assert_eq!(agreed.status, 200, "{}", agreed.body);
    assert_eq!(agreed.headers["x-plangate-decision"], "accept");
    let a = agreed.json();
    assert_eq!(a["choices"].as_array().unwrap().len(), 1);
    assert_eq!(
        a["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "calculate_triangle_area"
    );
    assert_eq!(a["plangate"]["decision"], "accept");
    assert_eq!(a["plangate"]["n"], 6, "4 from n, 2 topped up: {a}");
    {
        let seen = upstream.requests.lock().unwrap();
        assert_eq!(seen[0].1["n"], 6);
        assert_eq!(seen.iter().filter(|(_, r)| r["n"] == 1).count(), 2);
    }
    let refused = server.post(
        "/v1/chat/completions",
        &chat("fabricated", &tools, json!({})),
    );
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert_eq!(refused.headers["x-plangate-decision"], "defer");
    let r = refused.json();
    let choice = &r["choices"][0];
    assert_eq!(choice["finish_reason"], "stop");
    assert!(choice["message"].get("tool_calls").is_none());
    let content = choice["message"]["content"].as_str().unwrap();
    assert!(
        content.contains("`calculate_triangle_area`'s `height`"),
        "{content}"
    );
    assert!(content.contains("\"424057\""), "{content}");
    let streamed = server.post(
        "/v1/chat/completions",
        &chat("correct", &tools, json!({"stream": true})),
    );
    assert_eq!(streamed.status, 200);
    assert_eq!(streamed.headers["content-type"], "text/event-stream");
    let events: Vec<&str> = streamed
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let first: Value = serde_json::from_str(events[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(
        first["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "calculate_triangle_area"
    );
    let prose = server.post(
        "/v1/chat/completions",
        &chat("prose", &tools, json!({"temperature": 0})),
    );
    assert_eq!(prose.status, 200, "{}", prose.body);
    assert!(prose.headers.contains_key("x-plangate-warning"));
    assert!(!prose.headers.contains_key("x-plangate-decision"));
    assert!(
        prose.json()["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("area 25")
    );
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    assert!(stderr.contains("temperature 0"), "{stderr}");
}

/// An upstream that answers garbage is a 502, one too slow a 504, one not there a 502:
/// each a JSON error, never a step passed on unjudged; with `--on-defer error` a
/// deferral is a 409 with the record.
#[test]
fn the_proxy_never_passes_an_unjudged_step() {
    let (tools, fabricated) = bfcl("simple_python_0", "fabricated");
    let upstream = Recorded::start(BTreeMap::from([("fabricated".to_string(), fabricated)]), 8);
    let url = upstream.url();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--upstream",
            &url,
            "--upstream-timeout-ms",
            "500",
            "--on-defer",
            "error",
        ],
        &[],
    );
    let garbage = server.post("/v1/chat/completions", &chat("garbage", &tools, json!({})));
    assert_eq!(garbage.status, 502, "{}", garbage.body);
    assert_eq!(garbage.json()["error"]["type"], "upstream_garbage");
    let slow = server.post("/v1/chat/completions", &chat("slow", &tools, json!({})));
    assert_eq!(slow.status, 504, "{}", slow.body);
    let deferred = server.post(
        "/v1/chat/completions",
        &chat("fabricated", &tools, json!({})),
    );
    assert_eq!(deferred.status, 409, "{}", deferred.body);
    let d = deferred.json();
    assert_eq!(d["plangate"]["decision"], "defer");
    assert!(d["error"]["message"].as_str().unwrap().contains("defer"));
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
    drop(upstream);
    // Nothing listens on a port the system just gave back.
    let gone = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let down_url = format!("http://{gone}/v1");
    let server = Serving::start(&["--catalog", CATALOG, "--upstream", &down_url], &[]);
    let down = server.post("/v1/chat/completions", &chat("x", &tools, json!({})));
    assert_eq!(down.status, 502, "{}", down.body);
    assert_eq!(down.json()["error"]["type"], "upstream_unreachable");
    let metrics = http(&server.addr, "GET", "/metrics", &[], b"");
    assert!(
        metrics
            .body
            .contains(r#"plangate_upstream_errors_total{kind="upstream_unreachable"} 1"#),
        "{}",
        metrics.body
    );
    let _ = server.stop();
}

/// The official `openai` Python package drives a multi-step task through the proxy:
/// the agreeing step's call is executed by the client's own executor, the invented one
/// is refused before it (a plain message, nothing executed), a streamed step is
/// assembled by the SDK, and a 502 is parsed as the SDK's own error. Needs a Python
/// with `openai` (tests/serve/requirements.txt), named by `PLANGATE_SERVE_PYTHON`
/// (scripts/test makes one); without it the test says it was skipped.
#[test]
fn the_openai_sdk_drives_a_task_through_the_proxy() {
    let Some(python) = serve_python("openai SDK") else {
        return;
    };
    let (tools, correct) = bfcl("simple_python_0", "correct");
    let (_, fabricated) = bfcl("simple_python_0", "fabricated");
    let upstream = Recorded::start(
        BTreeMap::from([
            ("correct".to_string(), correct[..6].to_vec()),
            ("fabricated".to_string(), fabricated),
        ]),
        6,
    );
    let url = upstream.url();
    let server = Serving::start(
        &[
            "--catalog",
            CATALOG,
            "--upstream",
            &url,
            "--on-defer",
            "refuse",
        ],
        &[],
    );
    let dir = tempfile::tempdir().unwrap();
    let tools_file = dir.path().join("tools.json");
    std::fs::write(&tools_file, tools.to_string()).unwrap();
    let url = format!("http://{}/v1", server.addr);
    let report = run_client(
        &python,
        "openai_client.py",
        &[std::ffi::OsStr::new(&url), tools_file.as_os_str()],
    );
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps[0]["decision"], "accept", "{report}");
    assert_eq!(steps[0]["tool_calls"], 1);
    assert_eq!(steps[0]["plangate"], "accept");
    assert_eq!(steps[0]["executed_so_far"], 1);
    assert_eq!(steps[1]["decision"], "defer", "{report}");
    assert_eq!(steps[1]["tool_calls"], 0);
    assert_eq!(steps[1]["finish_reason"], "stop");
    assert_eq!(
        steps[1]["executed_so_far"], 1,
        "the refused step reached the executor"
    );
    assert!(
        steps[1]["content"].as_str().unwrap().contains("`height`"),
        "{report}"
    );
    assert_eq!(
        report["stream"]["names"],
        json!(["calculate_triangle_area"])
    );
    assert_eq!(report["stream"]["arguments"]["base"], 10);
    assert_eq!(report["stream"]["finish_reason"], "tool_calls");
    assert_eq!(report["error"]["status"], 502, "{report}");
    assert_eq!(report["error"]["type"], "upstream_garbage");
    assert_eq!(report["executed"].as_array().unwrap().len(), 1);
    let (code, stderr) = server.stop();
    assert_eq!(code, exit::OK, "{stderr}");
}
