//! What a pinned network may keep and whom it answers, end to end: credentials keyed by
//! digest and never written, header bytes kept apart, a manifest's recording sealed and
//! checked when it loads, a body too big to record refused without holding it, and a
//! run interrupted and resumed answered as an uninterrupted one, and a server's
//! recording bounded per epoch. The guests are the
//! hostile component's `request` export and the fetch component, against a server on
//! loopback that stops by itself.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::eval::{Run, plangate};
use crate::exit;
use crate::resume::spawn;
use crate::tools::component as rust;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// How the server answers a request, from its head (request line and headers).
type Answer = fn(&str, usize) -> Reply;

enum Reply {
    /// This body, with its length.
    Body(String),
    /// `n` bytes of zeros, streamed without a length (or with it, when `true`).
    Zeros(usize, bool),
}

/// A server on loopback: counts requests and the body bytes it got out, answers each
/// with `answer`, and stops when dropped (or after two minutes, whatever happens).
struct Server {
    addr: String,
    hits: Arc<AtomicUsize>,
    sent: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start(answer: Answer, delay: Duration) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let hits = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, b, st) = (hits.clone(), sent.clone(), stop.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(120);
            while !st.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let n = h.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(delay);
                        serve(conn, answer, n, &b);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server {
            addr,
            hits,
            sent,
            stop,
        }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn serve(mut conn: TcpStream, answer: Answer, n: usize, sent: &AtomicUsize) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(k) => head.extend_from_slice(&buf[..k]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    match answer(&head, n) {
        Reply::Body(body) => {
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nset-cookie: sid=SESSION-SECRET\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
        Reply::Zeros(total, with_length) => {
            let length = if with_length {
                format!("content-length: {total}\r\n")
            } else {
                String::new()
            };
            let _ = write!(conn, "HTTP/1.1 200 OK\r\n{length}connection: close\r\n\r\n");
            let chunk = vec![0u8; 64 << 10];
            let mut left = total;
            while left > 0 {
                let k = left.min(chunk.len());
                if conn.write_all(&chunk[..k]).is_err() {
                    return;
                }
                sent.fetch_add(k, Ordering::Relaxed);
                left -= k;
            }
        }
    }
}

/// Says whose credentials the request came with (never the credentials), and its
/// request line.
fn echo(head: &str, _: usize) -> Reply {
    let who = if head.contains("ALICE-TOKEN") {
        "alice"
    } else if head.contains("BOB-TOKEN") {
        "bob"
    } else {
        "nobody"
    };
    let line = head.lines().next().unwrap_or("");
    Reply::Body(format!("for {who}: {line}"))
}

/// A catalog of the hostile component's `request` export under a pinned network.
fn request_catalog(dir: &Path, addr: &str, network: Value) -> PathBuf {
    let mut network = network;
    network["mode"] = json!("pinned");
    network["allow"] = json!([addr]);
    let tool = json!({"name": "req", "module": rust("hostile_component"),
        "export": "attacks.request", "deterministic": false, "network": network});
    let catalog = dir.join("req.json");
    std::fs::write(&catalog, json!({"tools": [tool]}).to_string()).unwrap();
    catalog
}

/// `plangate call` of `req` with these headers; `epoch` replays (or, with `write`,
/// saves) the manifest.
fn request(catalog: &Path, url: &str, headers: &[(&str, &[u8])], epoch: &[&str]) -> Run {
    let headers: Vec<Value> = (headers.iter())
        .map(|(k, v)| json!([k, v.to_vec()]))
        .collect();
    let args = json!({"url": url, "headers": headers, "read": 4096}).to_string();
    let mut all = vec![
        "call",
        "--catalog",
        s(catalog),
        "--tool",
        "req",
        "--args",
        &args,
    ];
    all.extend_from_slice(epoch);
    plangate(&all)
}

fn report(run: &Run) -> Value {
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

/// The text a call's result or error holds.
fn said(run: &Run) -> String {
    report(run).to_string()
}

#[test]
fn credentials_are_keyed_by_digest_never_written_and_never_shared() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(echo, Duration::ZERO);
    let catalog = request_catalog(
        dir.path(),
        &server.addr,
        json!({"secret_headers": ["X-Team-Secret"]}),
    );
    let url = format!("http://{}/data?api_key=QUERYKEY-1&q=1", server.addr);
    let alice: &[(&str, &[u8])] = &[
        ("authorization", b"Bearer ALICE-TOKEN"),
        ("x-api-key", b"APIKEY-ALICE"),
        ("x-team-secret", b"TEAM-SECRET"),
    ];
    let manifest = dir.path().join("epoch.json");
    let run = request(&catalog, &url, alice, &["--write-epoch", s(&manifest)]);
    assert!(said(&run).contains("for alice"), "{}", run.stdout);
    assert_eq!(server.hits(), 1);

    let mode = std::fs::metadata(&manifest).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the manifest is its owner's alone");
    let text = std::fs::read_to_string(&manifest).unwrap();
    for secret in [
        "ALICE-TOKEN",
        "APIKEY-ALICE",
        "QUERYKEY-1",
        "TEAM-SECRET",
        "SESSION-SECRET",
    ] {
        assert!(!text.contains(secret), "{secret} written:\n{text}");
    }
    assert!(text.contains("api_key=REDACTED"), "{text}");
    assert!(text.contains("credential_sha256"), "{text}");

    // Replayed: alice is answered from the recording; bob, or nobody, is refused,
    // and nothing is fetched.
    let replay = ["--epoch", s(&manifest)];
    let again = request(&catalog, &url, alice, &replay);
    assert!(said(&again).contains("for alice"), "{}", again.stdout);
    let bob: &[(&str, &[u8])] = &[
        ("authorization", b"Bearer BOB-TOKEN"),
        ("x-api-key", b"APIKEY-ALICE"),
        ("x-team-secret", b"TEAM-SECRET"),
    ];
    for (who, headers) in [("bob", bob), ("nobody", &alice[1..])] {
        let refused = said(&request(&catalog, &url, headers, &replay));
        assert!(
            refused.contains("not recorded under these credentials"),
            "{who}: {refused}"
        );
    }
    let other_key = url.replace("QUERYKEY-1", "QUERYKEY-2");
    let refused = said(&request(&catalog, &other_key, alice, &replay));
    assert!(
        refused.contains("not recorded under these credentials"),
        "{refused}"
    );
    assert_eq!(server.hits(), 1, "a replay never fetches");
}

#[test]
fn header_values_are_keyed_by_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(echo, Duration::ZERO);
    let catalog = request_catalog(dir.path(), &server.addr, json!({}));
    let url = format!("http://{}/signed", server.addr);
    let manifest = dir.path().join("epoch.json");
    let ff = request(
        &catalog,
        &url,
        &[("x-sig", b"\xff A")],
        &["--write-epoch", s(&manifest)],
    );
    assert!(said(&ff).contains("GET /signed"), "{}", ff.stdout);
    let replay = ["--epoch", s(&manifest)];
    let again = said(&request(&catalog, &url, &[("x-sig", b"\xff A")], &replay));
    assert!(again.contains("GET /signed"), "{again}");
    let fe = said(&request(&catalog, &url, &[("x-sig", b"\xfe A")], &replay));
    assert!(fe.contains("is not recorded in this epoch"), "{fe}");
    assert_eq!(server.hits(), 1);
}

/// `plangate call --epoch` of a manifest edited by `edit`: its exit code and stderr.
fn replay_edited(catalog: &Path, manifest: &Path, url: &str, edit: impl Fn(&mut Value)) -> Run {
    let mut m: Value = serde_json::from_slice(&std::fs::read(manifest).unwrap()).unwrap();
    edit(&mut m);
    let edited = manifest.with_extension("edited.json");
    std::fs::write(&edited, m.to_string()).unwrap();
    request(catalog, url, &[], &["--epoch", s(&edited)])
}

/// A way to spoil a sealed manifest, and what refusing it must say.
type Tamper = (&'static str, fn(&mut Value));

#[test]
fn a_recording_is_sealed_and_checked_when_its_manifest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(echo, Duration::ZERO);
    let catalog = request_catalog(dir.path(), &server.addr, json!({}));
    let url = format!("http://{}/sealed", server.addr);
    let manifest = dir.path().join("epoch.json");
    let run = request(&catalog, &url, &[], &["--write-epoch", s(&manifest)]);
    assert!(said(&run).contains("GET /sealed"), "{}", run.stdout);
    let m: Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    assert_eq!(m["format"], 3);
    assert_eq!(m["network_sha256"].as_str().map(str::len), Some(64), "{m}");

    let cases: [Tamper; 5] = [
        ("network_sha256 does not match", |m| {
            // "edited", base64: a valid recording, not the one sealed.
            m["network"][0]["response_body"] = json!("ZWRpdGVk");
        }),
        ("network[0].status: 0 is not an HTTP status", |m| {
            m["network"][0]["status"] = json!(0);
        }),
        ("network[0].response_body: not base64", |m| {
            m["network"][0]["response_body"] = json!("not base64!");
        }),
        ("network_sha256 is missing", |m| {
            m.as_object_mut().unwrap().remove("network_sha256");
        }),
        ("format 2 is not the supported format 3", |m| {
            m["format"] = json!(2);
        }),
    ];
    for (want, edit) in cases {
        let run = replay_edited(&catalog, &manifest, &url, edit);
        assert_eq!(run.code, exit::USAGE, "{want}: {}", run.stderr);
        assert!(run.stderr.contains(want), "{want}: {}", run.stderr);
    }
    assert_eq!(server.hits(), 1);
}

#[test]
fn a_body_past_max_body_bytes_is_the_call_s_error_and_is_not_held() {
    let dir = tempfile::tempdir().unwrap();
    fn big(head: &str, _: usize) -> Reply {
        // 256 MiB, with a length or streamed without one.
        Reply::Zeros(256 << 20, head.contains("/sized"))
    }
    let server = Server::start(big, Duration::ZERO);
    let catalog = request_catalog(dir.path(), &server.addr, json!({"max_body_bytes": 1 << 20}));
    for path in ["sized", "streamed"] {
        let manifest = dir.path().join(format!("{path}.json"));
        let url = format!("http://{}/{path}", server.addr);
        let run = request(&catalog, &url, &[], &["--write-epoch", s(&manifest)]);
        let r = said(&run);
        assert!(
            r.contains("longer than network.max_body_bytes (1048576 bytes)"),
            "{path}: {r}"
        );
        let written = std::fs::metadata(&manifest).unwrap().len();
        assert!(written < 4096, "{path}: a {written}-byte manifest");
    }
    // The host stopped reading near the limit: far less than the answer went out.
    let sent = server.sent.load(Ordering::Relaxed);
    assert!(
        sent < 64 << 20,
        "{sent} bytes were read of two 256 MiB answers"
    );

    // Under the limit, the answer is recorded and read as usual.
    fn small(_: &str, _: usize) -> Reply {
        Reply::Zeros(100_000, true)
    }
    let server = Server::start(small, Duration::ZERO);
    let catalog = request_catalog(dir.path(), &server.addr, json!({"max_body_bytes": 1 << 20}));
    let url = format!("http://{}/small", server.addr);
    let r = report(&request(&catalog, &url, &[], &[]));
    assert!(r["result"].to_string().starts_with("[200,"), "{r}");
}

/// Answers each request with a new count after a pause: recorded once per request in
/// a pinned epoch, a count that changes shows an answer taken again.
fn counter(_: &str, n: usize) -> Reply {
    Reply::Body(format!("{{\"count\":{n}}}"))
}

#[test]
fn an_interrupted_run_resumes_with_its_network_recording() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(counter, Duration::from_millis(60));
    let url = |i: usize| format!("http://{}/item/{i}", server.addr);
    let tool = json!({"name": "fetch", "module": rust("fetch_component"), "export": "fetch",
        "deterministic": true, "probe": [{"url": url(999)}],
        "network": {"mode": "pinned", "allow": [server.addr]}});
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, json!({"tools": [tool]}).to_string()).unwrap();
    let lines: String = (0..30)
        .map(|i| {
            let sample = json!({"calls": [{"tool": "fetch", "arguments": {"url": url(i)}}]});
            format!(
                "{}\n",
                json!({"task_id": format!("t{i}"), "samples": vec![sample; 5]})
            )
        })
        .collect();
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, lines).unwrap();
    let run = |out: &Path, epoch: &Path| {
        [
            "eval".to_string(),
            "--catalog".into(),
            s(&catalog).into(),
            "--samples".into(),
            s(&samples).into(),
            "--out".into(),
            s(out).into(),
            "--write-epoch".into(),
            s(epoch).into(),
            "--jobs".into(),
            "1".into(),
        ]
    };
    let accepted = |out: &Path| {
        (std::fs::read_to_string(out).unwrap().lines())
            .filter(|l| serde_json::from_str::<Value>(l).unwrap()["decision"] == "accept")
            .count()
    };
    let exchanges = |epoch: &Path| {
        let m: Value = serde_json::from_slice(&std::fs::read(epoch).unwrap()).unwrap();
        m["network"].as_array().map_or(0, Vec::len)
    };

    let (whole, whole_epoch) = (dir.path().join("whole.jsonl"), dir.path().join("w.json"));
    let done = plangate(&run(&whole, &whole_epoch));
    assert_eq!(done.code, exit::OK, "{}", done.stderr);
    assert_eq!((accepted(&whole), exchanges(&whole_epoch)), (30, 31));

    // Interrupted once a third of the calls are journalled, then resumed.
    let (out, epoch) = (dir.path().join("out.jsonl"), dir.path().join("e.json"));
    let journal = dir.path().join("out.jsonl.journal");
    let args = run(&out, &epoch);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let earlier = server.hits();
    let mut child = spawn(&args);
    // The probe's request, then a third of the tasks' (the journal is written in
    // blocks, so the server counts).
    let until = Instant::now() + Duration::from_secs(60);
    while (server.hits() < earlier + 11 || !journal.exists()) && Instant::now() < until {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before its interrupt: {status}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(
        stopped.status.code(),
        Some(exit::INTERRUPTED),
        "{}",
        String::from_utf8_lossy(&stopped.stderr)
    );
    let resumed = plangate(&[&args[..], &["--resume"]].concat());
    assert_eq!(resumed.code, exit::OK, "{}", resumed.stderr);
    assert_eq!(
        (accepted(&out), exchanges(&epoch)),
        (30, 31),
        "{}",
        resumed.stderr
    );
}

/// A server's epoch keeps at most `--max-recorded-bytes` of exchanges: past it a request
/// not recorded is the call's error and is not sent, one recorded is still answered from
/// the recording, and a fresh epoch records again.
#[test]
fn a_served_epoch_records_at_most_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(counter, Duration::ZERO);
    let catalog = request_catalog(dir.path(), &server.addr, json!({}));
    // Each exchange keeps about 200 bytes (its key, headers and body): two fit.
    let serving = crate::serve::Serving::start(
        &["--catalog", s(&catalog), "--max-recorded-bytes", "500"],
        &[],
    );
    // The calls answered (exit 0) and failed (exit 1) so far.
    let ask = |i: usize| -> (u64, u64) {
        let url = format!("http://{}/item/{i}", server.addr);
        let args = json!({"url": url, "headers": [], "read": 4096});
        let sample = json!({"calls": [{"tool": "req", "arguments": args}]});
        let line = json!({"task_id": format!("t{i}"), "samples": [sample]});
        let r = serving.post("/v1/eval", &line.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        let metrics = crate::serve::http(&serving.addr, "GET", "/metrics", &[], b"").body;
        let count = |outcome: &str| {
            let series =
                format!(r#"plangate_calls_executed_total{{tool="req",outcome="{outcome}"}} "#);
            (metrics.lines())
                .find_map(|l| l.strip_prefix(series.as_str()))
                .map_or(0, |n| n.parse().unwrap())
        };
        (count("exit:0"), count("exit:1"))
    };
    let answered: Vec<(u64, u64)> = (0..6).map(ask).collect();
    assert_eq!(
        answered,
        [(1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4)],
        "the third and later first requests fail"
    );
    // The third went out and its answer did not fit; none went out after it.
    assert_eq!(server.hits(), 3);
    // Recorded, so answered again without a request.
    assert_eq!(ask(0), (3, 4));
    assert_eq!(server.hits(), 3);
    let renewed = serving.post("/v1/epoch", "");
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    assert_eq!(ask(5), (4, 4), "a fresh epoch records again");
    assert_eq!(server.hits(), 4);
    let _ = serving.stop();
}
