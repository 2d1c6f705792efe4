//! The Ray example (examples/ray/run_shards.py): a batch run as 3 shards on a local Ray
//! cluster of 2 workers and merged decides byte for byte as the whole run. Needs a
//! Python with Ray, named by `PLANGATE_RAY_PYTHON` (scripts/test makes one); without it
//! the test says it was skipped.

use std::ffi::OsStr;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use crate::eval::seed_catalog;
use crate::exit;
use crate::tools::repo;

fn ray_python() -> Option<PathBuf> {
    match std::env::var_os("PLANGATE_RAY_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            let _ = writeln!(
                std::io::stderr(),
                "ray example SKIPPED: PLANGATE_RAY_PYTHON is not set (a Python with `pip install ray`; scripts/test makes one)"
            );
            None
        }
    }
}

#[test]
fn the_ray_example_merges_shards_into_the_whole_runs_decisions() {
    let Some(python) = ray_python() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let samples = crate::shard::demo_batch(d, 200);
    let catalog = seed_catalog();
    let merged = d.join("merged.jsonl");
    let workdir = d.join("shards");
    let out = Command::new(&python)
        .arg(repo().join("examples/ray/run_shards.py"))
        .args([
            OsStr::new("--plangate"),
            env!("CARGO_BIN_EXE_plangate").as_ref(),
        ])
        .args([OsStr::new("--catalog"), catalog.as_os_str()])
        .args([OsStr::new("--samples"), samples.as_os_str()])
        .args([OsStr::new("--out"), merged.as_os_str()])
        .args([OsStr::new("--workdir"), workdir.as_os_str()])
        .args(["--shards", "3", "--workers", "2"])
        // Ray's own temporary files stay inside the test's folder.
        .env("RAY_TMPDIR", d)
        .output()
        .expect("run the Ray example");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // merge's own exit code: 1 when a task was rejected, as the demo batch's are.
    assert_eq!(out.status.code(), Some(exit::REJECT), "{stderr}");
    assert!(stderr.contains("merged 3 shards"), "{stderr}");
    // The whole batch in the epoch the example pinned.
    let whole = d.join("whole.jsonl");
    let epoch = workdir.join("epoch.json");
    let run = crate::shard::whole_run(&catalog, &samples, &epoch, &whole, &[]);
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{}",
        run.stderr
    );
    let (a, b) = (
        std::fs::read(&whole).unwrap(),
        std::fs::read(&merged).unwrap(),
    );
    assert!(
        a == b,
        "the Ray run's decisions differ from the whole run's"
    );
    assert_eq!(String::from_utf8_lossy(&b).lines().count(), 200);
}
