//! Opening the files commands are given: the catalog (with its warnings on stderr), the
//! decisions output (resumable), epoch manifests, each error naming its file; outputs
//! checked before any work so that none overwrites an input or another output. Every
//! other output is written whole or not at all by plangate-report's `files`.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plangate_gate::catalog::Catalog;
use plangate_report::checkpoints::{Partial, reopen_partial};
use plangate_report::files::{create, temp_beside};
pub(crate) use plangate_report::files::{
    real_path, replaced, write_file, write_json, write_manifest,
};
use plangate_sandbox::EpochManifest;

/// Catalog warnings printed before the rest are only counted: a BFCL catalog can map
/// thousands of types, and the first few say what happened.
const WARNINGS_SHOWN: usize = 20;

/// Reads and parses a catalog file, naming the file in every error, and says on stderr
/// what reading it mapped or assumed (a BFCL type, a tool that declares nothing).
pub(crate) fn load_catalog(path: &Path) -> Result<Catalog> {
    let catalog = plangate_harness::read_catalog(path)?;
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
    plangate_harness::catalog_dir(catalog)
}

/// An output being written: standard output, or a temporary file beside the target that
/// takes the target's place only when whole ([`Output::finish`]). A run that stops
/// early (an error, a kill) leaves the earlier file as it was, never a truncated one;
/// the temporary file is removed when the output is dropped unfinished, unless it is
/// kept to resume the run ([`Output::resumable`]).
pub(crate) struct Output {
    w: BufWriter<Box<dyn Write + Send>>,
    pending: Option<(Pending, PathBuf)>,
    /// Bytes written so far (after any kept earlier part).
    written: u64,
    /// XXH3 of every byte so far, kept part included, for an output a run may resume:
    /// a checkpoint records it, and a resumed run keeps bytes that still hash to it.
    hash: Option<Box<twox_hash::XxHash3_64>>,
}

/// Where an output's bytes wait for the rename.
enum Pending {
    /// Removed if the run stops.
    Temp(tempfile::TempPath),
    /// Kept if the run stops, for `--resume`.
    Kept(PathBuf),
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.written += n as u64;
        if let Some(h) = self.hash.as_mut() {
            std::hash::Hasher::write(h.as_mut(), &buf[..n]);
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl Output {
    /// Flushes and, for a file, puts it in place of the target (once).
    pub(crate) fn finish(&mut self) -> Result<()> {
        self.w.flush().context("failed to write decisions")?;
        match self.pending.take() {
            Some((Pending::Temp(temp), target)) => temp
                .persist(&target)
                .map(drop)
                .with_context(|| format!("failed to replace {}", target.display())),
            Some((Pending::Kept(partial), target)) => std::fs::rename(&partial, &target)
                .with_context(|| format!("failed to replace {}", target.display())),
            None => Ok(()),
        }
    }

    /// Where the output waits to be resumed, if it does.
    pub(crate) fn kept(&self) -> Option<&Path> {
        match &self.pending {
            Some((Pending::Kept(p), _)) => Some(p),
            _ => None,
        }
    }

    /// Bytes of the output so far, the kept part of a resumed run included.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    /// XXH3 of the bytes so far (0 for an output that is not resumable).
    pub(crate) fn hash(&self) -> u64 {
        self.hash
            .as_ref()
            .map_or(0, |h| std::hash::Hasher::finish(h.as_ref()))
    }

    /// An output to `target` written through `partial`, a file kept when the run stops
    /// so that `--resume` continues it (`plangate_report::resume::partial_path`): its
    /// first `keep.0` bytes are an earlier run's (cut there), kept only if they end a
    /// line and hash to `keep.1`; or it starts empty.
    pub(crate) fn resumable(
        target: &Path,
        partial: &Path,
        keep: Option<(u64, u64)>,
    ) -> Result<Output> {
        let target = replaced(target)?.with_context(|| {
            format!(
                "--resume needs --out to be a regular file, not {}",
                target.display()
            )
        })?;
        let Partial {
            file,
            written,
            hash,
        } = reopen_partial(partial, keep)?;
        Ok(Output {
            w: BufWriter::with_capacity(1 << 16, Box::new(file)),
            pending: Some((Pending::Kept(partial.to_path_buf()), target)),
            written,
            hash: Some(hash),
        })
    }
}

/// Opens the decisions output (see [`Output`]), or standard output. Sendable, so
/// `score` can write from its own thread.
pub(crate) fn open_out(path: Option<&Path>) -> Result<Output> {
    let Some(p) = path else {
        return Ok(Output {
            w: BufWriter::with_capacity(1 << 16, Box::new(io::stdout())),
            pending: None,
            written: 0,
            hash: None,
        });
    };
    let (file, pending): (Box<dyn Write + Send>, _) = match replaced(p)? {
        Some(target) => {
            let (file, temp) = temp_beside(&target, 0o644)?.into_parts();
            (Box::new(file), Some((Pending::Temp(temp), target)))
        }
        None => (Box::new(create(p)?), None),
    };
    Ok(Output {
        w: BufWriter::with_capacity(1 << 16, file),
        pending,
        written: 0,
        hash: None,
    })
}

/// What names a file, whatever the spelling: its device and inode when it exists
/// (symlinks followed, hard links alike), else its folder's real path and its name.
fn identity(p: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt as _;
    if let Ok(m) = std::fs::metadata(p) {
        return Some(FileId::Inode(m.dev(), m.ino()));
    }
    real_path(p).map(FileId::Path)
}

#[derive(PartialEq)]
enum FileId {
    Inode(u64, u64),
    Path(PathBuf),
}

/// What a run reads: files, compared with an output by identity, and folders (mount
/// roots), which no output may lie inside, since anything written there is read too (a
/// pinned mount's data, or a live mount whose change the run would see as drift).
#[derive(Default)]
pub(crate) struct Reads {
    files: Vec<(String, PathBuf)>,
    folders: Vec<(String, PathBuf)>,
}

impl Reads {
    /// `path`, named `what` in messages (`--samples`). Standard input (`-`) is no file.
    pub(crate) fn file(mut self, what: &str, path: &Path) -> Self {
        if path != Path::new("-") {
            self.files.push((what.to_string(), path.to_path_buf()));
        }
        self
    }

    /// Every file under `path` as well as `path`.
    pub(crate) fn folder(mut self, what: &str, path: &Path) -> Self {
        self.folders.push((what.to_string(), path.to_path_buf()));
        self
    }

    /// The catalog file and what its tools read: modules and mount roots.
    pub(crate) fn catalog(mut self, flag: &str, path: &Path, catalog: &Catalog) -> Self {
        self = self.file(flag, path);
        for r in plangate_harness::catalog_reads(catalog, &catalog_dir(path)) {
            let what = format!("{}, from {flag} {}", r.what, path.display());
            self = if r.folder {
                self.folder(&what, &r.path)
            } else {
                self.file(&what, &r.path)
            };
        }
        self
    }
}

/// Refuses, before any work, an output that names an input (it would be emptied), lies
/// inside a folder the run reads, names the same file as another output (one would
/// silently win), or cannot be written (found now, not after every call has run).
/// Files compare by identity, not by spelling. Standard output (`-`) is no file.
pub(crate) fn check_outputs(outputs: &[(&str, &Path)], inputs: &Reads) -> Result<()> {
    let outputs: Vec<(&str, &Path)> = (outputs.iter().copied())
        .filter(|(_, p)| *p != Path::new("-"))
        .collect();
    for (flag, p) in &outputs {
        if p.is_dir() {
            bail!("{flag} {} is a directory; name a file", p.display());
        }
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        if parent.is_some_and(|d| !d.is_dir()) {
            bail!(
                "{flag} {}: the folder {} does not exist",
                p.display(),
                parent.map_or_else(String::new, |d| d.display().to_string())
            );
        }
    }
    let files: Vec<(&str, &Path, FileId)> = (inputs.files.iter())
        .filter_map(|(what, p)| identity(p).map(|i| (what.as_str(), p.as_path(), i)))
        .collect();
    let folders: Vec<(&str, &Path, PathBuf)> = (inputs.folders.iter())
        .filter_map(|(what, p)| {
            let real = std::fs::canonicalize(p).ok()?;
            Some((what.as_str(), p.as_path(), real))
        })
        .collect();
    let mut seen: Vec<(&str, &Path, FileId)> = Vec::new();
    for &(flag, path) in &outputs {
        if let Some(out) = identity(path) {
            if let Some((what, in_path, _)) = files.iter().find(|(_, _, i)| *i == out) {
                bail!(
                    "{flag} {} would overwrite an input ({what} {})",
                    path.display(),
                    in_path.display()
                );
            }
            if let Some((other, other_path, _)) = seen.iter().find(|(_, _, o)| *o == out) {
                bail!(
                    "{flag} {} and {other} {} name the same file",
                    path.display(),
                    other_path.display()
                );
            }
            seen.push((flag, path, out));
        }
        let real = real_path(path);
        if let Some((what, folder, _)) =
            (folders.iter()).find(|(_, _, root)| real.as_ref().is_some_and(|r| r.starts_with(root)))
        {
            bail!(
                "{flag} {} lies inside {what} ({}): the run reads everything there, so it must \
                 not write there",
                path.display(),
                folder.display()
            );
        }
    }
    for &(_, path) in &outputs {
        // A device or a FIFO is written in place, and opening a FIFO to try it would
        // wait for a reader: only a file that a rename will put in place is tried.
        if let Some(target) = replaced(path)? {
            drop(temp_beside(&target, 0o644)?);
        }
    }
    Ok(())
}

/// Writes `text` to standard output, an error (not a panic) when it cannot be written:
/// a closed pipe (`plangate call … | true`) or a full disk is an outcome the exit code
/// and a message report.
pub(crate) fn print_stdout(text: &str) -> Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("failed to write to standard output")
}

/// Reads an epoch manifest file.
pub(crate) fn read_manifest(path: &Path) -> Result<EpochManifest> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read epoch manifest {}", path.display()))?;
    let manifest: EpochManifest = serde_json::from_str(&text)
        .with_context(|| format!("failed to parse epoch manifest {}", path.display()))?;
    manifest
        .check()
        .with_context(|| format!("invalid epoch manifest {}", path.display()))?;
    Ok(manifest)
}
