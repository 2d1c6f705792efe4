//! The CLI's side of shards (the format and the merge are the harness's
//! [`plangate_harness::shard`]): a shard run's `--out` must be a regular file, and its
//! evidence is written beside it atomically, as every output is.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use plangate_harness::shard::{EvidenceHeader, Shard, evidence_path};

use crate::files::open_out;

/// Refuses a shard run whose `--out` is not a regular file: its evidence is written
/// beside it, and `merge` finds it from there.
pub(crate) fn check_out(shard: Shard, out: Option<&Path>) -> Result<()> {
    if !out.is_some_and(|o| matches!(crate::files::replaced(o), Ok(Some(_)))) {
        bail!(
            "--shard {shard} needs --out FILE, a regular file: the evidence merge reads is written beside it"
        );
    }
    Ok(())
}

/// Writes a shard's evidence beside its `--out` ([`plangate_harness::shard::write_evidence`]).
pub(crate) fn write_evidence(
    out: &Path,
    header: &EvidenceHeader,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<u64>,
) -> Result<()> {
    let path = evidence_path(out);
    let mut file = open_out(Some(&path))?;
    plangate_harness::shard::write_evidence(header, body, &mut file)
        .with_context(|| format!("failed to write {}", path.display()))?;
    file.finish()
}
