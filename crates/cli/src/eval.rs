//! `plangate eval`: the eval team's command. Pins one epoch for the catalog, probes the
//! tools declared deterministic, executes every call of every sample in the sandbox,
//! and decides every task once tool health is known; writes decisions, tool health,
//! JUnit and a summary. The work itself is plangate-harness; this file is flags and files.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use plangate_gate::baseline::naive;
use plangate_gate::decide::{Decision, Verdict};
use plangate_gate::task::{Label, TaskError, parse_task_line};
use plangate_harness::{Eval, EvalOptions, Finished, World, WorldOptions, read_quarantine};
use plangate_sandbox::EpochManifest;
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde::Serialize;
use serde_json::json;

use crate::call::LimitArgs;
use crate::score::{
    Baseline, IoArgs, Tally, ThresholdArgs, check_distinct, compares_baseline, for_each_line,
    load_catalog, open_out, open_samples, skip_line, source_name,
};

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    io: IoArgs,
    /// Replay this epoch manifest instead of pinning a new epoch.
    #[arg(long, value_name = "FILE")]
    epoch: Option<PathBuf>,
    /// Save the epoch manifest used, to replay the run later.
    #[arg(long, value_name = "FILE")]
    write_epoch: Option<PathBuf>,
    /// Start from an earlier run's tool-health file: its quarantined tools stay quarantined.
    #[arg(long, value_name = "FILE")]
    quarantine: Option<PathBuf>,
    /// Write tool health (verified, quarantined, evidence) here.
    #[arg(long, value_name = "FILE")]
    tool_health: Option<PathBuf>,
    /// Write JUnit XML here: one testcase per task, reject fails, defer is skipped.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Write the run summary (counts, tool health, epoch manifest, timings) here.
    #[arg(long, value_name = "FILE")]
    summary_json: Option<PathBuf>,
    /// A new epoch's random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Calls per probe argument for tools declared deterministic (0 skips the probe:
    /// every tool stays unverified, so nothing can be rejected).
    #[arg(long, default_value_t = 2, value_name = "N")]
    probe_runs: usize,
    /// Worker threads executing calls (default: one per core).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Also score every executed task the naive way (one raw agreement over arguments
    /// and results, reject below --arg-accept) and compare in the summary; on by itself
    /// for labelled tasks.
    #[arg(long, value_enum, value_name = "SCORER")]
    baseline: Option<Baseline>,
    #[command(flatten)]
    limits: LimitArgs,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// A decision as written: the gate's record plus the epoch it was decided in.
#[derive(Serialize)]
struct Record<'a> {
    #[serde(flatten)]
    decision: &'a Decision,
    epoch_id: &'a str,
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

/// The folder a catalog's relative paths are read against.
pub(crate) fn catalog_dir(catalog: &Path) -> PathBuf {
    match catalog.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

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

pub(crate) fn run(args: EvalArgs) -> Result<u8> {
    let started = Instant::now();
    let outputs: Vec<&Path> = [
        &args.write_epoch,
        &args.tool_health,
        &args.junit,
        &args.summary_json,
        &args.io.out,
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::as_path)
    .collect();
    let mut inputs: Vec<&Path> = vec![&args.io.catalog, &args.io.samples];
    inputs.extend(args.epoch.as_deref());
    inputs.extend(args.quarantine.as_deref());
    for o in &outputs {
        check_distinct(Some(o), &inputs)?;
    }
    let catalog = load_catalog(&args.io.catalog)?;
    let manifest = args.epoch.as_deref().map(read_manifest).transpose()?;
    let quarantine = args
        .quarantine
        .as_deref()
        .map(read_quarantine)
        .transpose()?;
    let input = open_samples(&args.io.samples)?;
    let world = World::build(
        &catalog,
        &catalog_dir(&args.io.catalog),
        WorldOptions {
            manifest,
            seed: args.seed,
            limits: args.limits.limits(),
            ..WorldOptions::default()
        },
    )
    .with_context(|| format!("failed to pin an epoch for {}", args.io.catalog.display()))?;
    if let Some(file) = &args.write_epoch {
        write_json(file, world.epoch().manifest())?;
    }
    let setup = started.elapsed();

    let mut opts = EvalOptions {
        probe_runs: args.probe_runs,
        decide: args.thresholds.options(),
        quarantine,
        ..EvalOptions::default()
    };
    if let Some(j) = args.jobs {
        opts.jobs = j;
    }
    let eval = Eval::start(&world, &catalog, opts);
    let probed = started.elapsed();

    let source = source_name(&args.io.samples);
    let mut tally = Tally::default();
    let mut skipped: Vec<(usize, TaskError)> = Vec::new();
    let bar = progress();
    // The naive scorer sees each task as executed, results and all; the gate decides
    // later, when tool health is known, so its verdicts wait here by input line.
    let naive_by_line: Mutex<BTreeMap<usize, (Verdict, Option<Label>)>> = Mutex::default();
    let threshold = args.thresholds.arg_accept;
    let on_done = |line: usize, task: &plangate_gate::task::Task| {
        if compares_baseline(args.baseline, task) {
            let verdict = naive(task, threshold).decision;
            naive_by_line
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(line, (verdict, task.label));
        }
        bar.inc(1);
    };
    eval.execute(&on_done, |feeder| {
        for_each_line(input, &mut tally, |number, line, _| {
            match parse_task_line(line) {
                Ok(task) => {
                    bar.inc_length(1);
                    feeder.push(number, task);
                }
                Err(e) => skipped.push((number, e)),
            }
            Ok(())
        })
    })?;
    bar.finish_and_clear();
    let executed = started.elapsed();

    let finished = eval.finish()?;
    let naive_by_line = naive_by_line
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let mut out = open_out(args.io.out.as_deref())?;
    let mut junit = args.junit.as_ref().map(|_| TestSuite::new("plangate eval"));
    let mut skipped = skipped.into_iter().peekable();
    let mut labels: BTreeMap<String, [usize; 3]> = Default::default();
    for d in finished.decisions() {
        while let Some((line, e)) = skipped.next_if(|(l, _)| *l < d.line) {
            skip_line(&mut out, &source, line, &e, &mut tally)?;
            if let Some(s) = junit.as_mut() {
                s.add_test_case(input_case(line, &e));
            }
        }
        let dec = &d.decision;
        tally.count(dec.decision);
        if let Some((naive, label)) = naive_by_line.get(&d.line) {
            tally.baseline.count(dec.decision, *naive, *label);
        }
        if let Some(label) = dec.label {
            let key = serde_json::to_value(label)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            labels.entry(key).or_default()[dec.decision as usize] += 1;
        }
        serde_json::to_writer(
            &mut out,
            &Record {
                decision: dec,
                epoch_id: &finished.epoch_id,
            },
        )
        .context("failed to write decisions")?;
        writeln!(out).context("failed to write decisions")?;
        if let Some(s) = junit.as_mut() {
            s.add_test_case(task_case(dec));
        }
    }
    for (line, e) in skipped {
        skip_line(&mut out, &source, line, &e, &mut tally)?;
        if let Some(s) = junit.as_mut() {
            s.add_test_case(input_case(line, &e));
        }
    }
    out.flush().context("failed to write decisions")?;
    let decided = started.elapsed();

    if let Some(file) = &args.tool_health {
        write_json(file, &finished.health)?;
    }
    if let (Some(file), Some(suite)) = (&args.junit, junit) {
        let mut report = Report::new("plangate");
        report.add_test_suite(suite);
        let f = std::fs::File::create(file)
            .with_context(|| format!("failed to create {}", file.display()))?;
        report
            .serialize(std::io::BufWriter::new(f))
            .with_context(|| format!("failed to write {}", file.display()))?;
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    if let Some(file) = &args.summary_json {
        let summary = json!({
            "epoch_id": finished.epoch_id,
            "epoch": world.epoch().manifest(),
            "lines": {
                "total": tally.lines, "blank": tally.blank, "skipped": tally.skipped,
                "accept": tally.accept, "reject": tally.reject, "defer": tally.defer,
            },
            "by_label": labels.iter().map(|(l, c)| (l.clone(), json!({
                "accept": c[Verdict::Accept as usize],
                "defer": c[Verdict::Defer as usize],
                "reject": c[Verdict::Reject as usize],
            }))).collect::<serde_json::Map<_, _>>(),
            "baseline": tally.baseline.line().map(|_| &tally.baseline),
            "stats": finished.stats,
            "tools": finished.health.tools,
            "quarantined": finished.quarantined(),
            "live_mounts": finished.live.iter().map(|c| json!({
                "guest": c.guest, "at_start": c.at_start, "at_end": c.now, "changed": c.changed(),
            })).collect::<Vec<_>>(),
            "timings_ms": {
                "setup": ms(setup),
                "probe": ms(probed - setup),
                "execute": ms(executed - probed),
                "classify_and_write": ms(decided - executed),
                "total": ms(started.elapsed()),
            },
            "exit_code": tally.exit_code(),
        });
        write_json(file, &summary)?;
    }
    eprintln!("plangate: {}", tally.summary(&source));
    if let Some(line) = tally.baseline.line() {
        eprintln!("plangate: {line}");
    }
    eprintln!("plangate: {}", human(&finished, executed - probed));
    Ok(tally.exit_code())
}

fn human(f: &Finished, exec: std::time::Duration) -> String {
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

fn task_case(d: &Decision) -> TestCase {
    let reasons: Vec<String> = d
        .reasons
        .iter()
        .map(|r| {
            serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        })
        .collect();
    let message = d.explanation.join("; ");
    let mut status = match d.decision {
        Verdict::Accept => TestCaseStatus::success(),
        Verdict::Reject => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_type(reasons.join(","));
            s
        }
        Verdict::Defer => TestCaseStatus::skipped(),
    };
    if d.decision != Verdict::Accept {
        status.set_message(message.clone());
        status.set_description(format!("reasons: {}\n{message}", reasons.join(", ")));
    }
    let mut tc = TestCase::new(d.task_id.clone(), status);
    tc.set_classname("plangate.eval");
    tc
}

fn input_case(line: usize, e: &TaskError) -> TestCase {
    let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
    status.set_type("input");
    status.set_message(e.to_string());
    let name = match &e.task_id {
        Some(id) => id.clone(),
        None => format!("line {line}"),
    };
    let mut tc = TestCase::new(name, status);
    tc.set_classname("plangate.eval");
    tc
}
