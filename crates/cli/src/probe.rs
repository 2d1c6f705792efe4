//! `plangate probe`: the tool author's command. Does each `deterministic` declaration
//! hold? The probe itself is the harness's ([`probe_declarations`]); this file is the
//! flags, the lines on stderr, the report on stdout and the exit code.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use plangate_harness::probe_report::{ProbeOptions, describe, probe_declarations};

use crate::exit;
use crate::files::{catalog_dir, load_catalog};

#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// Tool catalog; module and mount paths are relative to it.
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Probe only this tool (repeatable; default: every tool in the catalog).
    #[arg(long = "tool", value_name = "NAME")]
    tools: Vec<String>,
    /// Calls per probe argument in each epoch, each in a fresh instance.
    #[arg(long, default_value_t = 2, value_name = "K", value_parser = clap::value_parser!(u64).range(2..))]
    runs: u64,
    /// Epochs to probe in, each with its own seed and instant (2 or more tells
    /// epoch-sensitive tools apart).
    #[arg(long, default_value_t = 2, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// Also fail (exit 1) when a tool declared deterministic is not `verified`:
    /// epoch-sensitive, or without probe arguments. What a tool author's CI should run.
    #[arg(long)]
    strict: bool,
}

pub(crate) fn run(args: ProbeArgs) -> Result<u8> {
    let catalog = load_catalog(&args.catalog)?;
    for t in &args.tools {
        if catalog.get(t).is_none() {
            bail!("--tool {t:?}: the catalog has no such tool");
        }
    }
    let base_dir = catalog_dir(&args.catalog);
    let report = probe_declarations(&ProbeOptions {
        catalog: &catalog,
        base_dir: &base_dir,
        tools: args.tools.clone(),
        runs: args.runs,
        epochs: args.epochs,
    })
    .map_err(|e| {
        let context = format!("{e} for {}", args.catalog.display());
        anyhow::Error::new(*e.source).context(context)
    })?;
    for r in &report.tools {
        eprintln!("plangate: probe {}: {}", r.name, describe(r));
        for f in &r.findings {
            eprintln!("plangate: probe {}:   {f}", r.name);
        }
    }
    let counts = report.counts();
    crate::files::print_stdout(&(serde_json::to_string(&report)? + "\n"))?;
    eprintln!("plangate: {}", counts.closing_line(args.strict));
    Ok(if counts.failed(args.strict) > 0 {
        exit::REJECT
    } else {
        exit::OK
    })
}
