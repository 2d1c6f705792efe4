//! A whole plangate run (docs/design.md: "The sandbox epoch", "Decision", "Probe and tool health"): the glue between the pure gate
//! and the sandbox, so the CLI only parses flags and writes files.
//!
//! 1. [`World::build`] pins one epoch for a catalog: every tool's module and mounts
//!    (host paths relative to the catalog file), or a recorded manifest replayed.
//! 2. [`Eval::start`] probes every tool declared deterministic (its `probe` arguments,
//!    run twice or more in fresh instances).
//! 3. [`Eval::execute`] runs every call of every sample on a pool of plain threads,
//!    sending canonical JSON with `$from` references substituted, resolves `id` hints
//!    through their resolver tool, collects determinism witnesses, and keeps only a
//!    [`plangate_gate::decide::Prepared`] per task.
//! 4. [`Eval::finish`] rechecks live mounts, quarantines tools, and classifies every task
//!    (phase two), yielding decisions in input order and the tool-health report.
//!
//! A verdict is a value: only setup (catalog, epoch, modules) returns [`HarnessError`].

mod bounded;
mod bridge;
mod catalog_file;
mod component_catalog;
mod error;
mod eval;
mod health;
mod journal;
mod limits;
mod lines;
mod observe;
pub mod pipeline;
mod probe;
pub mod probe_report;
mod record;
mod refs;
mod repeats;
mod resolver;
mod retry;
mod run;
pub mod shard;
mod spill;
pub mod trials;
mod warm;
mod world;

pub use bridge::{ReadPath, catalog_reads, epoch_mount, module_spec};
pub use catalog_file::{
    CATALOG_MAX_BYTES, CatalogFileError, catalog_dir, parse_catalog, read_catalog,
};
pub use component_catalog::{ComponentCatalog, Policy, component_catalog, wit_docs};
pub use error::HarnessError;
pub use eval::{
    ClassifiedTask, Eval, LineOutcome, OnDone, PreparedBatch, TaskQueue, read_quarantine,
};
pub use health::{
    Evidence, FirstDifference, HealthReport, Output, ToolFindings, ToolHealth, first_difference,
};
pub use journal::{CallAt, Chain, Earlier, EvalEntry, Journal, JournalHeader, open_locked};
pub use limits::{JobsOutOfRange, LimitTooLow, LimitsGiven, MAX_JOBS, default_jobs, jobs};
pub use lines::{Line, LineReader, is_blank, too_long};
pub use observe::observed;
/// The manifest of a run's epoch, which front ends write (`--write-epoch`) and replay.
pub use plangate_sandbox::{EpochManifest, hex};
pub use probe::{ProbeRun, compare_runs, probe_arguments};
pub use record::EvalRecord;
pub use refs::{pointer, substitute};
pub use resolver::{SandboxResolver, resolver_answer};
pub use retry::{Attempt, Retried, RetryPlan, RetryReport, RetryRound, TasksAt, retry_gate};
pub use run::{EvalRun, Retries};
pub use spill::{PreparedEntry, Spilled};
pub use warm::{EvalOptions, EvalStats, Executed, WarmGate, judge_tools};
pub use world::{World, WorldOptions};
