//! The `plangate` binary: parses the command line, runs one subcommand, and is the only
//! place that prints results or picks an exit code.

mod call;
mod exit;
mod score;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tell a fabricated tool-call argument from a flaky tool.
#[derive(Debug, Parser)]
#[command(name = "plangate", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decide tasks whose calls already carry their observed results (no execution).
    Score(score::ScoreArgs),
    /// Run one WASM tool call under a pinned epoch and print what it did as JSON.
    Call(call::CallArgs),
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
    let outcome = match cli.command {
        Command::Score(args) => score::run(args),
        Command::Call(args) => call::run(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("plangate: error: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}
