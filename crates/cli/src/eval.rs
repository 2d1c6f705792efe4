//! `plangate eval`: the eval team's command. Pins one epoch for the catalog, probes the
//! tools declared deterministic, executes every call of every sample in the sandbox,
//! and decides every task once tool health is known; writes decisions, tool health,
//! JUnit and a summary. The work itself is plangate-harness; this file is flags and files.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use plangate_gate::baseline::naive;
use plangate_gate::decide::prose_like;
use plangate_gate::task::{Task, parse_task_line};
use plangate_harness::{Eval, EvalRun, Journal, PreparedBatch, Retries, RetryReport, World};
use plangate_report::plan::{Evidence, OutputPlan};
use plangate_report::resume::{
    after_the_work as kept_calls, close_eval_journal, earlier_eval, epoch_to_replay, header,
    interrupted_eval, join_epoch, journal_path, open_eval_journal,
};

use crate::args::{Baseline, ExecArgs, IoArgs, ReportArgs, ThresholdArgs, compares_baseline};
use crate::files::{Reads, catalog_dir, load_catalog, read_manifest};
use crate::interrupt::{Interrupted, stopping};
use crate::lines::{
    Source, TaskIds, for_each_line, line_hash, open_samples, source_name, tasks_at, too_long,
};
use crate::outputs::{Outputs, RunOutcome, Timings, write_reports};
use crate::tally::Tally;
use plangate_harness::shard::{
    EvidenceHeader, Inputs, Learned, SamplesDigest, Shard, evidence_path, file_digest,
};

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    io: IoArgs,
    #[command(flatten)]
    run: ExecArgs,
    #[command(flatten)]
    reports: ReportArgs,
    /// Also score every executed task the naive way (one raw agreement over arguments
    /// and results, reject below --arg-accept) and compare in the summary; on by itself
    /// for labelled tasks.
    #[arg(long, value_enum, value_name = "SCORER")]
    baseline: Option<Baseline>,
    /// Execute tasks deferred for their epoch or their tools' results (a live source that
    /// changed, a quarantined or suspect tool, results that disagree) again, in a fresh
    /// epoch where every source is pinned and every tool probed again: at most ROUNDS
    /// rounds (1 when the flag has no value). Arguments never change, only executions.
    #[arg(long, value_name = "ROUNDS", num_args = 0..=1, default_missing_value = "1", default_value_t = 0)]
    retry_deferred: usize,
    /// Decide only shard K of M of the tasks (split by a stable hash of `task_id`), and
    /// leave the evidence `plangate merge` needs beside --out (`OUT.evidence`). Every
    /// shard must replay one epoch (--epoch, from `plangate epoch`).
    #[arg(long, value_name = "K/M")]
    shard: Option<Shard>,
    /// Continue an interrupted run of this same command (`OUT.journal` beside `--out`):
    /// the calls it made are replayed from its journal in its epoch, not executed again,
    /// and the decisions are those an uninterrupted run would have written.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// What executing the batch leaves beside the harness's own results.
#[derive(Default)]
struct Executed {
    /// Each task line's hash, by input line in order: the defer path reads the lines
    /// again, and must find them as they were.
    line_hashes: Vec<(usize, u64)>,
    /// Every line read, hashed, for a shard's evidence.
    samples: Option<SamplesDigest>,
}

/// A progress bar when stderr is a terminal; hidden otherwise, so logs stay clean.
fn progress() -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} tasks executed ({per_sec}) {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar
}

/// Pins (or replays) the epoch for the catalog, and opens the journal: the run, its
/// first epoch and its journal.
fn set_up<'a>(
    args: &EvalArgs,
    plan: &OutputPlan,
    catalog: &Arc<plangate_gate::catalog::Catalog>,
    base_dir: &'a Path,
) -> Result<(EvalRun<'a>, Arc<World>, Option<Journal>)> {
    let (earlier, notice) = earlier_eval(args.resume, args.io.out.as_deref())?;
    crate::say(notice);
    let given = args.run.epoch.as_deref().map(read_manifest).transpose()?;
    let manifest = epoch_to_replay(given, earlier.as_ref())?;
    let (world_opts, eval_opts) = args.run.options(&args.thresholds)?;
    let flags = format!(
        "{:?} {:?} {} {} {:?} {:?} {}",
        args.thresholds,
        args.run.limits,
        args.run.seed,
        args.run.probe_runs,
        args.baseline,
        eval_opts.quarantine,
        args.retry_deferred,
    );
    let flags = format!("{flags} {} {:?}", args.io.max_line_bytes, args.shard);
    let run = EvalRun::new(
        catalog.clone(),
        base_dir,
        world_opts,
        eval_opts,
        args.retry_deferred,
    )
    .stop_when(&crate::interrupt::STOP);
    let world = run
        .pin(manifest)
        .with_context(|| format!("failed to pin an epoch for {}", args.io.catalog.display()))?;
    plan.write_epoch(world.epoch().manifest())?;
    let epoch = Some(world.epoch().manifest().clone());
    let header = header("eval", &args.io.catalog, &flags, epoch)?;
    let (journal, notice) =
        open_eval_journal(args.resume, args.io.out.as_deref(), &header, earlier)?;
    crate::say(notice);
    if let Some(j) = &journal {
        join_epoch(j, &world)?;
    }
    Ok((run, world, journal))
}

pub(crate) fn run(args: EvalArgs) -> Result<u8> {
    let started = Instant::now();
    // First: an interrupt while the epoch is pinned then stops the run at its first
    // line, and the epoch's snapshot is removed on the way out.
    crate::interrupt::install();
    args.thresholds.check()?;
    let catalog = Arc::new(load_catalog(&args.io.catalog)?);
    let plan = output_plan(&args);
    check_outputs(&args, &plan, &catalog)?;
    check_shard(&args)?;
    let (input, source) = open_samples(&args.io.samples, args.io.max_line_bytes)?;
    let base_dir = catalog_dir(&args.io.catalog);
    let (run, world, journal) = set_up(&args, &plan, &catalog, &base_dir)?;
    let setup = started.elapsed();

    let eval = run.start(world.clone(), journal.as_ref());
    let probed = started.elapsed();

    let mut tally = Tally::default();
    let executed_batch = match execute(&eval, &catalog, input, &source, &args, &mut tally) {
        Err(e) if e.is::<Interrupted>() => return interrupted(journal.as_ref(), &tally),
        // The interrupt came after the last line was read, while queued calls ran: the
        // workers dropped the rest, so the batch cannot be finished, only resumed.
        Ok(_) if eval.stopped() => return interrupted(journal.as_ref(), &tally),
        executed => executed?,
    };
    let executed = started.elapsed();

    let finished = eval.finish()?;
    let Retries {
        retried,
        report: retry,
    } = match retry_deferred(&args, &run, &finished, &executed_batch.line_hashes) {
        Err(e) if interrupted_retry(&e) => return interrupted(journal.as_ref(), &tally),
        retried => retried?,
    };
    let retry_done = started.elapsed();
    let mut outputs = Outputs::open(&plan, &source.name, source.model())?;
    match outputs.write_all(&finished, &retried, &mut tally, plan.calibrates()) {
        Err(e) if e.is::<Interrupted>() => return interrupted(journal.as_ref(), &tally),
        written => written.map_err(|e| after_the_work(e, journal.as_ref()))?,
    }
    let decided = started.elapsed();

    let timings = Timings {
        started,
        setup,
        probed,
        executed,
        retried: retry_done,
        decided,
    };
    // A pinned network's exchanges, recorded while the calls ran, are kept in the
    // manifest, so replaying it needs no network.
    let now = world.epoch().manifest_now();
    let ran = RunOutcome {
        command: "eval",
        epoch: Some(world.epoch().manifest()),
        finished: &finished,
        retry: retry.as_ref(),
        merged: None,
        epoch_again: (&now != world.epoch().manifest()).then_some(&now),
    };
    let evidence = match executed_batch.samples {
        Some(digest) => evidence(&args, &ran, (digest, source.model()), &tally)
            .map_err(|e| after_the_work(e, journal.as_ref()))?,
        None => None,
    };
    write_reports(&plan, &ran, outputs, &tally, &timings, evidence)
        .map_err(|e| after_the_work(e, journal.as_ref()))?;
    if let Some(j) = journal {
        crate::say(close_eval_journal(j)?);
    }
    tally.report(&source.name);
    eprintln!("plangate: {}", human(&finished, executed - probed));
    if let Some(r) = &retry {
        eprintln!("plangate: {}", human_retry(r));
    }
    Ok(tally.exit_code())
}

/// An output that failed once every call had run (outputs are tried before the work,
/// but a disk fills and a device refuses): the journal keeps the calls, and the error
/// says so.
fn after_the_work(e: anyhow::Error, journal: Option<&Journal>) -> anyhow::Error {
    match journal {
        Some(j) => kept_calls(format!("{e:#}"), j).into(),
        None => e,
    }
}

/// An interrupt stopped the run before every call ran: no decision is written, as a
/// task is decided only once every tool's health is known.
fn interrupted(journal: Option<&Journal>, tally: &Tally) -> Result<u8> {
    crate::say(Some(interrupted_eval(journal, tally.lines)?));
    Ok(crate::exit::INTERRUPTED)
}

/// A shard's evidence for `plangate merge`, beside its `--out`.
fn evidence<'a>(
    args: &EvalArgs,
    ran: &RunOutcome<'a>,
    (samples, model): (SamplesDigest, Option<&str>),
    tally: &Tally,
) -> Result<Option<Evidence<'a>>> {
    let Some(shard) = args.shard else {
        return Ok(None);
    };
    let header = EvidenceHeader::new(
        "eval",
        shard,
        Learned::of_run(ran.finished, ran.epoch),
        Inputs {
            catalog_sha256: file_digest(&args.io.catalog)?,
            samples_sha256: samples.hex(),
            source: source_name(&args.io.samples),
            model: model.map(Into::into),
            limits: format!("{:?}", args.run.limits.limits()?),
            probe_runs: Some(args.run.probe_runs as u64),
        },
        &args.thresholds.options(),
        tally.lines,
        tally.blank,
    );
    let finished = ran.finished;
    Ok(Some(Evidence {
        header,
        body: Box::new(move |w| finished.spilled().copy_to(w)),
    }))
}

/// The defer path (`--retry-deferred`): the first epoch's retryable deferrals executed
/// again, each round in a fresh epoch with every source pinned. Standard input cannot
/// be read a second time, so with `--samples -` there is no retry (and a warning).
fn retry_deferred(
    args: &EvalArgs,
    run: &EvalRun<'_>,
    first: &PreparedBatch,
    hashes: &[(usize, u64)],
) -> Result<Retries> {
    if !run.retries() {
        return Ok(Retries::default());
    }
    // A pipe, a FIFO or standard input cannot be read a second time.
    if !args.io.samples.is_file() {
        eprintln!(
            "plangate: warning: --retry-deferred needs --samples to be a regular file ({} cannot be read a second time); deferred tasks are not retried",
            source_name(&args.io.samples)
        );
        return Ok(Retries::default());
    }
    let mut tasks_at = |lines: &std::collections::BTreeSet<usize>| {
        tasks_at(&args.io.samples, lines, hashes, args.io.max_line_bytes)
            .map_err(|e| format!("{e:#}"))
    };
    run.retry(first, &mut tasks_at)
        .context("the defer path failed")
}

/// Whether the defer path ended because of an interrupt: the run is then resumed (its
/// first epoch replayed from the journal), not finished.
fn interrupted_retry(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<plangate_harness::HarnessError>(),
            Some(plangate_harness::HarnessError::Interrupted)
        )
    })
}

/// The defer path's line on stderr.
fn human_retry(r: &RetryReport) -> String {
    let mut finals: BTreeMap<&str, usize> = BTreeMap::new();
    for by_verdict in r.resolved.values() {
        for (v, n) in by_verdict {
            *finals.entry(v).or_default() += n;
        }
    }
    let epochs: Vec<&str> = r.rounds.iter().map(|x| &x.epoch_id[..12]).collect();
    format!(
        "defer path: {} deferred tasks executed again in {} fully pinned epoch(s) ({}), {} calls executed, {} reused: {} accepted, {} rejected, {} still deferred",
        r.tasks_retried,
        r.rounds.len(),
        epochs.join(", "),
        r.calls,
        r.reused,
        finals.get("accept").unwrap_or(&0),
        finals.get("reject").unwrap_or(&0),
        finals.get("defer").unwrap_or(&0),
    )
}

/// Refuses a shard run that `merge` could not use, before any work.
fn check_shard(args: &EvalArgs) -> Result<()> {
    let Some(shard) = args.shard else {
        return Ok(());
    };
    if args.run.epoch.is_none() {
        anyhow::bail!(
            "--shard {shard} needs --epoch FILE: every shard of a batch must run in one epoch, or merge cannot combine them; pin one first with `plangate epoch --catalog {} --out epoch.json`",
            args.io.catalog.display()
        );
    }
    crate::shard::check_out(shard, args.io.out.as_deref())?;
    if args.retry_deferred > 0 {
        anyhow::bail!(
            "--shard cannot be used with --retry-deferred: which tasks a retry takes depends on every shard's tool health, which only merge knows"
        );
    }
    Ok(())
}

/// The run's outputs, from its flags: the reports, `--write-epoch`, and beside `--out`
/// the journal and a shard's evidence.
fn output_plan(args: &EvalArgs) -> OutputPlan {
    let out = args.io.out.as_deref();
    OutputPlan {
        epoch: args.run.write_epoch.clone(),
        journal: out.map(journal_path),
        evidence: out.filter(|_| args.shard.is_some()).map(evidence_path),
        ..args.reports.plan(out)
    }
}

/// Refuses, before any work, an output that names one of the run's inputs (the catalog's
/// modules and mounts among them), another output, or a place that cannot be written.
fn check_outputs(
    args: &EvalArgs,
    plan: &OutputPlan,
    catalog: &plangate_gate::catalog::Catalog,
) -> Result<()> {
    let inputs = (args.run).reads(
        Reads::default()
            .catalog("--catalog", &args.io.catalog, catalog)
            .file("--samples", &args.io.samples),
    );
    crate::files::check_outputs(&plan.files(), &inputs)
}

/// Phase one: feeds every line that is a task to the harness, which executes it; keeps
/// the lines that are not, and scores executed tasks the naive way as they finish.
fn execute(
    eval: &Eval<'_>,
    catalog: &plangate_gate::catalog::Catalog,
    input: Box<dyn BufRead>,
    source: &Source,
    args: &EvalArgs,
    tally: &mut Tally,
) -> Result<Executed> {
    let bar = progress();
    // The naive scorer sees each task as executed, results and all; the gate decides
    // later, when tool health is known, so its verdict waits with the task.
    let threshold = args.thresholds.arg_accept;
    let on_done = |_line: usize, task: &Task| {
        bar.inc(1);
        compares_baseline(args.baseline, task).then(|| naive(task, threshold))
    };
    let mut ids = TaskIds::default();
    let mut line_hashes = Vec::new();
    let mut digest = args.shard.map(|_| SamplesDigest::default());
    let shard = args.shard;
    eval.execute(&on_done, |feeder| {
        for_each_line(
            input,
            args.io.max_line_bytes,
            tally,
            |number, line, tally| {
                if stopping() {
                    return Err(Interrupted.into());
                }
                if let Some(d) = digest.as_mut() {
                    d.add(line);
                }
                let line = match line {
                    Ok(line) => line,
                    Err(bytes) => {
                        let e = too_long(bytes, args.io.max_line_bytes);
                        match shard {
                            Some(s) if !s.owns_bad_line(number, &e) => tally.other_shards += 1,
                            _ => feeder.skip(number, source.place(number, e)),
                        }
                        return Ok(());
                    }
                };
                match parse_task_line(line) {
                    Ok(task) if shard.is_some_and(|s| !s.owns_task(&task.task_id)) => {
                        tally.other_shards += 1;
                    }
                    Err(e) if shard.is_some_and(|s| !s.owns_bad_line(number, &e)) => {
                        tally.other_shards += 1;
                    }
                    Ok(task) => {
                        ids.check(&source.name, number, &task.task_id);
                        tally.notes.add(&task.notes);
                        tally.prose.add(&prose_like(&task, catalog));
                        if args.retry_deferred > 0 {
                            line_hashes.push((number, line_hash(line)));
                        }
                        bar.inc_length(1);
                        feeder.push(number, task);
                    }
                    Err(e) => feeder.skip(number, source.place(number, e)),
                }
                Ok(())
            },
        )?;
        ids.report(&source.name);
        // Input that ended with an interrupt may be cut short (see `score`).
        if stopping() {
            return Err(anyhow::Error::new(Interrupted));
        }
        Ok(())
    })?;
    bar.finish_and_clear();
    Ok(Executed {
        line_hashes,
        samples: digest,
    })
}

fn human(f: &PreparedBatch, exec: std::time::Duration) -> String {
    let s = &f.stats;
    let mut line = format!(
        "epoch {}: {} calls executed ({} not executed) over {} samples in {:.2} s; {} probe calls",
        &f.epoch_id[..12],
        s.calls_executed,
        s.calls_not_executed,
        s.samples,
        exec.as_secs_f64(),
        s.probe_calls,
    );
    let q = f.quarantined();
    if q.is_empty() {
        line.push_str("; no tool quarantined");
    } else {
        line.push_str(&format!(
            "; quarantined: {} ({} witnesses)",
            q.join(", "),
            s.witnesses
        ));
    }
    let changed = f.changed_live_mounts();
    if !changed.is_empty() {
        line.push_str(&format!(
            "; live mounts changed during the batch: {}",
            changed.join(", ")
        ));
    }
    line
}
