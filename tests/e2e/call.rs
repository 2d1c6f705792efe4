//! `plangate call` end to end: the built binary replays a written epoch over another
//! copy of a fixture (another filesystem, opposite creation order, other mtimes) with
//! byte-identical output, reports each outcome, and keeps the host's env and files out.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

#[path = "../../crates/sandbox/tests/it/guests.rs"]
mod guests;

use guests::guest;

fn plangate(args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
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
    assert_eq!(code, 0, "{err}");
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
    assert_eq!(code, 0, "{err}");
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
    assert_eq!(code, 2);
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
        assert_eq!(code, 0, "{name}: {err}");
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
        assert_eq!(code, 0, "{err}");
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
    assert_eq!(code, 2, "{err}");
}
