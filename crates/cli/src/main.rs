//! The `plangate` binary: parses the command line, runs one subcommand, and is the only
//! place that prints results or picks an exit code.

mod alloc;
mod args;
mod call;
mod catalog;
mod demo;
mod epoch;
mod eval;
mod files;
mod instant;
mod interrupt;
mod lines;
mod merge;
mod outputs;
mod page;
mod probe;
mod score;
mod serve;
mod shard;
mod tally;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use plangate::exit;
use plangate_report::resume::Notice;

/// `score` allocates a small tree per JSON value and frees it a line later: a lot of
/// small, short-lived blocks, which mimalloc serves faster than glibc's malloc.
#[global_allocator]
static GLOBAL: alloc::Mimalloc = alloc::Mimalloc;

/// Tell a fabricated tool-call argument from a flaky tool: score, eval, probe, call,
/// demo, epoch, merge, catalog, serve.
#[derive(Debug, Parser)]
#[command(name = "plangate", version, long_about = None)]
struct Cli {
    /// Log what the run does to stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decide tasks whose calls already carry their observed results (no execution).
    Score(score::ScoreArgs),
    /// Run one WASM tool call under a pinned epoch and print what it did as JSON.
    Call(call::CallArgs),
    /// Execute every sampled plan in one pinned epoch, probe tool determinism, and decide.
    Eval(eval::EvalArgs),
    /// Check each tool's `deterministic` declaration across runs and epochs.
    Probe(probe::ProbeArgs),
    /// Reproduce the seed's experiment: a naive scorer and the gate on one batch.
    Demo(demo::DemoArgs),
    /// Pin an epoch for a catalog and write its manifest, for shards to replay.
    Epoch(epoch::EpochArgs),
    /// Combine the shards of one batch (`eval --shard K/M`) as one run would decide it.
    Merge(merge::MergeArgs),
    /// Write a catalog for a WebAssembly component: one tool per exported function.
    Catalog(catalog::CatalogArgs),
    /// Keep a gate warm behind an HTTP API, and proxy an OpenAI-compatible model.
    Serve(serve::ServeArgs),
}

/// Sends the libraries' `tracing` events to stderr: warnings always, in plangate's own
/// `plangate: warning: ...` shape (a live mount that changed, a module cache refused),
/// and everything down to `-v`'s level with `-v`.
fn log(verbose: u8) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level);
    if verbose == 0 {
        builder.event_format(Warning).init();
    } else {
        builder.init();
    }
}

/// One line per warning: `plangate: warning: MESSAGE key=value ...`.
struct Warning;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for Warning
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "plangate: warning: ")?;
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout with success; everything else is usage.
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(exit::USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    log(cli.verbose);
    // Each call may hold up to 256 files of its own on every worker: the soft limit
    // (often 1024) would be reached by a few hoarding guests before the hard one.
    if let Err(e) = plangate_sandbox::raise_fd_limit() {
        tracing::warn!("cannot raise the open-file limit: {e}");
    }
    let outcome = match cli.command {
        Command::Score(args) => score::run(args),
        Command::Call(args) => call::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Epoch(args) => epoch::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Catalog(args) => catalog::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("plangate: error: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}

/// Prints what a run says about its journal (`--resume`), if anything.
fn say(notice: Option<Notice>) {
    if let Some(n) = notice {
        eprintln!("plangate: {n}");
    }
}
