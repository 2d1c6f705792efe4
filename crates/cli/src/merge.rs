//! `plangate merge`: the shards of one batch (`plangate eval --shard K/M`) decided as one
//! run would have decided them. Quarantine is global, so merge does not concatenate the
//! shards' decisions: it adds up every shard's tool books and live checks, then
//! classifies every shard's prepared tasks again under that union, in input order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use plangate_harness::{EvalStats, Finished, Spilled, ToolBook};
use plangate_sandbox::LiveCheck;
use serde_json::json;

use crate::args::ReportArgs;
use crate::outputs::{Findings, Outputs, Timings, write_reports};
use crate::shard::{Header, read_header};
use crate::tally::Tally;

#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    /// The `--out` file of every shard run, 1/M to M/M in any order (each shard's
    /// evidence is found beside it, in `FILE.evidence`).
    #[arg(required = true, value_name = "SHARD")]
    shards: Vec<PathBuf>,
    /// Write the merged decisions here instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    #[command(flatten)]
    reports: ReportArgs,
}

/// What merge says it cannot see, in the summary and on stderr.
const BLIND_SPOT: &str = "witnesses between calls in different shards cannot be seen: two identical calls that answered differently in two shards quarantine nothing; run such a batch whole to catch them";

pub(crate) fn run(args: MergeArgs) -> Result<u8> {
    let started = Instant::now();
    crate::interrupt::install();
    check_outputs(&args)?;
    let shards = read_shards(&args.shards)?;
    let first = &shards[0].1;
    let options = first
        .options()
        .with_context(|| format!("{}: line 1: thresholds", shards[0].0.display()))?;
    let mut books: Vec<ToolBook> = first.books.clone();
    let mut stats = EvalStats::default();
    for (_, h, _) in &shards {
        for (mine, theirs) in books.iter_mut().zip(&h.books) {
            mine.add(theirs);
        }
        stats.add(&h.stats);
    }
    let live = union_live(&shards);
    let parts: Vec<Spilled> = shards
        .iter()
        .map(|(path, _, start)| Spilled::open(path, *start))
        .collect::<Result<_, _>>()?;
    let merged = Spilled::merged(parts);
    let epoch_id = first.epoch_id.clone().unwrap_or_default();
    let finished = Finished::new(epoch_id, books, live, merged, options, stats);
    let setup = started.elapsed();

    let mut tally = Tally {
        lines: first.lines,
        blank: first.blank,
        ..Tally::default()
    };
    let mut outputs = Outputs::open(
        args.out.as_deref(),
        args.reports.junit.is_some(),
        &first.source,
    )?;
    match outputs.write_all(&finished, &BTreeMap::new(), &mut tally) {
        Err(e) if e.is::<crate::interrupt::Interrupted>() => {
            eprintln!("plangate: interrupted: nothing was written; run the merge again");
            return Ok(crate::exit::INTERRUPTED);
        }
        written => written?,
    }
    let accounted = tally.accept + tally.reject + tally.defer + tally.skipped + tally.blank;
    if accounted != tally.lines {
        bail!(
            "the shards account for {accounted} of the batch's {} lines: a shard is missing lines (was one cut short?)",
            tally.lines
        );
    }
    let decided = started.elapsed();
    let ran = Findings {
        epoch: first.epoch.as_ref(),
        finished: &finished,
        retry: None,
        merged: Some(json!({
            "shards": shards.iter().map(|(p, h, _)| json!({
                "shard": h.shard.to_string(), "evidence": p.display().to_string(),
            })).collect::<Vec<_>>(),
            "cross_shard_witnesses": first.epoch_id.as_ref().map(|_| BLIND_SPOT),
        })),
    };
    let timings = Timings {
        started,
        setup,
        probed: setup,
        executed: setup,
        retried: setup,
        decided,
    };
    write_reports(&args.reports, &ran, outputs, &tally, &timings)?;
    tally.report(&first.source);
    match first.epoch_id.as_deref() {
        Some(epoch) => {
            let q = finished.quarantined();
            let q = if q.is_empty() {
                "none".into()
            } else {
                q.join(", ")
            };
            eprintln!(
                "plangate: merged {} shards of epoch {}; quarantined: {q}; note: {BLIND_SPOT}",
                shards.len(),
                &epoch[..epoch.len().min(12)],
            );
        }
        None => eprintln!(
            "plangate: merged {} shards of `plangate {}`",
            shards.len(),
            first.command
        ),
    }
    Ok(tally.exit_code())
}

/// Every shard's evidence header, once the shards are found to be the M parts of one
/// batch and every shard's entries whole: nothing is written before this.
fn read_shards(shards: &[PathBuf]) -> Result<Vec<(PathBuf, Header, u64)>> {
    let shards: Vec<(PathBuf, Header, u64)> = (shards.iter())
        .map(|p| read_header(p))
        .collect::<Result<_>>()?;
    check_one_batch(&shards)?;
    for (path, header, start) in &shards {
        crate::shard::check_entries(path, header, *start)?;
    }
    Ok(shards)
}

/// Refuses shards that are not the M parts of one batch under one epoch, catalog,
/// samples file and thresholds, each once.
fn check_one_batch(shards: &[(PathBuf, Header, u64)]) -> Result<()> {
    let (p0, h0, _) = &shards[0];
    for (p, h, _) in &shards[1..] {
        let differs = |what: &str, a: &str, b: &str| -> Result<()> {
            if a != b {
                bail!(
                    "{} and {} are not shards of one batch: their {what} differ ({a} vs {b})",
                    p0.display(),
                    p.display()
                );
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
        let names = |h: &Header| h.books.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
        differs("tools", &names(h0).join(", "), &names(h).join(", "))?;
        differs("limits per call", &h0.limits, &h.limits)?;
        let probe_runs = |h: &Header| h.probe_runs.map_or("none".into(), |n| n.to_string());
        differs("--probe-runs", &probe_runs(h0), &probe_runs(h))?;
    }
    let m = h0.shard.m;
    let mut seen: BTreeMap<u64, &Path> = BTreeMap::new();
    for (p, h, _) in shards {
        if let Some(other) = seen.insert(h.shard.k, p) {
            bail!(
                "{} and {} are both shard {}",
                other.display(),
                p.display(),
                h.shard
            );
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
        bail!(
            "shard(s) {}{} missing: merge needs every shard of the batch",
            missing.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// Every live mount, changed if it changed in any shard or if two shards started from
/// different contents: one run would have seen a change either way.
fn union_live(shards: &[(PathBuf, Header, u64)]) -> Vec<LiveCheck> {
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

/// Refuses an output that names a shard's file or evidence, or another output.
fn check_outputs(args: &MergeArgs) -> Result<()> {
    let outputs: Vec<(&str, &Path)> = [
        ("--tool-health", &args.reports.tool_health),
        ("--junit", &args.reports.junit),
        ("--summary-json", &args.reports.summary_json),
        ("--out", &args.out),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
    .collect();
    let evidence: Vec<PathBuf> = args
        .shards
        .iter()
        .map(|p| crate::shard::evidence_path(p))
        .collect();
    let mut inputs = crate::files::Reads::default();
    for (shard, evidence) in args.shards.iter().zip(&evidence) {
        inputs = (inputs.file("SHARD", shard)).file("a shard's evidence", evidence);
    }
    crate::files::check_outputs(&outputs, &inputs).context("merge")
}
