//! `--resume`: where a run's journal lives (beside `--out`), what must match for an
//! interrupted run to be continued (the catalog and every flag that changes results),
//! and `score`'s checkpoints (how much of the decisions file is whole, and through
//! which input line). `eval`'s journal of executed calls is plangate-harness's.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use plangate_harness::JournalHeader;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tally::Tally;
use plangate_report::digest::RunDigest;

/// Appends `suffix` to the file name of the file `out` names.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    // Two runs writing one file through two spellings must meet at one journal.
    let real = crate::files::real_path(out).unwrap_or_else(|| out.to_path_buf());
    let mut name = real.into_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The journal of a run writing `out`.
pub(crate) fn journal_path(out: &Path) -> PathBuf {
    beside(out, ".journal")
}

/// The decisions `score` has written so far, kept to resume.
pub(crate) fn partial_path(out: &Path) -> PathBuf {
    beside(out, ".partial")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A digest of what decides a run's results besides its samples: plangate's version, the
/// command, the catalog's bytes, and `flags` (every flag that changes a result, as the
/// command prints them). A run resumes only a journal with the same.
pub(crate) fn fingerprint(command: &str, catalog: &Path, flags: &str) -> Result<String> {
    let bytes = std::fs::read(catalog)
        .with_context(|| format!("failed to read catalog {}", catalog.display()))?;
    let mut h = Sha256::new();
    for part in [
        env!("CARGO_PKG_VERSION").as_bytes(),
        command.as_bytes(),
        &bytes,
        flags.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    Ok(hex(&h.finalize()))
}

/// Whether this run continues an interrupted one: with `--resume`, and a journal beside
/// `--out`. Without `--resume`, a journal left there is announced and replaced.
pub(crate) fn journal_to_resume(resume: bool, out: Option<&Path>) -> Result<Option<PathBuf>> {
    let Some(out) = out else {
        if resume {
            bail!("--resume needs --out FILE: the journal is kept beside it");
        }
        return Ok(None);
    };
    let journal = journal_path(out);
    let exists = journal.exists();
    match (resume, exists) {
        (true, true) => Ok(Some(journal)),
        (true, false) => {
            eprintln!(
                "plangate: --resume: no journal at {} (the run finished, or never started with this --out); starting from the beginning",
                journal.display()
            );
            Ok(None)
        }
        (false, true) => {
            eprintln!(
                "plangate: warning: {} holds an interrupted run; this run starts over (run the same command with --resume to continue it instead)",
                journal.display()
            );
            Ok(None)
        }
        (false, false) => Ok(None),
    }
}

/// Whether `e` says another run holds the journal (an error, unlike a journal that
/// cannot be written at all, which only costs the run its `--resume`).
pub(crate) fn busy(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<plangate_harness::HarnessError>(),
        Some(plangate_harness::HarnessError::JournalBusy { .. })
    )
}

/// Refuses an earlier run's journal that this run cannot continue, saying why.
pub(crate) fn check_header(
    path: &Path,
    earlier: &JournalHeader,
    this: &JournalHeader,
) -> Result<()> {
    match earlier.mismatch(this) {
        Some(why) => bail!(
            "cannot resume from {}: {why}; run the command it was written by, or remove the journal to start over",
            path.display()
        ),
        None => Ok(()),
    }
}

/// Where `score` got to: every input line through `through` is decided and written,
/// in the first `bytes` bytes of the partial decisions.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    pub(crate) through: usize,
    pub(crate) bytes: u64,
    /// XXH3 of those bytes: a resumed run keeps them only if they still hash to it.
    pub(crate) bytes_hash: u64,
    /// A running hash of every input line through `through` ([`Prefix`]), so a
    /// samples file that changed anywhere before it is not resumed.
    pub(crate) prefix: Prefix,
    pub(crate) tally: Tally,
    /// With `--html`, the page's digest of the lines since the checkpoint before (of
    /// the lists, only the tasks the page kept): [`ScoreJournal::resume`] adds them up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) page: Option<RunDigest>,
}

/// A running hash over the lines read so far, each with its number (a line too long
/// to read counts as its length): each step hashes the one before with the next line.
/// One number, so a checkpoint can keep it; it guards against a changed file, not
/// against an adversary. XXH3 (see [`crate::lines::line_hash`]): every input line goes
/// through it, so it must be fast, and std's SipHash is several times slower.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Prefix(u64);

impl Prefix {
    /// Adds line `number`.
    pub(crate) fn add(&mut self, number: usize, line: crate::lines::Line<'_>) {
        let length;
        let (tag, bytes) = match line {
            Ok(bytes) => (0u8, bytes),
            Err(n) => {
                length = n.to_le_bytes();
                (u8::MAX, &length[..])
            }
        };
        let mut head = [0u8; 9];
        head[..8].copy_from_slice(&(number as u64).to_le_bytes());
        head[8] = tag;
        let seed = twox_hash::XxHash3_64::oneshot_with_seed(self.0, &head);
        self.0 = twox_hash::XxHash3_64::oneshot_with_seed(seed, bytes);
    }
}

/// `score`'s journal: a header, then a checkpoint per chunk written.
pub(crate) struct ScoreJournal {
    path: PathBuf,
    file: std::fs::File,
    /// Seals each line, as `eval`'s journal does.
    chain: plangate_harness::Chain,
}

impl ScoreJournal {
    /// Starts a journal at `path`.
    pub(crate) fn create(path: &Path, header: &JournalHeader) -> Result<Self> {
        let mut file = plangate_harness::open_locked(path)?;
        file.set_len(0)
            .with_context(|| format!("cannot create journal {}", path.display()))?;
        let mut chain = plangate_harness::Chain::default();
        file.write_all(&chain.seal(&serde_json::to_vec(header)?))
            .with_context(|| format!("cannot write journal {}", path.display()))?;
        Ok(ScoreJournal {
            path: path.to_path_buf(),
            file,
            chain,
        })
    }

    /// Reads an interrupted run's journal: its header and its last whole checkpoint
    /// (none when it stopped before its first chunk), whose `page` is the page's
    /// digest of every line through it ([`pages_kept`]), then continues it.
    pub(crate) fn resume(path: &Path) -> Result<(Self, JournalHeader, Checkpoint)> {
        let earlier = plangate_harness::Earlier::<Checkpoint>::read(path)?;
        // Locked before anything is written, and cut after its last whole line.
        let file = earlier.reopen(path)?;
        let mut last = earlier.entries().last().cloned().unwrap_or_default();
        last.page = pages_kept(earlier.entries());
        Ok((
            ScoreJournal {
                path: path.to_path_buf(),
                file,
                chain: earlier.chain(),
            },
            earlier.header().clone(),
            last,
        ))
    }

    /// Records a checkpoint (after the decisions it counts were flushed).
    pub(crate) fn checkpoint(&mut self, c: &Checkpoint) -> Result<()> {
        let line = self.chain.seal(&serde_json::to_vec(c)?);
        self.file
            .write_all(&line)
            .with_context(|| format!("cannot write journal {}", self.path.display()))
    }

    /// The run finished: the journal is no longer needed.
    pub(crate) fn remove(self) -> Result<()> {
        drop(self.file);
        std::fs::remove_file(&self.path)
            .with_context(|| format!("cannot remove journal {}", self.path.display()))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The page's digest of every line the checkpoints cover: the sum of each one's part
/// since the last that kept nothing (a finished run's, which a next run starts over
/// from); None when one of them kept no part (its run had no `--html`).
fn pages_kept(checkpoints: &[Checkpoint]) -> Option<RunDigest> {
    let mut sum = Some(RunDigest::default());
    for c in checkpoints {
        if c.through == 0 {
            sum = Some(RunDigest::default());
            continue;
        }
        sum = match (sum, &c.page) {
            (Some(mut sum), Some(part)) => {
                let _ = sum.absorb(part.clone());
                Some(sum)
            }
            _ => None,
        };
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::{Checkpoint, Prefix, pages_kept};
    use plangate_report::digest::RunDigest;

    #[test]
    fn pages_kept_add_up_since_the_last_reset_and_need_every_part() {
        let part = |through: usize, page: bool| Checkpoint {
            through,
            page: page.then(RunDigest::default),
            ..Checkpoint::default()
        };
        assert_eq!(pages_kept(&[]), Some(RunDigest::default()));
        assert_eq!(
            pages_kept(&[part(5, true), part(9, true)]),
            Some(RunDigest::default())
        );
        assert_eq!(pages_kept(&[part(5, false), part(9, true)]), None);
        // A finished run's reset, then a run with --html: its parts alone count.
        assert_eq!(
            pages_kept(&[part(5, false), part(0, false), part(3, true)]),
            Some(RunDigest::default())
        );
    }

    fn after(lines: &[(usize, crate::lines::Line<'_>)]) -> u64 {
        let mut p = Prefix::default();
        for (number, line) in lines {
            p.add(*number, *line);
        }
        p.0
    }

    #[test]
    fn a_prefix_is_the_same_in_every_build_and_tells_lines_apart() {
        // Kept in journals and compared by later runs: the value is pinned, so a hash
        // that changes with the build (std's SipHash promises nothing across releases)
        // fails here rather than refusing to resume a run of the same version. The value
        // is XXH3 as Python's `xxhash` package computes it.
        assert_eq!(after(&[(1, Ok(b"{}"))]), 0xf0ad_1f8d_4e6c_f1aa);
        // A line past XXH3's 240 bytes takes the long path, whose SIMD is picked at run
        // time; the value is xxhash-rust's, a second implementation of the same XXH3.
        let long = format!("{{\"k\":\"{}\"}}", "a".repeat(1000));
        assert_eq!(after(&[(1, Ok(long.as_bytes()))]), 0x267d_4a32_03b6_d0db);
        let base = after(&[(1, Ok(b"a")), (2, Ok(b"b"))]);
        for other in [
            after(&[(1, Ok(b"a")), (2, Ok(b"c"))]),
            after(&[(1, Ok(b"a")), (3, Ok(b"b"))]),
            after(&[(1, Ok(b"b")), (2, Ok(b"a"))]),
            after(&[(1, Ok(b"a")), (2, Err(1))]),
            after(&[(1, Ok(b"a"))]),
        ] {
            assert_ne!(base, other);
        }
    }
}
