//! Writing a run's output files whole or not at all: each goes to a temporary file beside
//! its target and takes the target's place only when complete, so a run that stops on
//! the way (an error, a kill) leaves the earlier file as it was, never a cut one. A
//! device or a FIFO (`/dev/null`) is written in place: renaming over it would replace it.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use plangate_harness::EpochManifest;
use serde::Serialize;

/// An output file that could not be written, naming it.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// Creating, writing or flushing the file (or its temporary file) failed.
    #[error("failed to write {}", .path.display())]
    Write {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The output could not be created where it is written in place.
    #[error("failed to create {}", .path.display())]
    Create {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The complete temporary file could not take the output's place.
    #[error("failed to replace {}", .path.display())]
    Replace {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The output's folder refuses a new file, or its target cannot be resolved.
    #[error("cannot write {}{}", .path.display(), .folder.as_ref().map_or_else(String::new, |d| format!(": failed to create a file in {}", d.display())))]
    Place {
        /// The output.
        path: PathBuf,
        /// The folder the temporary file was to be made in, when that failed.
        folder: Option<PathBuf>,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The JUnit suite could not be serialized.
    #[error("failed to write {}", .path.display())]
    Junit {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: crate::junit::JunitError,
    },
    /// A value could not be put as JSON.
    #[error("failed to write {} as JSON", .path.display())]
    Json {
        /// The output.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

/// The file `p` names, whatever the spelling: symlinks followed, and for a file not
/// there yet its folder's real path and its name. None when the folder is not there.
pub fn real_path(p: &Path) -> Option<PathBuf> {
    if let Ok(real) = std::fs::canonicalize(p) {
        return Some(real);
    }
    Some(std::fs::canonicalize(folder(p)).ok()?.join(p.file_name()?))
}

/// The folder a file is in (`.` for a bare name).
pub fn folder(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The regular file an output replaces (a symlink's target, so the link stays a link),
/// or None for a device, a FIFO or anything else that is written in place.
pub fn replaced(target: &Path) -> Result<Option<PathBuf>, OutputError> {
    match std::fs::metadata(target) {
        Ok(m) if m.is_file() => {
            std::fs::canonicalize(target)
                .map(Some)
                .map_err(|source| OutputError::Place {
                    path: target.to_path_buf(),
                    folder: None,
                    source,
                })
        }
        Ok(_) => Ok(None),
        Err(_) => Ok(Some(target.to_path_buf())),
    }
}

/// A temporary file in the target's own folder, so the final rename stays on one
/// filesystem and is atomic, made with the permissions `mode` the output is to have.
pub fn temp_beside(target: &Path, mode: u32) -> Result<tempfile::NamedTempFile, OutputError> {
    let dir = folder(target);
    let name = target
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    use std::os::unix::fs::PermissionsExt as _;
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)
        .map_err(|source| OutputError::Place {
            path: target.to_path_buf(),
            folder: Some(dir.to_path_buf()),
            source,
        })
}

/// Creates `path` to be written in place.
pub fn create(path: &Path) -> Result<File, OutputError> {
    create_with_mode(path, OUTPUT_MODE)
}

/// Creates `path` to be written in place, with permissions `mode` if it is new.
fn create_with_mode(path: &Path, mode: u32) -> Result<File, OutputError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    (std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true))
    .mode(mode)
    .open(path)
    .map_err(|source| OutputError::Create {
        path: path.to_path_buf(),
        source,
    })
}

/// An output's permissions: readable as a file made by `File::create` would be
/// (tempfile's own default is 0600), so an output's mode does not depend on how it was
/// written.
const OUTPUT_MODE: u32 = 0o644;

/// An epoch manifest's permissions: its owner's alone, since a pinned network's
/// recording holds the answers a tool was given.
const MANIFEST_MODE: u32 = 0o600;

/// Writes to `path` whatever `body` writes, whole or not at all.
pub fn write_with(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputError> {
    write_with_mode(path, OUTPUT_MODE, body)
}

/// [`write_with`], the file made with permissions `mode`.
fn write_with_mode(
    path: &Path,
    mode: u32,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputError> {
    let failed = |source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    };
    let Some(target) = replaced(path)? else {
        let mut file = io::BufWriter::with_capacity(1 << 16, create_with_mode(path, mode)?);
        return body(&mut file).and_then(|()| file.flush()).map_err(failed);
    };
    let temp = temp_beside(&target, mode)?;
    let mut w = io::BufWriter::with_capacity(1 << 16, temp);
    body(&mut w).and_then(|()| w.flush()).map_err(failed)?;
    let temp = w.into_inner().map_err(|e| failed(e.into_error()))?;
    temp.persist(&target)
        .map(drop)
        .map_err(|e| OutputError::Replace {
            path: path.to_path_buf(),
            source: e.error,
        })
}

/// Writes `bytes` to `path`, whole or not at all.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    write_with(path, |w| w.write_all(bytes))
}

/// Writes `value` as pretty JSON and a newline to `path`, whole or not at all.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), OutputError> {
    write_json_with_mode(path, OUTPUT_MODE, value)
}

/// Writes an epoch manifest as [`write_json`] does, readable by its owner alone (mode
/// 0600).
pub fn write_manifest(path: &Path, manifest: &EpochManifest) -> Result<(), OutputError> {
    write_json_with_mode(path, MANIFEST_MODE, manifest)
}

fn write_json_with_mode(path: &Path, mode: u32, value: &impl Serialize) -> Result<(), OutputError> {
    let text = serde_json::to_string_pretty(value).map_err(|source| OutputError::Json {
        path: path.to_path_buf(),
        source,
    })? + "\n";
    write_with_mode(path, mode, |w| w.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_body_leaves_the_earlier_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        write_file(&out, b"first\n").unwrap();
        let e = write_with(&out, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("the disk filled"))
        })
        .unwrap_err();
        assert!(e.to_string().contains("out.json"), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"first\n");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "only the output itself is left");
    }

    #[test]
    fn json_is_pretty_with_a_newline_and_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.json");
        write_file(&out, b"old, and longer than the new text\n").unwrap();
        write_json(&out, &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{\n  \"a\": 1\n}\n");
    }

    #[test]
    fn a_missing_folder_is_named() {
        let e = write_file(Path::new("/nonexistent-plangate-dir/x.json"), b"x").unwrap_err();
        assert!(
            e.to_string()
                .contains("failed to create a file in /nonexistent-plangate-dir"),
            "{e}"
        );
    }
}
