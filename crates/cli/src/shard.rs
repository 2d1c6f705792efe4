//! The CLI's side of shards (the format and the merge are the harness's
//! [`plangate_harness::shard`]): a shard run's `--out` must be a regular file, since its
//! evidence is written beside it (by the run's output plan, plangate-report's `plan`).

use std::path::Path;

use anyhow::{Result, bail};
use plangate_harness::shard::Shard;

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
