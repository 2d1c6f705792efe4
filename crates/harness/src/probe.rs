//! The determinism probe (docs/design.md, "Probe and tool health"): a tool declared deterministic is called
//! with identical arguments in fresh instances; byte-identical stdout and outcome verify
//! the declaration, anything else is drift, reported with where the outputs part.

use plangate_gate::catalog::ToolSpec;
use plangate_gate::jcs;
use plangate_sandbox::CallRecord;

use crate::health::{Evidence, PairKind};
use crate::world::World;

/// The tool's catalog `probe` arguments, as the canonical JSON the tool receives.
pub fn probe_arguments(spec: &ToolSpec) -> Vec<Vec<u8>> {
    spec.probe
        .iter()
        .map(|a| jcs::to_string(a).into_bytes())
        .collect()
}

/// Every run of every probe argument of one tool in one epoch.
#[derive(Debug, Clone)]
pub struct ProbeRun {
    /// The tool.
    pub tool: String,
    /// `(canonical arguments, one record per run)`.
    pub calls: Vec<(Vec<u8>, Vec<CallRecord>)>,
}

impl ProbeRun {
    /// Calls `tool` `runs` times with each of `arguments`, each in a fresh instance.
    /// `None` when the world has no such tool.
    pub fn run(world: &World, tool: &str, arguments: &[Vec<u8>], runs: usize) -> Option<Self> {
        let mut calls = Vec::with_capacity(arguments.len());
        for a in arguments {
            let records = (0..runs)
                .map(|_| world.call(tool, a))
                .collect::<Option<Vec<_>>>()?;
            calls.push((a.clone(), records));
        }
        Some(ProbeRun {
            tool: tool.to_string(),
            calls,
        })
    }

    /// Drift evidence: for each argument, the first run that differs from run 0.
    pub fn drift(&self) -> Vec<Evidence> {
        self.calls
            .iter()
            .filter_map(|(args, records)| {
                let first = records.first()?;
                records
                    .iter()
                    .enumerate()
                    .skip(1)
                    .find(|(_, r)| !same_output(first, r))
                    .map(|(i, r)| Evidence::pair(PairKind::Probe(0, i), args, first, r))
            })
            .collect()
    }
}

/// Whether two executions answered the same: outcome, exit code and stdout bytes.
pub(crate) fn same_output(a: &CallRecord, b: &CallRecord) -> bool {
    a.outcome == b.outcome && a.exit_code == b.exit_code && a.stdout == b.stdout
}

/// Epoch-sensitivity evidence: `a` and `b` are the same probe in two epochs (stable
/// within each); for each argument whose outputs differ across them, the first pair.
pub fn compare_runs(a: &ProbeRun, epoch_a: &str, b: &ProbeRun, epoch_b: &str) -> Vec<Evidence> {
    a.calls
        .iter()
        .zip(&b.calls)
        .filter_map(|((args, ra), (_, rb))| {
            let (x, y) = (ra.first()?, rb.first()?);
            (!same_output(x, y)).then(|| {
                Evidence::pair(
                    PairKind::Epochs(epoch_a.to_string(), epoch_b.to_string()),
                    args,
                    x,
                    y,
                )
            })
        })
        .collect()
}
