//! Opening and writing the files commands are given: the catalog (with its warnings on
//! stderr), the decisions output, epoch manifests and JSON reports, each error naming
//! its file, and the check that no output would overwrite an input.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plangate_gate::catalog::Catalog;
use plangate_gate::json;
use plangate_sandbox::EpochManifest;
use serde::Serialize;

/// Catalog warnings printed before the rest are only counted: a BFCL catalog can map
/// thousands of types, and the first few say what happened.
const WARNINGS_SHOWN: usize = 20;

/// Reads and parses a catalog file, naming the file in every error, and says on stderr
/// what reading it mapped or assumed (a BFCL type, a tool that declares nothing).
pub(crate) fn load_catalog(path: &Path) -> Result<Catalog> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("failed to read catalog {}", path.display()))?;
    let doc = json::parse_with(&bytes, json::Duplicates::Refuse)
        .with_context(|| format!("failed to parse catalog {}", path.display()))?;
    let catalog =
        Catalog::from_value(&doc).with_context(|| format!("invalid catalog {}", path.display()))?;
    let warnings = catalog.warnings();
    for w in warnings.iter().take(WARNINGS_SHOWN) {
        eprintln!("plangate: warning: catalog {}: {w}", path.display());
    }
    if warnings.len() > WARNINGS_SHOWN {
        eprintln!(
            "plangate: warning: catalog {}: and {} more like these",
            path.display(),
            warnings.len() - WARNINGS_SHOWN
        );
    }
    Ok(catalog)
}

/// The folder a catalog's relative paths are read against.
pub(crate) fn catalog_dir(catalog: &Path) -> PathBuf {
    match catalog.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Opens the decisions output, or standard output.
/// Sendable, so `score` can write from its own thread.
pub(crate) fn open_out(path: Option<&Path>) -> Result<Box<dyn Write + Send>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::with_capacity(
            1 << 16,
            File::create(p).with_context(|| format!("failed to create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
    })
}

/// Refuses an output path that is also an input, which would truncate the input.
pub(crate) fn check_distinct(out: Option<&Path>, inputs: &[&Path]) -> Result<()> {
    if let Some(o) = out {
        for i in inputs {
            if o == *i {
                bail!("--out {} would overwrite an input", o.display());
            }
        }
    }
    Ok(())
}

/// Reads an epoch manifest file.
pub(crate) fn read_manifest(path: &Path) -> Result<EpochManifest> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read epoch manifest {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("failed to parse epoch manifest {}", path.display()))
}

/// Writes `value` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").with_context(|| format!("failed to write {}", path.display()))
}
