//! WebAssembly components end to end, built from sandbox-tools/components by
//! scripts/build-tools with the Rust (wasm32-wasip2) and Python (componentize-py)
//! toolchains: `call`, `catalog --component`, `probe`, `eval` and the epoch's network,
//! against files on pinned mounts and a server on loopback.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::eval::{Run, plangate};
use crate::exit;
use crate::tools::{build_tools, component as rust, repo};

fn python() -> PathBuf {
    build_tools();
    repo().join("sandbox-tools/target/components/text_py.wasm")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A folder of data files, and where the guest sees it.
fn data(dir: &Path) -> PathBuf {
    let d = dir.join("data");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("a.md"), "alpha\n").unwrap();
    std::fs::write(d.join("z.md"), "zulu\n").unwrap();
    std::fs::write(d.join("m.md"), "mike\n").unwrap();
    std::fs::write(d.join("kv.txt"), "alpha=one\nbeta=two words\n").unwrap();
    d
}

/// `plangate call` of a typed export, its report as JSON.
fn call(module: &Path, export: &str, args: Value, extra: &[&str]) -> Value {
    let args = args.to_string();
    let mut all = vec!["call", s(module), "--export", export, "--args", &args];
    all.extend_from_slice(extra);
    let run = plangate(&all);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    serde_json::from_str(run.stdout.trim()).expect("a JSON report")
}

#[test]
fn typed_exports_are_called_with_json_and_answer_as_the_tool_abi_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let mount = format!("{}:/data", data.display());
    let files = rust("files_component");
    let ok = call(
        &files,
        "read-file",
        json!({"path": "/data/a.md"}),
        &["--mount", &mount],
    );
    assert_eq!(
        (ok["exit_code"].clone(), ok["result"].clone()),
        (json!(0), json!("alpha\n")),
        "{ok}"
    );
    // An `err` is the call's error, exit 1, so it counts as an error everywhere.
    let err = call(
        &files,
        "read-file",
        json!({"path": "/data/nope.md"}),
        &["--mount", &mount],
    );
    assert_eq!(err["exit_code"], 1, "{err}");
    assert_eq!(err["result"]["error"]["kind"], "tool_error", "{err}");
    assert!(
        err["result"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/data/nope.md")
    );
    // A wrong argument is an error naming its JSON path, never a trap.
    let bad = call(&files, "read-file", json!({"path": 7}), &[]);
    assert_eq!(bad["result"]["error"]["kind"], "invalid_arguments", "{bad}");
    assert_eq!(
        bad["result"]["error"]["message"],
        "$.path: expected a string, found a number"
    );
    let missing = call(&files, "read-file", json!({}), &[]);
    assert_eq!(
        missing["result"]["error"]["message"], "$.path: missing",
        "{missing}"
    );
    // Listings come sorted whatever the host's order; a guest trap is an outcome.
    let list = call(
        &files,
        "list-dir",
        json!({"path": "/data"}),
        &["--mount", &mount],
    );
    assert_eq!(
        list["result"],
        json!(["a.md", "kv.txt", "m.md", "sub", "z.md"]),
        "{list}"
    );
    let kinds = rust("kinds_component");
    let trap = call(&kinds, "values.crash", json!({}), &[]);
    assert_eq!(
        (trap["outcome"].clone(), trap["trap_kind"].clone()),
        (json!("trap"), json!("unreachable")),
        "{trap}"
    );
    // A sleep on the pinned clock is virtual: the guest sees the time pass, the host
    // does not wait.
    let nap = call(&kinds, "values.nap", json!({"ms": 30000}), &[]);
    assert_eq!(nap["result"], 30000, "{nap}");
    assert!(nap["wall_ms"].as_f64().unwrap() < 5000.0, "{nap}");
    // Opening a FIFO in a live mount is refused at once, not left to block the host.
    let live = dir.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let fifo = live.join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let live_mount = format!("{}:/live:live", live.display());
    let r = call(
        &files,
        "read-file",
        json!({"path": "/live/pipe"}),
        &["--mount", &live_mount],
    );
    assert_eq!(r["result"]["error"]["kind"], "tool_error", "{r}");
    // A command component keeps the stdin/stdout ABI.
    let echo = plangate(&["call", s(&rust("echo_p2")), "--args", r#"{"a":[1,2]}"#]);
    let echo: Value = serde_json::from_str(echo.stdout.trim()).unwrap();
    assert_eq!(echo["result"], json!({"a": [1, 2]}), "{echo}");
    // A function that takes a resource has no JSON form: refused when it loads.
    let run = plangate(&["call", s(&kinds), "--export", "values.peek"]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("parameter c is a resource handle"),
        "{}",
        run.stderr
    );
    // The Python component, through the same door.
    let py = python();
    let words = call(
        &py,
        "word-count",
        json!({"text": "the quick  brown fox"}),
        &[],
    );
    assert_eq!(words["result"], 4, "{words}");
    let found = call(
        &py,
        "lookup",
        json!({"path": "/data/kv.txt", "key": "beta"}),
        &["--mount", &mount],
    );
    assert_eq!(found["result"], "two words", "{found}");
    let none = call(
        &py,
        "lookup",
        json!({"path": "/data/kv.txt", "key": "gamma"}),
        &["--mount", &mount],
    );
    assert_eq!(none["result"], Value::Null, "{none}");
}

/// Every kind of WIT value goes in as JSON and comes back as the same JSON, and what
/// does not fit its type is refused at its path.
#[test]
fn wit_values_round_trip_through_json_exactly() {
    let kinds = rust("kinds_component");
    let args = |o: Value| {
        let mut a = json!({
            "p": {"x": -1, "y": 2}, "s": {"rect": {"x": 3, "y": 4}}, "c": "green",
            "f": ["exec", "read"], "o": null, "t": ["λ", 1.5], "l": ["a", "b"],
            "big": 18446744073709551615u64, "small": -9223372036854775808i64, "ratio": 0.25,
        });
        a["o"] = o;
        a
    };
    for (o, back) in [
        (json!(null), json!(null)),
        (json!({"some": null}), json!({"some": null})),
        (json!({"some": 7}), json!({"some": 7})),
    ] {
        let r = call(&kinds, "values.echo", args(o), &[]);
        assert_eq!(r["exit_code"], 0, "{r}");
        let got = &r["result"];
        assert_eq!(got[0], json!({"x": -1, "y": 2}));
        assert_eq!(got[1], json!({"rect": {"x": 3, "y": 4}}));
        assert_eq!(got[2], "green");
        assert_eq!(
            got[3],
            json!(["read", "exec"]),
            "flags in declaration order"
        );
        assert_eq!(
            got[4], back,
            "option<option<u8>> keeps none and some(none) apart"
        );
        assert_eq!(got[5], json!(["λ", 1.5]));
        assert_eq!(got[6], json!(["a", "b"]));
        assert_eq!(
            got[7],
            json!(18446744073709551615u64),
            "u64 exact past 2^53"
        );
        assert_eq!(got[8], json!(-9223372036854775808i64));
        assert_eq!(got[9], json!(0.25));
    }
    let refused = |patch: Value, says: &str| {
        let mut a = args(json!(null));
        for (k, v) in patch.as_object().unwrap() {
            a[k] = v.clone();
        }
        let r = call(&kinds, "values.echo", a, &[]);
        assert_eq!(r["result"]["error"]["kind"], "invalid_arguments", "{r}");
        let m = r["result"]["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(m.contains(says), "{says:?} not in {m:?}");
    };
    // Past u64 by one, written as the gate would pass it: a lexeme, not a double.
    let past = args(json!(null))
        .to_string()
        .replace("18446744073709551615", "18446744073709551616");
    let run = plangate(&[
        "call",
        s(&kinds),
        "--export",
        "values.echo",
        "--args",
        &past,
    ]);
    let r = report(&run);
    let m = r["result"]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        m.starts_with("$.big: ") && m.ends_with("is out of range for u64"),
        "{r}"
    );
    refused(
        json!({"p": {"x": 2147483648i64, "y": 0}}),
        "$.p.x: 2147483648 is out of range for s32",
    );
    refused(
        json!({"p": {"x": 1.5, "y": 0}}),
        "$.p.x: expected an integer (s32), found 1.5",
    );
    refused(json!({"t": ["ab", 1.0]}), "$.t[0]: expected one character");
    refused(
        json!({"f": ["read", "read"]}),
        "$.f[1]: \"read\" is given twice",
    );
    refused(
        json!({"c": "purple"}),
        "$.c: \"purple\" is not one of red, green, blue",
    );
    refused(
        json!({"s": {"circle": 1, "empty": null}}),
        "$.s: expected an object with one member",
    );
    refused(
        json!({"o": {"some": 300}}),
        "$.o.some: 300 is out of range for u8",
    );
    refused(
        json!({"ratio": 1e300}),
        "$.ratio: 1e+300 is out of range for f32",
    );
    refused(json!({"extra": 1}), "$.extra: unknown parameter");
    let check = call(&kinds, "values.check", json!({"ok": true}), &[]);
    assert_eq!(
        (check["exit_code"].clone(), check["result"].clone()),
        (json!(0), Value::Null),
        "{check}"
    );
}

/// A tiny HTTP server on loopback answering every GET with a counter, so a response
/// that changes between requests shows.
struct Server {
    addr: String,
    hits: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let hits = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, st) = (hits.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        conn.set_nonblocking(false).unwrap();
                        let mut buf = [0u8; 4096];
                        let _ = conn.read(&mut buf);
                        let n = h.fetch_add(1, Ordering::Relaxed);
                        let request = String::from_utf8_lossy(&buf);
                        let body = if request.starts_with("GET /counter") {
                            format!("{{\"count\":{n}}}")
                        } else {
                            "{\"price\":100}".to_string()
                        };
                        let _ = write!(
                            conn,
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
                }
            }
        });
        Server { addr, hits, stop }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// A catalog of the fetch component, probed at `http://ADDR/PATH`.
fn fetch_catalog(dir: &Path, addr: &str, path: &str, network: Value) -> PathBuf {
    let mut tool = json!({"name": "fetch", "module": rust("fetch_component"), "export": "fetch",
        "deterministic": true, "probe": [{"url": format!("http://{addr}/{path}")}]});
    if !network.is_null() {
        tool["network"] = network;
    }
    let catalog = dir.join(format!("fetch-{}.json", dir.read_dir().unwrap().count()));
    std::fs::write(&catalog, json!({"tools": [tool]}).to_string()).unwrap();
    catalog
}

fn report(run: &Run) -> Value {
    serde_json::from_str(run.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn the_network_is_denied_live_or_pinned_and_a_pinned_answer_replays_offline() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let url = format!("http://{}/price", server.addr);
    let args = json!({"url": url}).to_string();
    // No network declared: the request never leaves, and the error names the host.
    let denied = fetch_catalog(dir.path(), &server.addr, "price", Value::Null);
    let r = report(&plangate(&[
        "call",
        "--catalog",
        s(&denied),
        "--tool",
        "fetch",
        "--args",
        &args,
    ]));
    let message = r["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("network denied") && message.contains(&server.addr),
        "{r}"
    );
    assert_eq!(
        server.hits.load(Ordering::Relaxed),
        0,
        "nothing reached the server"
    );
    // Live: never verified, the network named. A server that stands still leaves the
    // tool epoch-sensitive; one that answers each request anew makes it drift.
    let allow = json!([server.addr]);
    let live = json!({"mode": "live", "allow": allow});
    let pinned_net = json!({"mode": "pinned", "allow": allow});
    let probed = |path: &str, network: &Value| {
        let catalog = fetch_catalog(dir.path(), &server.addr, path, network.clone());
        let run = plangate(&["probe", "--catalog", s(&catalog), "--strict"]);
        (run.code, report(&run)["tools"][0].clone(), catalog)
    };
    let names_network = |t: &Value| {
        (t["differs_by"].as_array().unwrap().iter())
            .any(|d| d.as_str().unwrap().starts_with("network"))
    };
    for (path, status) in [("price", "epoch_sensitive"), ("counter", "drift")] {
        let (code, t, _) = probed(path, &live);
        assert_eq!(
            (code, t["status"].as_str().unwrap()),
            (exit::REJECT, status),
            "{t}"
        );
        assert!(names_network(&t), "{t}");
    }
    // Pinned: each distinct request recorded on first use in an epoch and replayed, so
    // it is verified; a server that moves between epochs shows across them, not within.
    let (code, t, pinned) = probed("price", &pinned_net);
    assert_eq!(
        (code, t["status"].as_str().unwrap()),
        (exit::OK, "verified"),
        "{t}"
    );
    let (code, t, _) = probed("counter", &pinned_net);
    assert_eq!(
        (code, t["status"].as_str().unwrap()),
        (exit::REJECT, "epoch_sensitive"),
        "{t}"
    );
    assert!(names_network(&t), "{t}");
    // The recording is part of the epoch: written, then replayed with the server gone.
    let epoch = dir.path().join("epoch.json");
    let first = report(&plangate(&[
        "call",
        "--catalog",
        s(&pinned),
        "--tool",
        "fetch",
        "--args",
        &args,
        "--write-epoch",
        s(&epoch),
    ]));
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(&epoch).unwrap()).unwrap();
    assert_eq!(manifest["network"][0]["url"], url, "{manifest}");
    drop(server);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let again = report(&plangate(&[
        "call",
        "--catalog",
        s(&pinned),
        "--tool",
        "fetch",
        "--args",
        &args,
        "--epoch",
        s(&epoch),
    ]));
    assert_eq!(
        again["result"], first["result"],
        "replayed offline: {again}"
    );
    let other = json!({"url": format!("{url}?other")}).to_string();
    let unrecorded = report(&plangate(&[
        "call",
        "--catalog",
        s(&pinned),
        "--tool",
        "fetch",
        "--args",
        &other,
        "--epoch",
        s(&epoch),
    ]));
    let message = unrecorded["result"]["error"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("not recorded in this epoch"),
        "{unrecorded}"
    );
}

/// A catalog from `catalog --component`, each tool then declared deterministic with
/// probe arguments, as the author would.
fn declared(dir: &Path, component: &Path, policy: Option<&Path>, probes: Value) -> PathBuf {
    let raw = dir.join("raw.json");
    let mut args = vec!["catalog", "--component", s(component), "--out", s(&raw)];
    if let Some(p) = policy {
        args.extend(["--policy", s(p)]);
    }
    let run = plangate(&args);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert!(
        run.stderr.contains("declare no `deterministic`"),
        "{}",
        run.stderr
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&raw).unwrap()).unwrap();
    for t in doc["tools"].as_array_mut().unwrap() {
        t["deterministic"] = json!(true);
        if let Some(p) = probes.get(t["name"].as_str().unwrap()) {
            t["probe"] = p.clone();
        }
    }
    let catalog = dir.join("catalog.json");
    std::fs::write(&catalog, doc.to_string()).unwrap();
    catalog
}

#[test]
fn a_catalogued_component_is_probed_and_evaluated() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "version: \"1.0\"\npermissions:\n  storage:\n    allow:\n      - uri: \"fs://data\"\n        access: [\"read\"]\n",
    )
    .unwrap();
    let catalog = declared(
        dir.path(),
        &rust("files_component"),
        Some(&policy),
        json!({
            "read-file": [{"path": "/data/a.md"}],
            "list-dir": [{"path": "/data"}],
            "file-info": [{"path": "/data/a.md"}],
            "now": [{}],
        }),
    );
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("raw.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = raw["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read-file", "list-dir", "file-info", "now"]);
    assert_eq!(raw["tools"][0]["mounts"][0]["guest"], "/data");
    assert_eq!(raw["tools"][0]["parameters"]["required"], json!(["path"]));
    let probe = || {
        let run = plangate(&["probe", "--catalog", s(&catalog), "--strict"]);
        let tools: Vec<Value> = report(&run)["tools"].as_array().unwrap().clone();
        (run, tools)
    };
    let (run, tools) = probe();
    assert_eq!(
        run.code,
        exit::REJECT,
        "`now` reads the clock: {}",
        run.stderr
    );
    for t in &tools {
        let want = if t["name"] == "now" {
            "epoch_sensitive"
        } else {
            "verified"
        };
        assert_eq!(t["status"], want, "{t}");
    }
    let now = tools.iter().find(|t| t["name"] == "now").unwrap();
    assert_eq!(now["differs_by"], json!(["instant"]), "{now}");
    // The host touches the file: its metadata as the tool prints it does not move.
    let before = call_info(&catalog);
    let f = std::fs::File::options()
        .append(true)
        .open(data.join("a.md"))
        .unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    drop(f);
    assert_eq!(call_info(&catalog), before, "stat times are the epoch's");
    let (_, tools) = probe();
    let info = tools.iter().find(|t| t["name"] == "file-info").unwrap();
    assert_eq!(info["status"], "verified", "{info}");

    // eval: six samples that read one real file agree and are accepted; six that each
    // invent a path are rejected.
    let sample =
        |path: &str| json!({"calls": [{"tool": "read-file", "arguments": {"path": path}}]});
    let agree: Vec<Value> = (0..6).map(|_| sample("/data/a.md")).collect();
    let invented: Vec<Value> = (0..6)
        .map(|i| sample(&format!("/data/report-{i}.md")))
        .collect();
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(
        &samples,
        format!(
            "{}\n{}\n",
            json!({"task_id": "reads", "samples": agree}),
            json!({"task_id": "invents", "samples": invented})
        ),
    )
    .unwrap();
    let run = plangate(&["eval", "--catalog", s(&catalog), "--samples", s(&samples)]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let d = run.lines();
    assert_eq!(d[0]["decision"], "accept", "{}", d[0]);
    assert_eq!(d[1]["decision"], "reject", "{}", d[1]);
    assert_eq!(d[1]["reasons"], json!(["fabricated_arguments"]), "{}", d[1]);
}

fn call_info(catalog: &Path) -> String {
    let run = plangate(&[
        "call",
        "--catalog",
        s(catalog),
        "--tool",
        "file-info",
        "--args",
        r#"{"path":"/data/a.md"}"#,
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    report(&run)["stdout"].as_str().unwrap().to_string()
}

#[test]
fn the_python_component_is_catalogued_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = declared(
        dir.path(),
        &python(),
        None,
        json!({"word-count": [{"text": "one two three"}]}),
    );
    let raw: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("raw.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = raw["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["word-count", "lookup"],
        "componentize-py's init is no tool"
    );
    // Compiled components carry no WIT docs: --wit reads them from the sources.
    let wit = repo().join("sandbox-tools/components/python/text/wit");
    let described = dir.path().join("described.json");
    let run = plangate(&[
        "catalog",
        "--component",
        s(&python()),
        "--wit",
        s(&wit),
        "--out",
        s(&described),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&described).unwrap()).unwrap();
    assert_eq!(
        doc["tools"][0]["description"],
        "Number of whitespace-separated words in `text`."
    );
    assert!(
        raw["tools"][0].get("description").is_none(),
        "none without --wit"
    );
    let run = plangate(&[
        "probe",
        "--catalog",
        s(&catalog),
        "--tool",
        "word-count",
        "--strict",
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert_eq!(report(&run)["tools"][0]["status"], "verified");
}

/// A live-network tool whose server answers each request anew is quarantined in its
/// epoch, so its task defers; the defer path runs it again in an epoch with every
/// source pinned, the network among them, where the recorded answer agrees. And a
/// sharded run of components merges into the whole run's decisions.
#[test]
fn the_defer_path_and_shards_take_components_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start();
    let allow = json!([server.addr]);
    let catalog = fetch_catalog(
        dir.path(),
        &server.addr,
        "counter",
        json!({"mode": "live", "allow": allow}),
    );
    let url = format!("http://{}/counter", server.addr);
    let sample = json!({"calls": [{"tool": "fetch", "arguments": {"url": url}}]});
    let samples = dir.path().join("samples.jsonl");
    let task = json!({"task_id": "counter", "samples": vec![sample; 6]});
    std::fs::write(&samples, format!("{task}\n")).unwrap();
    let first = plangate(&["eval", "--catalog", s(&catalog), "--samples", s(&samples)]);
    let d = &first.lines()[0];
    assert_eq!(d["decision"], "defer", "{d}");
    let retried = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--retry-deferred",
        "1",
    ]);
    let d = &retried.lines()[0];
    assert_eq!(d["decision"], "accept", "{d}\n{}", retried.stderr);

    // Shards: two halves of the files component's batch, merged, decide as one run.
    let data = data(dir.path());
    let files = json!({"tools": [{
        "name": "read-file", "module": rust("files_component"), "export": "read-file",
        "deterministic": true, "probe": [{"path": "/data/a.md"}],
        "mounts": [{"host": data, "guest": "/data", "mode": "pinned"}],
    }]});
    let catalog = dir.path().join("files.json");
    std::fs::write(&catalog, files.to_string()).unwrap();
    let read = |p: &str| json!({"calls": [{"tool": "read-file", "arguments": {"path": p}}]});
    let lines: String = (0..8)
        .map(|i| {
            let samples = if i % 2 == 0 {
                vec![read("/data/a.md"); 6]
            } else {
                (0..6)
                    .map(|k| read(&format!("/data/x{i}-{k}.md")))
                    .collect()
            };
            format!(
                "{}\n",
                json!({"task_id": format!("t{i}"), "samples": samples})
            )
        })
        .collect();
    let batch = dir.path().join("batch.jsonl");
    std::fs::write(&batch, lines).unwrap();
    let epoch = dir.path().join("epoch.json");
    let run = plangate(&["epoch", "--catalog", s(&catalog), "--out", s(&epoch)]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let whole = dir.path().join("whole.jsonl");
    let run = plangate(&[
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&batch),
        "--epoch",
        s(&epoch),
        "--out",
        s(&whole),
    ]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard-{k}.jsonl"));
        let spec = format!("{k}/2");
        let run = plangate(&[
            "eval",
            "--catalog",
            s(&catalog),
            "--samples",
            s(&batch),
            "--epoch",
            s(&epoch),
            "--shard",
            &spec,
            "--out",
            s(&out),
        ]);
        assert!(
            matches!(run.code, exit::OK | exit::REJECT),
            "{}",
            run.stderr
        );
        shards.push(out);
    }
    let merged = dir.path().join("merged.jsonl");
    let run = plangate(&["merge", "--out", s(&merged), s(&shards[0]), s(&shards[1])]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(&merged).unwrap(),
        std::fs::read_to_string(&whole).unwrap()
    );
}
