//! Past one machine (docs/design.md, "Scale"): `--shard K/M` picks this run's tasks by a
//! stable hash of their `task_id`, and the run leaves its evidence beside `--out`
//! (`OUT.evidence`) for `plangate merge`: every task prepared, every tool's book, the
//! live checks, and what must match across shards (format, epoch, catalog, samples,
//! thresholds) so a mismatch is an error, not a wrong answer.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use plangate_gate::task::TaskError;
use plangate_harness::{EvalStats, Finished, ToolBook};
use plangate_sandbox::{EpochManifest, LiveCheck};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::args::ThresholdArgs;
use crate::files::open_out;
use crate::tally::Tally;

/// What an evidence file says it is on its first line.
const FORMAT: &str = "plangate-shard-evidence";
/// Bumped whenever an evidence file's shape changes: `merge` refuses any other.
const VERSION: u32 = 2;
/// The longest header read: tool books with their evidence, for thousands of tools.
const HEADER_BYTES: u64 = 64 << 20;

/// Shard K of M (K counts from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shard {
    pub(crate) k: u64,
    pub(crate) m: u64,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("expected K/M with 1 <= K <= M, such as 2/3; found {s:?}");
        let (k, m) = s.split_once('/').ok_or_else(bad)?;
        let (k, m): (u64, u64) = (k.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if k == 0 || k > m {
            return Err(bad());
        }
        Ok(Shard { k, m })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.m)
    }
}

impl Shard {
    /// The shard a task belongs to: the first 8 bytes of SHA-256 of its `task_id`, read
    /// big-endian, modulo M, plus 1. Any language can compute it, and it never depends
    /// on the machine, the order of lines, or plangate's version.
    pub(crate) fn of_task(task_id: &str, m: u64) -> u64 {
        let digest = Sha256::digest(task_id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first) % m + 1
    }

    /// Whether this shard decides the task.
    pub(crate) fn owns_task(&self, task_id: &str) -> bool {
        Shard::of_task(task_id, self.m) == self.k
    }

    /// Whether this shard reports a line that is not a task: by its `task_id` when one
    /// could be read, else by its line number (`(line - 1) mod M + 1`), so exactly one
    /// shard reports it.
    pub(crate) fn owns_bad_line(&self, line: usize, e: &TaskError) -> bool {
        match &e.task_id {
            Some(id) => self.owns_task(id),
            None => (line as u64 - 1) % self.m + 1 == self.k,
        }
    }
}

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

/// A shard's evidence file: beside its `--out`.
pub(crate) fn evidence_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".evidence");
    PathBuf::from(name)
}

/// The SHA-256 of every line a run read, in order, whichever shard decides it: shards
/// of one batch must all have read the same samples.
#[derive(Default)]
pub(crate) struct SamplesDigest(Sha256);

impl SamplesDigest {
    /// Adds one line (its bytes, or the length of a line too long to read).
    pub(crate) fn add(&mut self, line: Result<&[u8], u64>) {
        match line {
            Ok(bytes) => self.0.update(bytes),
            Err(len) => self.0.update(format!("\u{0}too long:{len}")),
        }
        self.0.update(b"\n");
    }

    pub(crate) fn hex(self) -> String {
        hex(&self.0.finalize())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 of a file's bytes (the catalog every shard must share).
pub(crate) fn file_digest(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// What every shard of a batch must have read alike, fingerprinted, and run under.
pub(crate) struct Inputs {
    pub(crate) catalog_sha256: String,
    pub(crate) samples_sha256: String,
    /// How the samples were named on the command line, for messages.
    pub(crate) source: String,
    /// The limits per call (`eval`), or none (`score` executes nothing).
    pub(crate) limits: String,
    /// Calls per probe argument (`eval --probe-runs`): a probe run more often can
    /// quarantine a tool a shorter one verifies.
    pub(crate) probe_runs: Option<u64>,
}

/// What a shard learned besides its tasks: its epoch, every tool's book, the live
/// checks and its counts.
pub(crate) struct Learned {
    pub(crate) epoch: Option<EpochManifest>,
    pub(crate) epoch_id: Option<String>,
    pub(crate) books: Vec<ToolBook>,
    pub(crate) live: Vec<LiveCheck>,
    pub(crate) stats: EvalStats,
}

impl Learned {
    /// What an `eval` shard learned.
    pub(crate) fn of_run(finished: &Finished, epoch: Option<&EpochManifest>) -> Learned {
        Learned {
            epoch: epoch.cloned(),
            epoch_id: Some(finished.epoch_id.clone()),
            books: finished.books.clone(),
            live: finished.live.clone(),
            stats: finished.stats.clone(),
        }
    }

    /// What a `score` shard judges by: the catalog's declarations, `verified` as the
    /// catalog records it (a tool recorded verified counts as probed without drift).
    pub(crate) fn of_catalog(catalog: &Catalog) -> Learned {
        Learned {
            epoch: None,
            epoch_id: None,
            books: catalog
                .tools()
                .iter()
                .map(|t| ToolBook {
                    name: t.name.clone(),
                    declared: t.deterministic,
                    probed: t.verified.unwrap_or(false),
                    ..ToolBook::default()
                })
                .collect(),
            live: Vec::new(),
            stats: EvalStats::default(),
        }
    }
}

/// The evidence file's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Header {
    pub(crate) format: String,
    pub(crate) version: u32,
    /// The plangate that wrote it, for messages.
    pub(crate) plangate: String,
    /// `eval` or `score`.
    pub(crate) command: String,
    pub(crate) shard: Shard,
    pub(crate) epoch_id: Option<String>,
    pub(crate) epoch: Option<EpochManifest>,
    pub(crate) catalog_sha256: String,
    pub(crate) samples_sha256: String,
    /// How the samples were named on the command line, for messages.
    pub(crate) source: String,
    /// The thresholds, as exact decimals.
    pub(crate) thresholds: BTreeMap<String, String>,
    /// The limits every call ran under (fuel, memory, time, output), as the run set
    /// them: they change what a call returns.
    pub(crate) limits: String,
    /// `--probe-runs` (`eval`), none for `score`.
    pub(crate) probe_runs: Option<u64>,
    pub(crate) books: Vec<ToolBook>,
    pub(crate) live: Vec<LiveCheck>,
    pub(crate) stats: EvalStats,
    /// Input lines read and blank lines among them (every shard reads every line).
    pub(crate) lines: usize,
    pub(crate) blank: usize,
    /// The entries after this line: their length and SHA-256, so merge refuses a cut or
    /// edited file before it writes anything.
    #[serde(default)]
    pub(crate) entries_bytes: u64,
    #[serde(default)]
    pub(crate) entries_sha256: String,
}

impl Header {
    /// A shard's header.
    pub(crate) fn new(
        command: &str,
        shard: Shard,
        learned: Learned,
        inputs: Inputs,
        thresholds: &ThresholdArgs,
        tally: &Tally,
    ) -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            plangate: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            shard,
            epoch_id: learned.epoch_id,
            epoch: learned.epoch,
            catalog_sha256: inputs.catalog_sha256,
            samples_sha256: inputs.samples_sha256,
            source: inputs.source,
            thresholds: thresholds_of(thresholds),
            limits: inputs.limits,
            probe_runs: inputs.probe_runs,
            books: learned.books,
            live: learned.live,
            stats: learned.stats,
            lines: tally.lines,
            blank: tally.blank,
            entries_bytes: 0,
            entries_sha256: String::new(),
        }
    }

    /// The decision options the shard classified with.
    pub(crate) fn options(&self) -> Result<Options> {
        let get = |name: &str| -> Result<String> {
            self.thresholds
                .get(name)
                .cloned()
                .with_context(|| format!("the evidence records no {name}"))
        };
        let ratio = |name: &str| -> Result<plangate_gate::stats::Ratio> {
            get(name)?
                .parse()
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))
        };
        Ok(ThresholdArgs {
            arg_accept: ratio("arg_accept")?,
            arg_reject: ratio("arg_reject")?,
            result_accept: ratio("result_accept")?,
            result_suspect: ratio("result_suspect")?,
            min_samples: get("min_samples")?.parse()?,
        }
        .options())
    }
}

/// Thresholds by flag name, as exact decimals without trailing zeros: `0.8` and `0.80`
/// are one threshold, so shards run with either merge.
fn thresholds_of(t: &ThresholdArgs) -> BTreeMap<String, String> {
    let exact = |r: plangate_gate::stats::Ratio| {
        let d = r.decimal();
        match d.contains('.') {
            true => d.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => d,
        }
    };
    [
        ("arg_accept", exact(t.arg_accept)),
        ("arg_reject", exact(t.arg_reject)),
        ("result_accept", exact(t.result_accept)),
        ("result_suspect", exact(t.result_suspect)),
        ("min_samples", t.min_samples.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A writer that counts and hashes what passes through it.
struct Hashing<W> {
    w: W,
    sha: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(buf)?;
        self.sha.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// Writes a shard's evidence beside its `--out`: the header, sealed, with the length
/// and SHA-256 of the entries after it, then every entry (`body` copies them, one line
/// each, in input order). The entries go to a temporary file first, since the header
/// that counts them comes before them.
pub(crate) fn write_evidence(
    out: &Path,
    header: &Header,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<u64>,
) -> Result<()> {
    let path = evidence_path(out);
    let failed = || format!("failed to write {}", path.display());
    let mut entries = Hashing {
        w: std::io::BufWriter::new(tempfile::tempfile().with_context(failed)?),
        sha: Sha256::new(),
        bytes: 0,
    };
    body(&mut entries)
        .and_then(|_| entries.flush())
        .with_context(failed)?;
    let header = Header {
        entries_bytes: entries.bytes,
        entries_sha256: hex(&entries.sha.finalize()),
        ..header.clone()
    };
    let mut entries = entries
        .w
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(failed)?;
    let mut file = open_out(Some(&path))?;
    let line = plangate_harness::Chain::default().seal(&serde_json::to_vec(&header)?);
    let mut write = |file: &mut crate::files::Output| -> std::io::Result<()> {
        use std::io::Seek as _;
        file.write_all(&line)?;
        entries.seek(std::io::SeekFrom::Start(0))?;
        std::io::copy(&mut entries, file)?;
        Ok(())
    };
    write(&mut file).with_context(failed)?;
    file.finish()
}

/// Refuses a shard's evidence whose entries are not the ones its header counts (a cut
/// or edited file), reading them all before merge writes anything.
pub(crate) fn check_entries(path: &Path, header: &Header, start: u64) -> Result<()> {
    use std::io::Seek as _;
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    file.seek(std::io::SeekFrom::Start(start))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut seen = Hashing {
        w: std::io::sink(),
        sha: Sha256::new(),
        bytes: 0,
    };
    std::io::copy(&mut BufReader::with_capacity(1 << 16, file), &mut seen)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if seen.bytes != header.entries_bytes {
        bail!(
            "{}: its entries are {} bytes, and its header counts {}: the file was cut or \
             grown; run the shard again",
            path.display(),
            seen.bytes,
            header.entries_bytes
        );
    }
    if hex(&seen.sha.finalize()) != header.entries_sha256 {
        bail!(
            "{}: its entries are damaged (their SHA-256 is not the one its header records); \
             run the shard again",
            path.display()
        );
    }
    Ok(())
}

/// Reads a shard's header from the evidence beside `out`; returns it and where the
/// entries start.
pub(crate) fn read_header(out: &Path) -> Result<(PathBuf, Header, u64)> {
    let path = evidence_path(out);
    let file = std::fs::File::open(&path).with_context(|| {
        format!(
            "{}: no shard evidence beside it ({}); merge takes the --out files of `plangate eval --shard K/M` runs",
            out.display(),
            path.display()
        )
    })?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        bail!("{}: not a regular file", path.display());
    }
    let mut first = String::new();
    BufReader::new(file)
        .take(HEADER_BYTES)
        .read_line(&mut first)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if !first.ends_with('\n') {
        bail!(
            "{}: line 1: not a shard header (no line end within {HEADER_BYTES} bytes)",
            path.display()
        );
    }
    let line = first.trim_end_matches('\n').as_bytes();
    let sealed = plangate_harness::Chain::default().open(line);
    // An earlier format wrote its header unsealed: it is read only to name its version.
    let v: Option<serde_json::Value> = serde_json::from_slice(sealed.unwrap_or(line)).ok();
    let field = |name: &str| v.as_ref().and_then(|v| v.get(name));
    let version = field("version").and_then(|x| x.as_u64());
    let ours = field("format").and_then(|f| f.as_str()) == Some(FORMAT);
    if ours && version != Some(u64::from(VERSION)) {
        bail!(
            "{}: line 1: version: written in evidence format {} by plangate {}; this plangate ({}) reads format {VERSION} only: run every shard and the merge with one plangate",
            path.display(),
            version.map_or("?".into(), |v| v.to_string()),
            field("plangate").and_then(|x| x.as_str()).unwrap_or("?"),
            env!("CARGO_PKG_VERSION"),
        );
    }
    let (Some(v), Some(_)) = (v, sealed) else {
        if first.starts_with('{') && first.contains(FORMAT) {
            bail!(
                "{}: line 1 is damaged (its digest does not match what it holds); run the \
                 shard again",
                path.display()
            );
        }
        bail!("{}: line 1 is not a shard header", path.display());
    };
    if !ours {
        bail!(
            "{}: line 1: format: not a plangate shard evidence file",
            path.display()
        );
    }
    let header: Header = serde_json::from_value(v)
        .with_context(|| format!("{}: line 1: not a shard header", path.display()))?;
    let Shard { k, m } = header.shard;
    if k == 0 || k > m {
        bail!("{}: line 1: shard: {k}/{m} is no shard", path.display());
    }
    Ok((path, header, first.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_every_task_exactly_once() {
        assert_eq!("2/3".parse::<Shard>().unwrap(), Shard { k: 2, m: 3 });
        for bad in ["0/3", "4/3", "1/0", "3", "a/b", "1/3/4", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shards: Vec<Shard> = (1..=3).map(|k| Shard { k, m: 3 }).collect();
        let mut per = [0usize; 3];
        for i in 0..3000 {
            let id = format!("task-{i}");
            let owners: Vec<usize> = (0..3).filter(|&s| shards[s].owns_task(&id)).collect();
            assert_eq!(owners.len(), 1, "{id}");
            per[owners[0]] += 1;
        }
        assert!(per.iter().all(|&n| n > 900), "balanced: {per:?}");
        // The hash is SHA-256's first 8 bytes: fixed forever, whatever the platform.
        assert_eq!(
            Shard::of_task("task-1", 1_000_003),
            1 + 0x7afa_a346_b4bf_92bf % 1_000_003
        );
    }
}
