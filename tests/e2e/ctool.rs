//! A tool written in C (sandbox-tools/c/checksum.c, built by scripts/build-tools with
//! clang for wasm32-wasi) follows the same ABI as a Rust one: `plangate call` runs it,
//! and `plangate probe --strict` verifies its `deterministic` declaration.

use serde_json::Value;

use crate::eval::plangate;
use crate::exit;
use crate::tools::{build_tools, repo};

/// The built C tool, or None (with a note) where clang cannot target WASI; in CI, where
/// scripts/setup installs clang and wasi-libc, it must be there.
fn c_tool() -> Option<std::path::PathBuf> {
    build_tools();
    let module = repo().join("sandbox-tools/target/c/checksum.wasm");
    if module.is_file() {
        return Some(module);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI installs clang and wasi-libc (scripts/setup): {} must be built",
        module.display()
    );
    eprintln!("ctool SKIPPED: no clang with wasi-libc here (scripts/setup installs them)");
    None
}

#[test]
fn a_c_tool_answers_through_the_abi() {
    let Some(module) = c_tool() else { return };
    let module = module.to_str().expect("utf-8 path");
    let ok = plangate(&["call", module, "--args", r#"{"text":"hello"}"#]);
    assert_eq!(ok.code, exit::OK, "{}", ok.stderr);
    let report: Value = serde_json::from_str(&ok.stdout).expect("a JSON report");
    assert_eq!(report["outcome"], "exit");
    assert_eq!(report["exit_code"], 0);
    let result: Value =
        serde_json::from_str(report["stdout"].as_str().expect("stdout")).expect("JSON stdout");
    // FNV-1a of the 16 bytes {"text":"hello"}, computed independently below.
    let bytes = br#"{"text":"hello"}"#;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    assert_eq!(result["bytes"], bytes.len());
    assert_eq!(result["fnv1a"], format!("{h:016x}"));

    // Not an object: the ABI's typed error, exit 1.
    let bad = plangate(&["call", module, "--args", "[1]"]);
    let report: Value = serde_json::from_str(&bad.stdout).expect("a JSON report");
    assert_eq!(report["exit_code"], 1, "{report}");
    let error: Value =
        serde_json::from_str(report["stdout"].as_str().expect("stdout")).expect("JSON stdout");
    assert_eq!(error["error"]["kind"], "bad_argument");
}

#[test]
fn a_c_tool_passes_a_strict_probe() {
    if c_tool().is_none() {
        return;
    }
    let catalog = repo().join("sandbox-tools/c/catalog.json");
    let run = plangate(&[
        "probe",
        "--catalog",
        catalog.to_str().expect("utf-8 path"),
        "--strict",
        "--epochs",
        "3",
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).expect("a JSON report");
    assert_eq!(report["tools"][0]["name"], "checksum");
    assert_eq!(report["tools"][0]["status"], "verified", "{report}");
}
