//! What a mount can hold that is not plain content, and what changes while it is read:
//! a snapshot taken while a directory is swapped for a symlink to the host never holds
//! what the link points at; a FIFO or a socket in a pinned mount is refused by name,
//! at once; one in a live mount is refused to the guest's open, so the call ends,
//! also when the tool has pinned mounts beside it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use plangate_sandbox::{Epoch, EpochMount, Limits, ModuleSpec, Outcome, Sandbox, digest_tree};

use crate::guests::guest;
use crate::support::{test_config, write};

/// Runs `f` on its own thread and waits at most `limit` for it: a walk or a call that
/// blocks forever fails the test instead of hanging the suite (the stuck thread is left
/// behind; the test binary's exit ends it).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("still blocked after {limit:?}"))
}

fn mkfifo(p: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .expect("mkfifo");
}

/// Every regular file's bytes under `dir`, links not followed.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => stack.push(p),
                Ok(m) if m.is_file() => found.push((p.clone(), std::fs::read(&p).unwrap())),
                _ => {}
            }
        }
    }
    found
}

/// A mount whose `sub` directory sorts before 100 files, so a walk that checks `sub` and
/// reads it later has a long window; the secret sits outside, in `outside/`.
fn race_fixture(base: &Path, secret: &str) -> (PathBuf, PathBuf) {
    let mount = base.join("mount");
    write(&mount.join("sub/inner.txt"), b"inside\n");
    for i in 0..100 {
        write(
            &mount.join(format!("zz{i:03}.txt")),
            format!("{i}\n").as_bytes(),
        );
    }
    let outside = base.join("outside");
    write(&outside.join("inner.txt"), secret.as_bytes());
    (mount, outside)
}

/// Swaps `mount/sub` between the real directory and a symlink to `outside` until told
/// to stop; returns how many swaps it made.
fn swapper(
    mount: PathBuf,
    outside: PathBuf,
    parked: PathBuf,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let sub = mount.join("sub");
        let mut swaps = 0;
        // Stops at the first failure too: the test may have ended and removed the tree.
        while !stop.load(Ordering::Relaxed) {
            let swapped = std::fs::rename(&sub, &parked)
                .and_then(|()| std::os::unix::fs::symlink(&outside, &sub))
                .and_then(|()| {
                    std::thread::yield_now();
                    std::fs::remove_file(&sub)
                })
                .and_then(|()| std::fs::rename(&parked, &sub));
            if swapped.is_err() {
                break;
            }
            swaps += 1;
        }
        swaps
    })
}

#[test]
fn a_snapshot_never_follows_a_directory_swapped_for_a_symlink() {
    let base = tempfile::tempdir().unwrap();
    let secret = format!("host secret {}", std::process::id());
    let (mount, outside) = race_fixture(base.path(), &secret);
    // What the digest of `mount` would be had the walk followed `sub` outside.
    let leaked_digest = {
        let (m2, _) = race_fixture(&base.path().join("ref"), &secret);
        std::fs::write(m2.join("sub/inner.txt"), &secret).unwrap();
        digest_tree(&m2).unwrap()
    };
    let snaps = base.path().join("snaps");
    std::fs::create_dir(&snaps).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(
        mount.clone(),
        outside,
        base.path().join("parked"),
        stop.clone(),
    );
    let (mut ok, mut refused, mut leaks) = (0, Vec::new(), 0);
    let started = Instant::now();
    // A few seconds of walks. The path-based walk this replaced leaked the secret in
    // 4 of 66 and 15 of 137 walks over the same span (the report line below, printed
    // with --nocapture, gives the counts).
    for i in 0..300 {
        if started.elapsed() > Duration::from_secs(6) {
            break;
        }
        let taken = if i % 4 == 3 {
            digest_tree(&mount).map(|d| usize::from(d == leaked_digest))
        } else {
            Epoch::builder()
                .snapshot_root(&snaps)
                .mount(EpochMount::pinned(&mount, "/world"))
                .build()
                .map(|_epoch| {
                    // The epoch is alive here: its snapshot is on disk.
                    contents(&snaps)
                        .iter()
                        .filter(|(_, b)| String::from_utf8_lossy(b).contains(&secret))
                        .count()
                })
        };
        match taken {
            Ok(n) => {
                ok += 1;
                leaks += n;
            }
            Err(e) => refused.push(e.to_string()),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    eprintln!(
        "snapshot race: {swaps} swaps, {ok} walks done, {} refused, {leaks} leaks",
        refused.len()
    );
    assert_eq!(leaks, 0, "a walk followed the swapped-in symlink");
    assert!(
        swaps > 0 && ok > 0,
        "the race never ran: {swaps} swaps, {ok} walks"
    );
    // A walk the swap caught midway says so, rather than failing some other way.
    for text in &refused {
        assert!(text.contains("changed while"), "{text}");
    }
}

#[test]
fn a_fifo_or_socket_in_a_pinned_mount_is_refused_by_name() {
    let base = tempfile::tempdir().unwrap();
    let fifo_mount = base.path().join("a");
    write(&fifo_mount.join("data.txt"), b"x\n");
    let fifo = fifo_mount.join("nested/pipe");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    mkfifo(&fifo);
    let sock_mount = base.path().join("b");
    std::fs::create_dir(&sock_mount).unwrap();
    let sock = sock_mount.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    for (mount, path, kind) in [(fifo_mount, fifo, "a FIFO"), (sock_mount, sock, "a socket")] {
        let result = within(Duration::from_secs(30), move || {
            Epoch::builder()
                .mount(EpochMount::pinned(&mount, "/world"))
                .build()
                .map(|e| e.id().to_owned())
        });
        let err = result.expect_err("a pinned mount with a special file is refused");
        let text = err.to_string();
        let canonical = std::fs::canonicalize(&path).unwrap();
        assert!(
            text.contains(&canonical.display().to_string()) && text.contains(kind),
            "{text}"
        );
    }
}

#[test]
fn a_fifo_in_a_live_mount_is_refused_to_the_guest_and_the_call_ends() {
    let base = tempfile::tempdir().unwrap();
    let world = base.path().join("world");
    write(&world.join("data.txt"), b"hello\n");
    mkfifo(&world.join("pipe"));
    std::os::unix::fs::symlink("pipe", world.join("pipe-link")).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(world.join("sock")).unwrap();
    let epoch = within(Duration::from_secs(30), {
        let world = world.clone();
        move || {
            Epoch::builder()
                .mount(EpochMount::live(&world, "/world"))
                .module(guest("openpath"))
                .build()
        }
    })
    .expect("a live mount may hold a FIFO: only the guest's open of it is refused");
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let tool = sb
        .load_tool(&ModuleSpec::new(guest("openpath")).mount(&world, "/world"))
        .unwrap();
    let limits = Limits {
        wall_ms: 3_000,
        ..Limits::default()
    };
    let r = within(Duration::from_secs(30), move || {
        sb.call(
            &tool,
            b"/world/data.txt /world/pipe /world/pipe-link /world/sock",
            &limits,
        )
    });
    let out = String::from_utf8_lossy(&r.stdout);
    // 3: the guest's own exit, after it saw its opens refused.
    assert_eq!(r.outcome, Outcome::Exit { code: 3 }, "{out} {:?}", r.detail);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "/world/data.txt: ok hello", "{out}");
    // 60 is preview1's `nxio`.
    for (line, path) in lines[1..].iter().zip(["pipe", "pipe-link", "sock"]) {
        assert!(
            line.starts_with(&format!("/world/{path}: errno 60 ")),
            "{out}"
        );
    }
    assert_eq!(lines.len(), 4, "{out}");
}

/// A tool whose mounts are all pinned opens without the stat that refuses special files
/// (its snapshots can hold none). One live mount among pinned ones keeps every open of
/// the tool checked: the flag is the tool's, not the first mount's.
#[test]
fn a_fifo_in_a_live_mount_beside_a_pinned_one_is_still_refused() {
    let base = tempfile::tempdir().unwrap();
    let pinned = base.path().join("pinned");
    let live = base.path().join("live");
    write(&pinned.join("data.txt"), b"pinned\n");
    write(&live.join("data.txt"), b"live\n");
    mkfifo(&live.join("pipe"));
    let epoch = Epoch::builder()
        .mount(EpochMount::pinned(&pinned, "/world"))
        .mount(EpochMount::live(&live, "/live"))
        .module(guest("openpath"))
        .build()
        .unwrap();
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let spec = ModuleSpec::new(guest("openpath"))
        .mount(&pinned, "/world")
        .mount(&live, "/live");
    let tool = sb.load_tool(&spec).unwrap();
    let limits = Limits {
        wall_ms: 3_000,
        ..Limits::default()
    };
    let r = within(Duration::from_secs(30), move || {
        sb.call(&tool, b"/world/data.txt /live/data.txt /live/pipe", &limits)
    });
    let out = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.outcome, Outcome::Exit { code: 3 }, "{out} {:?}", r.detail);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..2],
        ["/world/data.txt: ok pinned", "/live/data.txt: ok live"],
        "{out}"
    );
    // 60 is preview1's `nxio`.
    assert!(lines[2].starts_with("/live/pipe: errno 60 "), "{out}");
    assert_eq!(lines.len(), 3, "{out}");
}
