//! Shards (docs/design.md, "Shards"): which shard decides a task, the evidence a shard
//! leaves beside its `--out` (a sealed header with what it read and learned, then its
//! entries, counted and hashed), and how `plangate merge` reads the shards of one batch
//! back and unites what they learned.

use plangate_sandbox::hex;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{Options, Rule};
use plangate_gate::task::TaskError;
use plangate_sandbox::{EpochManifest, LiveCheck};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::HarnessError;
use crate::eval::PreparedBatch;
use crate::health::ToolFindings;
use crate::journal::Chain;
use crate::warm::EvalStats;

/// A [`HarnessError::Shard`] with a formatted message.
macro_rules! shard_error {
    ($($arg:tt)*) => {
        HarnessError::Shard(format!($($arg)*))
    };
}

/// What went wrong, said after what was being done, as the CLI chains contexts.
trait Context<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, HarnessError>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, HarnessError> {
        self.map_err(|e| HarnessError::Shard(format!("{}: {e}", what())))
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T, HarnessError> {
        self.ok_or_else(|| HarnessError::Shard(what()))
    }
}

/// What an evidence file says it is on its first line.
const FORMAT: &str = "plangate-shard-evidence";
/// Bumped whenever an evidence file's shape changes: `merge` refuses any other.
const VERSION: u32 = 3;
/// The longest header read: tool books with their evidence, for thousands of tools.
const HEADER_BYTES: u64 = 64 << 20;

/// Shard K of M (K counts from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This shard, from 1.
    pub k: u64,
    /// Shards in the batch.
    pub m: u64,
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
    pub fn of_task(task_id: &str, m: u64) -> u64 {
        let digest = Sha256::digest(task_id.as_bytes());
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first) % m + 1
    }

    /// Whether this shard decides the task.
    pub fn owns_task(&self, task_id: &str) -> bool {
        Shard::of_task(task_id, self.m) == self.k
    }

    /// Whether this shard reports a line that is not a task: by its `task_id` when one
    /// could be read, else by its line number (`(line - 1) mod M + 1`), so exactly one
    /// shard reports it.
    pub fn owns_bad_line(&self, line: usize, e: &TaskError) -> bool {
        match &e.task_id {
            Some(id) => self.owns_task(id),
            None => (line as u64 - 1) % self.m + 1 == self.k,
        }
    }
}

/// A shard's evidence file: beside its `--out`.
pub fn evidence_path(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".evidence");
    PathBuf::from(name)
}

/// The SHA-256 of every line a run read, in order, whichever shard decides it: shards
/// of one batch must all have read the same samples.
#[derive(Default)]
pub struct SamplesDigest(Sha256);

impl SamplesDigest {
    /// Adds one line (its bytes, or the length of a line too long to read).
    pub fn add(&mut self, line: Result<&[u8], u64>) {
        match line {
            Ok(bytes) => self.0.update(bytes),
            Err(len) => self.0.update(format!("\u{0}too long:{len}")),
        }
        self.0.update(b"\n");
    }

    /// The digest, as lowercase hex.
    pub fn hex(self) -> String {
        hex(&self.0.finalize())
    }
}

/// The SHA-256 of a file's bytes (the catalog every shard must share).
pub fn file_digest(path: &Path) -> Result<String, HarnessError> {
    let bytes = std::fs::read(path).context(|| format!("cannot read {}", path.display()))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// What every shard of a batch must have read alike, fingerprinted, and run under.
pub struct Inputs {
    /// SHA-256 of the catalog file.
    pub catalog_sha256: String,
    /// SHA-256 of every line read ([`SamplesDigest`]).
    pub samples_sha256: String,
    /// How the samples were named on the command line, for messages.
    pub source: String,
    /// The model that wrote the samples, when the input names it (a tau2-bench results
    /// file): merge counts invented references by it, as a whole run would.
    pub model: Option<String>,
    /// The limits per call (`eval`), or none (`score` executes nothing).
    pub limits: String,
    /// Calls per probe argument (`eval --probe-runs`): a probe run more often can
    /// quarantine a tool a shorter one verifies.
    pub probe_runs: Option<u64>,
}

/// What a shard learned besides its tasks: its epoch, every tool's book, the live
/// checks and its counts.
pub struct Learned {
    /// The epoch the shard ran in (`eval`).
    pub epoch: Option<EpochManifest>,
    /// That epoch's id.
    pub epoch_id: Option<String>,
    /// Every tool's book: declared, probed, drifted, witnesses.
    pub books: Vec<ToolFindings>,
    /// The live mounts, as checked at the start and the end.
    pub live: Vec<LiveCheck>,
    /// What the shard executed.
    pub stats: EvalStats,
}

impl Learned {
    /// What an `eval` shard learned.
    pub fn of_run(finished: &PreparedBatch, epoch: Option<&EpochManifest>) -> Learned {
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
    pub fn of_catalog(catalog: &Catalog) -> Learned {
        Learned {
            epoch: None,
            epoch_id: None,
            books: catalog
                .tools()
                .iter()
                .map(|t| ToolFindings {
                    name: t.name.clone(),
                    declared: t.deterministic,
                    probed: t.verified.unwrap_or(false),
                    ..ToolFindings::default()
                })
                .collect(),
            live: Vec::new(),
            stats: EvalStats::default(),
        }
    }
}

/// The evidence file's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvidenceHeader {
    /// [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The plangate that wrote it, for messages.
    pub plangate: String,
    /// `eval` or `score`.
    pub command: String,
    /// Which shard of the batch.
    pub shard: Shard,
    /// That epoch's id.
    pub epoch_id: Option<String>,
    /// The epoch the shard ran in (`eval`).
    pub epoch: Option<EpochManifest>,
    /// SHA-256 of the catalog file.
    pub catalog_sha256: String,
    /// SHA-256 of every line read ([`SamplesDigest`]).
    pub samples_sha256: String,
    /// How the samples were named on the command line, for messages.
    pub source: String,
    /// The model that wrote the samples, when the input names it.
    #[serde(default)]
    pub model: Option<String>,
    /// The thresholds, as exact decimals.
    pub thresholds: BTreeMap<String, String>,
    /// The limits every call ran under (fuel, memory, time, output), as the run set
    /// them: they change what a call returns.
    pub limits: String,
    /// `--probe-runs` (`eval`), none for `score`.
    pub probe_runs: Option<u64>,
    /// Every tool's book: declared, probed, drifted, witnesses.
    pub books: Vec<ToolFindings>,
    /// The live mounts, as checked at the start and the end.
    pub live: Vec<LiveCheck>,
    /// What the shard executed.
    pub stats: EvalStats,
    /// Input lines read and blank lines among them (every shard reads every line).
    pub lines: usize,
    /// Blank lines among them.
    pub blank: usize,
    /// The entries after this line: their length and SHA-256, so merge refuses a cut or
    /// edited file before it writes anything.
    #[serde(default)]
    pub entries_bytes: u64,
    #[serde(default)]
    /// The entries' SHA-256.
    pub entries_sha256: String,
}

impl EvidenceHeader {
    /// A shard's header.
    pub fn new(
        command: &str,
        shard: Shard,
        learned: Learned,
        inputs: Inputs,
        thresholds: &Options,
        lines: usize,
        blank: usize,
    ) -> EvidenceHeader {
        EvidenceHeader {
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
            model: inputs.model,
            thresholds: thresholds_of(thresholds),
            limits: inputs.limits,
            probe_runs: inputs.probe_runs,
            books: learned.books,
            live: learned.live,
            stats: learned.stats,
            lines,
            blank,
            entries_bytes: 0,
            entries_sha256: String::new(),
        }
    }

    /// The decision options the shard classified with.
    pub fn options(&self) -> Result<Options, HarnessError> {
        let get = |name: &str| -> Result<String, HarnessError> {
            self.thresholds
                .get(name)
                .cloned()
                .context(|| format!("the evidence records no {name}"))
        };
        let ratio = |name: &str| -> Result<plangate_gate::stats::Ratio, HarnessError> {
            get(name)?
                .parse()
                .map_err(|e| HarnessError::Shard(format!("{name}: {e}")))
        };
        Ok(Options {
            arg_accept: ratio("arg_accept")?,
            arg_reject: ratio("arg_reject")?,
            result_accept: ratio("result_accept")?,
            result_suspect: ratio("result_suspect")?,
            min_samples: get("min_samples")?
                .parse()
                .map_err(|e| HarnessError::Shard(format!("{e}")))?,
            rule: Rule::Gate,
        })
    }
}

/// Thresholds by flag name, as exact decimals without trailing zeros: `0.8` and `0.80`
/// are one threshold, so shards run with either merge.
fn thresholds_of(t: &Options) -> BTreeMap<String, String> {
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

/// Writes a shard's evidence to `file` (beside its `--out`, [`evidence_path`]): the
/// header, sealed, with the length and SHA-256 of the entries after it, then every
/// entry (`body` copies them, one line each, in input order). The entries go to a
/// temporary file first, since the header that counts them comes before them.
pub fn write_evidence(
    header: &EvidenceHeader,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<u64>,
    file: &mut dyn Write,
) -> std::io::Result<()> {
    use std::io::Seek as _;
    let mut entries = Hashing {
        w: std::io::BufWriter::new(tempfile::tempfile()?),
        sha: Sha256::new(),
        bytes: 0,
    };
    body(&mut entries)?;
    entries.flush()?;
    let header = EvidenceHeader {
        entries_bytes: entries.bytes,
        entries_sha256: hex(&entries.sha.finalize()),
        ..header.clone()
    };
    let mut entries = entries.w.into_inner().map_err(|e| e.into_error())?;
    let line = Chain::default().seal(&serde_json::to_vec(&header)?);
    file.write_all(&line)?;
    entries.seek(std::io::SeekFrom::Start(0))?;
    std::io::copy(&mut entries, file)?;
    Ok(())
}

/// Refuses a shard's evidence whose entries are not the ones its header counts (a cut
/// or edited file), reading them all before merge writes anything.
pub fn check_entries(path: &Path, header: &EvidenceHeader, start: u64) -> Result<(), HarnessError> {
    use std::io::Seek as _;
    let mut file =
        std::fs::File::open(path).context(|| format!("cannot read {}", path.display()))?;
    file.seek(std::io::SeekFrom::Start(start))
        .context(|| format!("cannot read {}", path.display()))?;
    let mut seen = Hashing {
        w: std::io::sink(),
        sha: Sha256::new(),
        bytes: 0,
    };
    std::io::copy(&mut BufReader::with_capacity(1 << 16, file), &mut seen)
        .context(|| format!("cannot read {}", path.display()))?;
    if seen.bytes != header.entries_bytes {
        return Err(shard_error!(
            "{}: its entries are {} bytes, and its header counts {}: the file was cut or \
             grown; run the shard again",
            path.display(),
            seen.bytes,
            header.entries_bytes
        ));
    }
    if hex(&seen.sha.finalize()) != header.entries_sha256 {
        return Err(shard_error!(
            "{}: its entries are damaged (their SHA-256 is not the one its header records); \
             run the shard again",
            path.display()
        ));
    }
    Ok(())
}

/// Reads a shard's header from the evidence beside `out`; returns it and where the
/// entries start.
pub fn read_header(out: &Path) -> Result<(PathBuf, EvidenceHeader, u64), HarnessError> {
    let path = evidence_path(out);
    let file = std::fs::File::open(&path).context(|| {
        format!(
            "{}: no shard evidence beside it ({}); merge takes the --out files of `plangate eval --shard K/M` runs",
            out.display(),
            path.display()
        )
    })?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(shard_error!("{}: not a regular file", path.display()));
    }
    let mut first = String::new();
    BufReader::new(file)
        .take(HEADER_BYTES)
        .read_line(&mut first)
        .context(|| format!("cannot read {}", path.display()))?;
    if !first.ends_with('\n') {
        return Err(shard_error!(
            "{}: line 1: not a shard header (no line end within {HEADER_BYTES} bytes)",
            path.display()
        ));
    }
    let line = first.trim_end_matches('\n').as_bytes();
    let sealed = Chain::default().open(line);
    // An earlier format wrote its header unsealed: it is read only to name its version.
    let v: Option<serde_json::Value> = serde_json::from_slice(sealed.unwrap_or(line)).ok();
    let field = |name: &str| v.as_ref().and_then(|v| v.get(name));
    let version = field("version").and_then(|x| x.as_u64());
    let ours = field("format").and_then(|f| f.as_str()) == Some(FORMAT);
    if ours && version != Some(u64::from(VERSION)) {
        return Err(shard_error!(
            "{}: line 1: version: written in evidence format {} by plangate {}; this plangate ({}) reads format {VERSION} only: run every shard and the merge with one plangate",
            path.display(),
            version.map_or("?".into(), |v| v.to_string()),
            field("plangate").and_then(|x| x.as_str()).unwrap_or("?"),
            env!("CARGO_PKG_VERSION"),
        ));
    }
    let (Some(v), Some(_)) = (v, sealed) else {
        if first.starts_with('{') && first.contains(FORMAT) {
            return Err(shard_error!(
                "{}: line 1 is damaged (its digest does not match what it holds); run the \
                 shard again",
                path.display()
            ));
        }
        return Err(shard_error!(
            "{}: line 1 is not a shard header",
            path.display()
        ));
    };
    if !ours {
        return Err(shard_error!(
            "{}: line 1: format: not a plangate shard evidence file",
            path.display()
        ));
    }
    let header: EvidenceHeader = serde_json::from_value(v)
        .context(|| format!("{}: line 1: not a shard header", path.display()))?;
    let Shard { k, m } = header.shard;
    if k == 0 || k > m {
        return Err(shard_error!(
            "{}: line 1: shard: {k}/{m} is no shard",
            path.display()
        ));
    }
    Ok((path, header, first.len() as u64))
}

/// Every shard's evidence header, once the shards are found to be the M parts of one
/// batch and every shard's entries whole: nothing is written before this.
pub fn read_shards(
    shards: &[PathBuf],
) -> Result<Vec<(PathBuf, EvidenceHeader, u64)>, HarnessError> {
    let shards: Vec<(PathBuf, EvidenceHeader, u64)> = (shards.iter())
        .map(|p| read_header(p))
        .collect::<Result<_, _>>()?;
    check_one_batch(&shards)?;
    for (path, header, start) in &shards {
        check_entries(path, header, *start)?;
    }
    Ok(shards)
}

/// Refuses shards that are not the M parts of one batch under one epoch, catalog,
/// samples file and thresholds, each once.
fn check_one_batch(shards: &[(PathBuf, EvidenceHeader, u64)]) -> Result<(), HarnessError> {
    let (p0, h0, _) = &shards[0];
    for (p, h, _) in &shards[1..] {
        let differs = |what: &str, a: &str, b: &str| -> Result<(), HarnessError> {
            if a != b {
                return Err(shard_error!(
                    "{} and {} are not shards of one batch: their {what} differ ({a} vs {b})",
                    p0.display(),
                    p.display()
                ));
            }
            Ok(())
        };
        differs("commands", &h0.command, &h.command)?;
        differs(
            "epochs",
            h0.epoch_id.as_deref().unwrap_or("none"),
            h.epoch_id.as_deref().unwrap_or("none"),
        )?;
        differs("catalogs (SHA-256)", &h0.catalog_sha256, &h.catalog_sha256)?;
        differs(
            "samples (SHA-256 of every line)",
            &h0.samples_sha256,
            &h.samples_sha256,
        )?;
        differs(
            "thresholds",
            &format!("{:?}", h0.thresholds),
            &format!("{:?}", h.thresholds),
        )?;
        differs(
            "shard counts",
            &h0.shard.m.to_string(),
            &h.shard.m.to_string(),
        )?;
        let names = |h: &EvidenceHeader| h.books.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
        differs("tools", &names(h0).join(", "), &names(h).join(", "))?;
        differs("limits per call", &h0.limits, &h.limits)?;
        let probe_runs = |h: &EvidenceHeader| h.probe_runs.map_or("none".into(), |n| n.to_string());
        differs("--probe-runs", &probe_runs(h0), &probe_runs(h))?;
    }
    let m = h0.shard.m;
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for (p, h, _) in shards {
        if let Some(other) = seen.insert(h.shard.k, p) {
            return Err(shard_error!(
                "{} and {} are both shard {}",
                other.display(),
                p.display(),
                h.shard
            ));
        }
    }
    if (seen.len() as u64) < m {
        // M may be large: name the first few that are missing, count the rest.
        let missing: Vec<String> = (1..=m)
            .filter(|k| !seen.contains_key(k))
            .take(5)
            .map(|k| format!("{k}/{m}"))
            .collect();
        let more = m - seen.len() as u64 - missing.len() as u64;
        return Err(shard_error!(
            "shard(s) {}{} missing: merge needs every shard of the batch",
            missing.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    Ok(())
}

/// What the shards of one batch learned, united as one run would have learned it:
/// every tool's book added up, the counts summed, and the live mounts.
pub fn unite(
    shards: &[(PathBuf, EvidenceHeader, u64)],
) -> (Vec<ToolFindings>, EvalStats, Vec<LiveCheck>) {
    let mut books: Vec<ToolFindings> = shards[0].1.books.clone();
    let mut stats = EvalStats::default();
    for (_, h, _) in shards {
        for (mine, theirs) in books.iter_mut().zip(&h.books) {
            mine.add(theirs);
        }
        stats.add(&h.stats);
    }
    (books, stats, union_live(shards))
}

/// Every live mount, changed if it changed in any shard or if two shards started from
/// different contents: one run would have seen a change either way.
fn union_live(shards: &[(PathBuf, EvidenceHeader, u64)]) -> Vec<LiveCheck> {
    let mut live = shards[0].1.live.clone();
    for (_, h, _) in &shards[1..] {
        for (mine, theirs) in live.iter_mut().zip(h.live.iter().cloned()) {
            if mine.changed() {
                continue;
            }
            if theirs.changed() {
                *mine = theirs;
            } else if theirs.at_start != mine.at_start {
                mine.now = theirs.at_start;
            }
        }
    }
    live
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
