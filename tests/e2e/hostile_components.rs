//! Hostile components against the sandbox's limits and pinning, end to end: waits on
//! the host that fuel and epochs cannot interrupt (a body nobody drains, a server that
//! never answers, a live sleep past the deadline), host memory a guest makes the host
//! hold (header maps), what a pinned `u64` draw gives, and the size a directory's
//! metadata reports. The guests are built from sandbox-tools/components/hostile (and
//! the fetch, kinds and files components) by scripts/build-tools.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::exit;
use crate::hostile::bounded;
use crate::tools::component as rust;

/// Far past every call's own limit here: a regression fails the test rather than hang it.
const OUTER: Duration = Duration::from_secs(90);

/// How far past its `--timeout-ms` a call may end and still be on time: setup, a loaded
/// machine, compiling the component when the cache is cold.
const SLACK: Duration = Duration::from_secs(15);

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `plangate call` under the outer bound: its JSON report and how long it took.
fn call(args: &[&str]) -> (Value, Duration) {
    let started = Instant::now();
    let mut all = vec!["call"];
    all.extend_from_slice(args);
    let run = bounded(&all, &[], OUTER);
    let took = started.elapsed();
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", run.stderr));
    (report, took)
}

/// A typed export of a component, called with `args`.
fn export(module: &Path, name: &str, args: Value, extra: &[&str]) -> (Value, Duration) {
    let args = args.to_string();
    let mut all = vec![s(module), "--export", name, "--args", &args];
    all.extend_from_slice(extra);
    call(&all)
}

fn assert_timeout_on_time(report: &Value, took: Duration, limit_ms: u64) {
    assert_eq!(report["outcome"], "timeout", "{report}");
    assert!(
        took < Duration::from_millis(limit_ms) + SLACK,
        "the call took {took:?} under --timeout-ms {limit_ms}: {report}"
    );
}

#[test]
fn a_body_written_and_never_sent_times_out_and_its_batch_is_decided() {
    let hostile = rust("hostile_component");
    let (r, took) = export(
        &hostile,
        "attacks.stuck-body",
        json!({"chunks": 1000}),
        &["--timeout-ms", "2000"],
    );
    assert_timeout_on_time(&r, took, 2000);

    // In a batch beside an honest tool: every task decided, within the limits.
    let dir = tempfile::tempdir().unwrap();
    let kinds = rust("kinds_component");
    let tool = |name: &str, module: &Path, export: &str, props: Value| {
        json!({"name": name, "module": module, "export": export, "deterministic": false,
            "parameters": {"type": "object", "properties": props}})
    };
    let catalog = dir.path().join("catalog.json");
    let doc = json!({"tools": [
        tool("stuck", &hostile, "attacks.stuck-body", json!({"chunks": {"type": "integer"}})),
        tool("check", &kinds, "values.check", json!({"ok": {"type": "boolean"}})),
    ]});
    std::fs::write(&catalog, doc.to_string()).unwrap();
    let line = |id: &str, tool: &str, args: Value| {
        let sample = json!({"calls": [{"tool": tool, "arguments": args}]});
        json!({"task_id": id, "samples": [sample, sample, sample]}).to_string()
    };
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(
        &samples,
        format!(
            "{}\n{}\n",
            line("stuck", "stuck", json!({"chunks": 1000})),
            line("honest", "check", json!({"ok": true}))
        ),
    )
    .unwrap();
    let out = dir.path().join("decisions.jsonl");
    let summary = dir.path().join("summary.json");
    let run = bounded(
        &[
            "eval",
            "--catalog",
            s(&catalog),
            "--samples",
            s(&samples),
            "--out",
            s(&out),
            "--summary-json",
            s(&summary),
            "--timeout-ms",
            "2000",
        ],
        &[],
        OUTER,
    );
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{}",
        run.stderr
    );
    let decided: Vec<Value> = std::fs::read_to_string(&out)
        .expect("decisions written")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = decided
        .iter()
        .map(|d| d["task_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["stuck", "honest"], "{decided:?}");
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let outcomes = &summary["stats"]["outcomes"];
    assert_eq!(outcomes["stuck"], json!({"timeout": 3}), "{outcomes}");
    assert_eq!(outcomes["check"], json!({"exit:0": 3}), "{outcomes}");
}

/// A server on loopback that accepts every connection, reads nothing, answers nothing,
/// and lets go of them all when dropped (or after a minute, whatever happens).
struct Silent {
    addr: String,
    stop: Arc<AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(60);
            let mut held: Vec<TcpStream> = Vec::new();
            while !st.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((conn, _)) => held.push(conn),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Silent { addr, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_server_that_never_answers_times_out_within_the_call_s_limit() {
    let dir = tempfile::tempdir().unwrap();
    let server = Silent::start();
    let args = json!({"url": format!("http://{}/slow", server.addr)}).to_string();
    for mode in ["live", "pinned"] {
        let catalog = dir.path().join(format!("{mode}.json"));
        let tool = json!({"name": "fetch", "module": rust("fetch_component"), "export": "fetch",
            "deterministic": false, "network": {"mode": mode, "allow": [server.addr]}});
        std::fs::write(&catalog, json!({"tools": [tool]}).to_string()).unwrap();
        let (r, took) = call(&[
            "--catalog",
            s(&catalog),
            "--tool",
            "fetch",
            "--args",
            &args,
            "--timeout-ms",
            "2000",
        ]);
        assert_timeout_on_time(&r, took, 2000);
    }
}

#[test]
fn a_live_sleep_past_the_deadline_is_a_timeout_not_a_result() {
    let kinds = rust("kinds_component");
    let (r, took) = export(
        &kinds,
        "values.nap",
        json!({"ms": 100_000}),
        &["--clock", "live", "--timeout-ms", "2000"],
    );
    assert_timeout_on_time(&r, took, 2000);
    // A live sleep inside the limit sleeps, and says so.
    let (r, _) = export(
        &kinds,
        "values.nap",
        json!({"ms": 50}),
        &["--clock", "live", "--timeout-ms", "5000"],
    );
    assert_eq!(r["exit_code"], 0, "{r}");
    assert!(r["result"].as_u64().unwrap() >= 50, "{r}");
}

#[test]
fn header_maps_the_host_holds_count_against_the_call_s_memory() {
    let hostile = rust("hostile_component");
    // 8,000 maps of 120 KB (wasmtime-wasi-http allows 128 KiB a map) would be a
    // gigabyte on the host.
    let (r, _) = export(
        &hostile,
        "attacks.header-maps",
        json!({"maps": 8000, "bytes": 120_000}),
        &["--memory-mb", "64"],
    );
    assert_eq!(r["outcome"], "memory_limit", "{r}");
    // So would a million empty ones, in table entries.
    let (r, _) = export(
        &hostile,
        "attacks.header-maps",
        json!({"maps": 1_000_000, "bytes": 0}),
        &["--memory-mb", "64"],
    );
    assert_eq!(r["outcome"], "memory_limit", "{r}");
    // A tool's few headers are nowhere near it.
    let (r, _) = export(
        &hostile,
        "attacks.header-maps",
        json!({"maps": 20, "bytes": 2000}),
        &["--memory-mb", "64"],
    );
    assert_eq!(
        (r["exit_code"].clone(), r["result"].clone()),
        (json!(0), json!(20)),
        "{r}"
    );
}

#[test]
fn a_pinned_u64_draw_takes_eight_bytes_of_the_keystream() {
    let hostile = rust("hostile_component");
    let draws = |seed: &str| {
        let (r, _) = export(
            &hostile,
            "attacks.draws",
            json!({"n": 64}),
            &["--seed", seed],
        );
        assert_eq!(r["exit_code"], 0, "{r}");
        let lists: Vec<Vec<u64>> = (0..2)
            .map(|i| {
                (r["result"][i].as_array().unwrap().iter())
                    .map(|v| v.as_u64().unwrap())
                    .collect()
            })
            .collect();
        lists
    };
    let a = draws("1");
    for list in &a {
        // 64 draws all below 2^32 has odds of 2^-2048 for a uniform u64.
        assert!(
            list.iter().any(|&v| v > u64::from(u32::MAX)),
            "every draw is small: {list:?}"
        );
    }
    assert_ne!(a[0], a[1], "the secure and insecure streams are distinct");
    assert_eq!(draws("1"), a, "pinned: the same seed, the same draws");
    assert_ne!(draws("2"), a, "another seed, other draws");
}

#[test]
fn a_directory_s_size_is_pinned_to_zero_for_components() {
    let files = rust("files_component");
    let info = |root: &Path| {
        let d = root.join("data");
        std::fs::create_dir_all(d.join("sub")).unwrap();
        for i in 0..200 {
            std::fs::write(d.join(format!("a-rather-long-file-name-{i:04}.txt")), "x").unwrap();
        }
        let mount = format!("{}:/data", d.display());
        let (r, _) = export(
            &files,
            "file-info",
            json!({"path": "/data"}),
            &["--mount", &mount],
        );
        assert_eq!(r["result"]["kind"], "directory", "{r}");
        r["result"]["size"].clone()
    };
    let disk = tempfile::tempdir().unwrap();
    assert_eq!(info(disk.path()), 0);
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        let mem = tempfile::tempdir_in(shm).unwrap();
        assert_eq!(info(mem.path()), 0);
    }
}
