//! `plangate merge`: the shards of one batch (`plangate eval --shard K/M`) decided as one
//! run would have decided them. Quarantine is global, so merge does not concatenate the
//! shards' decisions: it adds up every shard's tool findings and live checks, then
//! classifies every shard's prepared tasks again under that union, in input order.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use plangate_harness::shard::{evidence_path, read_shards, unite};
use plangate_harness::{PreparedBatch, Spilled};
use plangate_report::plan::OutputPlan;
use serde_json::json;

use crate::args::ReportArgs;
use crate::outputs::{Outputs, RunOutcome, Timings, write_reports};
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
    let plan = args.reports.plan(args.out.as_deref());
    check_outputs(&args, &plan)?;
    let shards = read_shards(&args.shards)?;
    let first = &shards[0].1;
    let options = first
        .options()
        .with_context(|| format!("{}: line 1: thresholds", shards[0].0.display()))?;
    let (books, stats, live) = unite(&shards);
    let parts: Vec<Spilled> = shards
        .iter()
        .map(|(path, _, start)| Spilled::open(path, *start))
        .collect::<Result<_, _>>()?;
    let merged = Spilled::merged(parts);
    let epoch_id = first.epoch_id.clone().unwrap_or_default();
    let finished = PreparedBatch::new(epoch_id, books, live, merged, options, stats);
    let setup = started.elapsed();

    let mut tally = Tally {
        lines: first.lines,
        blank: first.blank,
        ..Tally::default()
    };
    let mut outputs = Outputs::open(&plan, &first.source, first.model.as_deref())?;
    match outputs.write_all(&finished, &BTreeMap::new(), &mut tally, plan.calibrates()) {
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
    let ran = RunOutcome {
        command: "merge",
        epoch: first.epoch.as_ref(),
        finished: &finished,
        retry: None,
        epoch_again: None,
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
    write_reports(&plan, &ran, outputs, &tally, &timings, None)?;
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

/// Refuses an output that names a shard's file or evidence, or another output.
fn check_outputs(args: &MergeArgs, plan: &OutputPlan) -> Result<()> {
    let evidence: Vec<PathBuf> = args.shards.iter().map(|p| evidence_path(p)).collect();
    let mut inputs = crate::files::Reads::default();
    for (shard, evidence) in args.shards.iter().zip(&evidence) {
        inputs = (inputs.file("SHARD", shard)).file("a shard's evidence", evidence);
    }
    crate::files::check_outputs(&plan.files(), &inputs).context("merge")
}
