//! The on-disk cache of precompiled modules and components. Compiling a guest costs far
//! more than loading its artifact, and an interpreter component (componentize-py, jco)
//! takes seconds to compile (docs/benchmarks.md, "Build settings"), so a run compiles
//! each one once, ever, per engine configuration. An artifact is native code that runs outside the sandbox,
//! so the cache trusts nothing it did not write: it uses only a directory the user owns
//! and nobody else can write, and loads an artifact only if the digest recorded with it
//! matches this module, this engine and the artifact's own bytes. Whatever goes wrong
//! with the disk, a module is still compiled in memory: the cache can only make a run
//! faster, never fail it.

use std::collections::BTreeSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Engine, Module, Precompiled};

use crate::epoch::{WASMTIME_VERSION, hex};
use crate::error::{Error, Result};

/// Feeds `Hash` output into SHA-256, so the key is the same in every process (std's
/// `DefaultHasher` promises no stability across releases).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let d = self.0.clone().finalize();
        u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// The engine's compile-compatibility hash, hex.
pub(crate) fn engine_hash(engine: &Engine) -> String {
    let mut h = ShaHasher(Sha256::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finalize()[..16])
}

/// The default cache directory: the user's own cache directory (XDG), never a shared
/// one such as the system temp dir, where anyone can plant a file under our key. `None`
/// when neither variable names an absolute path: modules are then compiled in memory.
pub(crate) fn default_dir() -> Option<PathBuf> {
    let absolute = |name| {
        std::env::var_os(name)
            .map(PathBuf::from)
            // The XDG spec says a relative path is invalid and must be ignored.
            .filter(|p| p.is_absolute())
    };
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("plangate").join("modules"))
}

/// Starts every artifact file, so a file in another format (an older plangate's bare
/// `.cwasm`, a stray file) is told apart before its digest is even looked at.
const MAGIC: &[u8; 16] = b"plangate-cwasm1\n";
/// Magic, then the SHA-256 digest, then the artifact.
const HEADER: usize = MAGIC.len() + 32;

fn artifact_name(sha256: &str, engine_hash: &str) -> String {
    format!("{sha256}-wasmtime{WASMTIME_VERSION}-{engine_hash}.cwasm")
}

/// What an artifact must match to be loaded. It names the module and the engine, so an
/// artifact copied under another key, or made by another engine, does not match; and it
/// covers the artifact's bytes, so a torn or flipped file does not. It is no MAC:
/// whoever can write the directory could forge it, which is why the directory's owner
/// is checked.
fn digest(sha256: &str, engine_hash: &str, artifact: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    let parts: [&[u8]; 5] = [
        b"plangate module artifact",
        sha256.as_bytes(),
        WASMTIME_VERSION.as_bytes(),
        engine_hash.as_bytes(),
        &Sha256::digest(artifact),
    ];
    // Length-prefixed, so no two different lists of parts hash the same bytes.
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    h.finalize().into()
}

fn seal(sha256: &str, engine_hash: &str, artifact: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(HEADER + artifact.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&digest(sha256, engine_hash, artifact));
    file.extend_from_slice(artifact);
    file
}

/// The artifact in `file`, if its header is ours and its digest matches this module and
/// this engine; else why not.
fn unseal<'a>(
    file: &'a [u8],
    sha256: &str,
    engine_hash: &str,
) -> std::result::Result<&'a [u8], &'static str> {
    if file.len() < HEADER || &file[..MAGIC.len()] != MAGIC {
        return Err("not a plangate artifact (no header, or truncated)");
    }
    let (recorded, artifact) = file[MAGIC.len()..].split_at(32);
    if recorded != digest(sha256, engine_hash, artifact) {
        return Err("its digest does not match this module, this engine and its bytes");
    }
    Ok(artifact)
}

/// Logs a warning about a cache directory once per process, not once per module or
/// call: a run loads many modules, and one word about the directory is enough.
fn warn_once(dir: &Path, message: impl FnOnce() -> String) {
    static WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = WARNED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(dir.to_path_buf());
    if first {
        tracing::warn!("{}", message());
    }
}

/// A compiled tool: a core module or a component, as its bytes' header says.
#[derive(Clone)]
pub(crate) enum Compiled {
    Module(Module),
    Component(Component),
}

impl Compiled {
    fn serialize(&self) -> wasmtime::Result<Vec<u8>> {
        match self {
            Compiled::Module(m) => m.serialize(),
            Compiled::Component(c) => c.serialize(),
        }
    }
}

/// Whether `bytes` are a component's (header `00 61 73 6d 0d 00 01 00`) rather than a
/// core module's (`00 61 73 6d 01 00 00 00`).
pub(crate) fn is_component(bytes: &[u8]) -> bool {
    bytes.get(..8) == Some(&[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00][..])
}

/// Loads the module's artifact if it is one this cache wrote for this module and this
/// engine, else compiles the module and stores its artifact. Only a compile error of
/// the module itself is an error; any trouble with the cache is a warning, and the
/// module compiled in memory is used.
pub(crate) fn load_or_compile(
    engine: &Engine,
    cache_dir: Option<&Path>,
    path: &Path,
    sha256: &str,
    bytes: &[u8],
) -> Result<Compiled> {
    #[cfg(unix)]
    if let Some(dir) = cache_dir.and_then(disk::CacheDir::open) {
        return dir.load_or_compile(engine, path, sha256, bytes);
    }
    #[cfg(not(unix))]
    // Ownership and modes cannot be checked here as they are on unix: no disk cache.
    let _ = cache_dir;
    compile(engine, path, bytes)
}

fn compile(engine: &Engine, path: &Path, bytes: &[u8]) -> Result<Compiled> {
    let compiled = if is_component(bytes) {
        Component::new(engine, bytes).map(Compiled::Component)
    } else {
        Module::new(engine, bytes).map(Compiled::Module)
    };
    compiled.map_err(|e| Error::Compile {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    })
}

#[expect(
    unsafe_code,
    reason = "deserializing runs native code; only bytes read from a directory the user owns and no one else can write, whose digest matches this module and this engine, are loaded"
)]
fn deserialize(engine: &Engine, artifact: &[u8], component: bool) -> wasmtime::Result<Compiled> {
    // SAFETY: `artifact` is in memory, so it cannot change between the check and the
    // load. It was read (not followed through a symlink) from a directory owned by
    // this user and writable by no one else (`CacheDir::open`), so only this user (or
    // root) can have written it, and this cache writes only what wasmtime serialized.
    // Its digest matches this module's sha256, this wasmtime release and this engine's
    // compatibility hash and its own bytes, so it is not another key's artifact, nor
    // torn or corrupted. wasmtime checks its header against the engine again, and the
    // artifact's kind must be the source's.
    match (Engine::detect_precompiled(artifact), component) {
        (Some(Precompiled::Component), true) => {
            unsafe { Component::deserialize(engine, artifact) }.map(Compiled::Component)
        }
        (Some(Precompiled::Module), false) => {
            unsafe { Module::deserialize(engine, artifact) }.map(Compiled::Module)
        }
        _ => Err(wasmtime::format_err!(
            "the artifact is not a compiled {}",
            if component { "component" } else { "module" }
        )),
    }
}

/// The directory itself, held open: every file is opened relative to the checked
/// directory, so a path swapped after the check cannot redirect a read or a write.
#[cfg(unix)]
mod disk {
    use std::fs::File;
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, Mode, OFlags};
    use wasmtime::Engine;

    use super::{
        Compiled, artifact_name, compile, deserialize, engine_hash, is_component, seal, unseal,
    };
    use crate::error::Result;

    /// Why a cache directory is not used.
    #[derive(Debug, thiserror::Error)]
    enum Refusal {
        #[error("cannot create it: {0}")]
        Create(std::io::Error),
        #[error("cannot open it: {0}")]
        Open(std::io::Error),
        #[error("it is a symlink")]
        Symlink,
        #[error("it is not a directory")]
        NotADirectory,
        #[error("it is owned by uid {owner}, not by this user (uid {euid})")]
        Owner { owner: u32, euid: u32 },
        #[error("it is writable by group or others (mode {mode:03o})")]
        Writable { mode: u32 },
    }

    pub(super) struct CacheDir {
        path: PathBuf,
        fd: OwnedFd,
    }

    impl CacheDir {
        /// Creates the directory (mode 0700) if need be and opens it, if it is one this
        /// user can trust; else warns (once) and gives `None`.
        pub(super) fn open(path: &Path) -> Option<CacheDir> {
            match Self::try_open(path) {
                Ok(dir) => Some(dir),
                Err(why) => {
                    super::warn_once(path, || {
                        format!(
                            "module cache `{}` refused: {why}; compiling modules in memory",
                            path.display()
                        )
                    });
                    None
                }
            }
        }

        fn try_open(path: &Path) -> std::result::Result<CacheDir, Refusal> {
            // Recursive, so the `plangate` parent it may create is 0700 too.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(path)
                .map_err(Refusal::Create)?;
            // lstat first only to word the refusal; the check that counts is on the fd.
            let meta = std::fs::symlink_metadata(path).map_err(Refusal::Open)?;
            if meta.file_type().is_symlink() {
                return Err(Refusal::Symlink);
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::open(path, flags, Mode::empty())
                .map_err(|e| Refusal::Open(e.into()))?;
            let fd = File::from(fd);
            let meta = fd.metadata().map_err(Refusal::Open)?;
            if !meta.is_dir() {
                return Err(Refusal::NotADirectory);
            }
            let euid = rustix::process::geteuid().as_raw();
            if meta.uid() != euid {
                return Err(Refusal::Owner {
                    owner: meta.uid(),
                    euid,
                });
            }
            if meta.mode() & 0o022 != 0 {
                return Err(Refusal::Writable {
                    mode: meta.mode() & 0o7777,
                });
            }
            Ok(CacheDir {
                path: path.to_path_buf(),
                fd: fd.into(),
            })
        }

        pub(super) fn load_or_compile(
            &self,
            engine: &Engine,
            path: &Path,
            sha256: &str,
            bytes: &[u8],
        ) -> Result<Compiled> {
            let engine_hash = engine_hash(engine);
            let name = artifact_name(sha256, &engine_hash);
            match self.read(&name) {
                Ok(Some(file)) => match unseal(&file, sha256, &engine_hash) {
                    Ok(artifact) => match deserialize(engine, artifact, is_component(bytes)) {
                        Ok(module) => return Ok(module),
                        Err(e) => self.distrust(&name, &format!("wasmtime refused it: {e:#}")),
                    },
                    Err(why) => self.distrust(&name, why),
                },
                Ok(None) => {}
                Err(e) => self.distrust(&name, &e.to_string()),
            }
            let module = compile(engine, path, bytes)?;
            let stored = module
                .serialize()
                .map_err(|e| std::io::Error::other(format!("{e:#}")))
                .and_then(|artifact| self.store(&name, &seal(sha256, &engine_hash, &artifact)));
            if let Err(e) = stored {
                super::warn_once(&self.path, || {
                    format!(
                        "module cache `{}`: failed to store `{name}`: {e}; the module was compiled in memory",
                        self.path.display()
                    )
                });
            }
            Ok(module)
        }

        fn distrust(&self, name: &str, why: &str) {
            tracing::debug!(
                dir = %self.path.display(),
                artifact = name,
                why,
                "module cache: artifact not used, compiling again"
            );
        }

        /// The whole file, into memory; `None` if there is none.
        fn read(&self, name: &str) -> std::io::Result<Option<Vec<u8>>> {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let mut file = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
                Ok(fd) => File::from(fd),
                Err(rustix::io::Errno::NOENT) => return Ok(None),
                Err(e) => return Err(e.into()),
            };
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(std::io::Error::other("not a regular file"));
            }
            if meta.uid() != rustix::process::geteuid().as_raw() {
                return Err(std::io::Error::other(format!(
                    "owned by uid {}, not by this user",
                    meta.uid()
                )));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            file.read_to_end(&mut bytes)?;
            Ok(Some(bytes))
        }

        /// Writes a temporary file then renames it over `name`, so a concurrent reader
        /// sees a whole artifact or none, and header and artifact are published at once.
        fn store(&self, name: &str, file: &[u8]) -> std::io::Result<()> {
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let tmp = format!(
                ".{name}.{}.{}.tmp",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(&self.fd, &tmp, flags, Mode::RUSR | Mode::WUSR)?;
            let written = File::from(fd).write_all(file).and_then(|()| {
                rustix::fs::renameat(&self.fd, &tmp, &self.fd, name).map_err(Into::into)
            });
            if written.is_err() {
                let _ = rustix::fs::unlinkat(&self.fd, &tmp, AtFlags::empty());
            }
            written
        }
    }
}
