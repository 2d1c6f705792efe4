//! The sandbox's setup errors. A tool *call* never errs (its end is an `Outcome`); only
//! building an engine, an epoch or a tool handle can fail, and those failures name the file.

use std::path::PathBuf;

/// A failure to set up the sandbox: building the engine, taking an epoch, loading a tool.
///
/// Messages are lowercase fragments that read well after "error: ".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The wasmtime engine rejected the configuration.
    #[error("failed to build the wasmtime engine: {0}")]
    Engine(String),
    /// A file or directory could not be read, written or copied.
    #[error("failed to {action} `{path}`: {source}")]
    Io {
        /// What was being done, as a verb phrase ("read module", "copy mount").
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A module did not compile. (A cached artifact that does not load is never an
    /// error: the module is compiled again.)
    #[error("failed to compile module `{path}`: {message}")]
    Compile {
        /// The module's path.
        path: PathBuf,
        /// wasmtime's explanation.
        message: String,
    },
    /// A module could not be linked against WASI preview1 (unknown imports, no `_start`).
    #[error("failed to link module `{path}`: {message}")]
    Link {
        /// The module's path.
        path: PathBuf,
        /// wasmtime's explanation.
        message: String,
    },
    /// A module is not one of the epoch's modules: its bytes are not pinned by the manifest.
    #[error("failed to load module `{path}`: its sha256 {sha256} is not in the epoch manifest")]
    ModuleNotInEpoch {
        /// The module's path.
        path: PathBuf,
        /// The module's sha256 (hex).
        sha256: String,
    },
    /// A tool asked for a mount the epoch does not have.
    #[error("failed to mount `{host}` at `{guest}`: the epoch has no such mount")]
    MountNotInEpoch {
        /// The host directory asked for.
        host: PathBuf,
        /// The guest path asked for.
        guest: String,
    },
    /// A mount's host path is not a directory.
    #[error("failed to mount `{path}`: not a directory")]
    NotADirectory {
        /// The host path.
        path: PathBuf,
    },
    /// A pinned mount holds a FIFO, a socket or a device: nothing with bytes to pin.
    #[error(
        "failed to snapshot `{path}`: it is {kind}, and a pinned mount holds only files, directories and symlinks"
    )]
    NotSnapshottable {
        /// The host path of the entry.
        path: PathBuf,
        /// What it is ("a FIFO", "a socket", ...).
        kind: &'static str,
    },
    /// An entry of a mount vanished or changed type (a directory became a symlink) while
    /// the mount was being snapshotted or digested.
    #[error(
        "failed to read mount entry `{path}`: it changed while the mount was being read (a file or directory was removed or replaced by a symlink)"
    )]
    MountChanged {
        /// The host path of the entry.
        path: PathBuf,
    },
    /// A guest path is not absolute, or two mounts share one.
    #[error("failed to mount at guest path `{guest}`: {why}")]
    BadGuestPath {
        /// The guest path.
        guest: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// Replaying a manifest found a mount whose contents differ from the recorded digest.
    #[error(
        "failed to replay the epoch: mount `{guest}` served from `{host}` has digest {actual}, the manifest records {expected}"
    )]
    MountDigestMismatch {
        /// The mount's guest path.
        guest: String,
        /// The host directory it was served from.
        host: PathBuf,
        /// The digest in the manifest.
        expected: String,
        /// The digest of the directory now.
        actual: String,
    },
    /// Replaying a manifest was given the wrong number of mount directories.
    #[error(
        "failed to replay the epoch: the manifest has {expected} mounts, {given} host paths were given"
    )]
    MountCountMismatch {
        /// Mounts in the manifest.
        expected: usize,
        /// Host paths given.
        given: usize,
    },
    /// A manifest could not be parsed or has a field out of range.
    #[error("failed to read the epoch manifest: {0}")]
    Manifest(String),
}

/// The sandbox's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(
    action: &'static str,
    path: impl Into<PathBuf>,
) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}
