//! The module cache through the built binary: by default it lives in the user's own
//! cache directory (XDG), made private, and a cache directory it refuses costs one
//! warning per run, never the run.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::exit;
use crate::tools::{build_tools, repo};

/// A test guest from sandbox-tools/test-guests (scripts/build-tools builds them too).
fn guest(name: &str) -> PathBuf {
    build_tools();
    repo().join(format!(
        "sandbox-tools/target/wasm32-wasip1/release/{name}.wasm"
    ))
}

/// Runs plangate with XDG_CACHE_HOME and HOME as given (`None`: unset).
fn plangate(args: &[&str], xdg: Option<&Path>, home: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plangate"));
    cmd.args(args)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("HOME");
    if let Some(x) = xdg {
        cmd.env("XDG_CACHE_HOME", x);
    }
    if let Some(h) = home {
        cmd.env("HOME", h);
    }
    cmd.output().expect("plangate runs")
}

fn call_echo(xdg: Option<&Path>, home: Option<&Path>) -> Output {
    let echo = guest("echo");
    let args = vec![
        "call",
        echo.to_str().expect("utf-8 path"),
        "--args",
        r#"{"a":1}"#,
    ];
    let out = plangate(&args, xdg, home);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::OK), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(report["outcome"], "exit", "{report}");
    assert_eq!(report["exit_code"], 0, "{report}");
    assert_eq!(report["stdout"], r#"{"a":1}"#, "{report}");
    out
}

/// A catalog of two small test guests, both declared deterministic, so `probe` loads
/// each in more than one sandbox (the seed world's twelve tools would take minutes to
/// compile in memory on a debug build).
fn small_catalog(dir: &Path) -> PathBuf {
    let tool = |name: &str| {
        serde_json::json!({
            "name": name,
            "module": guest(name),
            "deterministic": true,
            "parameters": {"type": "object"},
            "probe": [{}],
        })
    };
    let catalog = dir.join("catalog.json");
    let json = serde_json::json!({"tools": [tool("echo"), tool("exit7")]});
    fs::write(&catalog, json.to_string()).expect("write catalog");
    catalog
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).expect("stat").permissions().mode() & 0o7777
}

fn artifacts(dir: &Path) -> usize {
    fs::read_dir(dir)
        .expect("read cache dir")
        .filter(|e| {
            let name = e.as_ref().expect("entry").file_name();
            name.to_string_lossy().ends_with(".cwasm")
        })
        .count()
}

#[test]
fn the_default_module_cache_is_the_users_own_and_private() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let xdg = tmp.path().join("xdg");
    call_echo(Some(&xdg), None);
    let modules = xdg.join("plangate/modules");
    assert_eq!(mode(&modules), 0o700);
    assert_eq!(mode(&xdg.join("plangate")), 0o700);
    assert_eq!(artifacts(&modules), 1);

    // Without XDG_CACHE_HOME: $HOME/.cache.
    let home = tmp.path().join("home");
    fs::create_dir(&home).expect("mkdir");
    call_echo(None, Some(&home));
    assert_eq!(artifacts(&home.join(".cache/plangate/modules")), 1);

    // With neither, modules are compiled in memory and the call still runs.
    call_echo(None, None);
}

#[test]
fn a_refused_module_cache_is_one_warning_per_run_and_the_run_goes_on() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let modules = tmp.path().join("plangate/modules");
    fs::create_dir_all(&modules).expect("mkdir");
    fs::set_permissions(&modules, fs::Permissions::from_mode(0o777)).expect("chmod");
    let warning = format!(
        "module cache `{}` refused: it is writable by group or others (mode 777); compiling modules in memory",
        modules.display()
    );

    // Shown without -v: a refused cache costs a compile per tool per run.
    let out = call_echo(Some(tmp.path()), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    assert!(
        stderr.contains("plangate: warning: module cache"),
        "{stderr}"
    );

    // A run that loads several modules, in several sandboxes, still warns once.
    let catalog = small_catalog(tmp.path());
    let args = ["probe", "--catalog", catalog.to_str().expect("utf-8 path")];
    let out = plangate(&args, Some(tmp.path()), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(exit::OK), "{stderr}");
    assert_eq!(stderr.matches(&warning).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("module cache").count(), 1, "{stderr}");
    assert_eq!(
        artifacts(&modules),
        0,
        "the refused directory was written to"
    );
}
