//! Hostile tools through `plangate eval`, as one batch: every test guest that loops,
//! allocates, recurses, floods stdout or stderr, stalls, sleeps, traps, exits 7, prints
//! non-JSON or non-UTF-8, writes into its mount, climbs out of it, follows a symlink to a
//! host file, reads the host's environment, opens files until refused, polls with a
//! forged subscription count or opens a FIFO in a live mount. The batch must finish,
//! decide every task, account for every line, record how every call ended, and let
//! nothing of the host out. Beside it: a tool hoarding open files under a low process
//! limit must not fail the other tools' calls, and `plangate call` must end on a FIFO.
//!
//! The catalog, samples and expected outcomes are files in tests/e2e/cases/hostile/; the
//! mounts with their escaping symlinks and FIFO are made here, in a temp dir, at test
//! time.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::exit;
use crate::tools::{build_tools, repo};

/// What one bounded run of the binary left behind.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

/// Runs `plangate <args>` with `env` set, killed after `limit`: a hang fails the test
/// (exit 124 from coreutils `timeout`) instead of stalling the suite.
pub(crate) fn bounded<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)], limit: Duration) -> Run {
    bounded_under(None, args, env, limit)
}

/// [`bounded`], with the process's open-file limit first set to `nofile` when given
/// (soft and hard both: sh's `ulimit` sets both, so the binary cannot raise it again).
fn bounded_under<S: AsRef<OsStr>>(
    nofile: Option<u32>,
    args: &[S],
    env: &[(&str, &str)],
    limit: Duration,
) -> Run {
    build_tools();
    let mut cmd = Command::new("timeout");
    cmd.arg("--kill-after=5")
        .arg(limit.as_secs().max(1).to_string());
    if let Some(n) = nofile {
        cmd.args(["sh", "-c", r#"ulimit -n "$1" && shift && exec "$@""#, "sh"])
            .arg(n.to_string());
    }
    let out = cmd
        .arg(env!("CARGO_BIN_EXE_plangate"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("timeout(1) runs plangate");
    let code = out.status.code().unwrap_or(-1);
    assert_ne!(code, 124, "plangate hung (killed after {limit:?})");
    assert_ne!(
        code,
        101,
        "plangate panicked:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        code,
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn cases() -> PathBuf {
    repo().join("tests/e2e/cases/hostile")
}

fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).expect("file written"))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Everything under `dir` (symlinks as their targets, not followed), to show the guests
/// changed nothing on the host.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut seen = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read fixture dir") {
            let p = e.expect("dir entry").path();
            let meta = std::fs::symlink_metadata(&p).expect("lstat");
            let what = if !(meta.is_dir() || meta.is_file() || meta.file_type().is_symlink()) {
                // The live mount's FIFO: reading it would wait for a writer.
                "special".to_string()
            } else if meta.file_type().is_symlink() {
                format!(
                    "link {}",
                    std::fs::read_link(&p).expect("readlink").display()
                )
            } else if meta.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(&p).expect("read")).into_owned()
            };
            seen.insert(p, what);
        }
    }
    seen
}

/// The hostile catalog copied into `dir` with module paths made absolute (they are
/// relative to cases/hostile/), its mounts `world` and `live` left relative so they land
/// in `dir`, and those mounts made: in `world` a plain file, and symlinks to a host file
/// by absolute path, by `..`, and to the parent directory; in `live` a FIFO that nothing
/// writes to, and a symlink to it.
fn fixture(dir: &Path, secret: &str) -> PathBuf {
    let mut doc = read_json(&cases().join("catalog.json"));
    for t in doc["tools"].as_array_mut().expect("tools") {
        let module = cases().join(t["module"].as_str().expect("module"));
        let module = module.canonicalize().unwrap_or_else(|e| {
            panic!("{}: {e} (is the guest built?)", module.display());
        });
        t["module"] = Value::String(module.display().to_string());
    }
    let catalog = dir.join("catalog.json");
    std::fs::write(&catalog, doc.to_string()).expect("write catalog");
    let world = dir.join("world");
    std::fs::create_dir(&world).expect("mkdir world");
    std::fs::write(world.join("data.txt"), "hello\n").expect("write data.txt");
    std::fs::write(dir.join("secret.txt"), format!("{secret}\n")).expect("write secret");
    std::os::unix::fs::symlink(dir.join("secret.txt"), world.join("link-abs")).expect("symlink");
    std::os::unix::fs::symlink("../secret.txt", world.join("link-up")).expect("symlink");
    std::os::unix::fs::symlink("..", world.join("link-dir")).expect("symlink");
    let live = dir.join("live");
    std::fs::create_dir(&live).expect("mkdir live");
    mkfifo(&live.join("pipe"));
    std::os::unix::fs::symlink("pipe", live.join("pipe-link")).expect("symlink");
    catalog
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo(1) runs");
    assert!(ok.success(), "mkfifo {}", p.display());
}

#[test]
fn a_batch_of_hostile_tools_finishes_records_every_ending_and_leaks_nothing() {
    build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let stamp = format!(
        "{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    let file_secret = format!("host-file-secret-{stamp}");
    let env_secret = format!("host-env-secret-{stamp}");
    let catalog = fixture(dir.path(), &file_secret);
    let before = snapshot(dir.path());
    let samples = cases().join("samples.jsonl");
    let (out, health, summary) = (
        dir.path().join("decisions.jsonl"),
        dir.path().join("tool-health.json"),
        dir.path().join("summary.json"),
    );
    let started = Instant::now();
    let run = bounded(
        &[
            "eval".as_ref(),
            "--catalog".as_ref(),
            catalog.as_os_str(),
            "--samples".as_ref(),
            samples.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--tool-health".as_ref(),
            health.as_os_str(),
            "--summary-json".as_ref(),
            summary.as_os_str(),
            // Fuel ends spin well inside the wall-time net; membomb reserves memory
            // without writing it, so it reaches the 256 MiB limit on a few thousand
            // fuel and no machine load can turn that into a timeout. Each stall call
            // costs the net in wall time (12 of them on 2 workers), so it is not set
            // higher.
            "--fuel".as_ref(),
            "300000000".as_ref(),
            "--timeout-ms".as_ref(),
            "2000".as_ref(),
        ],
        &[("PLANGATE_HOST_SECRET", env_secret.as_str())],
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    assert_eq!(
        run.code,
        exit::OK,
        "nothing rejected, no bad line:\n{}",
        run.stderr
    );
    // sleepy asks for 30 s; a real sleep would take 30 s per call.
    assert!(
        took < Duration::from_secs(30),
        "sleep was not virtual: {took:?}"
    );

    // The input, as data: task IDs in order and how many calls each tool gets.
    let text = std::fs::read_to_string(&samples).expect("samples");
    let mut want_ids = Vec::new();
    let mut want_calls: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines() {
        let t: Value = serde_json::from_str(line).expect("samples line is JSON");
        want_ids.push(t["task_id"].as_str().expect("task_id").to_string());
        for s in t["samples"].as_array().expect("samples") {
            for c in s["calls"].as_array().expect("calls") {
                *want_calls
                    .entry(c["tool"].as_str().expect("tool").into())
                    .or_default() += 1;
            }
        }
    }
    let expect = read_json(&cases().join("expect.json"));
    let expect = expect.as_object().expect("tool -> expectation");
    let expected: std::collections::BTreeSet<&String> = expect.keys().collect();
    assert_eq!(
        want_calls.keys().collect::<std::collections::BTreeSet<_>>(),
        expected,
        "every guest in samples.jsonl has an expectation, and no other"
    );

    // Every task has a decision record, in input order, naming the epoch.
    let decisions: Vec<Value> = std::fs::read_to_string(&out)
        .expect("decisions written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("decision is JSON"))
        .collect();
    let got_ids: Vec<&str> = decisions
        .iter()
        .map(|d| d["task_id"].as_str().expect("task_id"))
        .collect();
    assert_eq!(got_ids, want_ids);
    for d in &decisions {
        let tool = d["tools"][0].as_str().expect("one tool per task");
        assert_eq!(
            d["decision"], expect[tool]["decision"],
            "{tool}: {}",
            d["explanation"]
        );
        assert_eq!(d["epoch_id"].as_str().map(str::len), Some(64), "{d}");
    }

    // The summary accounts for every line and records how every call ended.
    let s = read_json(&summary);
    let lines = &s["lines"];
    assert_eq!(lines["total"], want_ids.len(), "{lines}");
    let accounted: u64 = ["accept", "reject", "defer", "skipped", "blank"]
        .iter()
        .map(|k| lines[k].as_u64().expect("a count"))
        .sum();
    assert_eq!(accounted, want_ids.len() as u64, "{lines}");
    let stats = &s["stats"];
    assert_eq!(stats["calls_executed"], want_calls.values().sum::<usize>());
    assert_eq!(stats["calls_not_executed"], 0);
    for (tool, n) in &want_calls {
        let outcome = expect[tool]["outcome"].as_str().expect("outcome");
        let mut want = serde_json::Map::new();
        want.insert(outcome.to_string(), (*n).into());
        assert_eq!(
            stats["outcomes"][tool],
            Value::Object(want),
            "{tool}: every call ended as {outcome}"
        );
    }

    // leaky drifts on purpose: it is quarantined and its whole output is the evidence,
    // so guest output does reach tool-health.json, and what it saw is on record.
    let h = read_json(&health);
    let leaky = h["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "leaky")
        .expect("leaky in tool health");
    assert_eq!(leaky["quarantined"], true, "{leaky}");
    let evidence = leaky["evidence"].to_string();
    for seen in [
        "env=unset",
        "vars=0",
        "link_abs=denied",
        "link_up=denied",
        "parent=denied",
    ] {
        assert!(evidence.contains(seen), "leaky saw something: {evidence}");
    }
    let quarantined: Vec<&str> = s["quarantined"]
        .as_array()
        .expect("quarantined")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(quarantined, ["leaky"], "only the drifting tool");

    // Nothing of the host reaches any output.
    let outputs = [
        ("stdout", run.stdout.clone()),
        ("stderr", run.stderr.clone().into_bytes()),
        ("decisions", std::fs::read(&out).expect("decisions")),
        ("tool health", std::fs::read(&health).expect("health")),
        ("summary", std::fs::read(&summary).expect("summary")),
    ];
    for (name, bytes) in &outputs {
        let text = String::from_utf8_lossy(bytes);
        for secret in [&file_secret, &env_secret] {
            assert!(!text.contains(secret.as_str()), "{name} leaks {secret}");
        }
        assert!(!text.contains("root:x:0:0"), "{name} leaks /etc/passwd");
    }
    // escape tried to create, overwrite, remove and mkdir in its mount.
    assert_eq!(
        snapshot(dir.path())
            .into_iter()
            .filter(|(p, _)| !outputs_file(p))
            .collect::<BTreeMap<_, _>>(),
        before
    );
}

/// The files plangate was asked to write into the fixture dir.
fn outputs_file(p: &Path) -> bool {
    matches!(
        p.file_name().and_then(OsStr::to_str),
        Some("decisions.jsonl" | "tool-health.json" | "summary.json")
    )
}

/// A catalog of `fdhog` and `openpath` over one pinned mount `world` holding
/// `data.txt`, written into `dir` with absolute module paths.
fn hoard_catalog(dir: &Path) -> PathBuf {
    let module = |name: &str| {
        repo()
            .join("sandbox-tools/target/wasm32-wasip1/release")
            .join(format!("{name}.wasm"))
            .display()
            .to_string()
    };
    let world = dir.join("world");
    std::fs::create_dir(&world).expect("mkdir world");
    std::fs::write(world.join("data.txt"), "hello\n").expect("write data.txt");
    let mounts = serde_json::json!([{"host": "world", "guest": "/world", "mode": "pinned"}]);
    let params = serde_json::json!({
        "type": "object",
        "properties": {"q": {"type": "string"}, "path": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": false
    });
    let doc = serde_json::json!({"tools": [
        {"name": "fdhog", "module": module("fdhog"), "deterministic": false,
         "parameters": params, "mounts": mounts},
        {"name": "openpath", "module": module("openpath"), "deterministic": true,
         "parameters": params, "mounts": mounts},
    ]});
    let catalog = dir.join("catalog.json");
    std::fs::write(&catalog, doc.to_string()).expect("write catalog");
    catalog
}

/// One tool takes every file it can and holds them; under a process limit of 1024 open
/// files, every other call of the batch, made while it holds them, still reads its mount
/// and returns the same bytes. Without the per-call bound the hoarder would take what
/// the process has left, and the other calls would fail to preopen their mounts
/// (`trap:host`).
#[test]
fn a_tool_hoarding_open_files_does_not_fail_the_others() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = hoard_catalog(dir.path());
    let samples = dir.path().join("samples.jsonl");
    let call =
        |tool: &str, args: Value| serde_json::json!({"calls": [{"tool": tool, "arguments": args}]});
    // The hoarder first, so one worker holds its files while the other runs the reads;
    // each read spins ~20 ms first, so the reads span the hoard.
    let mut lines = vec![
        serde_json::json!({"task_id": "hoard", "samples": [call("fdhog", serde_json::json!({"q": "hold"}))]}),
    ];
    for i in 0..8 {
        let read = call(
            "openpath",
            serde_json::json!({"q": "slow", "path": "/world/data.txt"}),
        );
        lines.push(serde_json::json!({"task_id": format!("read-{i}"), "samples": vec![read; 5]}));
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&samples, text).expect("write samples");
    let (out, summary) = (
        dir.path().join("decisions.jsonl"),
        dir.path().join("summary.json"),
    );
    let run = bounded_under(
        Some(1024),
        &[
            "eval".as_ref(),
            "--catalog".as_ref(),
            catalog.as_os_str(),
            "--samples".as_ref(),
            samples.as_os_str(),
            "--out".as_ref(),
            out.as_os_str(),
            "--summary-json".as_ref(),
            summary.as_os_str(),
            "--jobs".as_ref(),
            "2".as_ref(),
            "--timeout-ms".as_ref(),
            "4000".as_ref(),
        ],
        &[],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let stats = &read_json(&summary)["stats"];
    assert_eq!(
        stats["outcomes"],
        serde_json::json!({"fdhog": {"timeout": 1}, "openpath": {"exit:0": 40}}),
        "every read worked while the hoarder held its files"
    );
    for line in std::fs::read_to_string(&out).expect("decisions").lines() {
        let d: Value = serde_json::from_str(line).expect("decision is JSON");
        if d["task_id"] != "hoard" {
            assert_eq!(d["decision"], "accept", "{d}");
        }
    }
}

/// `plangate call` on a FIFO: in a live mount the guest's open is refused and the call
/// ends as the guest's own exit (an open that reached the host's `openat` would block
/// there, past `--timeout-ms`, for good); in a pinned mount the snapshot is refused,
/// naming it. And a forged `poll_oneoff` count is an errno, not an aborted process.
#[test]
fn call_ends_on_a_fifo_and_on_a_forged_poll() {
    let dir = tempfile::tempdir().expect("temp dir");
    let live = dir.path().join("live");
    std::fs::create_dir(&live).expect("mkdir live");
    mkfifo(&live.join("pipe"));
    let openpath = repo().join("sandbox-tools/target/wasm32-wasip1/release/openpath.wasm");
    let mount = format!("{}:/live:live", live.display());
    let run = bounded(
        &[
            "call".as_ref(),
            openpath.as_os_str(),
            "--args".as_ref(),
            r#"{"path":"/live/pipe"}"#.as_ref(),
            "--mount".as_ref(),
            mount.as_ref(),
            "--timeout-ms".as_ref(),
            "2000".as_ref(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let report: Value = serde_json::from_slice(&run.stdout).expect("a JSON report");
    assert_eq!(
        (&report["outcome"], &report["exit_code"]),
        (&Value::from("exit"), &Value::from(3)),
        "{report}"
    );
    // 60 is preview1's `nxio`.
    let stdout = report["stdout"].as_str().expect("stdout");
    assert!(stdout.starts_with("/live/pipe: errno 60 "), "{report}");

    let pinned = format!("{}:/live", live.display());
    let run = bounded(
        &[
            "call".as_ref(),
            openpath.as_os_str(),
            "--mount".as_ref(),
            pinned.as_ref(),
        ],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    let fifo = live.canonicalize().expect("live dir").join("pipe");
    assert!(
        run.stderr.contains(&format!("`{}`", fifo.display())) && run.stderr.contains("a FIFO"),
        "{}",
        run.stderr
    );

    let pollbomb = repo().join("sandbox-tools/target/wasm32-wasip1/release/pollbomb.wasm");
    let run = bounded(
        &["call".as_ref(), pollbomb.as_os_str()],
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let report: Value = serde_json::from_slice(&run.stdout).expect("a JSON report");
    assert_eq!(report["outcome"], "exit", "{report}");
    assert!(
        report["stdout"]
            .as_str()
            .is_some_and(|s| s.starts_with("poll nsubs=4294967295: errno 28 ")),
        "{report}"
    );
}
