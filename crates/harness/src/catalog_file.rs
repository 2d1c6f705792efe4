//! A catalog read from a file or from bytes, each error naming where it came from: the
//! one loader `plangate` and the Python package share, so a bad catalog fails with the
//! same message in both.

use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use plangate_gate::catalog::{Catalog, CatalogErrors};
use plangate_gate::json::{self, JsonError};

/// The largest catalog read: BFCL's biggest is a few megabytes, and a catalog of 100,000
/// properties about 10 MB; past this it is a mistake (a samples file given as the
/// catalog, or `/dev/zero`), and reading on would only exhaust memory.
pub const CATALOG_MAX_BYTES: u64 = 256 << 20;

/// Why a catalog could not be had. Each variant's message names the catalog; its
/// source says why, so `{:#}` (anyhow) prints the two as one line.
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    /// The file could not be read, or is too large to be a catalog.
    #[error("failed to read catalog {name}")]
    Read {
        /// The catalog's name (its path as given).
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The bytes are not one strict JSON document.
    #[error("failed to parse catalog {name}")]
    Parse {
        /// The catalog's name.
        name: String,
        /// Why, and where.
        source: JsonError,
    },
    /// The document is not a catalog plangate reads (every problem listed).
    #[error("invalid catalog {name}")]
    Invalid {
        /// The catalog's name.
        name: String,
        /// Every problem, each at its JSON Pointer.
        source: CatalogErrors,
    },
}

/// Reads and parses the catalog file at `path` (at most [`CATALOG_MAX_BYTES`]).
pub fn read_catalog(path: &Path) -> Result<Catalog, CatalogFileError> {
    let name = path.display().to_string();
    match read_bounded(path, CATALOG_MAX_BYTES) {
        Ok(bytes) => parse_catalog(&name, &bytes),
        Err(source) => Err(CatalogFileError::Read { name, source }),
    }
}

/// Parses catalog bytes (one JSON document, duplicate keys refused); `name` is how
/// errors call it.
pub fn parse_catalog(name: &str, bytes: &[u8]) -> Result<Catalog, CatalogFileError> {
    let doc = json::parse_with(bytes, json::Duplicates::Refuse).map_err(|source| {
        CatalogFileError::Parse {
            name: name.to_string(),
            source,
        }
    })?;
    Catalog::from_value(&doc).map_err(|source| CatalogFileError::Invalid {
        name: name.to_string(),
        source,
    })
}

/// Reads a whole file of at most `max` bytes.
fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    File::open(path)?.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB, the most a catalog may be",
            max >> 20
        )));
    }
    Ok(bytes)
}

/// The folder a catalog file's relative paths (modules, mounts) are read against: its
/// own (`.` for a bare name).
pub fn catalog_dir(catalog: &Path) -> PathBuf {
    match catalog.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
