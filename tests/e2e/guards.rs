//! What a run refuses before it works, and how it fails when it cannot write: an output
//! never lands on a module, a mount's data or inside a live mount; an output that cannot
//! be written is found before the first call; a closed or full standard output is an
//! error with its exit code, never a panic; thresholds out of order are a usage error.

use std::path::{Path, PathBuf};

use crate::eval::{Run, cases, plangate, seed_catalog};
use crate::exit;
use crate::tools::{build_tools, repo};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A world of its own: get_user's module and the seed world's data copied into a temp
/// folder, with a catalog that reads the data through a pinned mount and a `live`
/// folder through a live one. Nothing a refused run could overwrite is the repository's.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        build_tools();
        let dir = tempfile::tempdir().expect("temp dir");
        let built = repo().join("sandbox-tools/target/wasm32-wasip1/release/get_user.wasm");
        std::fs::copy(&built, dir.path().join("get_user.wasm")).unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let users = crate::tools::world().join("data/users.json");
        std::fs::copy(&users, dir.path().join("data/users.json")).unwrap();
        std::fs::create_dir(dir.path().join("live")).unwrap();
        std::fs::write(dir.path().join("live/state"), "1").unwrap();
        let catalog = r#"{"tools":[{"name":"get_user","module":"get_user.wasm",
            "deterministic":true,"probe":[{"user_id":"u_0001"}],
            "parameters":{"type":"object","properties":{
                "user_id":{"type":"string","x-plangate":{"must_exist":true}}}},
            "mounts":[{"host":"data","guest":"/world","mode":"pinned"},
                      {"host":"live","guest":"/live","mode":"live"}]}]}"#;
        std::fs::write(dir.path().join("catalog.json"), catalog).unwrap();
        World { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn eval(&self, extra: &[&str]) -> Run {
        let catalog = self.path("catalog.json");
        let samples = cases().join("consistent.jsonl");
        let mut args = vec!["eval", "--catalog", s(&catalog), "--samples", s(&samples)];
        args.extend_from_slice(extra);
        plangate(&args)
    }
}

#[test]
fn no_output_lands_on_a_module_or_inside_a_mount() {
    let w = World::new();
    let module = w.path("get_user.wasm");
    let users = w.path("data/users.json");
    let (module_bytes, users_bytes) = (
        std::fs::read(&module).unwrap(),
        std::fs::read(&users).unwrap(),
    );
    let kept = || {
        assert_eq!(std::fs::read(&module).unwrap(), module_bytes, "module kept");
        assert_eq!(
            std::fs::read(&users).unwrap(),
            users_bytes,
            "mount data kept"
        );
    };
    for (flag, target, says) in [
        (
            "--summary-json",
            &module,
            "would overwrite an input (tool \"get_user\"'s module",
        ),
        (
            "--tool-health",
            &module,
            "would overwrite an input (tool \"get_user\"'s module",
        ),
        (
            "--tool-health",
            &users,
            "lies inside tool \"get_user\"'s mount /world",
        ),
        (
            "--junit",
            &w.path("data/new.xml"),
            "lies inside tool \"get_user\"'s mount /world",
        ),
        // The run's own temporary file there would count as the live mount changing.
        (
            "--out",
            &w.path("live/out.jsonl"),
            "lies inside tool \"get_user\"'s mount /live",
        ),
    ] {
        let run = w.eval(&[flag, s(target)]);
        assert_eq!(
            run.code,
            exit::USAGE,
            "{flag} {}: {}",
            target.display(),
            run.stderr
        );
        assert!(run.stderr.contains(says), "{flag}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "no work done: {}", run.stdout);
        kept();
    }
    assert!(!w.path("data/new.xml").exists() && !w.path("live/out.jsonl").exists());

    let catalog = w.path("catalog.json");
    let run = plangate(&["epoch", "--catalog", s(&catalog), "--out", s(&module)]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("would overwrite an input (tool \"get_user\"'s module"),
        "{}",
        run.stderr
    );
    let run = plangate(&[
        "epoch",
        "--catalog",
        s(&catalog),
        "--out",
        s(&w.path("data/epoch.json")),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("lies inside"), "{}", run.stderr);
    let samples = cases().join("consistent.jsonl");
    let run = plangate(&[
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--out",
        s(&module),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("would overwrite an input"),
        "{}",
        run.stderr
    );
    kept();

    // The world still runs: nothing above touched it.
    let run = w.eval(&[]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    assert_eq!(
        run.lines()[0]["reasons"],
        serde_json::json!(["referential_miss"])
    );
}

#[test]
fn demo_outputs_stay_out_of_the_world_folder() {
    let world = crate::tools::world();
    let inside = world.join("plangate-never-written.json");
    let run = plangate(&[
        "demo",
        "--world",
        s(&world),
        "--tasks",
        "10",
        "--json",
        s(&inside),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("lies inside --world"), "{}", run.stderr);
    assert!(!inside.exists());
}

/// Root can write almost anywhere; sysfs refuses a new file even to root.
const UNWRITABLE: &str = "/sys/plangate-report.xml";

#[test]
fn an_unwritable_output_is_found_before_the_first_call() {
    let w = World::new();
    let out = w.path("decisions.jsonl");
    let journal = w.path("decisions.jsonl.journal");
    for flag in ["--junit", "--tool-health", "--summary-json"] {
        let run = w.eval(&[flag, UNWRITABLE, "--out", s(&out)]);
        assert_eq!(run.code, exit::USAGE, "{flag}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "cannot write {UNWRITABLE}: failed to create a file in /sys"
            )),
            "{flag}: {}",
            run.stderr
        );
        // A run that executed calls would have journalled them.
        assert!(
            !journal.exists(),
            "{flag}: calls ran before the output was tried"
        );
    }
    let run = w.eval(&["--out", UNWRITABLE]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("cannot write {UNWRITABLE}")),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("calls executed"),
        "no call ran: {}",
        run.stderr
    );
}

#[test]
fn an_output_that_fails_after_the_work_says_how_to_resume() {
    let w = World::new();
    let out = w.path("decisions.jsonl");
    // /dev/full is a device, written in place: it refuses only when written.
    let run = w.eval(&["--out", s(&out), "--junit", "/dev/full"]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("No space left on device"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("run the same command with --resume"),
        "{}",
        run.stderr
    );
    let junit = w.path("junit.xml");
    let run = w.eval(&["--out", s(&out), "--junit", s(&junit), "--resume"]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    assert!(run.stderr.contains("calls replayed"), "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&junit)
            .unwrap()
            .contains("<testsuites")
    );
}

/// `plangate CMD ARGS > /dev/full`, and `plangate CMD ARGS | (closed at once)`.
fn with_stdout(args: &[&str], closed_pipe: bool) -> (i32, String) {
    build_tools();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_plangate"));
    cmd.args(args).stderr(std::process::Stdio::piped());
    if closed_pipe {
        cmd.stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("plangate starts");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("plangate ends");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    } else {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = cmd.stdout(full).output().expect("plangate runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

#[test]
fn a_closed_or_full_stdout_is_an_error_not_a_panic() {
    let module = repo().join("sandbox-tools/target/wasm32-wasip1/release/echo.wasm");
    let catalog = seed_catalog();
    let world = crate::tools::world();
    let commands: [Vec<&str>; 3] = [
        vec!["call", s(&module), "--args", "{}"],
        vec!["probe", "--catalog", s(&catalog), "--tool", "get_user"],
        vec![
            "demo",
            "--world",
            s(&world),
            "--tasks",
            "20",
            "--samples",
            "5",
            "--retry-deferred",
            "0",
        ],
    ];
    for args in &commands {
        for closed_pipe in [false, true] {
            let (code, stderr) = with_stdout(args, closed_pipe);
            assert_eq!(
                code,
                exit::USAGE,
                "{args:?} closed pipe {closed_pipe}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            assert!(
                stderr.contains("failed to write to standard output"),
                "{args:?}: {stderr}"
            );
        }
    }
}

#[test]
fn thresholds_out_of_order_are_a_usage_error_naming_both_flags() {
    let catalog = seed_catalog();
    let samples = cases().join("consistent.jsonl");
    for (cmd, flags, says) in [
        (
            "score",
            ["--result-suspect", "0.9", "--result-accept", "0.1"],
            "--result-suspect 0.9 is above --result-accept 0.1",
        ),
        (
            "eval",
            ["--arg-reject", "0.9", "--arg-accept", "0.1"],
            "--arg-reject 0.9 is above --arg-accept 0.1",
        ),
    ] {
        let mut args = vec![cmd, "--catalog", s(&catalog), "--samples", s(&samples)];
        args.extend_from_slice(&flags);
        let run = plangate(&args);
        assert_eq!(run.code, exit::USAGE, "{cmd}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{cmd}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    let world = crate::tools::world();
    for share in ["1.5", "nan", "inf", "-0.1"] {
        let flag = format!("--hallucinated={share}");
        let run = plangate(&["demo", "--world", s(&world), "--tasks", "10", &flag]);
        assert_eq!(
            run.code,
            exit::USAGE,
            "--hallucinated {share}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("expected a share from 0 to 1"),
            "{}",
            run.stderr
        );
    }
    let run = plangate(&[
        "demo",
        "--world",
        s(&world),
        "--tasks",
        "10",
        "--consistent",
        "2",
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
}
