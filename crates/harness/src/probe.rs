//! The determinism probe (design.md section 7): a tool declared deterministic is called
//! with identical arguments in fresh instances; byte-identical stdout and outcome verify
//! the declaration, anything else is drift, reported with where the outputs part.

use plangate_gate::catalog::ToolSpec;
use plangate_gate::decide::path_member as member;
use plangate_gate::jcs;
use plangate_gate::json::{Duplicates, Value, parse_with};
use plangate_sandbox::CallRecord;

use crate::health::{Evidence, FirstDifference, PairKind};
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

/// Where two executions' stdout first differs, by byte and (when both are JSON) by
/// JSON path such as `$.hits[0].doc`.
pub fn first_difference(a: &CallRecord, b: &CallRecord) -> FirstDifference {
    let byte_offset = a
        .stdout
        .iter()
        .zip(&b.stdout)
        .position(|(x, y)| x != y)
        .or_else(|| (a.stdout.len() != b.stdout.len()).then(|| a.stdout.len().min(b.stdout.len())));
    let json_path = match (
        parse_with(&a.stdout, Duplicates::LastWins),
        parse_with(&b.stdout, Duplicates::LastWins),
    ) {
        (Ok(x), Ok(y)) => json_path(&x, &y, "$".to_string()),
        _ => None,
    };
    FirstDifference {
        byte_offset,
        json_path,
    }
}

fn json_path(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x.iter() {
                let sub = format!("{at}{}", member(k));
                match y.get(k) {
                    Some(vb) => {
                        if let Some(p) = json_path(va, vb, sub) {
                            return Some(p);
                        }
                    }
                    None => return Some(sub),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(k))
                .map(|k| format!("{at}{}", member(k)))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(p) = json_path(va, vb, format!("{at}[{i}]")) {
                    return Some(p);
                }
            }
            (x.len() != y.len()).then(|| format!("{at}[{}]", x.len().min(y.len())))
        }
        _ => (jcs::to_string(a) != jcs::to_string(b)).then_some(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_sandbox::Outcome;

    fn rec(stdout: &str) -> CallRecord {
        crate::observe::test_record(Outcome::Exit { code: 0 }, stdout)
    }

    #[test]
    fn differences_by_byte_and_path() {
        let d = first_difference(
            &rec(r#"{"a":1,"b":{"c d":[1,2]}}"#),
            &rec(r#"{"a":1,"b":{"c d":[1,3]}}"#),
        );
        assert_eq!(d.byte_offset, Some(21));
        assert_eq!(d.json_path.as_deref(), Some(r#"$.b["c d"][1]"#));
        let d = first_difference(&rec(r#"{"a":[1]}"#), &rec(r#"{"a":[1,2]}"#));
        assert_eq!(d.json_path.as_deref(), Some("$.a[1]"));
        let d = first_difference(&rec("abc"), &rec("abcd"));
        assert_eq!((d.byte_offset, d.json_path), (Some(3), None));
        let d = first_difference(&rec("same"), &rec("same"));
        assert_eq!(d.byte_offset, None);
        // Equal values written differently are no JSON difference.
        let d = first_difference(&rec(r#"{"a":1.0}"#), &rec(r#"{"a":1}"#));
        assert_eq!(d.json_path, None);
    }
}
