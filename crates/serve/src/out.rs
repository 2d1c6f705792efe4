//! `--out FILE`: every decision record the server answers with, appended as one whole
//! JSONL line. A record is written (one `write` on a file opened for appending) before
//! its answer is sent, so a killed server has lost no answered request's record: the
//! kernel holds it. It reaches the disk at the next sync, at most [`SYNC_EVERY`] later,
//! and at a graceful stop; only a crash of the machine loses what came since.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::ServeError;

/// How often written records are synced to the disk (`fdatasync`), when any were.
pub const SYNC_EVERY: Duration = Duration::from_secs(1);

/// The decisions file, shared by every request.
#[derive(Debug)]
pub(crate) struct Out {
    path: PathBuf,
    file: Mutex<File>,
    dirty: AtomicBool,
}

impl Out {
    /// Opens `path` for appending, creating it.
    pub(crate) fn open(path: &Path) -> Result<Out, ServeError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| ServeError::Out {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Out {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            dirty: AtomicBool::new(false),
        })
    }

    /// Appends `record` and its newline in one write, so lines of concurrent requests
    /// never interleave. A failed write is logged: the answer is still given.
    pub(crate) fn append(&self, record: &str) {
        let mut line = Vec::with_capacity(record.len() + 1);
        line.extend_from_slice(record.as_bytes());
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        match file.write_all(&line) {
            Ok(()) => self.dirty.store(true, Ordering::Release),
            Err(e) => tracing::error!(path = %self.path.display(), "cannot append a decision: {e}"),
        }
    }

    /// Syncs what was written since the last sync.
    pub(crate) fn sync(&self) -> Result<(), ServeError> {
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        file.sync_data().map_err(|source| ServeError::Out {
            path: self.path.clone(),
            source,
        })
    }
}
