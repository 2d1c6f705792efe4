//! Tool health (docs/design.md, "Probe and tool health"): the evidence that a tool's `deterministic`
//! declaration does not hold, kept as data a person can read (`tool-health.json`) and a
//! later run can start from (`--quarantine`).

use std::path::Path;

use plangate_gate::decide::{ToolState, path_member as member};
use plangate_gate::jcs;
use plangate_gate::json::{Duplicates, Value, parse_with};
use plangate_sandbox::CallRecord;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::bounded::Bounded;
use crate::error::HarnessError;

/// Bytes of each output kept in evidence: enough to see the difference, small enough
/// that a tool printing megabytes does not bloat the report.
pub(crate) const EXCERPT_BYTES: usize = 512;

/// One execution as evidence shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// `exit`, `out_of_fuel`, `timeout`, ...
    pub outcome: String,
    /// The exit code, for `exit`.
    pub exit_code: Option<i32>,
    /// stdout as text (lossy), cut at [`EXCERPT_BYTES`].
    pub stdout: String,
    /// stdout's full length in bytes.
    pub stdout_bytes: usize,
}

impl Output {
    /// The evidence view of a call record.
    pub fn of(r: &CallRecord) -> Output {
        Output::excerpt(r, 0)
    }

    /// Like [`Output::of`], the excerpt starting a little before byte `around` so the
    /// difference itself is in view.
    pub fn excerpt(r: &CallRecord, around: usize) -> Output {
        let start = around.saturating_sub(EXCERPT_BYTES / 4).min(r.stdout.len());
        let end = (start + EXCERPT_BYTES).min(r.stdout.len());
        let mut text = String::from_utf8_lossy(&r.stdout[start..end]).into_owned();
        if start > 0 {
            text.insert_str(0, "...");
        }
        if end < r.stdout.len() {
            text.push_str("...");
        }
        Output {
            outcome: r.outcome.as_str().to_string(),
            exit_code: r.exit_code,
            stdout: text,
            stdout_bytes: r.stdout.len(),
        }
    }
}

/// Where two outputs first differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstDifference {
    /// First differing byte offset in stdout (the shorter length when one is a prefix;
    /// `None` when the bytes are equal and only the outcome differs).
    pub byte_offset: Option<usize>,
    /// The first JSON path whose values differ, when both outputs are JSON.
    pub json_path: Option<String>,
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

/// Why a tool's declaration is doubted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// The determinism probe: identical calls in fresh instances disagreed.
    ProbeDrift {
        /// The canonical arguments sent.
        arguments: String,
        /// Which runs (0-based) are compared.
        runs: (usize, usize),
        /// Where they differ.
        difference: FirstDifference,
        /// Both outputs.
        outputs: Vec<Output>,
    },
    /// Two executions in the batch with byte-identical stdin and upstream context
    /// returned different bytes.
    Witness {
        /// The canonical arguments sent.
        arguments: String,
        /// Steps before this call in the sample (the upstream context, identical in both).
        upstream_steps: usize,
        /// Where they differ.
        difference: FirstDifference,
        /// Both outputs.
        outputs: Vec<Output>,
    },
    /// Stable within each epoch, different across epochs (`plangate probe --epochs`).
    EpochSensitive {
        /// The canonical arguments sent.
        arguments: String,
        /// The two epochs compared.
        epochs: (String, String),
        /// Where they differ.
        difference: FirstDifference,
        /// One output from each epoch.
        outputs: Vec<Output>,
    },
    /// Quarantined by an earlier run's tool-health file.
    EarlierRun {
        /// The file.
        file: String,
        /// That run's epoch.
        epoch_id: Option<String>,
    },
}

impl Evidence {
    /// The drift or witness evidence for two differing records.
    pub(crate) fn pair(
        kind: PairKind,
        arguments: &[u8],
        a: &CallRecord,
        b: &CallRecord,
    ) -> Evidence {
        let difference = first_difference(a, b);
        let at = difference.byte_offset.unwrap_or(0);
        let outputs = vec![Output::excerpt(a, at), Output::excerpt(b, at)];
        let arguments = String::from_utf8_lossy(arguments).into_owned();
        match kind {
            PairKind::Probe(i, j) => Evidence::ProbeDrift {
                arguments,
                runs: (i, j),
                difference,
                outputs,
            },
            PairKind::Witness(upstream_steps) => Evidence::Witness {
                arguments,
                upstream_steps,
                difference,
                outputs,
            },
            PairKind::Epochs(x, y) => Evidence::EpochSensitive {
                arguments,
                epochs: (x, y),
                difference,
                outputs,
            },
        }
    }
}

/// Which kind of pair evidence to make.
pub(crate) enum PairKind {
    Probe(usize, usize),
    Witness(usize),
    Epochs(String, String),
}

/// One tool's health after a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolHealth {
    /// The tool.
    pub name: String,
    /// The author's declaration.
    pub declared_deterministic: bool,
    /// The probe passed in this run's epoch.
    pub verified: bool,
    /// A probe failure, a witness or an earlier run contradicted the declaration.
    pub quarantined: bool,
    /// Whether the probe ran (a declared-deterministic tool with no `probe` arguments
    /// that the batch never called cannot be probed).
    #[serde(default)]
    pub probed: bool,
    /// Why it is quarantined.
    #[serde(default)]
    pub evidence: Vec<Evidence>,
    /// The MCP server's `annotations` for the tool (`readOnlyHint`, `idempotentHint`,
    /// ...), shown beside the verdict: hints from the server, not determinism
    /// declarations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
}

/// What a run learned of one tool, in the form shards add up: `plangate merge` unions
/// the books of every shard and judges the tool from the union, as one run would have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolFindings {
    /// The tool.
    pub name: String,
    /// The author's declaration.
    pub declared: bool,
    /// A probe ran.
    pub probed: bool,
    /// A probe's runs disagreed.
    pub drift: bool,
    /// An earlier run's quarantine (`--quarantine`) named it.
    pub earlier: bool,
    /// Determinism witnesses found.
    pub witnesses: usize,
    /// The evidence behind a quarantine.
    pub evidence: Vec<Evidence>,
    /// The MCP server's annotations, shown in tool health.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<serde_json::Value>,
}

impl ToolFindings {
    /// The tool's state for classification.
    pub fn state(&self) -> ToolState {
        ToolState {
            declared_deterministic: self.declared,
            verified: self.declared && self.probed && !self.drift,
            quarantined: self.declared && (self.drift || self.witnesses > 0 || self.earlier),
        }
    }

    /// The tool's entry in `tool-health.json`.
    pub fn health(&self) -> ToolHealth {
        let state = self.state();
        ToolHealth {
            name: self.name.clone(),
            declared_deterministic: self.declared,
            verified: state.verified,
            quarantined: state.quarantined,
            probed: self.probed,
            evidence: self.evidence.clone(),
            annotations: self.annotations.clone(),
        }
    }

    /// Adds what another run (another shard) learned of the same tool: one drift, one
    /// witness or one earlier quarantine anywhere is one for the whole batch.
    pub fn add(&mut self, other: &ToolFindings) {
        self.probed |= other.probed;
        self.drift |= other.drift;
        self.earlier |= other.earlier;
        self.witnesses += other.witnesses;
        for e in &other.evidence {
            if !self.evidence.contains(e) {
                self.evidence.push(e.clone());
            }
        }
    }
}

/// `tool-health.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    /// The epoch the run used.
    #[serde(default)]
    pub epoch_id: Option<String>,
    /// Every catalog tool, in catalog order.
    pub tools: Vec<ToolHealth>,
}

impl HealthReport {
    /// Reads a report written by an earlier run (the `--quarantine` file).
    pub fn read(path: &Path) -> Result<HealthReport, HarnessError> {
        let bad = |message: String| HarnessError::Quarantine {
            path: path.to_owned(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        serde_json::from_str(&text).map_err(|e| bad(e.to_string()))
    }

    /// Names of quarantined tools.
    pub fn quarantined(&self) -> impl Iterator<Item = &str> {
        self.tools
            .iter()
            .filter(|t| t.quarantined)
            .map(|t| t.name.as_str())
    }
}

/// The first execution seen for each (tool, upstream context, stdin), to catch a second
/// one that answers differently. Keyed by digest, so memory is a few dozen bytes per
/// distinct call.
#[derive(Default)]
pub(crate) struct WitnessBook {
    first: Bounded<[u8; 32], Seen>,
}

struct Seen {
    digest: [u8; 32],
    record: CallRecord,
    truncated: bool,
}

/// stdout bytes kept of each distinct call's first execution, for witness evidence.
pub(crate) const WITNESS_KEEP_BYTES: usize = 2048;

/// The digest an execution is compared by: outcome, exit code and stdout bytes.
fn output_digest(r: &CallRecord) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(r.outcome.as_str());
    h.update(r.exit_code.unwrap_or(i32::MIN).to_le_bytes());
    h.update(&r.stdout);
    h.finalize().into()
}

impl WitnessBook {
    /// A book keeping the first answers of at most `bound` distinct calls (`None`:
    /// all), the oldest forgotten first: a call forgotten is a first call again.
    pub(crate) fn new(bound: Option<usize>) -> Self {
        WitnessBook {
            first: Bounded::new(bound),
        }
    }

    /// Records an execution; when an earlier one with the same key answered differently,
    /// returns both as evidence sees them (the earlier one is kept only up to
    /// [`WITNESS_KEEP_BYTES`], so the later one is cut alike for a fair comparison).
    pub(crate) fn record(
        &mut self,
        key: [u8; 32],
        r: &CallRecord,
    ) -> Option<(CallRecord, CallRecord)> {
        let digest = output_digest(r);
        match self.first.get(&key) {
            Some(seen) if seen.digest != digest => {
                let mut later = r.clone();
                if seen.truncated {
                    later.stdout.truncate(WITNESS_KEEP_BYTES);
                }
                Some((seen.record.clone(), later))
            }
            Some(_) => None,
            None => {
                // Memory grows with distinct calls, not with their output sizes.
                let mut kept = r.clone();
                let truncated = kept.stdout.len() > WITNESS_KEEP_BYTES;
                kept.stdout.truncate(WITNESS_KEEP_BYTES);
                kept.stdout.shrink_to_fit();
                kept.stderr = Vec::new();
                kept.detail = None;
                self.first.get_or_insert(
                    key,
                    Seen {
                        digest,
                        record: kept,
                        truncated,
                    },
                );
                None
            }
        }
    }
}

/// The witness key of a call: the tool, the stdin of every earlier step of the sample
/// (its upstream context) and its own stdin.
pub(crate) fn witness_key(tool: &str, upstream: &[Vec<u8>], stdin: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    part(tool.as_bytes());
    for u in upstream {
        part(u);
    }
    part(stdin);
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use plangate_sandbox::Outcome;

    fn rec(stdout: &str) -> CallRecord {
        crate::observe::test_record(Outcome::Exit { code: 0 }, stdout)
    }

    #[test]
    fn a_witness_needs_same_key_and_different_bytes() {
        let mut book = WitnessBook::default();
        let k = witness_key("t", &[], b"{}");
        assert!(book.record(k, &rec(r#"{"v":1}"#)).is_none());
        assert!(book.record(k, &rec(r#"{"v":1}"#)).is_none());
        let (first, later) = book.record(k, &rec(r#"{"v":2}"#)).expect("a witness");
        assert_eq!(first.stdout, br#"{"v":1}"#);
        assert_eq!(later.stdout, br#"{"v":2}"#);
        // A long first output is kept cut, and the later one is compared cut alike.
        let long = |c: char| rec(&format!("{}{c}", "x".repeat(WITNESS_KEEP_BYTES)));
        let k3 = witness_key("long", &[], b"{}");
        assert!(book.record(k3, &long('a')).is_none());
        let (a, b) = book.record(k3, &long('b')).expect("a witness");
        assert_eq!(
            (a.stdout.len(), b.stdout.len()),
            (WITNESS_KEEP_BYTES, WITNESS_KEEP_BYTES)
        );
        // Another upstream context is another call.
        let k2 = witness_key("t", &[b"{\"a\":1}".to_vec()], b"{}");
        assert!(book.record(k2, &rec(r#"{"v":3}"#)).is_none());
        assert_ne!(
            witness_key("t", &[b"ab".to_vec()], b"c"),
            witness_key("t", &[b"a".to_vec()], b"bc")
        );
    }

    #[test]
    fn reports_round_trip() {
        let a = rec(r#"{"hits":[{"doc":"kb_1"}]}"#);
        let b = rec(r#"{"hits":[{"doc":"kb_2"}]}"#);
        let report = HealthReport {
            epoch_id: Some("e".into()),
            tools: vec![ToolHealth {
                name: "search_index".into(),
                declared_deterministic: true,
                verified: false,
                quarantined: true,
                probed: true,
                evidence: vec![Evidence::pair(PairKind::Probe(0, 1), b"{}", &a, &b)],
                annotations: Some(serde_json::json!({"readOnlyHint": true})),
            }],
        };
        let text = serde_json::to_string(&report).unwrap();
        assert!(text.contains(r#""kind":"probe_drift""#), "{text}");
        assert!(text.contains(r#""json_path":"$.hits[0].doc""#), "{text}");
        let back: HealthReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.quarantined().collect::<Vec<_>>(), ["search_index"]);
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
