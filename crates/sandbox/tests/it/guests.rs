//! Builds the test guests (sandbox-tools/test-guests) from source, once per test binary,
//! and hands out their paths. Also used by the CLI's end-to-end tests (`#[path]`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub(crate) fn repo_root() -> PathBuf {
    // Both users of this file live in crates/<name>: two levels down from the root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// The path of guest `name`'s `.wasm`, building every test guest first if needed.
pub(crate) fn guest(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(build_guests);
    let p = dir.join(format!("{name}.wasm"));
    assert!(p.is_file(), "guest {name} was not built: {}", p.display());
    p
}

fn build_guests() -> PathBuf {
    let root = repo_root();
    let tools = root.join("sandbox-tools");
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("wasm32-wasip1"))
        // Without rustup the toolchain is whatever it is; let cargo say what is missing.
        .unwrap_or(true);
    if !installed {
        let ok = Command::new("rustup")
            .args(["target", "add", "wasm32-wasip1"])
            .status()
            .expect("run rustup target add wasm32-wasip1");
        assert!(ok.success(), "rustup target add wasm32-wasip1 failed");
    }
    let target_dir = tools.join("target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // From inside sandbox-tools so its .cargo/config.toml applies; target named anyway.
    let status = Command::new(cargo)
        .current_dir(&tools)
        .args([
            "build",
            "--release",
            "--target",
            "wasm32-wasip1",
            "-p",
            "test-guests",
        ])
        .arg("--manifest-path")
        .arg(tools.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .expect("run cargo build for the test guests");
    assert!(status.success(), "building the test guests failed");
    target_dir.join("wasm32-wasip1/release")
}
