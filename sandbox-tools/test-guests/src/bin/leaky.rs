//! Tries to read what a tool must never see (a host secret env var, a symlink in its
//! mount pointing at a host file, `..` out of the mount, an absolute host path) and
//! prints what it got, short, with a random nonce last. Declared deterministic under live
//! randomness it drifts on purpose, so its whole output lands in the probe evidence of
//! tool-health.json, where a test can look for anything that leaked.

use std::fs;

fn get(path: &str) -> String {
    match fs::read(path) {
        Ok(b) => format!("ok:{}", String::from_utf8_lossy(&b).trim()),
        Err(e) => format!("denied:{:?}", e.kind()),
    }
}

fn main() {
    let secret = std::env::var("PLANGATE_HOST_SECRET").unwrap_or_else(|_| "unset".into());
    let nonce = test_guests::hex(&test_guests::random_bytes(8));
    println!(
        "env={secret};vars={};link_abs={};link_up={};parent={};etc={};nonce={nonce}",
        std::env::vars().count(),
        get("/world/link-abs"),
        get("/world/link-up"),
        get("/world/../secret.txt"),
        get("/etc/passwd"),
    );
}
