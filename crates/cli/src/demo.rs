//! `plangate demo`: the seed's experiment (crates/demo) on the command line. This module
//! reads its flags, refuses outputs that would overwrite what the run reads, writes the
//! batch, the `--json` report and the `--html` page, and prints the table.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use plangate_demo::{Batch, BatchConfig, RunOptions};

use crate::args::ThresholdArgs;
use crate::files::{print_stdout, write_file};

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
    let batch = Batch::generate(
        &args.world,
        &BatchConfig {
            tasks: args.tasks,
            samples: args.samples,
            seed: args.seed,
            hallucinated: args.hallucinated,
            consistent: args.consistent,
        },
    )?;
    if let Some(path) = &args.write_samples {
        write_samples(path, &batch)?;
    }
    let demo = plangate_demo::run(
        &batch,
        &RunOptions {
            decide: args.thresholds.options(),
            jobs: args.jobs,
            driver: !args.no_driver,
            retry_rounds: args.retry_deferred,
            started,
        },
    )?;
    if let Some(path) = &args.json {
        write_file(
            path,
            (serde_json::to_string_pretty(demo.report())? + "\n").as_bytes(),
        )?;
    }
    if let Some(path) = &args.html {
        write_file(path, demo.html().as_bytes())?;
    }
    print_stdout(&demo.table())?;
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

/// The generated batch as labelled samples JSONL, before the run, so a run that fails
/// still leaves the batch to look at.
fn write_samples(path: &Path, batch: &Batch) -> Result<()> {
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path)
            .with_context(|| format!("failed to create {}", path.display()))?,
    );
    for line in batch.lines() {
        writeln!(f, "{line}")?;
    }
    f.flush()?;
    Ok(())
}
