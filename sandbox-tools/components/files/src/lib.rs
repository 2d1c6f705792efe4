//! Read-only file tools as a component with typed exports: the shape a tool author
//! outside plangate writes (`cargo build --target wasm32-wasip2`, wit-bindgen), used by
//! the tests and docs/tools.md. `file-info` prints the host's timestamps and `list-dir`
//! the host's order, so they show whether the sandbox pins both.

wit_bindgen::generate!({ world: "files", path: "wit" });

use std::time::{SystemTime, UNIX_EPOCH};

struct Files;

fn seconds(t: std::io::Result<SystemTime>) -> Option<u64> {
    t.ok()?.duration_since(UNIX_EPOCH).ok().map(|d| d.as_secs())
}

impl Guest for Files {
    fn read_file(path: String) -> Result<String, String> {
        std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))
    }

    fn list_dir(path: String) -> Result<Vec<String>, String> {
        let entries = std::fs::read_dir(&path).map_err(|e| format!("{path}: {e}"))?;
        entries
            .map(|e| {
                e.map(|e| e.file_name().to_string_lossy().into_owned())
                    .map_err(|e| format!("{path}: {e}"))
            })
            .collect()
    }

    fn file_info(path: String) -> Result<FileInfo, String> {
        let m = std::fs::symlink_metadata(&path).map_err(|e| format!("{path}: {e}"))?;
        let t = m.file_type();
        let kind = if t.is_file() {
            EntryKind::File
        } else if t.is_dir() {
            EntryKind::Directory
        } else if t.is_symlink() {
            EntryKind::Symlink
        } else {
            EntryKind::Other
        };
        Ok(FileInfo {
            size: m.len(),
            kind,
            modified: seconds(m.modified()),
            accessed: seconds(m.accessed()),
        })
    }

    fn now() -> u64 {
        seconds(Ok(SystemTime::now())).unwrap_or(0)
    }
}

export!(Files);
