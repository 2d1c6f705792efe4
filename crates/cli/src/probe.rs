//! `plangate probe`: the tool author's command. Does each `deterministic` declaration
//! hold? Every selected tool's probe arguments run several times in fresh instances in
//! each of K epochs (different seeds and instants): stable everywhere is `verified`,
//! unstable within an epoch is `drift`, stable within but different across epochs is
//! `epoch_sensitive`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use plangate_gate::catalog::ToolSpec;
use plangate_harness::{Evidence, ProbeRun, World, WorldOptions, compare_runs, probe_arguments};
use plangate_sandbox::DEFAULT_INSTANT_UNIX_NS;
use serde::Serialize;

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

/// What the probe found about one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Status {
    /// Byte-identical in every run of every epoch.
    Verified,
    /// Different bytes for identical calls within one epoch: the declaration is false.
    Drift,
    /// Stable within each epoch, different across epochs: it reads the epoch (clock,
    /// seed). The gate can rely on it within one run; the defer path covers the rest.
    EpochSensitive,
    /// Declared nondeterministic: nothing to verify.
    NotDeclared,
    /// Declared deterministic but the catalog gives no `probe` arguments.
    NoProbeArguments,
}

#[derive(Debug, Serialize)]
struct ToolReport {
    name: String,
    declared_deterministic: bool,
    status: Status,
    evidence: Vec<Evidence>,
}

#[derive(Debug, Serialize)]
struct ProbeReport {
    epochs: Vec<String>,
    runs: u64,
    tools: Vec<ToolReport>,
}

/// One day between the probe epochs' instants: far enough that a tool reading the
/// clock at any resolution coarser than a day still shows it.
const EPOCH_SPACING_NS: u64 = 86_400 * 1_000_000_000 + 1_234_567_891;

pub(crate) fn run(args: ProbeArgs) -> Result<u8> {
    let catalog = load_catalog(&args.catalog)?;
    for t in &args.tools {
        if catalog.get(t).is_none() {
            bail!("--tool {t:?}: the catalog has no such tool");
        }
    }
    let selected: BTreeSet<&str> = args.tools.iter().map(String::as_str).collect();
    let tools: Vec<_> = catalog
        .tools()
        .iter()
        .filter(|t| selected.is_empty() || selected.contains(t.name.as_str()))
        .collect();
    let base = catalog_dir(&args.catalog);
    let worlds = (0..args.epochs)
        .map(|i| {
            World::build(
                &catalog,
                &base,
                WorldOptions {
                    seed: i,
                    instant_unix_ns: Some(DEFAULT_INSTANT_UNIX_NS + i * EPOCH_SPACING_NS),
                    ..WorldOptions::default()
                },
            )
            .with_context(|| format!("failed to pin epoch {i} for {}", args.catalog.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    let epoch_ids: Vec<String> = worlds.iter().map(|w| w.epoch().id().to_string()).collect();
    let reports: Vec<ToolReport> = tools
        .into_iter()
        .map(|t| probe_tool(t, &worlds, &epoch_ids, args.runs))
        .collect();
    for r in &reports {
        eprintln!("plangate: probe {}: {}", r.name, describe(r));
    }
    let count = |s: Status| reports.iter().filter(|r| r.status == s).count();
    let (drift, sensitive, unprobed) = (
        count(Status::Drift),
        count(Status::EpochSensitive),
        count(Status::NoProbeArguments),
    );
    let failed = drift + if args.strict { sensitive + unprobed } else { 0 };
    let report = ProbeReport {
        epochs: epoch_ids,
        runs: args.runs,
        tools: reports,
    };
    println!("{}", serde_json::to_string(&report)?);
    eprintln!(
        "plangate: {}",
        closing_line(drift, sensitive, unprobed, args.strict)
    );
    Ok(if failed > 0 { exit::REJECT } else { exit::OK })
}

/// The last line on stderr: every declared-deterministic tool that is not `verified`,
/// counted by kind, and whether that fails the run.
fn closing_line(drift: usize, sensitive: usize, unprobed: usize, strict: bool) -> String {
    if drift + sensitive + unprobed == 0 {
        return "every deterministic declaration verified".into();
    }
    let mut parts = Vec::new();
    if drift > 0 {
        parts.push(format!("{drift} drift (the declaration is false)"));
    }
    let soft = if strict {
        ""
    } else {
        ", allowed without --strict"
    };
    if sensitive > 0 {
        parts.push(format!("{sensitive} epoch-sensitive{soft}"));
    }
    if unprobed > 0 {
        parts.push(format!("{unprobed} without probe arguments{soft}"));
    }
    format!("not verified: {}", parts.join("; "))
}

/// Probes one tool in every epoch: drift within any epoch first, since it falsifies
/// the declaration outright; else differences across epochs, against the first.
fn probe_tool(t: &ToolSpec, worlds: &[World], epoch_ids: &[String], runs: u64) -> ToolReport {
    let probe_args = probe_arguments(t);
    if !t.deterministic || probe_args.is_empty() {
        return ToolReport {
            name: t.name.clone(),
            declared_deterministic: t.deterministic,
            status: if t.deterministic {
                Status::NoProbeArguments
            } else {
                Status::NotDeclared
            },
            evidence: Vec::new(),
        };
    }
    let runs: Vec<ProbeRun> = worlds
        .iter()
        .map(|w| {
            ProbeRun::run(w, &t.name, &probe_args, runs as usize)
                .expect("every catalog tool is in the world")
        })
        .collect();
    let drift: Vec<Evidence> = runs.iter().flat_map(ProbeRun::drift).collect();
    let (status, evidence) = if !drift.is_empty() {
        (Status::Drift, drift)
    } else {
        let across: Vec<Evidence> = runs
            .iter()
            .zip(epoch_ids)
            .skip(1)
            .flat_map(|(r, id)| compare_runs(&runs[0], &epoch_ids[0], r, id))
            .collect();
        if across.is_empty() {
            (Status::Verified, across)
        } else {
            (Status::EpochSensitive, across)
        }
    };
    ToolReport {
        name: t.name.clone(),
        declared_deterministic: true,
        status,
        evidence,
    }
}

fn describe(r: &ToolReport) -> String {
    let diff = r.evidence.iter().find_map(|e| match e {
        Evidence::ProbeDrift { difference, .. } | Evidence::EpochSensitive { difference, .. } => {
            Some(format!(
                " (first difference at byte {}{})",
                difference
                    .byte_offset
                    .map_or_else(|| "-".to_string(), |b| b.to_string()),
                difference
                    .json_path
                    .as_deref()
                    .map_or_else(String::new, |p| format!(", {p}"))
            ))
        }
        _ => None,
    });
    let what = match r.status {
        Status::Verified => "verified: identical in every run and epoch",
        Status::Drift => "DRIFT: identical calls in one epoch answered differently",
        Status::EpochSensitive => "epoch-sensitive: stable within an epoch, differs across epochs",
        Status::NotDeclared => "declared nondeterministic, not probed",
        Status::NoProbeArguments => "declared deterministic but has no probe arguments",
    };
    format!("{what}{}", diff.unwrap_or_default())
}
