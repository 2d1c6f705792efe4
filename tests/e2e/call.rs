//! `plangate call` end to end: the built binary replays a written epoch over another
//! copy of a fixture (another filesystem, opposite creation order, other mtimes) with
//! byte-identical output, reports each outcome, and keeps the host's env and files out;
//! runs a catalog entry as its MODULE form with the same mounts, from any directory; sets
//! the clock with `--instant`; and shows the stdout as JSON with the tool ABI checked.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::exit;

#[path = "../../crates/sandbox/tests/it/guests.rs"]
mod guests;

use guests::guest;

use crate::tools::{build_tools, repo, world};

fn plangate(args: &[&str]) -> (i32, Value, String) {
    plangate_in(&std::env::current_dir().expect("a working directory"), args)
}

fn plangate_in(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .current_dir(dir)
        .args(args)
        // A host secret the guest must never see.
        .env("PLANGATE_HOST_SECRET", "hunter2")
        .output()
        .expect("plangate runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), report, stderr)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

fn fixture(base: &Path, reverse: bool, mtime_s: u64) -> PathBuf {
    let world = base.join("world");
    let mut files: Vec<(String, String)> = (0..25)
        .map(|i| (format!("items/i{i:02}.json"), format!("{{\"i\":{i}}}")))
        .collect();
    files.push(("data.txt".into(), "hello\n".into()));
    files.push(("nested/deeper/x.txt".into(), "x\n".into()));
    if reverse {
        files.reverse();
    }
    for (rel, text) in &files {
        let p = world.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        fs::File::open(&p)
            .unwrap()
            .set_modified(UNIX_EPOCH + Duration::from_secs(mtime_s))
            .unwrap();
    }
    fs::write(base.join("secret.txt"), "host secret\n").unwrap();
    std::os::unix::fs::symlink(base.join("secret.txt"), world.join("link-abs")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", world.join("link-up")).unwrap();
    std::os::unix::fs::symlink("..", world.join("link-dir")).unwrap();
    world
}

#[test]
fn a_written_epoch_replays_byte_identically_on_another_copy() {
    let observe = guest("observe");
    let a = if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let b = tempfile::tempdir().unwrap();
    let world_a = fixture(a.path(), false, 1_000_000_000);
    let world_b = fixture(b.path(), true, 1_700_000_000);
    let manifest = b.path().join("epoch.json");

    let mount_a = format!("{}:/world", s(&world_a));
    let (code, first, err) = plangate(&[
        "call",
        s(&observe),
        "--mount",
        &mount_a,
        "--seed",
        "5",
        "--write-epoch",
        s(&manifest),
    ]);
    assert_eq!(code, exit::OK, "{err}");
    assert_eq!(first["outcome"], "exit");
    assert_eq!(first["exit_code"], 0);

    let mount_b = format!("{}:/world", s(&world_b));
    let (code, second, err) = plangate(&[
        "call",
        s(&observe),
        "--mount",
        &mount_b,
        "--epoch",
        s(&manifest),
    ]);
    assert_eq!(code, exit::OK, "{err}");
    assert_eq!(first["stdout"], second["stdout"]);
    assert_eq!(first["epoch_id"], second["epoch_id"]);
    assert_eq!(first["fuel_used"], second["fuel_used"]);
    let text = first["stdout"].as_str().unwrap();
    assert!(text.contains("entry /world/items/i24.json"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("secret"),
        "{text}"
    );

    // The epoch id is the manifest's: sha256 of its canonical JSON, 64 hex digits.
    let id = first["epoch_id"].as_str().unwrap();
    assert_eq!(id.len(), 64);
    let written: Value = serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(written["wasmtime_version"], "48.0.8");
    assert_eq!(written["mounts"][0]["guest"], "/world");

    // Live clock and randomness: two runs differ.
    let live_args = [
        "call",
        s(&observe),
        "--mount",
        &mount_a,
        "--live",
        "clock,random",
    ];
    let (x, y) = (plangate(&live_args).1, plangate(&live_args).1);
    assert_eq!(x["outcome"], "exit");
    assert_ne!(x["stdout"], y["stdout"]);

    // A changed pinned source refuses to replay (usage error, nothing printed on stdout).
    fs::write(world_b.join("data.txt"), "changed\n").unwrap();
    let (code, report, err) = plangate(&[
        "call",
        s(&observe),
        "--mount",
        &mount_b,
        "--epoch",
        s(&manifest),
    ]);
    assert_eq!(code, exit::USAGE);
    assert_eq!(report, Value::Null);
    assert!(err.contains("digest"), "{err}");
}

#[test]
fn each_misbehaviour_is_its_own_outcome() {
    let cases: [(&str, &[&str], &str); 6] = [
        ("spin", &["--fuel", "100000000"], "out_of_fuel"),
        (
            "spin",
            &["--fuel", "100000000000000", "--timeout-ms", "300"],
            "timeout",
        ),
        ("membomb", &["--memory-mb", "64"], "memory_limit"),
        ("recurse", &[], "trap"),
        ("spew", &[], "output_limit"),
        ("trap", &[], "trap"),
    ];
    for (name, extra, want) in cases {
        let module = guest(name);
        let mut args = vec!["call", s(&module)];
        args.extend_from_slice(extra);
        let (code, report, err) = plangate(&args);
        assert_eq!(code, exit::OK, "{name}: {err}");
        assert_eq!(report["outcome"], want, "{name}: {report}");
        assert_eq!(report["exit_code"], Value::Null, "{name}");
    }
    let (_, report, _) = plangate(&["call", s(&guest("exit7"))]);
    assert_eq!(report["outcome"], "exit");
    assert_eq!(report["exit_code"], 7);
    assert_eq!(report["stderr"], "exiting with 7\n");
    let (_, report, _) = plangate(&["call", s(&guest("sleepy"))]);
    assert_eq!(report["outcome"], "exit");
    assert!(report["wall_ms"].as_f64().unwrap() < 5_000.0, "{report}");
    let (_, report, _) = plangate(&["call", s(&guest("echo")), "--args", r#"{"b":1, "a":[2]}"#]);
    assert_eq!(
        report["stdout"], r#"{"b":1, "a":[2]}"#,
        "arguments pass through as given"
    );
}

#[test]
fn no_escape_through_the_cli() {
    let base = tempfile::tempdir().unwrap();
    let world = fixture(base.path(), false, 1);
    let mount = format!("{}:/world", s(&world));
    for m in [mount.clone(), format!("{mount}:live")] {
        let (code, report, err) = plangate(&["call", s(&guest("escape")), "--mount", &m]);
        assert_eq!(code, exit::OK, "{err}");
        let text = report["stdout"].as_str().unwrap();
        assert_eq!(text.lines().count(), 13, "{text}");
        assert!(text.lines().all(|l| l.contains(": denied")), "{m}: {text}");
        assert!(!text.contains("hunter2"));
    }
    assert!(!world.join("new.txt").exists());
}

#[test]
fn a_bad_mount_is_a_usage_error() {
    let (code, _, err) = plangate(&["call", s(&guest("echo")), "--mount", "no-guest-path"]);
    assert_eq!(code, exit::USAGE, "{err}");
}

#[test]
fn a_bad_mount_mode_is_named() {
    let echo = guest("echo");
    for (mount, want) in [
        (
            "docs:/docs:ro",
            "the mode `ro` is not one of `pinned`, `live`",
        ),
        (":/docs", "the host path is empty"),
        ("docs:docs", "the guest path `docs` is not absolute"),
    ] {
        let (code, report, err) = plangate(&["call", s(&echo), "--mount", mount]);
        assert_eq!((code, report), (exit::USAGE, Value::Null), "{mount}: {err}");
        assert!(err.contains(want), "{mount}: {err}");
    }
}

/// The seed world's catalog, and a tool's module and data folder as its entry names them.
fn seed_catalog() -> PathBuf {
    build_tools();
    world().join("catalog.json")
}

fn seed_module(tool: &str) -> PathBuf {
    repo().join(format!(
        "sandbox-tools/target/wasm32-wasip1/release/{tool}.wasm"
    ))
}

#[test]
fn a_catalog_entry_runs_as_its_module_with_the_same_mounts_from_any_directory() {
    let catalog = seed_catalog();
    let args = r#"{"user_id":"u_0001"}"#;
    let by_entry = [
        "call",
        "--catalog",
        "examples/seed-world/catalog.json",
        "--tool",
        "get_user",
        "--args",
        args,
    ];
    let (code, from_root, err) = plangate_in(&repo(), &by_entry);
    assert_eq!(code, exit::OK, "{err}");
    assert_eq!(from_root["abi"], "ok", "{from_root}");
    assert_eq!(from_root["result"]["id"], "u_0001", "{from_root}");

    // Relative mount paths are read against the catalog's folder, not the working one.
    let elsewhere = tempfile::tempdir().unwrap();
    let (code, from_elsewhere, err) = plangate_in(
        elsewhere.path(),
        &[
            "call",
            "--catalog",
            s(&catalog),
            "--tool",
            "get_user",
            "--args",
            args,
        ],
    );
    assert_eq!(code, exit::OK, "{err}");

    let module = seed_module("get_user");
    let mount = format!("{}:/world", s(&world().join("data")));
    let (code, by_module, err) = plangate_in(
        elsewhere.path(),
        &["call", s(&module), "--mount", &mount, "--args", args],
    );
    assert_eq!(code, exit::OK, "{err}");
    for key in ["stdout", "result", "fuel_used", "epoch_id", "abi"] {
        assert_eq!(from_root[key], from_elsewhere[key], "{key}");
        assert_eq!(from_root[key], by_module[key], "{key}");
    }

    // A typed error is the ABI kept, and shown as an object too.
    let (_, missing, _) = plangate_in(
        &repo(),
        &[
            "call",
            "--catalog",
            "examples/seed-world/catalog.json",
            "--tool",
            "get_user",
            "--args",
            r#"{"user_id":"u_9999"}"#,
        ],
    );
    assert_eq!(missing["exit_code"], 1);
    assert_eq!(missing["abi"], "ok", "{missing}");
    assert_eq!(missing["result"]["error"]["kind"], "not_found", "{missing}");
}

#[test]
fn the_catalog_form_refuses_what_does_not_fit() {
    let catalog = seed_catalog();
    let cat = s(&catalog);
    let (code, _, err) = plangate(&["call", "--catalog", cat, "--tool", "get_usr"]);
    assert_eq!(code, exit::USAGE, "{err}");
    assert!(err.contains("has no tool `get_usr`"), "{err}");
    assert!(
        err.contains("get_user, get_order"),
        "names the tools: {err}"
    );

    let module = seed_module("get_user");
    let refused: [(&[&str], &str); 4] = [
        (
            &["call", s(&module), "--catalog", cat, "--tool", "get_user"],
            "cannot be used with",
        ),
        (
            &[
                "call",
                "--catalog",
                cat,
                "--tool",
                "get_user",
                "--mount",
                "a:/b",
            ],
            "cannot be used with",
        ),
        (&["call", "--catalog", cat], "--tool"),
        (&["call"], "<MODULE|--catalog <FILE>>"),
    ];
    for (args, want) in refused {
        let (code, report, err) = plangate(args);
        assert_eq!(
            (code, report),
            (exit::USAGE, Value::Null),
            "{args:?}: {err}"
        );
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn instant_sets_the_clock_a_tool_reads() {
    let catalog = seed_catalog();
    let at = |when: &str, clock: &[&str]| {
        let mut args = vec![
            "call",
            "--catalog",
            s(&catalog),
            "--tool",
            "get_current_time",
        ];
        args.extend_from_slice(clock);
        args.extend(["--instant", when]);
        plangate(&args)
    };
    let pinned: &[&str] = &["--clock", "pinned"];
    let (code, first, err) = at("2026-11-05T09:30:00Z", pinned);
    assert_eq!(code, exit::OK, "{err}");
    assert_eq!(
        first["result"]["rfc3339"], "2026-11-05T09:30:00Z",
        "{first}"
    );
    // The same instant as a manifest records it: the same epoch, the same answer.
    let (_, again, _) = at("1793871000000000000", pinned);
    assert_eq!(first["stdout"], again["stdout"]);
    assert_eq!(first["epoch_id"], again["epoch_id"]);
    let (_, later, _) = at("2027-01-01T00:00:00+01:00", pinned);
    assert_eq!(
        later["result"]["rfc3339"], "2026-12-31T23:00:00Z",
        "{later}"
    );

    // The catalog declares this tool's clock live: an instant alone would be ignored.
    let (code, _, err) = at("2026-11-05T09:30:00Z", &[]);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("add --clock pinned"), "{err}");
    let (code, _, err) = at("yesterday", pinned);
    assert_eq!(code, exit::USAGE);
    assert!(err.contains("RFC 3339"), "{err}");
}

#[test]
fn the_report_shows_json_as_json_and_flags_a_broken_abi() {
    let args = r#"{"b":1, "a":[2], "big":123456789012345678901234567890}"#;
    let (_, echo, _) = plangate(&["call", s(&guest("echo")), "--args", args]);
    assert_eq!(echo["abi"], "ok");
    assert!(echo["result"].is_object(), "{echo}");
    assert_eq!(echo["result"]["a"], serde_json::json!([2]));
    assert_eq!(echo["stdout"], args, "stdout stays as written");

    let (_, not_json, _) = plangate(&["call", s(&guest("not_json"))]);
    assert_eq!(not_json["exit_code"], 0);
    assert!(not_json.get("result").is_none(), "{not_json}");
    let abi = not_json["abi"].as_str().unwrap();
    assert!(
        abi.starts_with("stdout is not JSON: duplicate key"),
        "{abi}"
    );

    let (_, not_utf8, _) = plangate(&["call", s(&guest("not_utf8"))]);
    assert!(not_utf8["stdout_base64"].is_string(), "{not_utf8}");
    assert!(not_utf8.get("result").is_none(), "{not_utf8}");
    assert!(
        not_utf8["abi"]
            .as_str()
            .unwrap()
            .starts_with("stdout is not JSON")
    );

    let (_, exit7, _) = plangate(&["call", s(&guest("exit7"))]);
    assert!(
        exit7["abi"].as_str().unwrap().starts_with("exit code 7"),
        "{exit7}"
    );
    let (_, trap, _) = plangate(&["call", s(&guest("trap"))]);
    assert_eq!(
        trap["abi"], "the call ended as a trap (unreachable)",
        "{trap}"
    );
    let (_, spin, _) = plangate(&["call", s(&guest("spin")), "--fuel", "100000"]);
    assert_eq!(spin["abi"], "the call ended as out_of_fuel", "{spin}");
}
