//! `plangate demo`: the seed's experiment, reproduced on real WASM tools in seconds. A
//! seeded batch over the seed world runs through the real harness while a world driver
//! changes the live state beside it, as production did; the naive scorer and the gate
//! then judge the same executions, side by side.

use std::collections::BTreeMap;
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
use plangate_gate::decide::{Decision, Reason, Rule, Verdict};
use plangate_gate::json::{self, Value};
use plangate_gate::task::{Label, Task, parse_task_line};
use plangate_harness::{Eval, EvalOptions, World, WorldOptions};
use serde::Serialize;

use crate::report::{self, TaskPoint};
use crate::scenario::{self, Config};
use crate::score::ThresholdArgs;

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
    #[arg(long, default_value_t = 0.3)]
    hallucinated: f64,
    /// Share of hallucinated tasks on a reference tool (a file, user, order or product)
    /// whose samples repeat one invented value: consistent fabrications, which agreement
    /// cannot see.
    #[arg(long, default_value_t = 0.25)]
    consistent: f64,
    /// Run without the world driver: the live state stays still, so nothing drifts.
    #[arg(long)]
    no_driver: bool,
    /// Worker threads executing calls (default: one per core).
    #[arg(long, value_name = "N")]
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
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// One scorer's column of the table.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Column {
    pub(crate) rejected: usize,
    pub(crate) rejected_correct: usize,
    /// Share of rejected plans that were correct.
    pub(crate) false_positive_rate: f64,
    pub(crate) deferred: usize,
    pub(crate) accepted: usize,
    /// Hallucinated plans rejected.
    pub(crate) hallucinations_caught: usize,
    pub(crate) accepted_hallucinated: usize,
    /// Consistent fabrications (one invented value repeated in nearly every sample):
    /// rejected for disagreeing arguments.
    pub(crate) consistent_caught_by_agreement: usize,
    /// Consistent fabrications rejected for a referential miss.
    pub(crate) consistent_caught_by_referential_miss: usize,
    pub(crate) consistent_deferred: usize,
    pub(crate) consistent_accepted: usize,
}

impl Column {
    fn count(&mut self, v: Verdict, label: Option<Label>, consistent: bool, reasons: &[Reason]) {
        let hallucinated = label == Some(Label::Hallucinated);
        if consistent {
            match v {
                Verdict::Reject if reasons.contains(&Reason::ReferentialMiss) => {
                    self.consistent_caught_by_referential_miss += 1;
                }
                Verdict::Reject => self.consistent_caught_by_agreement += 1,
                Verdict::Defer => self.consistent_deferred += 1,
                Verdict::Accept => self.consistent_accepted += 1,
            }
        }
        match v {
            Verdict::Reject => {
                self.rejected += 1;
                if hallucinated {
                    self.hallucinations_caught += 1;
                } else {
                    self.rejected_correct += 1;
                }
            }
            Verdict::Defer => self.deferred += 1,
            Verdict::Accept => {
                self.accepted += 1;
                if hallucinated {
                    self.accepted_hallucinated += 1;
                }
            }
        }
    }
    fn close(&mut self) {
        self.false_positive_rate = if self.rejected == 0 {
            0.0
        } else {
            self.rejected_correct as f64 / self.rejected as f64
        };
    }
}

/// What `--json` writes.
#[derive(Debug, Serialize)]
pub(crate) struct DemoReport {
    pub(crate) tasks: usize,
    pub(crate) samples: usize,
    pub(crate) seed: u64,
    pub(crate) hallucinated_tasks: usize,
    /// Hallucinated tasks whose samples repeat one invented value.
    pub(crate) consistent_fabrications: usize,
    pub(crate) naive: Column,
    /// The seed's decision boundary alone, on the same canonical evidence.
    pub(crate) seed_rule: Column,
    pub(crate) gate: Column,
    pub(crate) quarantined: Vec<String>,
    /// Each quarantined tool's evidence (probe drift, witnesses), as tool-health.json has it.
    pub(crate) quarantine_evidence: BTreeMap<String, serde_json::Value>,
    pub(crate) changed_live_mounts: Vec<String>,
    pub(crate) driver_actions: Vec<String>,
    pub(crate) epoch_id: String,
    pub(crate) calls: usize,
    pub(crate) elapsed_s: f64,
    pub(crate) calls_per_s: f64,
    /// Gate decisions by reason code, for the curious.
    pub(crate) gate_reasons: BTreeMap<String, usize>,
    /// Gate verdicts per tool the plans were drawn for (`a>b` for a two-step chain).
    pub(crate) gate_by_tool: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

pub(crate) fn run(args: DemoArgs) -> Result<u8> {
    let started = Instant::now();
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
    let eval = Eval::start(&world, &catalog, opts);

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
    };
    let total = batch.len();
    let actions = Mutex::new(Vec::new());
    let writer = dir.join("writer");
    std::thread::scope(|s| -> Result<()> {
        if !args.no_driver {
            s.spawn(|| drive(&writer, &live, &done, total, &actions));
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
        Ok(())
    })?;
    let finished = eval.finish()?;
    let elapsed = started.elapsed().as_secs_f64();

    let mut gate = Column::default();
    let mut reasons = BTreeMap::new();
    let mut by_tool: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let labels: Vec<bool> = batch.iter().map(|g| g.hallucinated).collect();
    let mut points = Vec::with_capacity(total);
    for d in finished.decisions() {
        let dec: &Decision = &d.decision;
        points.push(TaskPoint {
            tool: batch[d.line - 1].tool,
            hallucinated: labels[d.line - 1],
            arg_count: dec.arg_agreement.count,
            arg_n: dec.arg_agreement.n,
            result_agreement: dec.result_agreement.map(|r| r.value),
        });
        *by_tool
            .entry(batch[d.line - 1].tool.to_string())
            .or_default()
            .entry(dec.decision.as_str())
            .or_insert(0) += 1;
        gate.count(
            dec.decision,
            label_of(labels[d.line - 1]),
            batch[d.line - 1].consistent,
            &dec.reasons,
        );
        for r in &dec.reasons {
            let code = serde_json::to_value(r)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            *reasons.entry(code).or_insert(0) += 1;
        }
    }
    gate.close();
    let mut seed_rule = Column::default();
    let seed_options = plangate_gate::decide::Options {
        rule: Rule::Seed,
        ..args.thresholds.options()
    };
    for d in finished.decisions_with(seed_options) {
        let g = &batch[d.line - 1];
        seed_rule.count(
            d.decision.decision,
            label_of(g.hallucinated),
            g.consistent,
            &d.decision.reasons,
        );
    }
    seed_rule.close();
    let mut naive_col = naive_col.into_inner().unwrap_or_else(|e| e.into_inner());
    naive_col.close();
    let calls = finished.stats.calls_executed + finished.stats.probe_calls;
    let report = DemoReport {
        tasks: total,
        samples: args.samples,
        seed: args.seed,
        hallucinated_tasks: labels.iter().filter(|h| **h).count(),
        consistent_fabrications: batch.iter().filter(|g| g.consistent).count(),
        naive: naive_col,
        seed_rule,
        gate,
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
        driver_actions: actions.into_inner().unwrap_or_else(|e| e.into_inner()),
        epoch_id: finished.epoch_id.clone(),
        calls,
        elapsed_s: elapsed,
        calls_per_s: calls as f64 / elapsed,
        gate_reasons: reasons,
        gate_by_tool: by_tool,
    };
    print_table(&report);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, report::render(&report, &points))
            .with_context(|| format!("failed to write {}", path.display()))?;
    }
    Ok(crate::exit::OK)
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

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// One row of the demo's table: a stable key (the HTML's cell ids), its label, whether
/// it details the row above, and the naive scorer's, the seed's rule's and the gate's
/// cells. The terminal table and the HTML report both print these.
pub(crate) struct Row {
    pub(crate) key: &'static str,
    pub(crate) name: &'static str,
    pub(crate) sub: bool,
    pub(crate) cells: [String; 3],
}

/// The table's rows, once for both outputs.
pub(crate) fn table_rows(r: &DemoReport) -> Vec<Row> {
    type Cell = fn(&Column, &DemoReport) -> String;
    let rows: [(&'static str, &'static str, bool, Cell); 11] = [
        ("rejected", "rejected", false, |c, _| c.rejected.to_string()),
        ("rejected_correct", "of which correct", true, |c, _| {
            c.rejected_correct.to_string()
        }),
        (
            "false_positive_rate",
            "false-positive share",
            true,
            |c, _| pct(c.false_positive_rate),
        ),
        ("deferred", "deferred", false, |c, _| c.deferred.to_string()),
        ("accepted", "accepted", false, |c, _| c.accepted.to_string()),
        (
            "hallucinations_caught",
            "hallucinations caught",
            false,
            |c, r| format!("{} of {}", c.hallucinations_caught, r.hallucinated_tasks),
        ),
        (
            "accepted_hallucinated",
            "hallucinations accepted",
            false,
            |c, _| c.accepted_hallucinated.to_string(),
        ),
        (
            "consistent_caught_by_agreement",
            "consistent: by disagreement",
            false,
            |c, r| {
                format!(
                    "{} of {}",
                    c.consistent_caught_by_agreement, r.consistent_fabrications
                )
            },
        ),
        (
            "consistent_caught_by_referential_miss",
            "by referential miss",
            true,
            |c, _| c.consistent_caught_by_referential_miss.to_string(),
        ),
        ("consistent_deferred", "deferred", true, |c, _| {
            c.consistent_deferred.to_string()
        }),
        ("consistent_accepted", "accepted", true, |c, _| {
            c.consistent_accepted.to_string()
        }),
    ];
    rows.into_iter()
        .map(|(key, name, sub, cell)| Row {
            key,
            name,
            sub,
            cells: [cell(&r.naive, r), cell(&r.seed_rule, r), cell(&r.gate, r)],
        })
        .collect()
}

/// The column heads, in the order of [`Row::cells`], with the HTML's id prefixes.
pub(crate) const COLUMNS: [(&str, &str); 3] = [
    ("naive", "naive scorer"),
    ("seed", "seed's rule"),
    ("gate", "plangate gate"),
];

fn print_table(r: &DemoReport) {
    println!(
        "plangate demo: {} tasks x {} samples over the seed world (seed {})",
        r.tasks, r.samples, r.seed
    );
    println!();
    println!(
        "{:<30}{:>14}{:>14}{:>16}",
        "", COLUMNS[0].1, COLUMNS[1].1, COLUMNS[2].1
    );
    for row in table_rows(r) {
        let name = if row.sub {
            format!("  {}", row.name)
        } else {
            row.name.to_string()
        };
        let [a, b, c] = &row.cells;
        println!("{name:<30}{a:>14}{b:>14}{c:>16}");
    }
    println!();
    println!(
        "mis-declared tools found:  {}",
        if r.quarantined.is_empty() {
            "none".into()
        } else {
            r.quarantined.join(", ")
        }
    );
    println!(
        "live sources that changed: {}",
        if r.changed_live_mounts.is_empty() {
            "none".into()
        } else {
            r.changed_live_mounts.join(", ")
        }
    );
    println!(
        "world driver:              {}",
        if r.driver_actions.is_empty() {
            "off".into()
        } else {
            r.driver_actions.join("; ")
        }
    );
    println!("epoch:                     {}", r.epoch_id);
    println!(
        "wall time {:.2} s, {} calls, {:.0} calls/s",
        r.elapsed_s, r.calls, r.calls_per_s
    );
}
