//! `plangate probe`'s verdict on each `deterministic` declaration (docs/design.md,
//! "Probe and tool health"): every selected tool's probe arguments run several times
//! in fresh instances in each of K epochs (different seeds and instants): stable
//! everywhere is `verified`, unstable within an epoch is `drift`, stable within but
//! different across epochs is `epoch_sensitive`, each named by the epoch input behind
//! it. What the catalog alone contradicts is found before anything runs.

use std::path::Path;

use plangate_gate::canon::{Invalid, canonicalize_arguments};
use plangate_gate::catalog::{Catalog, NetworkMode, SourceMode, ToolSpec};
use plangate_sandbox::DEFAULT_INSTANT_UNIX_NS;
use serde::Serialize;

use crate::error::HarnessError;
use crate::health::Evidence;
use crate::probe::{ProbeRun, compare_runs, probe_arguments};
use crate::world::{World, WorldOptions};

/// What to probe and how hard.
#[derive(Debug, Clone)]
pub struct ProbeOptions<'a> {
    /// The catalog.
    pub catalog: &'a Catalog,
    /// The folder its module and mount paths are relative to.
    pub base_dir: &'a Path,
    /// The tools to probe (empty: every tool in the catalog). Names must be in it.
    pub tools: Vec<String>,
    /// Calls per probe argument in each epoch, each in a fresh instance (2 or more).
    pub runs: u64,
    /// Epochs to probe in, each with its own seed and instant.
    pub epochs: u64,
}

/// A probe epoch could not be pinned.
#[derive(Debug, thiserror::Error)]
#[error("failed to pin a probe epoch (seed {random_seed})")]
pub struct ProbeError {
    /// The epoch's seed.
    pub random_seed: u64,
    /// Why.
    #[source]
    pub source: Box<HarnessError>,
}

/// Probes the selected tools of `opts.catalog` in `opts.epochs` epochs. Epoch after
/// epoch, each pinned only when the one before has run: a pinned mount the host
/// changes meanwhile shows in the next epoch's snapshot, and is named as the host's
/// doing rather than the tool's.
pub fn probe_declarations(opts: &ProbeOptions<'_>) -> Result<ProbeReport, ProbeError> {
    let tools: Vec<&ToolSpec> = (opts.catalog.tools().iter())
        .filter(|t| opts.tools.is_empty() || opts.tools.contains(&t.name))
        .collect();
    let runnable: Vec<bool> = tools.iter().map(|t| runnable(t)).collect();
    let mut worlds = Vec::new();
    let mut runs: Vec<Vec<ProbeRun>> = vec![Vec::new(); tools.len()];
    for i in 0..opts.epochs {
        let w = probe_world(opts, i, i)?;
        for (k, t) in tools.iter().enumerate().filter(|(k, _)| runnable[*k]) {
            runs[k].push(run_in(&w, t, opts.runs));
        }
        worlds.push(w);
    }
    let epoch_ids: Vec<String> = worlds.iter().map(|w| w.epoch().id().to_string()).collect();
    let probe = Probe {
        opts,
        worlds: &worlds,
        epoch_ids: &epoch_ids,
        calendar: std::cell::OnceCell::new(),
    };
    let reports = (tools.into_iter().zip(&runs))
        .map(|(t, r)| probe.tool(t, r))
        .collect();
    Ok(ProbeReport {
        epochs: epoch_ids,
        runs: opts.runs,
        tools: reports,
    })
}

/// A tool's status after the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
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
    /// Declared deterministic on a live clock or live randomness: false before anything
    /// runs (the tool is not probed).
    Contradiction,
    /// A `probe` argument breaks the tool's schema: the probe would verify the error
    /// path, not the tool (not probed).
    InvalidProbeArguments,
}

/// What the probe found about one tool, as `plangate probe` reports it.
#[derive(Debug, Serialize)]
pub struct ToolReport {
    /// The tool.
    pub name: String,
    /// What its catalog entry declares.
    pub declared_deterministic: bool,
    /// What the probe found.
    pub status: Status,
    /// What the catalog says that decided the status before anything ran, or that the
    /// verdict depends on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// For an epoch-sensitive tool: the epoch inputs that, varied alone, change its
    /// output (`instant`, `seed`, `mount /guest`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub differs_by: Vec<String>,
    /// Where the runs parted.
    pub evidence: Vec<Evidence>,
}

/// What `plangate probe` prints: the epochs probed in, the runs per argument, and each
/// tool's report.
#[derive(Debug, Serialize)]
pub struct ProbeReport {
    /// Each probe epoch's id.
    pub epochs: Vec<String>,
    /// Calls per probe argument in each epoch.
    pub runs: u64,
    /// Each selected tool, in catalog order.
    pub tools: Vec<ToolReport>,
}

impl ProbeReport {
    /// Declared-deterministic tools not verified, by kind.
    pub fn counts(&self) -> Counts {
        let count = |s: Status| self.tools.iter().filter(|r| r.status == s).count();
        Counts {
            drift: count(Status::Drift),
            sensitive: count(Status::EpochSensitive),
            unprobed: count(Status::NoProbeArguments),
            contradictions: count(Status::Contradiction),
            invalid: count(Status::InvalidProbeArguments),
        }
    }
}

/// Probe epochs' instants (Unix seconds), after the sandbox's default (epoch 0,
/// 2025-01-01T00:00:00Z, a Wednesday): epoch 1 differs from it in hour of day,
/// weekday, month, year and daylight-saving state, and the others vary them again, and fall
/// on both sides of daylight-saving changes, so a tool reading the date or the hour at
/// any resolution shows it in the second epoch already. Epochs past the table repeat it
/// a year later each time round.
const PROBE_INSTANTS_S: [u64; 6] = [
    1_815_830_730, // 2027-07-17T13:25:30Z: a Saturday afternoon in northern summer time
    1_772_955_000, // 2026-03-08T07:30:00Z: a Sunday, just after US clocks spring forward
    1_806_537_599, // 2027-03-31T23:59:59Z: a Wednesday, last second of a month and quarter
    1_951_377_720, // 2031-11-02T09:22:00Z: a Sunday, just after US clocks fall back
    1_866_672_000, // 2029-02-25T00:00:00Z: a Sunday midnight in late winter
    1_835_550_000, // 2028-03-01T19:00:00Z: a Wednesday evening, the day after a leap day
];

/// The calendar classes a tool may read from its clock, one instant each (UTC), beside
/// epoch 0's (a Wednesday midnight, the first second of a year, in winter). A tool with
/// a pinned clock whose K epochs all agree is called at each, with epoch 0's seed: one
/// that answers otherwise than at epoch 0 reads the calendar (a business-hours price, a
/// weekend rate, a month-end batch, a time-zone label, a leap-day rule), and is
/// epoch-sensitive, the class named. Each instant differs from epoch 0 in as few classes
/// as it can besides its own.
const CALENDAR: [(&str, u64); 8] = [
    ("a weekday in working hours", 1_736_850_600), // 2025-01-14T10:30:00Z, a Tuesday
    ("a weekend day", 1_737_198_000),              // 2025-01-18T11:00:00Z, a Saturday
    ("a weekend night", 1_737_329_400),            // 2025-01-19T23:30:00Z, a Sunday
    ("the last second of a month", 1_738_367_999), // 2025-01-31T23:59:59Z, a Friday
    ("the last second of a year", 1_767_225_599),  // 2025-12-31T23:59:59Z
    ("just before a DST change", 1_741_503_599),   // 2025-03-09T06:59:59Z: US, 1:59 EST
    ("just after a DST change", 1_741_503_600),    // 2025-03-09T07:00:00Z: US, 3:00 EDT
    ("a leap day", 1_835_478_000),                 // 2028-02-29T23:00:00Z, a Tuesday night
];

/// The instant of probe epoch `i`.
fn probe_instant(i: u64) -> u64 {
    if i == 0 {
        return DEFAULT_INSTANT_UNIX_NS;
    }
    let table = PROBE_INSTANTS_S.len() as u64;
    let (round, at) = ((i - 1) / table, (i - 1) % table);
    const YEAR_S: u64 = 365 * 86_400;
    (PROBE_INSTANTS_S[at as usize] + round * YEAR_S) * 1_000_000_000
}

/// A probe epoch: `seed` and the instant of epoch `instant_of`.
fn probe_world(opts: &ProbeOptions<'_>, seed: u64, instant_of: u64) -> Result<World, ProbeError> {
    world_at(opts, seed, probe_instant(instant_of))
}

/// An epoch pinned with `seed` at `instant_ns`.
fn world_at(opts: &ProbeOptions<'_>, seed: u64, instant_ns: u64) -> Result<World, ProbeError> {
    World::build(
        opts.catalog,
        opts.base_dir,
        WorldOptions {
            random_seed: seed,
            instant_unix_ns: Some(instant_ns),
            ..WorldOptions::default()
        },
    )
    .map_err(|source| ProbeError {
        random_seed: seed,
        source: Box::new(source),
    })
}

/// What the catalog alone says is wrong with a tool's declaration, before anything
/// runs: the status it fails with, and why.
fn static_findings(t: &ToolSpec) -> Option<(Status, Vec<String>)> {
    if !t.deterministic {
        return None;
    }
    let mut live = Vec::new();
    if t.clock == SourceMode::Live {
        live.push(
            "`deterministic` with `clock: \"live\"`: it reads the host's clock, which no two calls share"
                .to_string(),
        );
    }
    if t.random == SourceMode::Live {
        live.push(
            "`deterministic` with `random: \"live\"`: it reads the host's randomness".to_string(),
        );
    }
    if !live.is_empty() {
        return Some((Status::Contradiction, live));
    }
    let bad: Vec<String> = t
        .probe
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match canonicalize_arguments(t, a, 0, None) {
            Err(Invalid::Violates(v)) => Some(format!(
                "probe[{i}] breaks the schema: {}",
                v.iter()
                    .map(|x| format!("{} ({})", x.message, x.keyword))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
            Err(Invalid::Unreadable(why)) => Some(format!("probe[{i}]: {}", why.join("; "))),
            Ok(_) => None,
        })
        .collect();
    (!bad.is_empty()).then_some((Status::InvalidProbeArguments, bad))
}

/// What the verdict of a deterministic tool depends on: a live mount is read as it is
/// while the probe runs.
fn live_mount_findings(t: &ToolSpec) -> Vec<String> {
    t.mounts
        .iter()
        .filter(|m| t.deterministic && m.mode == SourceMode::Live)
        .map(|m| {
            format!(
                "live mount {}: verified only while its source stands still",
                m.guest
            )
        })
        .collect()
}

/// Tools not verified, by kind.
#[derive(Debug, Clone, Copy)]
pub struct Counts {
    drift: usize,
    sensitive: usize,
    unprobed: usize,
    contradictions: usize,
    invalid: usize,
}

impl Counts {
    /// Kinds that fail the run whatever the flags: the declaration is false, or the
    /// probe could not test it.
    pub fn hard(&self) -> usize {
        self.drift + self.contradictions + self.invalid
    }

    /// Kinds that fail only `--strict`.
    pub fn soft(&self) -> usize {
        self.sensitive + self.unprobed
    }

    /// Tools whose status fails the run: the hard kinds, and with `strict` the soft
    /// ones too.
    pub fn failed(&self, strict: bool) -> usize {
        self.hard() + if strict { self.soft() } else { 0 }
    }

    /// The last line on stderr: every declared-deterministic tool that is not
    /// `verified`, counted by kind, and whether that fails the run.
    pub fn closing_line(&self, strict: bool) -> String {
        if self.hard() + self.soft() == 0 {
            return "every deterministic declaration verified".into();
        }
        let soft = if strict {
            ""
        } else {
            ", allowed without --strict"
        };
        let parts: Vec<String> = [
            (self.drift, "drift (the declaration is false)".to_string()),
            (
                self.contradictions,
                "contradicted by the catalog (live clock or randomness)".to_string(),
            ),
            (
                self.invalid,
                "with probe arguments that break the schema".to_string(),
            ),
            (self.sensitive, format!("epoch-sensitive{soft}")),
            (self.unprobed, format!("without probe arguments{soft}")),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        format!("not verified: {}", parts.join("; "))
    }
}

/// One probe over its epochs.
struct Probe<'a> {
    opts: &'a ProbeOptions<'a>,
    worlds: &'a [World],
    epoch_ids: &'a [String],
    /// The [`CALENDAR`] epochs, pinned when a tool first needs them.
    calendar: std::cell::OnceCell<Vec<(&'static str, World)>>,
}

impl Probe<'_> {
    /// Probes one tool in every epoch: what the catalog contradicts first (nothing
    /// runs), then drift within any epoch (the declaration is false), else differences
    /// across epochs, against the first, each named by the epoch input behind it.
    fn tool(&self, t: &ToolSpec, runs: &[ProbeRun]) -> ToolReport {
        let mut report = ToolReport {
            name: t.name.clone(),
            declared_deterministic: t.deterministic,
            status: Status::Verified,
            findings: live_mount_findings(t),
            differs_by: Vec::new(),
            evidence: Vec::new(),
        };
        if let Some((status, findings)) = static_findings(t) {
            report.status = status;
            report.findings.extend(findings);
            return report;
        }
        if !runnable(t) {
            report.status = if t.deterministic {
                Status::NoProbeArguments
            } else {
                Status::NotDeclared
            };
            return report;
        }
        if let Some(why) = all_errors(runs) {
            report.findings.push(why);
        }
        // A live network is an input no epoch pins: however alike the answers were
        // while probed, the next call reads the network as it is then.
        if t.network.mode == NetworkMode::Live {
            report.status = Status::EpochSensitive;
            report.differs_by.push("network".into());
            report.findings.push(
                "network mode `live`: every call reads the network as it is, which no epoch \
                 pins (mode `pinned` records each request on first use and replays it)"
                    .into(),
            );
        }
        let drift: Vec<Evidence> = runs.iter().flat_map(ProbeRun::drift).collect();
        if !drift.is_empty() {
            report.status = Status::Drift;
            report.evidence = drift;
            return report;
        }
        for (i, (r, id)) in runs.iter().zip(self.epoch_ids).enumerate().skip(1) {
            let found = compare_runs(&runs[0], &self.epoch_ids[0], r, id);
            if !found.is_empty() {
                for input in self.inputs_behind(t, i as u64) {
                    if !report.differs_by.contains(&input) {
                        report.differs_by.push(input);
                    }
                }
            }
            report.evidence.extend(found);
        }
        // `--epochs 1` asks for drift within one epoch alone.
        if report.evidence.is_empty() && t.clock == SourceMode::Pinned && self.opts.epochs > 1 {
            for (class, w) in self.calendar() {
                let found = compare_runs(
                    &runs[0],
                    &self.epoch_ids[0],
                    &run_in(w, t, self.opts.runs),
                    w.epoch().id(),
                );
                if !found.is_empty() {
                    report.differs_by.push(format!("instant ({class})"));
                    report.evidence.extend(found);
                }
            }
        }
        if !report.evidence.is_empty() {
            report.status = Status::EpochSensitive;
        }
        report
    }

    /// The calendar epochs: epoch 0's seed at each [`CALENDAR`] instant. One that
    /// cannot be pinned (a mount gone since epoch 0) is left out, as the epochs'
    /// comparison leaves out what it cannot run.
    fn calendar(&self) -> &[(&'static str, World)] {
        self.calendar.get_or_init(|| {
            (CALENDAR.iter())
                .filter_map(|&(class, s)| {
                    world_at(self.opts, 0, s * 1_000_000_000)
                        .ok()
                        .map(|w| (class, w))
                })
                .collect()
        })
    }

    /// Which epoch inputs, varied alone from epoch 0 to epoch `i`, change the tool's
    /// output: a pinned mount whose snapshot differs (the host changed it between the
    /// epochs: not the tool's doing), the instant, the seed. The instant and the seed
    /// are each varied from a base pinned now, with epoch 0's seed and instant and the
    /// mounts as they are now, so a mount the host changed is not taken for either.
    fn inputs_behind(&self, t: &ToolSpec, i: u64) -> Vec<String> {
        let (a, b) = (
            self.worlds[0].epoch().manifest(),
            self.worlds[i as usize].epoch().manifest(),
        );
        let mut inputs: Vec<String> = a
            .mounts
            .iter()
            .zip(&b.mounts)
            .filter(|(x, y)| x.digest != y.digest && t.mounts.iter().any(|m| m.guest == x.guest))
            .map(|(x, _)| format!("mount {} (changed on the host between the epochs)", x.guest))
            .collect();
        // A pinned network records anew in each epoch: what the server said then is an
        // input of its own, which no re-run can vary apart from the instant or the seed.
        if t.network.mode == NetworkMode::Pinned {
            inputs.push("network (each epoch records its own answers)".into());
            return inputs;
        }
        let in_world = |seed: u64, instant_of: u64| {
            probe_world(self.opts, seed, instant_of)
                .ok()
                .map(|w| run_in(&w, t, self.opts.runs))
        };
        let Some(base) = in_world(0, 0) else {
            return inputs;
        };
        for (name, seed, instant_of) in [("instant", 0, i), ("seed", i, 0)] {
            if in_world(seed, instant_of)
                .is_some_and(|alone| !compare_runs(&base, "", &alone, "").is_empty())
            {
                inputs.push(name.to_string());
            }
        }
        inputs
    }
}

/// Whether the probe runs `t` at all: declared deterministic, with probe arguments, and
/// nothing in the catalog that settles its status first.
fn runnable(t: &ToolSpec) -> bool {
    t.deterministic && !t.probe.is_empty() && static_findings(t).is_none()
}

/// Every run of `t`'s probe arguments in `w`.
fn run_in(w: &World, t: &ToolSpec, runs: u64) -> ProbeRun {
    ProbeRun::run(w, &t.name, &probe_arguments(t), runs as usize)
        .expect("every catalog tool is in the world")
}

/// When every probe call ended in an error, the probe verified the error path only.
fn all_errors(runs: &[ProbeRun]) -> Option<String> {
    let records = || runs.iter().flat_map(|r| &r.calls).flat_map(|(_, rs)| rs);
    let ok = records().any(|r| r.outcome == plangate_sandbox::Outcome::Exit { code: 0 });
    (!ok && records().next().is_some()).then(|| {
        "every probe call ended in an error: the probe checked the error path, not the tool \
         (give probe arguments it answers)"
            .to_string()
    })
}

/// One tool's line for a person: its status, where its runs first parted, and the
/// epoch inputs behind the difference.
pub fn describe(r: &ToolReport) -> String {
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
        Status::Contradiction => "CONTRADICTION: the catalog says it cannot be deterministic",
        Status::InvalidProbeArguments => "INVALID PROBE: its probe arguments break its schema",
    };
    let by = if r.differs_by.is_empty() {
        String::new()
    } else {
        format!("; differs with the {}", r.differs_by.join(", the "))
    };
    format!("{what}{}{by}", diff.unwrap_or_default())
}
