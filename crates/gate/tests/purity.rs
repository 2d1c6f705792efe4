//! The gate's architecture invariant, checked: it does no I/O and depends on nothing
//! that could (no wasmtime, no tokio, no sandbox), so a decision depends only on data.

use std::process::Command;

#[test]
fn gate_depends_on_no_runtime() {
    let out = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "plangate-gate",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tree = String::from_utf8(out.stdout).unwrap();
    assert!(
        tree.contains("serde_json"),
        "unexpected cargo tree output:\n{tree}"
    );
    for banned in [
        "wasmtime",
        "tokio",
        "plangate-sandbox",
        "plangate-harness",
        "reqwest",
        "mio",
    ] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{banned} "))),
            "plangate-gate must not depend on {banned}:\n{tree}"
        );
    }
}

#[test]
fn gate_source_reads_no_clock_and_does_no_io() {
    // Every source file, in sub-modules' folders too (`decide/prepared_line.rs`).
    let mut pending = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    let mut files = Vec::new();
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("decide/prepared_line.rs")),
        "{files:?}"
    );
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for banned in [
            "std::fs",
            "std::net",
            "std::process",
            "SystemTime",
            "Instant::now",
            "std::env",
            "println!",
            "eprintln!",
        ] {
            assert!(!text.contains(banned), "{} uses {banned}", path.display());
        }
    }
}
