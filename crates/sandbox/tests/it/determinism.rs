//! The design's test (section 4): the same manifest over two copies of a fixture tree,
//! made in opposite orders on different filesystems at different times, gives
//! byte-identical output from a guest that prints everything it can observe.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use plangate_sandbox::{
    CallRecord, Epoch, EpochManifest, EpochMode, EpochMount, Error, Limits, ModuleSpec, Outcome,
    Sandbox,
};

use crate::guests::guest;
use crate::support::{test_config, write};

/// Builds `<base>/world` (the mount) and `<base>/secret.txt` (outside it), creating
/// entries in forward or reverse order and stamping every one with `mtime`.
fn make_fixture(base: &Path, reverse: bool, mtime: SystemTime, hard_link: bool) -> PathBuf {
    let world = base.join("world");
    let secret = base.join("secret.txt");
    write(&secret, b"host secret\n");
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("data.txt".into(), b"hello world\n".to_vec()),
        (
            "users/u_42.json".into(),
            br#"{"id":"u_42","name":"Ada"}"#.to_vec(),
        ),
        (
            "users/u_7.json".into(),
            br#"{"id":"u_7","name":"Grace"}"#.to_vec(),
        ),
        ("index/a/b/c.txt".into(), b"deep\n".to_vec()),
        ("zeta".into(), Vec::new()),
    ];
    for i in 0..40 {
        files.push((
            format!("many/f{i:02}.txt"),
            format!("file {i}\n").into_bytes(),
        ));
    }
    if reverse {
        files.reverse();
    }
    fs::create_dir_all(&world).unwrap();
    fs::create_dir_all(world.join("empty")).unwrap();
    for (rel, bytes) in &files {
        write(&world.join(rel), bytes);
    }
    // Same content either way; a hard link on one side only gives that file nlink 2.
    if hard_link {
        fs::hard_link(world.join("data.txt"), world.join("hard.txt")).unwrap();
    } else {
        fs::write(world.join("hard.txt"), b"hello world\n").unwrap();
    }
    std::os::unix::fs::symlink("data.txt", world.join("link-in")).unwrap();
    std::os::unix::fs::symlink(&secret, world.join("link-abs")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", world.join("link-up")).unwrap();
    std::os::unix::fs::symlink("..", world.join("link-dir")).unwrap();
    stamp(&world, mtime);
    world
}

fn stamp(dir: &Path, t: SystemTime) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let meta = fs::symlink_metadata(&p).unwrap();
        if meta.is_dir() {
            stamp(&p, t);
        }
        if !meta.file_type().is_symlink() {
            fs::File::open(&p).unwrap().set_modified(t).unwrap();
        }
    }
    fs::File::open(dir).unwrap().set_modified(t).unwrap();
}

fn tmpfs_or_temp() -> tempfile::TempDir {
    // /dev/shm is tmpfs on Linux: another filesystem than the ext4 temp dir, with
    // another readdir order (reverse creation) and other inode numbers.
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").unwrap()
    } else {
        tempfile::tempdir().unwrap()
    }
}

fn observe(epoch: Epoch, world: &Path) -> (String, CallRecord) {
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let tool = sb
        .load_tool(&ModuleSpec::new(guest("observe")).mount(world, "/world"))
        .unwrap();
    let r = sb.call(&tool, b"{}", &Limits::default());
    assert_eq!(
        r.outcome,
        Outcome::Exit { code: 0 },
        "stderr: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    (sb.epoch().id().to_owned(), r)
}

fn builder(world: &Path, snapshots: &Path) -> plangate_sandbox::EpochBuilder {
    Epoch::builder()
        .random_seed(0x00c0_ffee)
        .env("LANG", "C")
        .argv(["observe", "--all"])
        .mount(EpochMount::pinned(world, "/world"))
        .module(guest("observe"))
        .snapshot_root(snapshots)
}

#[test]
fn replay_on_another_copy_is_byte_identical() {
    let a_base = tmpfs_or_temp();
    let a_snap = tmpfs_or_temp();
    let b_base = tempfile::tempdir().unwrap();
    let b_snap = tempfile::tempdir().unwrap();
    let t_a = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let t_b = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let world_a = make_fixture(a_base.path(), false, t_a, true);
    let world_b = make_fixture(b_base.path(), true, t_b, false);

    let epoch_a = builder(&world_a, a_snap.path()).build().unwrap();
    // The manifest travels as JSON, as `--write-epoch` / `--epoch` carry it.
    let json = serde_json::to_string_pretty(epoch_a.manifest()).unwrap();
    let (id_a, out_a) = observe(epoch_a, &world_a);

    let manifest: EpochManifest = serde_json::from_str(&json).unwrap();
    let epoch_b = Epoch::from_manifest(
        manifest,
        std::slice::from_ref(&world_b),
        Some(b_snap.path()),
    )
    .unwrap();
    let (id_b, out_b) = observe(epoch_b, &world_b);

    let text = String::from_utf8(out_a.stdout.clone()).unwrap();
    assert_eq!(id_a, id_b);
    assert_eq!(
        text,
        String::from_utf8_lossy(&out_b.stdout),
        "the two observations differ"
    );
    assert_eq!(out_a.fuel_used, out_b.fuel_used);

    // The output is worth comparing: it holds what the fixture holds, pinned.
    assert!(
        text.contains("wall_before 1735689600.000000000\n"),
        "{text}"
    );
    assert!(text.contains("arg observe\narg --all\n"), "{text}");
    assert!(text.contains("env LANG=C\n"));
    assert_eq!(text.matches("env ").count(), 1, "only the manifest's env");
    assert!(text.contains(&format!("content {}", hex(b"hello world\n"))));
    assert!(text.contains("entry /world/link-in type"));
    assert!(text.contains("entry /world/many/f39.txt"));
    let slept = line_value(&text, "mono_slept_ns ");
    assert!(
        (1_000_000_000..1_000_100_000).contains(&slept),
        "slept {slept}"
    );
    // Symlinks that leave the mount are not in the snapshot at all.
    for gone in ["link-abs", "link-up", "link-dir", "secret"] {
        assert!(
            !text.contains(gone),
            "{gone} leaked into the snapshot:\n{text}"
        );
    }
    // Metadata is pinned, not the host's.
    assert!(!text.contains("1000000000.0") && !text.contains("1600000000.0"));
    assert!(text.contains("modified 1735689600.000000000"));
    assert!(text.contains("fdstat dev 0 ino 0 type 3 nlink 1 size 0 atim 1735689600000000000"));
    // readdir is sorted: f00 .. f39 in order.
    let positions: Vec<usize> = (0..40)
        .map(|i| {
            text.find(&format!("entry /world/many/f{i:02}.txt"))
                .unwrap()
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn two_independent_epochs_over_the_two_copies_have_one_id() {
    let a_base = tmpfs_or_temp();
    let b_base = tempfile::tempdir().unwrap();
    let snap = tempfile::tempdir().unwrap();
    let world_a = make_fixture(a_base.path(), true, SystemTime::now(), false);
    let world_b = make_fixture(
        b_base.path(),
        false,
        UNIX_EPOCH + Duration::from_secs(5),
        true,
    );
    let a = builder(&world_a, snap.path()).build().unwrap();
    let b = builder(&world_b, snap.path()).build().unwrap();
    assert_eq!(a.manifest().mounts, b.manifest().mounts);
    assert_eq!(a.id(), b.id());
    let c = builder(&world_b, snap.path())
        .random_seed(1)
        .build()
        .unwrap();
    assert_ne!(a.id(), c.id());
}

#[test]
fn replay_refuses_a_mount_whose_contents_changed() {
    let a_base = tempfile::tempdir().unwrap();
    let b_base = tempfile::tempdir().unwrap();
    let world_a = make_fixture(a_base.path(), false, SystemTime::now(), false);
    let world_b = make_fixture(b_base.path(), false, SystemTime::now(), false);
    fs::write(
        world_b.join("users/u_7.json"),
        br#"{"id":"u_7","name":"Hopper"}"#,
    )
    .unwrap();
    let epoch = builder(&world_a, a_base.path()).build().unwrap();
    let err = Epoch::from_manifest(epoch.manifest().clone(), &[world_b], None).unwrap_err();
    assert!(matches!(err, Error::MountDigestMismatch { .. }), "{err}");
    // A file that only changed its mtime is the same content: accepted.
    let c_base = tempfile::tempdir().unwrap();
    let world_c = make_fixture(c_base.path(), true, UNIX_EPOCH, false);
    Epoch::from_manifest(epoch.manifest().clone(), &[world_c], None).unwrap();
}

#[test]
fn the_seed_changes_only_randomness() {
    let base = tempfile::tempdir().unwrap();
    let world = make_fixture(base.path(), false, SystemTime::now(), false);
    let (_, a) = observe(builder(&world, base.path()).build().unwrap(), &world);
    let (_, b) = observe(
        builder(&world, base.path()).random_seed(1).build().unwrap(),
        &world,
    );
    let a = String::from_utf8(a.stdout).unwrap();
    let b = String::from_utf8(b.stdout).unwrap();
    let differing: Vec<(&str, &str)> = a.lines().zip(b.lines()).filter(|(x, y)| x != y).collect();
    assert!(!differing.is_empty());
    assert!(
        differing
            .iter()
            .all(|(x, _)| x.starts_with("random ") || x.starts_with("hashmap_order ")),
        "{differing:?}"
    );
}

#[test]
fn live_clock_and_random_differ_between_runs() {
    let base = tempfile::tempdir().unwrap();
    let world = make_fixture(base.path(), false, SystemTime::now(), false);
    let sb = Sandbox::new(test_config(), builder(&world, base.path()).build().unwrap()).unwrap();
    let spec = ModuleSpec::new(guest("observe")).mount(&world, "/world");
    let live = sb
        .load_tool(&spec.clone().clock(EpochMode::Live).random(EpochMode::Live))
        .unwrap();
    let pinned = sb.load_tool(&spec).unwrap();
    let l = Limits::default();
    // A live sleep is real: give the 1 s sleep room.
    let l = Limits {
        wall_ms: 10_000,
        ..l
    };
    let (x, y) = (sb.call(&live, b"", &l), sb.call(&live, b"", &l));
    assert_eq!(x.outcome, Outcome::Exit { code: 0 });
    let (x, y) = (
        String::from_utf8(x.stdout).unwrap(),
        String::from_utf8(y.stdout).unwrap(),
    );
    assert_ne!(line(&x, "random "), line(&y, "random "));
    assert_ne!(line(&x, "wall_before "), line(&y, "wall_before "));
    let slept = line_value(&x, "mono_slept_ns ");
    assert!(
        slept >= 1_000_000_000,
        "a live sleep really sleeps: {slept}"
    );
    // Pinned runs in the same sandbox stay identical.
    assert_eq!(
        sb.call(&pinned, b"", &l).stdout,
        sb.call(&pinned, b"", &l).stdout
    );
}

#[test]
fn a_changed_live_mount_is_detected() {
    let base = tempfile::tempdir().unwrap();
    let world = make_fixture(base.path(), false, SystemTime::now(), false);
    let epoch = Epoch::builder()
        .mount(EpochMount::live(&world, "/world"))
        .module(guest("observe"))
        .build()
        .unwrap();
    let sb = Sandbox::new(test_config(), epoch).unwrap();
    let tool = sb
        .load_tool(&ModuleSpec::new(guest("observe")).mount(&world, "/world"))
        .unwrap();
    let before = sb.call(&tool, b"", &Limits::default());
    assert!(
        sb.epoch()
            .recheck_live()
            .unwrap()
            .iter()
            .all(|c| !c.changed())
    );
    fs::write(world.join("data.txt"), b"changed by another process\n").unwrap();
    let after = sb.call(&tool, b"", &Limits::default());
    // Live means live: the guest sees the new bytes, and the recheck says so.
    assert_ne!(before.stdout, after.stdout);
    let checks = sb.epoch().recheck_live().unwrap();
    assert_eq!(checks.len(), 1);
    assert!(checks[0].changed());
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"))
}

fn line_value(text: &str, prefix: &str) -> u64 {
    line(text, prefix)[prefix.len()..].parse().unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
