//! A guest cannot write into a mount, read outside it, reach host files through a
//! symlink, or see the host environment; neither through a pinned snapshot nor through a
//! live mount (where the host's own symlinks are present and wasmtime-wasi must refuse).

use std::fs;
use std::path::Path;

use plangate_sandbox::{Epoch, EpochMount, Limits, ModuleSpec, Outcome, Sandbox};

use crate::guests::guest;
use crate::support::{test_config, write};

fn fixture(base: &Path) -> std::path::PathBuf {
    let world = base.join("world");
    write(&world.join("data.txt"), b"inside\n");
    write(&base.join("secret.txt"), b"host secret\n");
    std::os::unix::fs::symlink(base.join("secret.txt"), world.join("link-abs")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", world.join("link-up")).unwrap();
    std::os::unix::fs::symlink("..", world.join("link-dir")).unwrap();
    world
}

fn run_escape(mount: EpochMount) -> String {
    let world = mount.host.clone();
    let epoch = Epoch::builder()
        .mount(mount)
        .module(guest("escape"))
        .build()
        .unwrap();
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let tool = sb
        .load_tool(&ModuleSpec::new(guest("escape")).mount(&world, "/world"))
        .unwrap();
    let r = sb.call(&tool, b"{}", &Limits::default());
    assert_eq!(r.outcome, Outcome::Exit { code: 0 });
    String::from_utf8(r.stdout).unwrap()
}

fn assert_all_denied(report: &str, world: &Path) {
    let attempts: Vec<&str> = report.lines().collect();
    assert_eq!(attempts.len(), 13, "{report}");
    for line in attempts {
        assert!(
            line.contains(": denied"),
            "an escape worked: {line}\n{report}"
        );
    }
    assert!(!report.contains("host secret"));
    // Nothing changed on the host side either.
    assert_eq!(fs::read(world.join("data.txt")).unwrap(), b"inside\n");
    assert!(!world.join("new.txt").exists() && !world.join("newdir").exists());
}

#[test]
fn no_way_out_of_a_pinned_mount() {
    let base = tempfile::tempdir().unwrap();
    let world = fixture(base.path());
    let report = run_escape(EpochMount::pinned(&world, "/world"));
    assert_all_denied(&report, &world);
}

#[test]
fn no_way_out_of_a_live_mount() {
    let base = tempfile::tempdir().unwrap();
    let world = fixture(base.path());
    let report = run_escape(EpochMount::live(&world, "/world"));
    assert_all_denied(&report, &world);
}
