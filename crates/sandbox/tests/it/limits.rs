//! Host resources one call may take are bounded per call, so one hostile tool cannot
//! change another's results: open files stop at `MAX_OPEN_FILES` with `mfile` while
//! another call still reads its mount, closing a file gives its slot back, and a
//! `poll_oneoff` claiming billions of subscriptions gets `inval` instead of aborting
//! the host.

use std::path::Path;
use std::time::{Duration, Instant};

use plangate_sandbox::{
    Epoch, EpochMount, Limits, MAX_OPEN_FILES, ModuleSpec, Outcome, Sandbox, Tool,
};

use crate::guests::guest;
use crate::support::{sandbox_with, test_config, write};

fn world_sandbox(world: &Path, names: &[&str]) -> (Sandbox, Vec<Tool>) {
    let mut b = Epoch::builder().mount(EpochMount::pinned(world, "/world"));
    for n in names {
        b = b.module(guest(n));
    }
    let sb = Sandbox::new(test_config(), b.build().unwrap()).unwrap();
    let tools = names
        .iter()
        .map(|n| {
            sb.load_tool(&ModuleSpec::new(guest(n)).mount(world, "/world"))
                .unwrap()
        })
        .collect();
    (sb, tools)
}

/// The fds this process holds; `None` when it cannot open one more to count them.
fn open_fds() -> Option<usize> {
    std::fs::read_dir("/proc/self/fd").ok().map(Iterator::count)
}

/// Waits until the process holds at least `n` more fds than `before` and the count has
/// not moved for half a second, or has none left at all: the hog has taken what it may.
fn wait_for_fds(before: usize, n: usize) {
    let started = Instant::now();
    let (mut last, mut still) = (0, 0);
    while started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(100));
        let Some(now) = open_fds() else { return };
        still = if now == last { still + 1 } else { 0 };
        if now >= before + n && still >= 5 {
            return;
        }
        last = now;
    }
}

#[test]
fn a_call_holding_open_files_stops_at_the_limit_and_others_still_read() {
    let base = tempfile::tempdir().unwrap();
    let world = base.path().join("world");
    write(&world.join("data.txt"), b"hello\n");
    let (sb, tools) = world_sandbox(&world, &["fdhog", "openpath"]);
    let sb = std::sync::Arc::new(sb);
    let before = open_fds().expect("fds to spare");
    let hog = {
        let (sb, tool) = (sb.clone(), tools[0].clone());
        std::thread::spawn(move || {
            let limits = Limits {
                wall_ms: 4_000,
                ..Limits::default()
            };
            sb.call(&tool, b"hold", &limits)
        })
    };
    wait_for_fds(before, MAX_OPEN_FILES);
    // The hog holds every file it could get: this call must still open its own mount.
    let r = sb.call(&tools[1], b"/world/data.txt", &Limits::default());
    assert_eq!(
        (r.outcome, String::from_utf8_lossy(&r.stdout).as_ref()),
        (Outcome::Exit { code: 0 }, "/world/data.txt: ok hello\n"),
        "{:?}",
        r.detail
    );
    let held = hog.join().unwrap();
    assert_eq!(held.outcome, Outcome::Timeout);
    // 33 is preview1's `mfile`.
    let out = String::from_utf8_lossy(&held.stdout);
    assert!(
        out.starts_with(&format!("opened {MAX_OPEN_FILES} then errno 33 ")),
        "{out}"
    );
}

#[test]
fn the_open_file_limit_is_deterministic_and_closing_frees_a_slot() {
    let base = tempfile::tempdir().unwrap();
    let world = base.path().join("world");
    write(&world.join("data.txt"), b"hello\n");
    let (sb, tools) = world_sandbox(&world, &["fdhog", "openpath"]);
    let a = sb.call(&tools[0], b"", &Limits::default());
    let b = sb.call(&tools[0], b"", &Limits::default());
    assert_eq!(a.outcome, Outcome::Exit { code: 0 }, "{:?}", a.detail);
    let out = String::from_utf8_lossy(&a.stdout);
    assert!(
        out.starts_with(&format!("opened {MAX_OPEN_FILES} then errno 33 ")),
        "{out}"
    );
    assert_eq!(a.stdout, b.stdout);
    assert_eq!(a.fuel_used, b.fuel_used);
    // Reading a file opens and closes it: far more reads than the limit, one at a time.
    let many = "/world/data.txt ".repeat(MAX_OPEN_FILES * 3);
    let r = sb.call(&tools[1], many.as_bytes(), &Limits::default());
    assert_eq!(r.outcome, Outcome::Exit { code: 0 }, "{:?}", r.detail);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_eq!(out.lines().count(), MAX_OPEN_FILES * 3);
    assert!(
        out.lines().all(|l| l == "/world/data.txt: ok hello"),
        "{out}"
    );
}

#[test]
fn a_poll_claiming_billions_of_subscriptions_gets_inval() {
    let (sb, tools) = sandbox_with(&["pollbomb"]);
    let r = sb.call(&tools[0], b"", &Limits::default());
    assert_eq!(r.outcome, Outcome::Exit { code: 0 }, "{:?}", r.detail);
    // 28 is preview1's `inval`; the honest one-subscription poll still works after.
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "poll nsubs=4294967295: errno 28 events 0\n\
         poll nsubs=4097: errno 28 events 0\n\
         poll nsubs=1: errno 0 events 1\n"
    );
}
