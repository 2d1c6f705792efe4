//! The module cache trusts nothing it did not write: an artifact under another module's
//! key, a flipped or truncated one, or any file in a directory that is not the user's
//! own is never run; and no trouble with the cache directory fails a load. Real guests,
//! real wasmtime, real files.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use plangate_sandbox::{Limits, Outcome, Sandbox, SandboxConfig, Tool};
use sha2::{Digest, Sha256};

use crate::guests::guest;

const INPUT: &[u8] = br#"{"echo":"me"}"#;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha256_of(name: &str) -> String {
    hex(&Sha256::digest(fs::read(guest(name)).expect("read guest")))
}

/// A fresh sandbox (so nothing is remembered in memory) caching in `cache`, with `names`
/// loaded.
fn sandbox(cache: &Path, names: &[&str]) -> (Sandbox, Vec<Tool>) {
    let config = SandboxConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..SandboxConfig::default()
    };
    crate::support::sandbox_configured(config, names)
}

/// Loads echo with the cache in `cache` and calls it: it must run echo.
fn assert_runs_echo(cache: &Path) {
    let (sb, tools) = sandbox(cache, &["echo"]);
    let r = sb.call(&tools[0], INPUT, &Limits::default());
    assert_eq!(
        r.outcome,
        Outcome::Exit { code: 0 },
        "echo did not run echo: {r:?}"
    );
    assert_eq!(r.stdout, INPUT);
}

/// What the sandbox logged while `f` ran on this thread.
fn logged<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("sink").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink(Arc::default());
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8_lossy(&sink.0.lock().expect("sink")).into_owned();
    (out, text)
}

/// The artifact file of guest `name` in `cache` (the key begins with the module sha256).
fn artifact(cache: &Path, name: &str) -> PathBuf {
    let sha = sha256_of(name);
    let found: Vec<PathBuf> = fs::read_dir(cache)
        .expect("read cache dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let f = p.file_name().unwrap().to_string_lossy();
            f.starts_with(&sha) && f.ends_with(".cwasm")
        })
        .collect();
    assert_eq!(found.len(), 1, "one artifact for {name} in {found:?}");
    found.into_iter().next().unwrap()
}

/// The names in `dir`, sorted, with their bytes.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let bytes = fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    v.sort();
    v
}

/// A cache directory made the way the cache would make it (tempdir's are 0700).
fn trusted_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// exit7's real artifact, with a header whose digest is right for *echo*'s key: what an
/// attacker who can write the directory could plant. `(file name, file bytes)`.
fn forged_echo_artifact() -> (String, Vec<u8>) {
    let made = trusted_dir();
    sandbox(made.path(), &["echo", "exit7"]);
    let echo_key = artifact(made.path(), "echo");
    let name = echo_key.file_name().unwrap().to_string_lossy().into_owned();
    // `<sha256>-wasmtime<version>-<engine hash>.cwasm`
    let stem = name.strip_suffix(".cwasm").expect("cwasm");
    let (rest, engine_hash) = stem.rsplit_once('-').expect("engine hash");
    let version = rest.rsplit_once("-wasmtime").expect("version").1;
    let exit7 = fs::read(artifact(made.path(), "exit7")).expect("read exit7 artifact");
    let code = &exit7[48..];
    let echo_sha = sha256_of("echo");
    let mut h = Sha256::new();
    let parts: [&[u8]; 5] = [
        b"plangate module artifact",
        echo_sha.as_bytes(),
        version.as_bytes(),
        engine_hash.as_bytes(),
        &Sha256::digest(code),
    ];
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let mut file = exit7[..16].to_vec();
    file.extend_from_slice(&h.finalize());
    file.extend_from_slice(code);
    (name, file)
}

#[test]
fn an_artifact_copied_under_another_modules_key_is_not_run_and_is_replaced() {
    let cache = trusted_dir();
    sandbox(cache.path(), &["echo", "exit7"]);
    let echo = artifact(cache.path(), "echo");
    let exit7 = fs::read(artifact(cache.path(), "exit7")).expect("read");
    fs::write(&echo, &exit7).expect("swap");

    let (_, log) = logged(|| assert_runs_echo(cache.path()));
    assert!(log.contains("artifact not used"), "no debug note: {log}");
    assert_ne!(fs::read(&echo).expect("read"), exit7, "not replaced");
    // And the replacement loads as echo.
    assert_runs_echo(cache.path());
}

#[test]
fn a_flipped_byte_anywhere_in_an_artifact_is_caught_and_recompiled() {
    let cache = trusted_dir();
    sandbox(cache.path(), &["echo"]);
    let echo = artifact(cache.path(), "echo");
    let good = fs::read(&echo).expect("read");
    for i in 0..20 {
        let at = i * (good.len() - 1) / 19;
        let mut bad = good.clone();
        bad[at] ^= 0x55;
        fs::write(&echo, &bad).expect("flip");
        assert_runs_echo(cache.path());
        assert_ne!(
            fs::read(&echo).expect("read"),
            bad,
            "byte {at}: not replaced"
        );
    }
}

#[test]
fn a_truncated_artifact_is_recompiled() {
    let cache = trusted_dir();
    sandbox(cache.path(), &["echo"]);
    let echo = artifact(cache.path(), "echo");
    let good = fs::read(&echo).expect("read");
    for len in [0, 10, 48, good.len() / 2, good.len() - 1] {
        fs::write(&echo, &good[..len]).expect("truncate");
        assert_runs_echo(cache.path());
        assert!(
            fs::read(&echo).expect("read").len() > len,
            "{len}: not replaced"
        );
    }
}

#[test]
fn a_directory_writable_by_group_or_others_is_refused_and_nothing_in_it_runs() {
    let (name, forged) = forged_echo_artifact();
    for mode in [0o770, 0o777, 0o702] {
        let dir = trusted_dir();
        fs::write(dir.path().join(&name), &forged).expect("plant");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(mode)).expect("chmod");
        let before = contents(dir.path());

        let (_, log) = logged(|| assert_runs_echo(dir.path()));
        let want = format!(
            "module cache `{}` refused: it is writable by group or others (mode {mode:03o}); compiling modules in memory",
            dir.path().display()
        );
        assert!(log.contains(&want), "mode {mode:o}: {log}");
        assert_eq!(log.matches("refused").count(), 1, "warned once: {log}");
        assert_eq!(contents(dir.path()), before, "mode {mode:o}: written to");
    }
}

#[test]
fn a_directory_owned_by_another_user_is_refused_and_nothing_in_it_runs() {
    if euid() != 0 {
        eprintln!("skipped a_directory_owned_by_another_user_is_refused: it needs root to chown");
        return;
    }
    let (name, forged) = forged_echo_artifact();
    // The control: the forged file's digest is right, so in the user's own directory it
    // is loaded and runs exit7. Only the owner check stands between it and a run.
    let own = trusted_dir();
    fs::write(own.path().join(&name), &forged).expect("plant");
    let (sb, tools) = sandbox(own.path(), &["echo"]);
    let r = sb.call(&tools[0], INPUT, &Limits::default());
    assert_eq!(
        r.outcome,
        Outcome::Exit { code: 7 },
        "the forgery is not valid"
    );

    let theirs = trusted_dir();
    fs::set_permissions(theirs.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let planted = theirs.path().join(&name);
    fs::write(&planted, &forged).expect("plant");
    std::os::unix::fs::chown(&planted, Some(65534), Some(65534)).expect("chown file");
    std::os::unix::fs::chown(theirs.path(), Some(65534), Some(65534)).expect("chown dir");
    let before = contents(theirs.path());

    let (_, log) = logged(|| assert_runs_echo(theirs.path()));
    let want = format!(
        "module cache `{}` refused: it is owned by uid 65534, not by this user (uid 0)",
        theirs.path().display()
    );
    assert!(log.contains(&want), "{log}");
    assert_eq!(contents(theirs.path()), before, "written to");
}

fn euid() -> u32 {
    // Integration tests see only the crate's public API and its dependencies; the
    // owner of a file this process just made is its effective uid.
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::NamedTempFile::new().expect("temp file");
    probe.as_file().metadata().expect("stat").uid()
}

#[test]
fn a_symlinked_cache_directory_is_refused() {
    let base = trusted_dir();
    let real = base.path().join("real");
    fs::create_dir(&real).expect("mkdir");
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");

    let (_, log) = logged(|| assert_runs_echo(&link));
    assert!(
        log.contains(&format!(
            "module cache `{}` refused: it is a symlink",
            link.display()
        )),
        "{log}"
    );
    assert!(contents(&real).is_empty(), "written through the link");
}

#[test]
fn a_directory_at_the_artifact_path_leaves_the_module_compiled_in_memory() {
    let cache = trusted_dir();
    sandbox(cache.path(), &["echo"]);
    let echo = artifact(cache.path(), "echo");
    fs::remove_file(&echo).expect("rm");
    fs::create_dir(&echo).expect("mkdir");
    fs::write(echo.join("occupied"), b"").expect("fill");

    let (_, log) = logged(|| assert_runs_echo(cache.path()));
    assert!(
        log.contains(&format!(
            "module cache `{}`: failed to store",
            cache.path().display()
        )),
        "{log}"
    );
    assert!(echo.is_dir());
    // No temporary file is left behind.
    assert_eq!(
        contents(cache.path()).len(),
        1,
        "{:?}",
        contents(cache.path())
    );
}

#[test]
fn a_cache_directory_that_cannot_be_made_leaves_modules_compiled_in_memory() {
    let base = trusted_dir();
    let file = base.path().join("a-file");
    fs::write(&file, b"not a directory").expect("write");
    let below = file.join("cache");

    let (_, log) = logged(|| assert_runs_echo(&below));
    assert!(
        log.contains(&format!(
            "module cache `{}` refused: cannot create it",
            below.display()
        )),
        "{log}"
    );
}

#[test]
fn a_new_cache_directory_and_the_parents_it_makes_are_private() {
    let base = trusted_dir();
    fs::set_permissions(base.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let cache = base.path().join("plangate/modules");
    assert_runs_echo(&cache);
    for dir in [&cache, &base.path().join("plangate")] {
        let mode = fs::metadata(dir).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{}: {mode:o}", dir.display());
    }
    artifact(&cache, "echo");
}
