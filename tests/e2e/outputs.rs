//! Outputs lose nothing: an output that names an input (by any spelling, a symlink or a
//! hard link) or another output is refused before any work, and a run that is killed
//! while it writes leaves the earlier file whole, never truncated.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::eval::plangate;
use crate::exit;

const CATALOG: &str = r#"{"tools":[{"name":"echo","deterministic":true,"verified":true}]}"#;

fn line(id: usize) -> String {
    let call = format!(r#"{{"tool":"echo","arguments":{{"q":{id}}},"result":{{"q":{id}}}}}"#);
    let calls = vec![format!(r#"{{"calls":[{call}]}}"#); 5].join(",");
    format!(r#"{{"task_id":"t{id}","samples":[{calls}]}}"#)
}

fn setup(tasks: usize) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, CATALOG).unwrap();
    let samples = dir.path().join("samples.jsonl");
    let text: String = (0..tasks).map(|i| line(i) + "\n").collect();
    std::fs::write(&samples, text).unwrap();
    (dir, catalog, samples)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `plangate score` over `samples` into `out`, with any further flags.
fn score_to(catalog: &Path, samples: &Path, out: &str, more: &[&str]) -> crate::eval::Run {
    let mut args = vec![
        "score",
        "--catalog",
        s(catalog),
        "--samples",
        s(samples),
        "--out",
        out,
    ];
    args.extend_from_slice(more);
    plangate(&args)
}

#[test]
fn an_output_that_names_an_input_is_refused_and_the_input_kept() {
    let (dir, catalog, samples) = setup(3);
    let before = std::fs::read(&samples).unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&samples, &link).unwrap();
    let hard = dir.path().join("hard.jsonl");
    std::fs::hard_link(&samples, &hard).unwrap();
    let dotted = dir.path().join(".").join("samples.jsonl");
    for out in [&samples, &link, &hard, &dotted] {
        let run = score_to(&catalog, &samples, s(out), &[]);
        assert_eq!(run.code, exit::USAGE, "{}: {}", out.display(), run.stderr);
        assert!(
            run.stderr.contains("would overwrite an input (--samples"),
            "{}",
            run.stderr
        );
        assert_eq!(std::fs::read(&samples).unwrap(), before, "input kept");
    }
    let run = score_to(&catalog, &samples, s(&catalog), &[]);
    assert!(run.stderr.contains("(--catalog"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&catalog).unwrap(), CATALOG);
}

#[test]
fn two_outputs_naming_one_file_are_refused_before_any_work() {
    let (dir, _, _) = setup(1);
    let same = dir.path().join("out.json");
    let run = plangate(&[
        "eval",
        "--catalog",
        s(&crate::eval::seed_catalog()),
        "--samples",
        s(&crate::eval::cases().join("chains.jsonl")),
        "--out",
        s(&same),
        "--summary-json",
        s(&dir.path().join(".").join("out.json")),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("name the same file"), "{}", run.stderr);
    assert!(!same.exists(), "nothing written");
}

#[test]
fn write_epoch_never_overwrites_the_module() {
    crate::tools::build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let module = dir.path().join("echo.wasm");
    let built = crate::tools::repo().join("sandbox-tools/target/wasm32-wasip1/release/echo.wasm");
    std::fs::copy(&built, &module).unwrap();
    let before = std::fs::read(&module).unwrap();
    let run = plangate(&[
        "call",
        s(&module),
        "--args",
        "{}",
        "--write-epoch",
        s(&module),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("would overwrite an input (MODULE"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read(&module).unwrap(), before);
}

/// A complete earlier output survives a run killed at any point: the new one is written
/// beside it and takes its place only when whole.
#[test]
fn a_killed_run_leaves_the_earlier_output_whole() {
    let (dir, catalog, samples) = setup(30_000);
    let out = dir.path().join("decisions.jsonl");
    let first = score_to(&catalog, &samples, s(&out), &["--jobs", "1"]);
    assert_eq!(first.code, exit::OK, "{}", first.stderr);
    let whole = std::fs::read(&out).unwrap();
    assert_eq!(whole.iter().filter(|b| **b == b'\n').count(), 30_000);
    for wait_ms in [10, 60, 200] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_plangate"))
            .args(["score", "--catalog", s(&catalog), "--samples", s(&samples)])
            .args(["--out", s(&out), "--jobs", "1"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("plangate runs");
        std::thread::sleep(Duration::from_millis(wait_ms));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            std::fs::read(&out).unwrap(),
            whole,
            "killed after {wait_ms} ms: the earlier output is whole"
        );
    }
}

/// A device is written in place (renaming a file over it would replace the device), and
/// a symlink output stays a symlink: its target is what gets replaced.
#[test]
fn devices_are_written_in_place_and_links_stay_links() {
    use std::os::unix::fs::FileTypeExt as _;
    let (dir, catalog, samples) = setup(3);
    let run = score_to(&catalog, &samples, "/dev/null", &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let kind = std::fs::symlink_metadata("/dev/null").unwrap().file_type();
    assert!(kind.is_char_device(), "/dev/null is still a device");
    let real = dir.path().join("real.jsonl");
    std::fs::write(&real, "old\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let run = score_to(&catalog, &samples, s(&link), &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let text = std::fs::read_to_string(&real).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

/// A run killed with SIGKILL cannot remove its epoch's snapshot; the next run removes
/// the snapshots whose process is gone, and leaves those of runs still going.
#[test]
fn snapshots_of_dead_runs_are_swept_and_live_ones_kept() {
    crate::tools::build_tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    // Past Linux's largest pid (2^22): no process has it.
    let dead = tmp.join("plangate-epoch-4194999-abcdef");
    let live = tmp.join(format!("plangate-epoch-{}-abcdef", std::process::id()));
    for d in [&dead, &live] {
        std::fs::create_dir_all(d.join("0")).expect("a snapshot");
        std::fs::write(d.join("0/data.txt"), "x").expect("a file in it");
    }
    let world = dir.path().join("world");
    std::fs::create_dir(&world).expect("world");
    let echo = crate::tools::repo().join("sandbox-tools/target/wasm32-wasip1/release/echo.wasm");
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args([
            "call",
            s(&echo),
            "--mount",
            &format!("{}:/world", s(&world)),
        ])
        .env("TMPDIR", &tmp)
        .output()
        .expect("plangate runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dead.exists(), "the dead run's snapshot is removed");
    assert!(live.exists(), "a running process's snapshot is kept");
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").flatten().collect();
    assert_eq!(
        left.len(),
        1,
        "the call removed its own snapshot too: {left:?}"
    );
}
