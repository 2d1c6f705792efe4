//! Command-line arguments that several commands share (the files a deciding command
//! reads and writes, the thresholds, per-call limits, the baseline scorer), so each
//! command flattens the same flags with the same help and defaults.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use plangate_gate::decide::{Options, Rule};
use plangate_gate::seed::SeedOptions;
use plangate_gate::stats::Ratio;
use plangate_gate::task::Task;
use plangate_harness::{EvalOptions, WorldOptions};
use plangate_report::plan::OutputPlan;
use plangate_sandbox::Limits;

/// The files every deciding command reads and writes.
#[derive(Debug, Clone, Args)]
pub(crate) struct IoArgs {
    /// Tool catalog (JSON: native, MCP tools/list, OpenAI Chat Completions or Responses
    /// tools, Anthropic tools, or function docs as BFCL, Gorilla and Gemini write them);
    /// module and mount paths are relative to it.
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: PathBuf,
    /// Samples, one task per line (JSONL); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub(crate) samples: PathBuf,
    /// Write decisions here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// Longest samples line read, in bytes; a longer line is a bad line (skipped,
    /// reported), so a file with no newline cannot exhaust memory.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) max_line_bytes: u64,
}

/// The reports a run writes beside its decisions (`eval`, `merge`; `score` writes its
/// page alone).
#[derive(Debug, Clone, Args)]
pub(crate) struct ReportArgs {
    /// Write tool health (verified, quarantined, evidence) here.
    #[arg(long, value_name = "FILE")]
    pub(crate) tool_health: Option<PathBuf>,
    /// Write JUnit XML here: one testcase per task, reject fails, defer is skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) junit: Option<PathBuf>,
    /// Write the run summary (counts, tool health, epoch manifest, timings) here.
    #[arg(long, value_name = "FILE")]
    pub(crate) summary_json: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) page: PageArgs,
}

impl ReportArgs {
    /// The run's output plan for these reports, with the decisions in `out` (None:
    /// standard output).
    pub(crate) fn plan(&self, out: Option<&std::path::Path>) -> OutputPlan {
        OutputPlan {
            decisions: out.map(std::path::Path::to_path_buf),
            tool_health: self.tool_health.clone(),
            junit: self.junit.clone(),
            summary: self.summary_json.clone(),
            page: self.page.html.clone(),
            ..OutputPlan::default()
        }
    }
}

/// The run's page (`score`, `eval`, `merge`).
#[derive(Debug, Clone, Args)]
pub(crate) struct PageArgs {
    /// Write the run as one self-contained HTML page here (counts, reasons, agreement
    /// plots, tool health, the defer path, the tasks worth a look), which opens offline.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
}

/// Thresholds shared by every deciding command.
#[derive(Debug, Clone, Args)]
pub(crate) struct ThresholdArgs {
    /// Argument agreement at or above which a plan can be accepted.
    #[arg(long, default_value = "0.80", value_name = "RATIO")]
    pub(crate) arg_accept: Ratio,
    /// Argument agreement below which a plan can be rejected.
    #[arg(long, default_value = "0.20", value_name = "RATIO")]
    pub(crate) arg_reject: Ratio,
    /// Result agreement at or above which an agreeing plan is accepted.
    #[arg(long, default_value = "0.80", value_name = "RATIO")]
    pub(crate) result_accept: Ratio,
    /// Result agreement below which the tool is suspect.
    #[arg(long, default_value = "0.50", value_name = "RATIO")]
    pub(crate) result_suspect: Ratio,
    /// Fewest samples a task needs to be accepted or rejected.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub(crate) min_samples: usize,
}

impl ThresholdArgs {
    /// The gate's options.
    pub(crate) fn options(&self) -> Options {
        Options {
            arg_accept: self.arg_accept,
            arg_reject: self.arg_reject,
            result_accept: self.result_accept,
            result_suspect: self.result_suspect,
            min_samples: self.min_samples,
            rule: Rule::Gate,
        }
    }

    /// Refuses thresholds out of order, naming both flags: a usage error before any work.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        self.options().check().map_err(|e| {
            let flag = |name: &str| format!("--{}", name.replace('_', "-"));
            anyhow::anyhow!(
                "{} {} is above {} {}: {} must be at most {}",
                flag(e.lower),
                e.lower_value,
                flag(e.upper),
                e.upper_value,
                flag(e.lower),
                flag(e.upper)
            )
        })
    }

    /// The same thresholds as the seed's code takes them: floats, and no suspect level.
    pub(crate) fn seed_options(&self) -> SeedOptions {
        SeedOptions::from_gate(&self.options())
    }
}

/// Parses a share: a finite number from 0 to 1 (`nan`, `inf` and 1.5 are refused).
pub(crate) fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a share from 0 to 1 such as 0.25, found {s:?}"
        )),
    }
}

/// Parses `--jobs`: a thread count from 1 to [`plangate_harness::MAX_JOBS`].
pub(crate) fn jobs(s: &str) -> Result<usize, String> {
    let range = plangate_harness::JobsOutOfRange.to_string();
    let n = s.parse::<usize>().map_err(|_| range)?;
    plangate_harness::jobs(Some(n)).map_err(|e| e.to_string())
}

/// Per-call limits, shared by every command that runs tools.
#[derive(Debug, Clone, Args)]
pub(crate) struct LimitArgs {
    /// Fuel per call: the deterministic CPU budget. At least 1: with none, every call
    /// would run out of fuel and the run would judge nothing.
    #[arg(long, default_value_t = Limits::default().fuel, value_parser = clap::value_parser!(u64).range(1..))]
    fuel: u64,
    /// Linear memory limit per call, MiB (at least 1).
    #[arg(long, default_value_t = Limits::default().memory_mb, value_parser = clap::value_parser!(u64).range(1..))]
    memory_mb: u64,
    /// Wall-time limit per call, ms (a safety net; fuel is the deterministic bound; at
    /// least 1).
    #[arg(long, default_value_t = Limits::default().wall_ms, value_parser = clap::value_parser!(u64).range(1..))]
    timeout_ms: u64,
    /// Bytes of stdout (and of stderr) kept before a call ends as `output_limit`.
    #[arg(long, default_value_t = Limits::default().output_bytes)]
    output_bytes: usize,
}

impl LimitArgs {
    /// The limits, checked by the harness as every front end's are (the flags' own
    /// ranges refuse the same values first, with the flag's name).
    pub(crate) fn limits(&self) -> Result<Limits, plangate_harness::LimitTooLow> {
        plangate_harness::LimitsGiven {
            fuel: Some(self.fuel),
            memory_mb: Some(self.memory_mb),
            timeout_ms: Some(self.timeout_ms),
            output_bytes: Some(self.output_bytes),
        }
        .limits()
    }
}

/// How a command that executes tools pins its epoch and starts its tools' health
/// (`eval`, and `serve`'s warm gate), so both take the same flags.
#[derive(Debug, Clone, Args)]
pub(crate) struct ExecArgs {
    /// Replay this epoch manifest instead of pinning a new epoch.
    #[arg(long, value_name = "FILE")]
    pub(crate) epoch: Option<PathBuf>,
    /// Save the epoch manifest used, to replay the run later.
    #[arg(long, value_name = "FILE")]
    pub(crate) write_epoch: Option<PathBuf>,
    /// Start from an earlier run's tool-health file: its quarantined tools stay quarantined.
    #[arg(long, value_name = "FILE")]
    pub(crate) quarantine: Option<PathBuf>,
    /// A new epoch's random seed.
    #[arg(long, default_value_t = 0)]
    pub(crate) seed: u64,
    /// Calls per probe argument for tools declared deterministic (0 skips the probe:
    /// every tool stays unverified, so nothing can be rejected).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub(crate) probe_runs: usize,
    /// Worker threads executing calls (default: one per core).
    #[arg(long, value_name = "N", value_parser = jobs)]
    pub(crate) jobs: Option<usize>,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
}

impl ExecArgs {
    /// `inputs` with the files these flags read (`--epoch`, `--quarantine`), which no
    /// output may name.
    pub(crate) fn reads(&self, mut inputs: crate::files::Reads) -> crate::files::Reads {
        if let Some(p) = &self.epoch {
            inputs = inputs.file("--epoch", p);
        }
        if let Some(p) = &self.quarantine {
            inputs = inputs.file("--quarantine", p);
        }
        inputs
    }

    /// The epoch's options (the manifest to replay is read by the caller) and how its
    /// tools are probed, executed and decided with `thresholds`; `--quarantine` read.
    pub(crate) fn options(
        &self,
        thresholds: &ThresholdArgs,
    ) -> anyhow::Result<(WorldOptions, EvalOptions)> {
        let world = WorldOptions {
            random_seed: self.seed,
            limits: self.limits.limits()?,
            ..WorldOptions::default()
        };
        let mut eval = EvalOptions {
            probe_runs: self.probe_runs,
            decide: thresholds.options(),
            quarantine: self
                .quarantine
                .as_deref()
                .map(plangate_harness::read_quarantine)
                .transpose()?,
            ..EvalOptions::default()
        };
        if let Some(j) = self.jobs {
            eval.jobs = j;
        }
        Ok((world, eval))
    }
}

/// A scorer to compare the gate against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Baseline {
    /// One agreement over raw arguments and results together, reject below 0.80.
    Naive,
}

/// Whether a task is also scored the naive way: when asked for, and always for a
/// labelled task, whose false-positive share is the comparison's point.
pub(crate) fn compares_baseline(asked: Option<Baseline>, task: &Task) -> bool {
    plangate_gate::score::compares_baseline(asked.is_some(), task)
}
