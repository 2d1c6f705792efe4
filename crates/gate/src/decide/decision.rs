//! What a decision says, as records and callers read it: the verdict, its reasons, the
//! agreements and where samples differ. The types the rest of the module fills in.

use serde::Serialize;

use crate::stats::wilson;
use crate::task::Label;

/// accept, reject or defer: a value, never an error.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Verdict {
    /// The plan stands.
    Accept,
    /// Re-sample or escalate.
    Defer,
    /// The plan's arguments (or tool) were made up.
    Reject,
}

impl Verdict {
    /// The word used in outputs.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a verdict was reached. Codes are stable: scripts match on them. Each is its
/// variant's name in snake_case ([`Reason::as_str`]), and [`Reason::ALL`] lists them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, strum::IntoStaticStr, strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum Reason {
    /// Arguments agree at or above `arg_accept`.
    ArgumentsAgree,
    /// Results of deterministic steps agree at or above `result_accept`.
    ResultsAgree,
    /// No step's tool is declared deterministic, so results carry no signal.
    NoDeterministicStep,
    /// Argument agreement below `arg_reject` with every precondition met, and at least
    /// one argument path (or the tool sequence) scattered below it.
    FabricatedArguments,
    /// The modal plan calls a tool the catalog does not have.
    UnknownTool,
    /// The task has no samples.
    NoSamples,
    /// Fewer samples than `min_samples` (seed condition 3).
    InsufficientSamples,
    /// The epoch drifted for this task (seed condition 4).
    EpochNotFixed,
    /// A called tool is not declared deterministic (seed condition 1).
    ToolNotDeterministic,
    /// A called tool's declaration was not verified this epoch (seed condition 1).
    ToolUnverified,
    /// A called tool is quarantined in this batch.
    ToolQuarantined,
    /// Arguments diverge only after a step whose results disagreed: the model may have
    /// read them, so the divergence is not evidence of fabrication.
    TaintedByUpstream,
    /// Arguments agree but results disagree badly: the tool is suspect, not the plan.
    ToolSuspect,
    /// Arguments agree, results agree too little to accept and too much to suspect.
    ResultInconclusive,
    /// Argument agreement between the two thresholds.
    AmbiguousArguments,
    /// Argument agreement below `arg_reject`, but no single path is scattered below it:
    /// harmless variation in several places, not a located fabrication.
    DiffuseArguments,
    /// The modal plan breaks its tool's schema: either the model or the schema is wrong.
    SchemaMismatch,
    /// The modal plan refers to something a verified deterministic tool says does not
    /// exist (a consistent fabrication): deferred, or rejected for a `must_exist`
    /// parameter or an `id` its resolver cannot find.
    ReferentialMiss,
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl Reason {
    /// Every reason, in the enum's order.
    pub const ALL: &'static [Reason] = <Reason as strum::VariantArray>::VARIANTS;

    /// The code as outputs write it (the one place it is derived: serde writes this too).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Whether a fresh epoch with every source pinned can change a deferral for this
    /// reason (docs/design.md, "The defer path"): it is about the epoch or the tools'
    /// results, never about the samples, which a retry does not change.
    pub fn fixed_by_a_fresh_epoch(self) -> bool {
        matches!(
            self,
            Reason::EpochNotFixed
                | Reason::ToolQuarantined
                | Reason::ToolSuspect
                | Reason::ResultInconclusive
                | Reason::TaintedByUpstream
        )
    }
}

/// How much the samples agree: `count` of `n` share the modal key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Agreement {
    /// Samples equal to the modal one.
    pub count: usize,
    /// Samples in all.
    pub n: usize,
    /// `count / n`.
    pub value: f64,
    /// 95% Wilson interval.
    pub interval: (f64, f64),
}

impl Agreement {
    /// `count` of `n`, with its value and interval.
    pub fn new(count: usize, n: usize) -> Self {
        let row = KNOWN
            .get(n)
            .map(|row| row.get_or_init(|| (0..=n).map(|count| Self::computed(count, n)).collect()));
        match row.and_then(|row| row.get(count)) {
            Some(known) => *known,
            None => Self::computed(count, n),
        }
    }

    fn computed(count: usize, n: usize) -> Self {
        Agreement {
            count,
            n,
            value: if n == 0 { 0.0 } else { count as f64 / n as f64 },
            interval: wilson(count, n),
        }
    }
}

/// One step of the modal plan.
#[derive(Debug, Clone)]
pub struct PlanStep {
    /// Tool name.
    pub tool: String,
    /// Canonical arguments, as their RFC 8785 text: the record writes it as it is.
    pub arguments: String,
}

/// An argument path on which samples differ.
#[derive(Debug, Clone, PartialEq)]
pub struct DivergentPath {
    /// `$.steps[1].arguments.user_id`.
    pub path: String,
    /// How many distinct values (absence counts as one).
    pub distinct: usize,
    /// How many samples share the path's most common value: a path whose own agreement
    /// is below arg_reject locates a fabrication.
    pub agreement: Agreement,
}

/// Agreement at one step of the plans.
#[derive(Debug, Clone)]
pub struct StepAgreement {
    /// Step index.
    pub step: usize,
    /// The modal step's tool (None when most samples have no such step).
    pub tool: Option<String>,
    /// Agreement on (tool, canonical arguments) at this step.
    pub agreement: Agreement,
}

/// A sample that agrees with nothing, and why.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct MalformedSample {
    /// Sample index.
    pub sample: usize,
    /// Index of the call as written, when one call is at fault.
    pub step: Option<usize>,
    /// Where that call sits in the line, in the shape the user wrote it.
    pub place: Option<String>,
    /// What is wrong.
    pub problems: Vec<String>,
}

/// One way samples' arguments break their tool's schema, listed once with the samples
/// that break it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Plan step.
    pub step: usize,
    /// The step's tool.
    pub tool: String,
    /// JSON Pointer into the arguments (`""`: the arguments as a whole).
    pub path: String,
    /// The schema keyword that failed.
    pub keyword: String,
    /// What the validator said.
    pub message: String,
    /// The samples whose arguments break the schema this way.
    pub samples: Vec<usize>,
}

/// The full record of one decision.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The caller's task ID.
    pub task_id: String,
    /// The verdict (written `decision` in records).
    pub verdict: Verdict,
    /// Reason codes.
    pub reasons: Vec<Reason>,
    /// The same in sentences, with the names and numbers behind them.
    pub explanation: Vec<String>,
    /// Number of samples.
    pub n: usize,
    /// Argument agreement.
    pub arg_agreement: Agreement,
    /// Result agreement over deterministic steps (None when no step is deterministic).
    pub result_agreement: Option<Agreement>,
    /// The most common canonical plan (None when it is malformed).
    pub modal_plan: Option<Vec<PlanStep>>,
    /// Where the samples' arguments differ.
    pub divergent_paths: Vec<DivergentPath>,
    /// Per-step agreement.
    pub steps: Vec<StepAgreement>,
    /// First step at which samples differ.
    pub first_divergent_step: Option<usize>,
    /// Every tool the samples call.
    pub tools: Vec<String>,
    /// Deterministic tools whose results differed for identical calls in this task.
    pub suspect_tools: Vec<String>,
    /// Samples that agree with nothing.
    pub malformed: Vec<MalformedSample>,
    /// Where samples' arguments break their tool's schema.
    pub schema_violations: Vec<SchemaViolation>,
    /// Rules that cannot fire for this task, and what reading it assumed.
    pub warnings: Vec<String>,
    /// Ground truth, echoed.
    pub label: Option<Label>,
    /// Each sample's outcome in input order (a benchmark trial's reward), echoed; absent
    /// when no sample has one.
    pub outcomes: Vec<Option<f64>>,
    /// Calls answered *not found* for a value nothing before them supplied
    /// ([`crate::invented`]); they never change the verdict. Shared with the prepared
    /// task, whose list it is, rather than copied.
    pub invented_references: std::sync::Arc<[crate::invented::InventedReference]>,
}

impl Decision {
    /// A deferral a fresh, fully pinned epoch may settle: every reason for it is one
    /// a retry can change (see [`Reason::fixed_by_a_fresh_epoch`]); one it cannot
    /// (too few samples beside a changed source) would defer the retry too.
    pub fn retryable(&self) -> bool {
        self.verdict == Verdict::Defer
            && !self.reasons.is_empty()
            && self.reasons.iter().all(|r| r.fixed_by_a_fresh_epoch())
    }
}

/// Samples per task up to which every agreement is computed once per run: a decision
/// holds several, nearly all of few samples, and their intervals' square roots and
/// divisions are a cost `score` would otherwise pay for every one.
const KNOWN_N: usize = 64;

/// `Agreement::new(count, n)` for every `count`, each row made when an agreement of its
/// `n` is first asked for.
static KNOWN: [std::sync::OnceLock<Box<[Agreement]>>; KNOWN_N + 1] =
    [const { std::sync::OnceLock::new() }; KNOWN_N + 1];

#[cfg(test)]
mod tests {
    use super::*;

    /// An agreement from the table is the one computed, bit for bit, on both sides of
    /// the table's bound and for a count past `n`.
    #[test]
    fn known_agreements_are_the_computed_ones() {
        for n in 0..=KNOWN_N + 2 {
            for count in 0..=n + 1 {
                let (known, computed) = (Agreement::new(count, n), Agreement::computed(count, n));
                let bits = |a: &Agreement| {
                    (
                        a.count,
                        a.n,
                        [a.value, a.interval.0, a.interval.1].map(f64::to_bits),
                    )
                };
                assert_eq!(bits(&known), bits(&computed), "{count}/{n}");
            }
        }
    }
}
