//! `plangate demo` as a library: the seed's experiment reproduced on real WASM tools in
//! seconds. A seeded batch over the seed world runs through the real harness while a
//! world driver changes the live state beside it, as production did; the naive scorer,
//! the seed's rule and the gate then judge the same executions, side by side.
//!
//! It returns what it measured and prints nothing: the command line owns flags, files,
//! the terminal and exit codes. [`Batch::generate`] draws the batch (its lines can be
//! written out before the run), [`run`] runs and judges it, and the [`Demo`] it returns
//! gives the `--json` report, the HTML page and the terminal table.

mod driver;
mod error;
mod page;
mod results;
mod run;
mod scenario;
mod table;

use std::path::{Path, PathBuf};
use std::time::Instant;

use plangate_gate::decide::Options;
use plangate_report::agreement::Plots;

pub use error::DemoError;
pub use results::DemoReport;

/// How a batch is drawn.
#[derive(Debug, Clone, Copy)]
pub struct BatchConfig {
    /// Tasks in the batch.
    pub tasks: usize,
    /// Samples per task.
    pub samples: usize,
    /// The batch's seed (same seed, same batch), which also seeds the run's epochs.
    pub seed: u64,
    /// Share of tasks whose plan is hallucinated.
    pub hallucinated: f64,
    /// Share of hallucinated tasks on a reference tool whose samples repeat one invented
    /// value: consistent fabrications, which agreement cannot see.
    pub consistent: f64,
}

/// A generated batch over one seed-world folder: labelled samples lines, no results
/// (the run executes them).
#[derive(Debug, Clone)]
pub struct Batch {
    world: PathBuf,
    config: BatchConfig,
    tasks: Vec<scenario::Generated>,
}

impl Batch {
    /// Draws the batch from the real things of the seed world in `world` (its `data/`).
    pub fn generate(world: &Path, config: &BatchConfig) -> Result<Batch, DemoError> {
        if !world.join("catalog.json").is_file() {
            return Err(DemoError::NotAWorld(world.to_path_buf()));
        }
        let world_data = scenario::World::load(world)?;
        let tasks = scenario::generate(
            &world_data,
            &scenario::Config {
                tasks: config.tasks,
                samples: config.samples,
                seed: config.seed,
                hallucinated: config.hallucinated,
                slip: 0.05,
                consistent: config.consistent,
            },
        );
        Ok(Batch {
            world: world.to_path_buf(),
            config: *config,
            tasks,
        })
    }

    /// Each task's samples line (JSONL without the newlines), in batch order.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.tasks.iter().map(|g| g.line.as_str())
    }
}

/// How a batch is run and judged.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The gate's thresholds (the naive scorer's is `arg_accept`; the seed's rule takes
    /// the same with its own boundary).
    pub decide: Options,
    /// Worker threads executing calls (None: the harness's default, one per core).
    pub jobs: Option<usize>,
    /// Whether the world driver changes the live state as the batch runs.
    pub driver: bool,
    /// Rounds of the defer path (0: none).
    pub retry_rounds: usize,
    /// When the demo started: the report's wall time counts from here, so drawing and
    /// writing the batch are part of it.
    pub started: Instant,
}

/// What a demo measured, ready to be shown three ways.
#[derive(Debug, Clone)]
pub struct Demo {
    report: DemoReport,
    plots: Plots,
}

impl Demo {
    /// The report `--json` writes.
    pub fn report(&self) -> &DemoReport {
        &self.report
    }

    /// The self-contained HTML page (table, facts, agreement plots).
    pub fn html(&self) -> String {
        page::render(&self.report, &self.plots)
    }

    /// The table as the terminal shows it, lines ending in newlines.
    pub fn table(&self) -> String {
        table::table_text(&self.report)
    }
}

/// Runs `batch` in one pinned epoch with the world driver beside it, retries its
/// deferrals, and judges it four ways.
pub fn run(batch: &Batch, opts: &RunOptions) -> Result<Demo, DemoError> {
    let (report, plots) = run::run(batch, opts)?;
    Ok(Demo { report, plots })
}
