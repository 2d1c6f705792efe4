//! The walk behind pinned snapshots and live digests, done through directory handles: each
//! entry is looked up relative to its directory's open fd, typed with `fstatat` without
//! following links, and opened with `O_NOFOLLOW`. Checking a path and then reading it by
//! path again (lstat, then `read_dir`) let a symlink swapped in between lead the walk out
//! of the mount; by handle, a swap can only make the walk fail, never reach outside.
//! Files are opened `O_NONBLOCK` so a FIFO swapped in never stalls it.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result, io};

/// `sha256:<hex>` over the tree under `root`, copying it into `copy_to` when given.
///
/// A copy (a pinned snapshot) refuses FIFOs, sockets and devices: they have no bytes to
/// pin, and leaving them out quietly would serve a guest a mount that is not the one
/// named. A digest alone (a live mount) leaves them out, as it always has: the guest's
/// own open of one is refused (see `scrub`), so they are nothing it can read.
pub(crate) fn walk(root: &Path, copy_to: Option<&Path>) -> Result<String> {
    let root = fs::canonicalize(root).map_err(io("resolve mount", root))?;
    let top = rustix::fs::open(&root, dir_flags(), Mode::empty())
        .map_err(|e| io("open directory", &root)(e.into()))?;
    let mut w = Walk {
        root,
        copy_to,
        entries: Vec::new(),
    };
    w.run(top)?;
    Ok(digest(&mut w.entries))
}

/// What the digest records of one entry.
enum Entry {
    Dir,
    File([u8; 32]),
    Symlink(Vec<u8>),
}

struct Walk<'a> {
    /// The canonical mount root, for symlink checks and for naming paths in errors.
    root: PathBuf,
    copy_to: Option<&'a Path>,
    entries: Vec<(Vec<u8>, Entry)>,
}

/// One directory being walked: its handle (so its entries are looked up under it,
/// whatever its path now leads to), where it is, and the names still to visit.
struct Frame {
    dir: OwnedFd,
    rel: PathBuf,
    names: std::vec::IntoIter<OsString>,
}

impl Walk<'_> {
    /// Depth first, so open handles are one per level, not one per pending directory.
    fn run(&mut self, top: OwnedFd) -> Result<()> {
        let names = list(&top, &self.root)?;
        let mut stack = vec![Frame {
            dir: top,
            rel: PathBuf::new(),
            names: names.into_iter(),
        }];
        while let Some(frame) = stack.last_mut() {
            let Some(name) = frame.names.next() else {
                stack.pop();
                continue;
            };
            let rel = frame.rel.join(&name);
            if let Some(sub) = self.visit(&frame.dir, &name, &rel)? {
                let names = list(&sub, &self.root.join(&rel))?;
                stack.push(Frame {
                    dir: sub,
                    rel,
                    names: names.into_iter(),
                });
            }
        }
        Ok(())
    }

    /// Records (and copies) one entry; a directory's handle is returned to descend into.
    fn visit(&mut self, dir: &OwnedFd, name: &OsStr, rel: &Path) -> Result<Option<OwnedFd>> {
        let host = self.root.join(rel);
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| changed_or_io("stat", &host, e))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                let sub = open_dir_nofollow(dir, name, &host)?;
                if let Some(dst) = self.copy_to {
                    let d = dst.join(rel);
                    fs::create_dir(&d).map_err(io("create snapshot directory", &d))?;
                }
                self.entries.push((rel_key(rel), Entry::Dir));
                Ok(Some(sub))
            }
            FileType::RegularFile => {
                self.file(dir, name, rel, &host)?;
                Ok(None)
            }
            FileType::Symlink => {
                self.symlink(dir, name, rel, &host)?;
                Ok(None)
            }
            other => {
                self.special(&host, other)?;
                Ok(None)
            }
        }
    }

    fn file(&mut self, dir: &OwnedFd, name: &OsStr, rel: &Path, host: &Path) -> Result<()> {
        // NONBLOCK: if a FIFO was swapped in since the stat, opening it returns at once
        // (and fstat below refuses it) instead of waiting for a writer. NOCTTY: a
        // terminal swapped in does not become ours.
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir, name, flags, Mode::empty())
            .map_err(|e| changed_or_io("open", host, e))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io("stat", host)(e.into()))?;
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                let dst = self.copy_to.map(|d| d.join(rel));
                let sum = copy_file(fs::File::from(fd), host, dst.as_deref())?;
                self.entries.push((rel_key(rel), Entry::File(sum)));
                Ok(())
            }
            other => self.special(host, other),
        }
    }

    fn symlink(&mut self, dir: &OwnedFd, name: &OsStr, rel: &Path, host: &Path) -> Result<()> {
        let target = rustix::fs::readlinkat(dir, name, Vec::new()).map_err(|e| {
            // EINVAL: no longer a symlink since the stat.
            let e = if e == Errno::INVAL { Errno::NOENT } else { e };
            changed_or_io("read symlink", host, e)
        })?;
        let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
        // The check resolves paths on disk and so can race with a swap, but it only
        // decides whether the link's *text* is reproduced; a guest resolves that text
        // inside the snapshot (cap-std refuses any way out), never in the host tree.
        if symlink_stays_inside(&self.root, rel, &target) {
            if let Some(dst) = self.copy_to {
                let d = dst.join(rel);
                std::os::unix::fs::symlink(&target, &d)
                    .map_err(io("create snapshot symlink", &d))?;
            }
            self.entries.push((
                rel_key(rel),
                Entry::Symlink(target.as_os_str().as_bytes().to_vec()),
            ));
        }
        Ok(())
    }

    fn special(&self, host: &Path, kind: FileType) -> Result<()> {
        if self.copy_to.is_none() {
            return Ok(());
        }
        Err(Error::NotSnapshottable {
            path: host.to_path_buf(),
            kind: kind_name(kind),
        })
    }
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC
}

/// Opens the directory `name` under `dir` only if it is still a directory and not a
/// symlink to one: what the walk does after a stat said "directory".
fn open_dir_nofollow(dir: &OwnedFd, name: &OsStr, host: &Path) -> Result<OwnedFd> {
    rustix::fs::openat(dir, name, dir_flags() | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|e| changed_or_io("open directory", host, e))
}

/// The names in `dir`, sorted, without `.` and `..`.
fn list(dir: &OwnedFd, host: &Path) -> Result<Vec<OsString>> {
    let mut names = Vec::new();
    for entry in
        rustix::fs::Dir::read_from(dir).map_err(|e| io("list directory", host)(e.into()))?
    {
        let entry = entry.map_err(|e| io("list directory", host)(e.into()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    names.sort();
    Ok(names)
}

/// An entry that vanished, or turned into a symlink or a non-directory between two
/// steps of the walk, means the mount changed under it; anything else is an I/O error.
fn changed_or_io(action: &'static str, host: &Path, e: Errno) -> Error {
    if e == Errno::NOENT || e == Errno::LOOP || e == Errno::NOTDIR {
        Error::MountChanged {
            path: host.to_path_buf(),
        }
    } else {
        io(action, host)(e.into())
    }
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "a file of unknown type",
    }
}

/// The digest format is fixed (manifests record it): entries sorted by relative path,
/// each its kind, its path and (for a file) the sha256 of its bytes or (for a symlink)
/// its target text.
fn digest(entries: &mut [(Vec<u8>, Entry)]) -> String {
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Sha256::new();
    h.update(b"plangate-tree-v1\n");
    for (key, entry) in entries.iter() {
        match entry {
            Entry::Dir => h.update(b"d "),
            Entry::File(_) => h.update(b"f "),
            Entry::Symlink(_) => h.update(b"l "),
        }
        h.update((key.len() as u64).to_le_bytes());
        h.update(key);
        match entry {
            Entry::Dir => {}
            Entry::File(sum) => h.update(sum),
            Entry::Symlink(t) => {
                h.update((t.len() as u64).to_le_bytes());
                h.update(t);
            }
        }
    }
    // GenericArray prints as lowercase hex, the same bytes `epoch::hex` gives.
    format!("sha256:{:x}", h.finalize())
}

fn rel_key(rel: &Path) -> Vec<u8> {
    // '/'-joined components, so the key is the same whatever the host's separator.
    let parts: Vec<&[u8]> = rel.iter().map(|c| c.as_encoded_bytes()).collect();
    parts.join(&b'/')
}

/// Hashes `input`, copying it to `dst` when given. The copy is created read-only (the
/// preopen is read-only already; this guards the snapshot against the host side too)
/// and new, so it can never write through a link that was already there.
fn copy_file(mut input: fs::File, src: &Path, dst: Option<&Path>) -> Result<[u8; 32]> {
    let mut output = match dst {
        Some(d) => Some(
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o444)
                .open(d)
                .map_err(io("create snapshot file", d))?,
        ),
        None => None,
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = input.read(&mut buf).map_err(io("read", src))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        if let (Some(out), Some(d)) = (output.as_mut(), dst) {
            out.write_all(&buf[..n])
                .map_err(io("write snapshot file", d))?;
        }
    }
    Ok(h.finalize().into())
}

/// Symlinks are kept only when their target text is relative and resolves, lexically
/// and on disk, to a place inside the root; any other symlink is neither followed nor
/// copied, so a snapshot never holds a way out of its mount.
fn symlink_stays_inside(canonical_root: &Path, rel_link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    // Lexically: the link's directory joined with the target must never climb above the
    // mount root (cap-std resolves it inside the preopen the same way).
    let mut depth: Vec<&OsStr> = rel_link
        .parent()
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    for c in target.components() {
        match c {
            std::path::Component::Normal(n) => depth.push(n),
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            _ => return false,
        }
    }
    // On disk: the target must exist and resolve inside the root (a chain of links
    // could otherwise still leave it).
    let link_dir = canonical_root.join(rel_link.parent().unwrap_or(Path::new("")));
    match fs::canonicalize(link_dir.join(target)) {
        Ok(resolved) => resolved.starts_with(canonical_root),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_that_leave_the_root_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(d.path()).unwrap();
        fs::create_dir(root.join("a")).unwrap();
        fs::write(root.join("a/f"), "x").unwrap();
        assert!(symlink_stays_inside(
            &root,
            Path::new("a/l"),
            Path::new("f")
        ));
        assert!(symlink_stays_inside(
            &root,
            Path::new("a/l"),
            Path::new("../a/f")
        ));
        assert!(!symlink_stays_inside(
            &root,
            Path::new("l"),
            Path::new("../x")
        ));
        assert!(!symlink_stays_inside(
            &root,
            Path::new("l"),
            Path::new("/etc/passwd")
        ));
        assert!(!symlink_stays_inside(
            &root,
            Path::new("a/l"),
            Path::new("missing")
        ));
    }

    /// Manifests record digests: the format must not move. The expected value is
    /// computed independently (Python's hashlib over the documented layout).
    #[test]
    fn the_digest_format_is_fixed() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("a"), "x").unwrap();
        fs::create_dir(d.path().join("d")).unwrap();
        std::os::unix::fs::symlink("../a", d.path().join("d/l")).unwrap();
        assert_eq!(
            walk(d.path(), None).unwrap(),
            "sha256:8b35d11c3cf56457e20b86ce283acf35189d1857c580742054a0c8b3d90f1fd9"
        );
    }

    /// The swap the walk must survive, made deterministic: a stat saw a directory, and
    /// by the time it is opened the name is a symlink to a directory outside the mount.
    /// Opening it by handle without following links refuses it; nothing outside is read.
    #[test]
    fn a_directory_swapped_for_a_symlink_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let mount = d.path().join("mount");
        let outside = d.path().join("outside");
        fs::create_dir_all(mount.join("sub")).unwrap();
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("secret.txt"), "secret").unwrap();
        let dir = rustix::fs::open(&mount, dir_flags(), Mode::empty()).unwrap();
        let st = rustix::fs::statat(&dir, "sub", AtFlags::SYMLINK_NOFOLLOW).unwrap();
        assert_eq!(FileType::from_raw_mode(st.st_mode), FileType::Directory);
        fs::rename(mount.join("sub"), d.path().join("parked")).unwrap();
        std::os::unix::fs::symlink(&outside, mount.join("sub")).unwrap();
        let opened = open_dir_nofollow(&dir, OsStr::new("sub"), &mount.join("sub"));
        assert!(
            matches!(opened, Err(Error::MountChanged { ref path }) if path == &mount.join("sub")),
            "{opened:?}"
        );
    }

    /// The other swap: a stat saw a regular file, and a FIFO is there by the open. The
    /// open returns at once (`O_NONBLOCK`), and the snapshot refuses the FIFO by name.
    #[test]
    fn a_file_swapped_for_a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(d.path()).unwrap();
        let fifo = root.join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let snap = root.join("snap");
        fs::create_dir(&snap).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (r2, s2) = (root.clone(), snap.clone());
        std::thread::spawn(move || {
            let mut w = Walk {
                root: r2.clone(),
                copy_to: Some(&s2),
                entries: Vec::new(),
            };
            let dir = rustix::fs::open(&r2, dir_flags(), Mode::empty()).unwrap();
            let r = w.file(
                &dir,
                OsStr::new("pipe"),
                Path::new("pipe"),
                &r2.join("pipe"),
            );
            let _ = tx.send(r.map_err(|e| e.to_string()));
        });
        let r = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("opening a FIFO must not block the walk");
        let err = r.expect_err("a FIFO is refused");
        assert!(
            err.contains(&fifo.display().to_string()) && err.contains("a FIFO"),
            "{err}"
        );
    }

    /// A symlink to a directory inside the mount is kept as a link, not walked into:
    /// the tree under it appears once, at its real place.
    #[test]
    fn a_symlinked_directory_is_recorded_as_a_link_not_walked() {
        let d = tempfile::tempdir().unwrap();
        let mount = d.path().join("mount");
        fs::create_dir_all(mount.join("real")).unwrap();
        fs::write(mount.join("real/f.txt"), "x").unwrap();
        std::os::unix::fs::symlink("real", mount.join("alias")).unwrap();
        std::os::unix::fs::symlink(d.path(), mount.join("up")).unwrap();
        let snap = d.path().join("snap");
        fs::create_dir(&snap).unwrap();
        let digest = walk(&mount, Some(&snap)).unwrap();
        assert_eq!(digest, walk(&mount, None).unwrap());
        let alias = fs::symlink_metadata(snap.join("alias")).unwrap();
        assert!(alias.file_type().is_symlink());
        assert_eq!(
            fs::read_link(snap.join("alias")).unwrap(),
            Path::new("real")
        );
        assert!(!snap.join("up").exists() && fs::symlink_metadata(snap.join("up")).is_err());
        assert_eq!(fs::read(snap.join("real/f.txt")).unwrap(), b"x");
        assert_eq!(
            fs::read_dir(&snap).unwrap().count(),
            2,
            "real and alias only"
        );
    }
}
