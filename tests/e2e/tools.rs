//! The seed world's twelve tools (examples/seed-world) run through the real `plangate
//! call` binary, built from source: every probe answers, honest tools repeat byte for
//! byte under a pinned epoch, every error path gives its typed error, and the three
//! mis-declared tools drift exactly when their live state is written, never otherwise.
//!
//! The cases come from data, not code: the catalog (tools, probes, mounts, modes) and
//! `tests/e2e/cases/tools/<tool>.json` (arguments, expected exit status, error kind or a
//! subset of the result; and `equivalent`: groups of arguments that the catalog's
//! canonicalization hints make equal). A tool added to the catalog without a case file
//! fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The seed's three tools that are declared deterministic and are not.
const MISDECLARED: [&str; 3] = ["search_index", "read_config", "resolve_user"];
/// The seed's two tools that are nondeterministic by contract.
const NONDETERMINISTIC: [&str; 2] = ["get_current_time", "random_sample"];

pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

pub(crate) fn world() -> PathBuf {
    repo().join("examples/seed-world")
}

/// A Rust component tool built from sandbox-tools/components, by its file stem.
pub(crate) fn component(name: &str) -> PathBuf {
    build_tools();
    repo().join(format!(
        "sandbox-tools/target/wasm32-wasip2/release/{name}.wasm"
    ))
}

/// Builds every guest from source once per test process, so a tool that stops
/// compiling fails the suite instead of a stale .wasm passing it.
pub(crate) fn build_tools() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = Command::new(repo().join("scripts/build-tools"))
            .output()
            .expect("scripts/build-tools runs");
        assert!(
            out.status.success(),
            "scripts/build-tools failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

#[derive(Debug, Clone)]
struct Mount {
    host: PathBuf,
    guest: String,
    live: bool,
}

/// One catalog entry, with paths made absolute against the catalog's folder.
#[derive(Debug, Clone)]
struct Tool {
    name: String,
    module: PathBuf,
    deterministic: bool,
    probe: Vec<Value>,
    mounts: Vec<Mount>,
    clock_live: bool,
    random_live: bool,
}

impl Tool {
    /// What the seed calls honest: declared deterministic, and nothing it can observe
    /// is live. Derived from the catalog, so the catalog cannot quietly disagree with
    /// the tests about which tools must repeat byte for byte.
    fn honest(&self) -> bool {
        self.deterministic
            && !self.clock_live
            && !self.random_live
            && self.mounts.iter().all(|m| !m.live)
    }

    /// This tool with its live mounts' host folders replaced (by guest path).
    fn remount(&self, guest: &str, host: &Path) -> Tool {
        let mut t = self.clone();
        let m = t
            .mounts
            .iter_mut()
            .find(|m| m.guest == guest)
            .unwrap_or_else(|| panic!("{} has no mount at {guest}", self.name));
        m.host = host.to_owned();
        t
    }
}

fn catalog() -> BTreeMap<String, Tool> {
    let path = world().join("catalog.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).expect("catalog.json reads"))
        .expect("catalog.json is JSON");
    let base = path.parent().expect("the catalog has a folder");
    let mut tools = BTreeMap::new();
    for t in doc["tools"].as_array().expect("catalog has a tools array") {
        let s = |k: &str| {
            t[k].as_str()
                .unwrap_or_else(|| panic!("{k} is a string in {t}"))
        };
        let mode = |k: &str| match t.get(k).and_then(Value::as_str).unwrap_or("pinned") {
            "pinned" => false,
            "live" => true,
            other => panic!("{k}: unknown mode {other}"),
        };
        let mounts = t["mounts"]
            .as_array()
            .expect("mounts is an array")
            .iter()
            .map(|m| Mount {
                host: base.join(m["host"].as_str().expect("mount host")),
                guest: m["guest"].as_str().expect("mount guest").to_owned(),
                live: m.get("mode").and_then(Value::as_str) == Some("live"),
            })
            .collect();
        let tool = Tool {
            name: s("name").to_owned(),
            module: base.join(s("module")),
            deterministic: t["deterministic"]
                .as_bool()
                .expect("deterministic is a bool"),
            probe: t["probe"].as_array().expect("probe is an array").clone(),
            mounts,
            clock_live: mode("clock"),
            random_live: mode("random"),
        };
        assert!(
            tools.insert(tool.name.clone(), tool).is_none(),
            "duplicate tool name in the catalog"
        );
    }
    tools
}

/// What `plangate call` reports for one execution.
#[derive(Debug)]
struct Run {
    outcome: String,
    exit_code: Option<i64>,
    stdout: String,
    report: Value,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", self.stdout))
    }
}

fn call(tool: &Tool, args: &Value) -> Run {
    call_with(tool, args, &[])
}

/// [`call`] with extra `plangate call` flags (epoch replay).
fn call_with(tool: &Tool, args: &Value, extra: &[&std::ffi::OsStr]) -> Run {
    build_tools();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plangate"));
    cmd.arg("call")
        .args(extra)
        .arg(&tool.module)
        .arg("--args")
        .arg(args.to_string());
    for m in &tool.mounts {
        let mut spec = format!("{}:{}", m.host.display(), m.guest);
        if m.live {
            spec.push_str(":live");
        }
        cmd.arg("--mount").arg(spec);
    }
    if tool.clock_live {
        cmd.args(["--clock", "live"]);
    }
    if tool.random_live {
        cmd.args(["--random", "live"]);
    }
    let out = cmd.output().expect("plangate runs");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "plangate call {} printed no JSON report ({e}); status {}, stderr:\n{}",
            tool.name,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Run {
        outcome: report["outcome"].as_str().unwrap_or_default().to_owned(),
        exit_code: report["exit_code"].as_i64(),
        stdout: report["stdout"].as_str().unwrap_or_default().to_owned(),
        report,
    }
}

/// One case from tests/e2e/cases/tools/<tool>.json.
#[derive(Debug)]
struct Case {
    name: String,
    args: Value,
    exit: i64,
    kind: Option<String>,
    expect: Option<Value>,
}

struct CaseFile {
    tool: String,
    honest: bool,
    cases: Vec<Case>,
    equivalent: Vec<Vec<Value>>,
}

fn case_files() -> Vec<CaseFile> {
    let dir = repo().join("tests/e2e/cases/tools");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the tool cases folder exists")
        .map(|e| e.expect("a readable entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let v: Value = serde_json::from_slice(&std::fs::read(p).expect("case file reads"))
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let cases = v["cases"]
                .as_array()
                .unwrap_or_else(|| panic!("{}: no cases array", p.display()))
                .iter()
                .map(|c| Case {
                    name: c["name"].as_str().expect("case name").to_owned(),
                    args: c["args"].clone(),
                    exit: c["exit"].as_i64().expect("case exit"),
                    kind: c.get("kind").and_then(Value::as_str).map(str::to_owned),
                    expect: c.get("expect").cloned(),
                })
                .collect();
            let equivalent = v["equivalent"]
                .as_array()
                .unwrap_or_else(|| panic!("{}: no equivalent array", p.display()))
                .iter()
                .map(|g| {
                    g.as_array()
                        .expect("an equivalence group is an array")
                        .clone()
                })
                .collect();
            CaseFile {
                tool: v["tool"]
                    .as_str()
                    .expect("case file names its tool")
                    .to_owned(),
                honest: v["honest"]
                    .as_bool()
                    .expect("case file says whether honest"),
                cases,
                equivalent,
            }
        })
        .collect()
}

/// Is `expected` contained in `actual`? Objects: every expected key, recursively.
/// Arrays: same length, element-wise. Anything else: equal (numbers by value, so the
/// case files may write `1` for a tool's `1.0`).
fn contains(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| contains(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| contains(x, y))
        }
        (Value::Number(e), Value::Number(a)) => e.as_f64() == a.as_f64(),
        _ => expected == actual,
    }
}

/// Checks the error envelope exactly: `{"error":{"kind":K,"message":M}}` and nothing
/// else, M not empty. Returns the kind.
fn error_kind(run: &Run) -> Result<String, String> {
    let v = run.json();
    let obj = v.as_object().filter(|o| o.len() == 1);
    let err = obj
        .and_then(|o| o.get("error"))
        .and_then(Value::as_object)
        .filter(|e| e.len() == 2)
        .ok_or_else(|| format!("not an error envelope: {}", run.stdout))?;
    match (err.get("kind"), err.get("message")) {
        (Some(Value::String(k)), Some(Value::String(m))) if !m.is_empty() => Ok(k.clone()),
        _ => Err(format!(
            "error envelope without kind and message: {}",
            run.stdout
        )),
    }
}

/// A private copy of examples/seed-world/live/{index,config,cache}: the writer and the
/// drift tests change it, never the committed tree.
pub(crate) fn live_copy() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("a temp dir");
    for sub in ["index", "config", "cache"] {
        let from = world().join("live").join(sub);
        let to = tmp.path().join(sub);
        std::fs::create_dir(&to).expect("create copy dir");
        for entry in std::fs::read_dir(&from).expect("live dir reads") {
            let entry = entry.expect("entry");
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy live file");
        }
    }
    tmp
}

/// Runs examples/seed-world/writer against a live copy.
pub(crate) fn writer(live: &Path, args: &[&str]) {
    let out = Command::new(world().join("writer"))
        .arg(args[0])
        .arg(live)
        .args(&args[1..])
        .output()
        .expect("the writer runs");
    assert!(
        out.status.success(),
        "writer {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

#[test]
fn catalog_has_the_seeds_twelve_tools_each_with_cases() {
    build_tools();
    let tools = catalog();
    assert_eq!(tools.len(), 12, "the seed's batch ran 12 tools");
    for t in tools.values() {
        assert!(
            t.module.is_file(),
            "{}: module {} was not built",
            t.name,
            t.module.display()
        );
        assert!(!t.probe.is_empty(), "{}: no probe arguments", t.name);
        for m in &t.mounts {
            assert!(
                m.host.is_dir(),
                "{}: mount {} missing",
                t.name,
                m.host.display()
            );
        }
    }
    let misdeclared: BTreeSet<&str> = tools
        .values()
        .filter(|t| t.deterministic && !t.honest())
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(misdeclared, BTreeSet::from(MISDECLARED));
    let by_contract: BTreeSet<&str> = tools
        .values()
        .filter(|t| !t.deterministic)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(by_contract, BTreeSet::from(NONDETERMINISTIC));
    assert_eq!(tools.values().filter(|t| t.honest()).count(), 7);

    let files = case_files();
    let covered: BTreeSet<&str> = files.iter().map(|f| f.tool.as_str()).collect();
    let named: BTreeSet<&str> = tools.keys().map(String::as_str).collect();
    assert_eq!(
        covered, named,
        "every catalog tool has exactly one case file"
    );
    for f in &files {
        assert_eq!(
            f.honest,
            tools[&f.tool].honest(),
            "{}: the case file and the catalog disagree on honesty",
            f.tool
        );
        assert!(
            f.cases.iter().any(|c| c.exit == 0) && f.cases.iter().any(|c| c.exit == 1),
            "{}: cases must cover success and a typed error",
            f.tool
        );
    }
}

#[test]
fn every_probe_exits_zero_with_a_json_object() {
    for t in catalog().values() {
        for args in &t.probe {
            let run = call(t, args);
            assert_eq!(
                (run.outcome.as_str(), run.exit_code),
                ("exit", Some(0)),
                "{} {args}: {}",
                t.name,
                run.report
            );
            assert!(run.json().is_object(), "{} {args}: {}", t.name, run.stdout);
        }
    }
}

#[test]
fn honest_tools_repeat_byte_for_byte_under_a_pinned_epoch() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tools = catalog();
    let files = case_files();
    for t in tools.values().filter(|t| t.honest()) {
        let succeeding = files
            .iter()
            .filter(|f| f.tool == t.name)
            .flat_map(|f| &f.cases)
            .filter(|c| c.exit == 0)
            .map(|c| &c.args);
        for args in t.probe.iter().chain(succeeding) {
            // The second call replays the first one's epoch manifest, so both provably
            // ran in one pinned epoch.
            let manifest = dir.path().join("epoch.json");
            let a = call_with(t, args, &["--write-epoch".as_ref(), manifest.as_os_str()]);
            let b = call_with(t, args, &["--epoch".as_ref(), manifest.as_os_str()]);
            assert_eq!(a.exit_code, Some(0), "{} {args}: {}", t.name, a.report);
            assert_eq!(b.exit_code, Some(0), "{} {args}: {}", t.name, b.report);
            assert_eq!(
                a.report["epoch_id"], b.report["epoch_id"],
                "{} {args}",
                t.name
            );
            assert_eq!(a.stdout, b.stdout, "{} {args}: two runs differ", t.name);
        }
    }
}

#[test]
fn cases_give_their_exit_status_and_result_or_typed_error() {
    let tools = catalog();
    let mut failures = Vec::new();
    let mut ran = 0;
    for f in case_files() {
        let tool = &tools[&f.tool];
        for c in &f.cases {
            ran += 1;
            let run = call(tool, &c.args);
            let what = format!("{} / {} {}", f.tool, c.name, c.args);
            if run.outcome != "exit" || run.exit_code != Some(c.exit) {
                failures.push(format!(
                    "{what}: expected exit {}, got {}",
                    c.exit, run.report
                ));
                continue;
            }
            if c.exit == 0 {
                let result = run.json();
                if let Some(expect) = &c.expect
                    && !contains(expect, &result)
                {
                    failures.push(format!("{what}: expected {expect} within {result}"));
                }
            } else {
                match error_kind(&run) {
                    Ok(kind) if Some(&kind) == c.kind.as_ref() => {}
                    Ok(kind) => {
                        failures.push(format!("{what}: expected kind {:?}, got {kind:?}", c.kind))
                    }
                    Err(e) => failures.push(format!("{what}: {e}")),
                }
            }
        }
    }
    assert!(ran >= 60, "only {ran} cases ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn canonically_equal_arguments_get_the_same_answer() {
    // A canonicalization hint is a promise about the tool: if plangate's canonicalizer
    // (the gate crate, reading this catalog) merges two argument objects, the tool must
    // answer them identically, or argument agreement would count different calls as one.
    use plangate_gate::{canon, catalog::Catalog, jcs, json};
    let text = std::fs::read_to_string(world().join("catalog.json")).expect("catalog reads");
    let gate = Catalog::from_value(&json::parse(&text).expect("gate parses the catalog"))
        .expect("gate accepts the catalog");
    let tools = catalog();
    let mut groups = 0;
    for f in case_files() {
        let spec = gate.get(&f.tool).expect("gate knows the tool");
        for group in &f.equivalent {
            groups += 1;
            let keys: BTreeSet<String> = group
                .iter()
                .map(|a| {
                    let a = json::parse(&a.to_string()).expect("gate parses the arguments");
                    let c = canon::canonicalize_arguments(spec, &a, 0, None)
                        .unwrap_or_else(|e| panic!("{}: {a:?} is malformed: {e:?}", f.tool));
                    jcs::to_string(&c)
                })
                .collect();
            assert_eq!(
                keys.len(),
                1,
                "{}: {group:?} canonicalize apart: {keys:?}",
                f.tool
            );
            let outs: BTreeSet<String> = group
                .iter()
                .map(|a| {
                    let run = call(&tools[&f.tool], a);
                    assert_eq!(run.exit_code, Some(0), "{} {a}: {}", f.tool, run.report);
                    run.stdout
                })
                .collect();
            assert_eq!(
                outs.len(),
                1,
                "{}: {group:?} merge but answer differently: {outs:?}",
                f.tool
            );
        }
    }
    assert!(groups >= 10, "only {groups} equivalence groups");
}

#[test]
fn misdeclared_tools_repeat_when_no_one_writes() {
    // Their nondeterminism must come from the writer, not from a coin flip inside the
    // tool: untouched live state gives the same bytes twice.
    let tools = catalog();
    let live = live_copy();
    for name in MISDECLARED {
        let mut t = tools[name].clone();
        for m in t.mounts.iter_mut().filter(|m| m.live) {
            m.host = live
                .path()
                .join(m.host.file_name().expect("a live folder name"));
        }
        for args in &t.probe {
            let (a, b) = (call(&t, args), call(&t, args));
            assert_eq!(a.exit_code, Some(0), "{name} {args}: {}", a.report);
            assert_eq!(a.stdout, b.stdout, "{name} {args}: differs with no writer");
        }
    }
}

#[test]
fn search_index_drifts_when_a_segment_is_appended() {
    let live = live_copy();
    let t = catalog()["search_index"].remount("/index", &live.path().join("index"));
    let args = json!({"query": "refund shipping"});
    let before = call(&t, &args);
    writer(live.path(), &["append-segment"]);
    let after = call(&t, &args);
    assert_ne!(
        before.stdout, after.stdout,
        "an appended segment changed nothing"
    );
    let (b, a) = (before.json(), after.json());
    assert_eq!(b["segments"], 3);
    assert_eq!(a["segments"], 4);
    let docs = |v: &Value| -> Vec<String> {
        v["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .map(|h| h["doc"].as_str().expect("doc").to_owned())
            .collect()
    };
    assert!(
        docs(&a).contains(&"kb_104".to_owned()),
        "new doc missing: {a}"
    );
    // kb_003's new version moved it to the end of the merge, so its hit now names the
    // appended segment.
    let kb003 = |v: &Value| {
        v["hits"]
            .as_array()
            .expect("hits")
            .iter()
            .find(|h| h["doc"] == "kb_003")
            .map(|h| h["segment"].clone())
    };
    assert_eq!(kb003(&b), Some(json!("seg-0002.jsonl")));
    assert_eq!(kb003(&a), Some(json!("seg-0004.live.jsonl")));
}

#[test]
fn read_config_drifts_when_the_config_reloads() {
    let live = live_copy();
    let t = catalog()["read_config"].remount("/config", &live.path().join("config"));
    let args = json!({"key": "features.new_checkout"});
    let before = call(&t, &args).json();
    writer(live.path(), &["reload-config"]);
    let after = call(&t, &args).json();
    writer(live.path(), &["reload-config"]);
    let back = call(&t, &args).json();
    assert_eq!(
        before,
        json!({"key": "features.new_checkout", "value": false, "version": 7})
    );
    assert_eq!(
        after,
        json!({"key": "features.new_checkout", "value": true, "version": 8})
    );
    assert_eq!(back, before, "a second reload restores version 7");
}

#[test]
fn resolve_user_drifts_when_a_cache_entry_expires_by_the_clock() {
    let live = live_copy();
    let t = catalog()["resolve_user"].remount("/cache", &live.path().join("cache"));
    assert!(t.clock_live, "resolve_user's TTL runs on the live clock");
    let args = json!({"user": "ada@analytical-engine.example"});
    // Warm: the first call may compile the module, and the TTL window is short.
    let cold = call(&t, &args).json();
    assert_eq!(
        cold["source"], "directory",
        "the committed cache is expired: {cold}"
    );

    // The fresh window is 60 - AGE seconds; a loaded machine may miss it, so retry
    // rather than conclude anything from a call that ran after expiry.
    const AGE: u64 = 55;
    let mut observed = None;
    for _ in 0..3 {
        writer(live.path(), &["refresh-cache", &AGE.to_string()]);
        let cache: Value = serde_json::from_slice(
            &std::fs::read(live.path().join("cache/identity.json")).expect("cache reads"),
        )
        .expect("cache is JSON");
        let stamp = cache["entries"]["ada@analytical-engine.example"]["cached_at"]
            .as_u64()
            .expect("cached_at");
        let fresh = call(&t, &args).json();
        if unix_now() < stamp + 60 {
            observed = Some((stamp, fresh));
            break;
        }
    }
    let (stamp, fresh) = observed.expect("three calls in a row outlived a 5 s window");
    // The cache was filled before the merge: it still says u_0030.
    assert_eq!(
        fresh,
        json!({"user_id": "u_0030", "matched": "email", "source": "cache"})
    );

    // Same file, later clock: only time changed.
    let wait = (stamp + 61).saturating_sub(unix_now());
    std::thread::sleep(Duration::from_secs(wait));
    let expired = call(&t, &args).json();
    assert_eq!(
        expired,
        json!({"user_id": "u_0001", "matched": "email", "source": "directory"})
    );
}

#[test]
fn writer_reset_restores_the_committed_live_state() {
    // The demo runs the writer on the committed tree; reset must undo it exactly.
    let live = live_copy();
    writer(live.path(), &["append-segment"]);
    writer(live.path(), &["reload-config"]);
    writer(live.path(), &["refresh-cache", "10"]);
    let snapshot = |root: &Path| -> BTreeMap<String, Vec<u8>> {
        ["index", "config", "cache"]
            .iter()
            .flat_map(|sub| {
                std::fs::read_dir(root.join(sub))
                    .expect("live dir reads")
                    .map(move |e| {
                        let e = e.expect("entry");
                        let name = format!("{sub}/{}", e.file_name().to_string_lossy());
                        (name, std::fs::read(e.path()).expect("file reads"))
                    })
            })
            .collect()
    };
    let committed = snapshot(&world().join("live"));
    assert_ne!(
        snapshot(live.path()),
        committed,
        "the writer changed nothing"
    );
    writer(live.path(), &["reset"]);
    assert_eq!(snapshot(live.path()), committed);
}

#[test]
fn get_current_time_reads_the_live_clock_and_freezes_under_a_pinned_one() {
    let live = catalog()["get_current_time"].clone();
    assert!(live.clock_live);
    let now = call(&live, &json!({})).json();
    let unix = now["unix"].as_u64().expect("unix");
    assert!(unix.abs_diff(unix_now()) < 120, "live clock is off: {now}");
    let shifted = call(&live, &json!({"utc_offset_minutes": -330})).json();
    assert!(
        shifted["rfc3339"]
            .as_str()
            .expect("rfc3339")
            .ends_with("-05:30")
    );

    let pinned = Tool {
        clock_live: false,
        ..live
    };
    let (a, b) = (call(&pinned, &json!({})), call(&pinned, &json!({})));
    assert_eq!(a.stdout, b.stdout, "a pinned clock reads the same twice");
}

#[test]
fn random_sample_draws_live_randomness_and_repeats_under_pinned() {
    let live = catalog()["random_sample"].clone();
    assert!(live.random_live);
    let args = json!({"collection": "users", "k": 5});
    let draws: BTreeSet<String> = (0..4).map(|_| call(&live, &args).stdout).collect();
    // Four equal 5-of-36 draws by chance: about 1 in 10^21.
    assert!(
        draws.len() > 1,
        "live randomness drew the same sample four times"
    );
    for d in &draws {
        let v: Value = serde_json::from_str(d).expect("JSON");
        let ids: BTreeSet<&str> = v["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|i| i.as_str().expect("id"))
            .collect();
        assert_eq!(ids.len(), 5, "a sample of distinct ids: {v}");
    }

    let pinned = Tool {
        random_live: false,
        ..live
    };
    let (a, b) = (call(&pinned, &args), call(&pinned, &args));
    assert_eq!(a.stdout, b.stdout, "pinned randomness draws the same twice");
}
