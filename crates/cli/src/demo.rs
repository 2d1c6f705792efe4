//! `plangate demo`: the seed's experiment, reproduced on real WASM tools in seconds. A
//! seeded batch over the seed world runs through the real harness while a world driver
//! changes the live state beside it, as production did; the naive scorer and the gate
//! then judge the same executions, side by side.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use plangate_gate::baseline::naive;
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{Decision, Options, Rule};
use plangate_gate::json::{self, Value};
use plangate_gate::task::{Label, Task, parse_task_line};
use plangate_harness::{
    Decided, Eval, EvalOptions, Finished, HarnessError, Retried, RetryPlan, RetryReport, World,
    WorldOptions,
};

use crate::args::ThresholdArgs;
use crate::files::{print_stdout, write_file};
use plangate_report::plot::TaskPoint;

use crate::report;
use crate::results::{COLUMNS, Column, DemoReport, RetryPrice, table_rows};
use crate::scenario::{self, Config, Generated};

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// The seed-world folder (data/, live/, catalog.json, writer).
    #[arg(long, value_name = "DIR", default_value = "examples/seed-world")]
    world: PathBuf,
    /// Tasks in the batch.
    #[arg(long, default_value_t = 4000)]
    tasks: usize,
    /// Samples per task (with 5, nothing can be rejected at 0.20).
    #[arg(long, default_value_t = 10)]
    samples: usize,
    /// Seed of the batch (same seed, same batch).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Share of tasks whose plan is hallucinated.
    #[arg(long, default_value_t = 0.3, value_parser = crate::args::share)]
    hallucinated: f64,
    /// Share of hallucinated tasks on a reference tool (a file, user, order or product)
    /// whose samples repeat one invented value: consistent fabrications, which agreement
    /// cannot see.
    #[arg(long, default_value_t = 0.25, value_parser = crate::args::share)]
    consistent: f64,
    /// Run without the world driver: the live state stays still, so nothing drifts.
    #[arg(long)]
    no_driver: bool,
    /// Worker threads executing calls (default: one per core).
    #[arg(long, value_name = "N", value_parser = crate::args::jobs)]
    jobs: Option<usize>,
    /// Write the generated batch (labelled samples JSONL) here.
    #[arg(long, value_name = "FILE")]
    write_samples: Option<PathBuf>,
    /// Write the results as JSON here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write a self-contained HTML report (table, agreement plots) here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Rounds of the defer path: tasks deferred for their epoch or their tools' results
    /// are executed again in a fresh epoch with every source pinned (0: none).
    #[arg(long, value_name = "ROUNDS", default_value_t = 1)]
    retry_deferred: usize,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

pub(crate) fn run(args: DemoArgs) -> Result<u8> {
    let started = Instant::now();
    args.thresholds.check()?;
    check_outputs(&args)?;
    let batch = generate_batch(&args)?;
    let ran = run_batch(&args, &batch)?;
    let elapsed = started.elapsed().as_secs_f64();
    let first = ran.first.iter().map(|d| Ok((d.line, d.decision.clone())));
    let (one_epoch, _) = judge_gate(&batch, first)?;
    let retried = &ran.retried;
    let last = ran.first.iter().map(|d| {
        Ok(match retried.get(&d.line) {
            Some(r) => (d.line, r.decision.clone()),
            None => (d.line, d.decision.clone()),
        })
    });
    let (gate, points) = judge_gate(&batch, last)?;
    let seed_rule = judge_seed_rule(&args.thresholds, &batch, &ran.finished)?;
    let report = demo_report(&args, &batch, ran, [one_epoch, gate], seed_rule, elapsed)?;
    if let Some(path) = &args.json {
        write_file(
            path,
            (serde_json::to_string_pretty(&report)? + "\n").as_bytes(),
        )?;
    }
    if let Some(path) = &args.html {
        write_file(path, report::render(&report, &points).as_bytes())?;
    }
    print_stdout(&table_text(&report))?;
    Ok(crate::exit::OK)
}

/// Refuses, before any work, an output inside the world folder or among the files its
/// catalog reads (its modules), two outputs that name one file, and an output that
/// cannot be written.
fn check_outputs(args: &DemoArgs) -> Result<()> {
    let outputs: Vec<(&str, &Path)> = [
        ("--write-samples", &args.write_samples),
        ("--json", &args.json),
        ("--html", &args.html),
    ]
    .into_iter()
    .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
    .collect();
    let mut inputs = crate::files::Reads::default().folder("--world", &args.world);
    let catalog = args.world.join("catalog.json");
    // A world that cannot be read is refused, with its reason, by the run itself.
    if let Ok(c) = plangate_harness::read_catalog(&catalog) {
        inputs = inputs.catalog("--world's catalog", &catalog, &c);
    }
    crate::files::check_outputs(&outputs, &inputs)
}

/// The seeded batch over the seed world, written out when asked for.
fn generate_batch(args: &DemoArgs) -> Result<Vec<Generated>> {
    let dir = &args.world;
    if !dir.join("catalog.json").is_file() {
        bail!(
            "{} is not a seed-world folder (no catalog.json); run from the repository root or pass --world",
            dir.display()
        );
    }
    let world_data = scenario::World::load(dir)?;
    let batch = scenario::generate(
        &world_data,
        &Config {
            tasks: args.tasks,
            samples: args.samples,
            seed: args.seed,
            hallucinated: args.hallucinated,
            slip: 0.05,
            consistent: args.consistent,
        },
    );
    if let Some(path) = &args.write_samples {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("failed to create {}", path.display()))?,
        );
        for g in &batch {
            writeln!(f, "{}", g.line)?;
        }
        f.flush()?;
    }
    Ok(batch)
}

/// What running the batch produced: the harness's results, the naive scorer's column
/// (it judges each task as it is executed) and what the world driver did.
struct Ran {
    finished: Finished,
    /// The first epoch's decisions, classified once for the retry and both gate
    /// columns.
    first: Vec<Decided>,
    naive: Column,
    driver_actions: Vec<String>,
    /// The defer path's last decision for each task it retried, by line.
    retried: BTreeMap<usize, Retried>,
    retry: RetryReport,
    /// Wall time of the defer path: picking the tasks from the first epoch's decisions,
    /// then its rounds.
    retry_s: f64,
}

/// Runs the batch through the harness in one pinned epoch, with the world driver
/// changing a private copy of the live state beside it.
fn run_batch(args: &DemoArgs, batch: &[Generated]) -> Result<Ran> {
    let dir = &args.world;
    // The driver writes to a private copy of live/, so the demo never changes the
    // repository's fixtures.
    let scratch = tempfile::tempdir().context("failed to make a scratch folder")?;
    let live = scratch.path().join("live");
    copy_tree(&dir.join("live"), &live)?;
    let catalog = private_catalog(dir, &live)?;
    let world = World::build(
        &catalog,
        dir,
        WorldOptions {
            seed: args.seed,
            ..WorldOptions::default()
        },
    )
    .context("failed to pin the epoch (did scripts/build-tools run?)")?;
    let mut opts = EvalOptions {
        decide: args.thresholds.options(),
        ..EvalOptions::default()
    };
    if let Some(j) = args.jobs {
        opts.jobs = j;
    }
    let eval = Eval::start(&world, &catalog, opts.clone());
    let (naive, driver_actions) = execute_with_driver(&eval, args, batch, &live);
    // Finished before the scratch folder goes: the end of the batch rechecks live/.
    let finished = eval.finish()?;
    // The retry epoch snapshots the live state as the driver left it.
    let plan = RetryPlan {
        catalog: &catalog,
        base_dir: dir,
        world: WorldOptions {
            seed: args.seed,
            ..WorldOptions::default()
        },
        eval: opts,
        rounds: args.retry_deferred,
        stop: None,
    };
    let mut tasks_at = |lines: &BTreeSet<usize>| {
        lines
            .iter()
            .map(|&l| {
                parse_task_line(batch[l - 1].line.as_bytes())
                    .map(|t| (l, t))
                    .map_err(|e| format!("generated line {l}: {e}"))
            })
            .collect()
    };
    // The demo judges the first epoch whether or not it retries, so that pass is the
    // first epoch's, not the retry's.
    let first: Vec<Decided> = finished.decisions().collect::<Result<_, _>>()?;
    let retry_started = Instant::now();
    let (retried, retry) = plan.run_from(
        &finished.epoch_id,
        first.iter().cloned().map(Ok),
        &mut tasks_at,
    )?;
    let retry_s = retry_started.elapsed().as_secs_f64();
    Ok(Ran {
        finished,
        first,
        naive,
        driver_actions,
        retried,
        retry,
        retry_s,
    })
}

/// Phase one: every generated task executed, the naive scorer counting each as it
/// finishes, and the driver (unless `--no-driver`) acting on `live` as the batch
/// progresses. Returns the naive column and the driver's log.
fn execute_with_driver(
    eval: &Eval<'_>,
    args: &DemoArgs,
    batch: &[Generated],
    live: &Path,
) -> (Column, Vec<String>) {
    let done = AtomicUsize::new(0);
    let naive_col = Mutex::new(Column::default());
    let threshold = args.thresholds.arg_accept;
    let on_done = |line: usize, task: &Task| {
        let d = naive(task, threshold);
        naive_col.lock().unwrap_or_else(|e| e.into_inner()).count(
            d.decision,
            task.label,
            batch[line - 1].consistent,
            &[],
        );
        done.fetch_add(1, Ordering::Relaxed);
        // The demo counts the naive column itself; nothing waits with the task.
        None
    };
    let total = batch.len();
    let actions = Mutex::new(Vec::new());
    let writer = args.world.join("writer");
    std::thread::scope(|s| {
        if !args.no_driver {
            s.spawn(|| drive(&writer, live, &done, total, &actions));
        }
        eval.execute(&on_done, |feeder| {
            for (i, g) in batch.iter().enumerate() {
                match parse_task_line(g.line.as_bytes()) {
                    Ok(t) => feeder.push(i + 1, t),
                    // The generator writes every line; a bad one is a bug worth stopping on.
                    Err(e) => panic!("generated line {} does not parse: {e}", i + 1),
                }
            }
        });
    });
    (
        naive_col.into_inner().unwrap_or_else(|e| e.into_inner()),
        actions.into_inner().unwrap_or_else(|e| e.into_inner()),
    )
}

/// The gate's side of the comparison: its column and its verdicts counted by reason
/// code and by tool.
struct GateResults {
    column: Column,
    reasons: BTreeMap<String, usize>,
    by_tool: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

/// Counts the gate's decisions (line, decision), and gives each task's point for the
/// HTML plots.
fn judge_gate(
    batch: &[Generated],
    decisions: impl Iterator<Item = Result<(usize, Decision), HarnessError>>,
) -> Result<(GateResults, Vec<TaskPoint<'static>>)> {
    let mut gate = GateResults {
        column: Column::default(),
        reasons: BTreeMap::new(),
        by_tool: BTreeMap::new(),
    };
    let mut points = Vec::with_capacity(batch.len());
    for d in decisions {
        let (line, dec) = d?;
        let dec = &dec;
        let g = &batch[line - 1];
        points.push(TaskPoint {
            tool: g.tool,
            hallucinated: g.hallucinated,
            arg_count: dec.arg_agreement.count,
            arg_n: dec.arg_agreement.n,
            result_agreement: dec.result_agreement.map(|r| r.value),
        });
        *gate
            .by_tool
            .entry(g.tool.to_string())
            .or_default()
            .entry(dec.decision.as_str())
            .or_insert(0) += 1;
        gate.column.count(
            dec.decision,
            label_of(g.hallucinated),
            g.consistent,
            &dec.reasons,
        );
        for r in &dec.reasons {
            let code = serde_json::to_value(r)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            *gate.reasons.entry(code).or_insert(0) += 1;
        }
    }
    gate.column.close();
    Ok((gate, points))
}

/// The seed's decision boundary alone on the same evidence: the comparison's middle
/// column, which shows what the gate's additions change.
fn judge_seed_rule(
    thresholds: &ThresholdArgs,
    batch: &[Generated],
    finished: &Finished,
) -> Result<Column> {
    let mut seed_rule = Column::default();
    let seed_options = Options {
        rule: Rule::Seed,
        ..thresholds.options()
    };
    for d in finished.decisions_with(seed_options) {
        let d = d?;
        let g = &batch[d.line - 1];
        seed_rule.count(
            d.decision.decision,
            label_of(g.hallucinated),
            g.consistent,
            &d.decision.reasons,
        );
    }
    seed_rule.close();
    Ok(seed_rule)
}

/// The whole `--json` report, from the three columns and what the run found.
fn demo_report(
    args: &DemoArgs,
    batch: &[Generated],
    ran: Ran,
    [one_epoch, gate]: [GateResults; 2],
    seed_rule: Column,
    elapsed: f64,
) -> Result<DemoReport> {
    let Ran {
        finished,
        mut naive,
        driver_actions,
        retry,
        retry_s,
        ..
    } = ran;
    naive.close();
    let first_calls = finished.stats.calls_executed + finished.stats.probe_calls;
    let calls = first_calls + retry.calls;
    let price = RetryPrice::of(first_calls, &retry, elapsed - retry_s, retry_s);
    Ok(DemoReport {
        tasks: batch.len(),
        samples: args.samples,
        seed: args.seed,
        hallucinated_tasks: batch.iter().filter(|g| g.hallucinated).count(),
        consistent_fabrications: batch.iter().filter(|g| g.consistent).count(),
        naive,
        seed_rule,
        gate_one_epoch: one_epoch.column,
        gate: gate.column,
        retry,
        retry_price: price,
        quarantined: finished
            .quarantined()
            .into_iter()
            .map(str::to_string)
            .collect(),
        quarantine_evidence: finished
            .health
            .tools
            .iter()
            .filter(|t| t.quarantined)
            .map(|t| Ok((t.name.clone(), serde_json::to_value(&t.evidence)?)))
            .collect::<Result<_>>()?,
        changed_live_mounts: finished
            .changed_live_mounts()
            .into_iter()
            .map(str::to_string)
            .collect(),
        driver_actions,
        epoch_id: finished.epoch_id.clone(),
        calls,
        elapsed_s: elapsed,
        calls_per_s: calls as f64 / elapsed,
        gate_reasons: gate.reasons,
        gate_by_tool: gate.by_tool,
    })
}

fn label_of(hallucinated: bool) -> Option<Label> {
    Some(if hallucinated {
        Label::Hallucinated
    } else {
        Label::Correct
    })
}

/// Acts on the live state at fixed points of the batch's progress, through the world's
/// own writer script: an index segment appended, the config reloaded, the identity
/// cache refilled.
fn drive(writer: &Path, live: &Path, done: &AtomicUsize, total: usize, log: &Mutex<Vec<String>>) {
    // One reload only: a second would swap the config back, and a source that ends as
    // it began looks unchanged to the start/end digests (the witnesses still see it).
    let plan: [(f64, &[&str]); 4] = [
        (0.15, &["append-segment"]),
        (0.30, &["reload-config"]),
        // Re-stamped 50 s old: fresh (answered from the cache) for the rest of a batch of
        // a few seconds, where the first half was answered from the directory.
        (0.45, &["refresh-cache", "50"]),
        (0.60, &["append-segment"]),
    ];
    for (at, action) in plan {
        let target = (at * total as f64) as usize;
        while done.load(Ordering::Relaxed) < target {
            if done.load(Ordering::Relaxed) >= total {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut cmd = Command::new("bash");
        cmd.arg(writer).arg(action[0]).arg(live).args(&action[1..]);
        let line = match cmd.output() {
            Ok(o) if o.status.success() => {
                format!("{} at {:.0}% of tasks", action.join(" "), at * 100.0)
            }
            Ok(o) => format!(
                "{} failed: {}",
                action.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("{} could not start: {e}", action.join(" ")),
        };
        log.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
}

/// The seed world's catalog with every live mount pointed at the private copy.
fn private_catalog(dir: &Path, live: &Path) -> Result<Catalog> {
    let path = dir.join("catalog.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    let mut doc =
        json::parse(&text).with_context(|| format!("failed to parse {}", path.display()))?;
    let Value::Object(root) = &mut doc else {
        bail!("{}: expected an object", path.display())
    };
    let Some(Value::Array(tools)) = root.get_mut("tools") else {
        bail!("{}: no tools", path.display())
    };
    for tool in tools.iter_mut() {
        let Value::Object(t) = tool else { continue };
        let Some(Value::Array(mounts)) = t.get_mut("mounts") else {
            continue;
        };
        for m in mounts.iter_mut() {
            let Value::Object(m) = m else { continue };
            if m.get("mode").and_then(Value::as_str) != Some("live") {
                continue;
            }
            let Some(host) = m.get("host").and_then(Value::as_str) else {
                continue;
            };
            let Some(rest) = host.strip_prefix("live/") else {
                bail!("{}: live mount {host:?} is not under live/", path.display())
            };
            m.insert(
                "host",
                Value::String(live.join(rest).to_string_lossy().into_owned()),
            );
        }
    }
    Catalog::from_value(&doc).with_context(|| format!("invalid catalog {}", path.display()))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("failed to create {}", to.display()))?;
    for e in
        std::fs::read_dir(from).with_context(|| format!("failed to list {}", from.display()))?
    {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("failed to copy {}", src.display()))?;
        }
    }
    Ok(())
}

/// The table as the terminal shows it.
fn table_text(r: &DemoReport) -> String {
    let mut out = String::new();
    write_table(&mut out, r).expect("writing to a String cannot fail");
    out
}

fn write_table(out: &mut String, r: &DemoReport) -> std::fmt::Result {
    use std::fmt::Write as _;
    writeln!(
        out,
        "plangate demo: {} tasks x {} samples over the seed world (seed {})",
        r.tasks, r.samples, r.seed
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<30}{:>14}{:>14}{:>17}{:>16}",
        "", COLUMNS[0].1, COLUMNS[1].1, COLUMNS[2].1, COLUMNS[3].1
    )?;
    for row in table_rows(r) {
        let name = if row.sub {
            format!("  {}", row.name)
        } else {
            row.name.to_string()
        };
        let [a, b, c, d] = &row.cells;
        writeln!(out, "{name:<30}{a:>14}{b:>14}{c:>17}{d:>16}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "mis-declared tools found:  {}",
        if r.quarantined.is_empty() {
            "none".into()
        } else {
            r.quarantined.join(", ")
        }
    )?;
    writeln!(
        out,
        "live sources that changed: {}",
        if r.changed_live_mounts.is_empty() {
            "none".into()
        } else {
            r.changed_live_mounts.join(", ")
        }
    )?;
    writeln!(
        out,
        "world driver:              {}",
        if r.driver_actions.is_empty() {
            "off".into()
        } else {
            r.driver_actions.join("; ")
        }
    )?;
    writeln!(out, "epoch:                     {}", r.epoch_id)?;
    writeln!(
        out,
        "defer path:                {} tasks executed again in {} fully pinned epoch(s), {} calls executed, {} reused",
        r.retry.tasks_retried,
        r.retry.rounds.len(),
        r.retry.calls,
        r.retry.reused
    )?;
    let p = &r.retry_price;
    writeln!(
        out,
        "its price:                 {:.1}% more calls ({} on {}; {:.1}% executed), {:.1}% more wall time ({:.2} s on {:.2} s)",
        p.calls_share * 100.0,
        p.retry_calls,
        p.first_epoch_calls,
        p.executed_share * 100.0,
        p.wall_share * 100.0,
        p.retry_wall_s,
        p.wall_without_retry_s
    )?;
    writeln!(
        out,
        "wall time {:.2} s, {} calls, {:.0} calls/s",
        r.elapsed_s, r.calls, r.calls_per_s
    )?;
    Ok(())
}
