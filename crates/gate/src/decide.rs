//! The decision (docs/design.md, "Decision"), in two phases so a whole batch can run before any
//! task is judged: [`prepare`] turns a task into canonical keys once, and [`classify`]
//! applies the rules with the tool health known at the end of the batch.
//!
//! Two signals stay apart: argument agreement (over canonical plans) decides reject,
//! result agreement (over deterministic steps) only ever defers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;

use crate::canon::{Invalid, Resolver, Violation, as_from_ref, canonicalize_shared};
use crate::catalog::{Catalog, ToolSpec};
use crate::jcs::{self, call_key};
use crate::json::{Object, Value};
use crate::stats::{Ratio, wilson};
use crate::task::{
    Arguments, BoundedMemo, Call, KeyInterner, Label, Rfc8785Form, Task, per_sample, turn_ranges,
};

mod wire;
pub use wire::WireError;

/// The thresholds of docs/design.md, "Decision".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Argument agreement at or above which a plan can be accepted.
    pub arg_accept: Ratio,
    /// Argument agreement below which a plan can be rejected.
    pub arg_reject: Ratio,
    /// Result agreement at or above which an agreeing plan is accepted.
    pub result_accept: Ratio,
    /// Result agreement below which the tool, not the plan, is suspect.
    pub result_suspect: Ratio,
    /// Fewest samples a verdict other than defer needs.
    pub min_samples: usize,
    /// Which decision boundary applies.
    pub rule: Rule,
}

/// Two thresholds out of order: `lower` must be at most `upper`, or a region of the
/// rule is turned inside out (`result_suspect` 0.9 over `result_accept` 0.1 accepts
/// what the defaults defer as `tool_suspect`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{lower} {lower_value} is above {upper} {upper_value}: {lower} must be at most {upper}")]
pub struct InvertedThresholds {
    /// The threshold that must be the smaller (`arg_reject`, `result_suspect`).
    pub lower: &'static str,
    /// Its value.
    pub lower_value: Ratio,
    /// The threshold that must be the larger (`arg_accept`, `result_accept`).
    pub upper: &'static str,
    /// Its value.
    pub upper_value: Ratio,
}

impl Options {
    /// Refuses thresholds out of order: `arg_reject <= arg_accept` and
    /// `result_suspect <= result_accept`. Every ratio is already in [0, 1] (a [`Ratio`]
    /// cannot be anything else).
    pub fn check(&self) -> Result<(), InvertedThresholds> {
        for (lower, lower_value, upper, upper_value) in [
            ("arg_reject", self.arg_reject, "arg_accept", self.arg_accept),
            (
                "result_suspect",
                self.result_suspect,
                "result_accept",
                self.result_accept,
            ),
        ] {
            if lower_value.exceeds(upper_value) {
                return Err(InvertedThresholds {
                    lower,
                    lower_value,
                    upper,
                    upper_value,
                });
            }
        }
        Ok(())
    }
}

/// The decision boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rule {
    /// The seed's boundary with what real data showed it needs: a reject needs a located
    /// fabrication, an agreeing plan can still miss its references, and a modal plan
    /// that breaks its schema defers.
    #[default]
    Gate,
    /// The seed's boundary alone, on canonical arguments: kept to measure what the
    /// additions change (the demo's "seed's rule" column). `--seed-compat` is another
    /// thing: the seed's own code, errors included.
    Seed,
}

impl Default for Options {
    fn default() -> Self {
        let r = |s: &str| s.parse::<Ratio>().expect("default thresholds are valid");
        Options {
            arg_accept: r("0.80"),
            arg_reject: r("0.20"),
            result_accept: r("0.80"),
            result_suspect: r("0.50"),
            min_samples: 5,
            rule: Rule::Gate,
        }
    }
}

/// What the batch knows of a tool when tasks are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolState {
    /// The author's declaration.
    pub declared_deterministic: bool,
    /// A probe in this epoch confirmed it (or, for `score`, the catalog says so).
    pub verified: bool,
    /// A probe failure or a witness in this batch contradicted it.
    pub quarantined: bool,
}

/// Tool health by name; a name with no state is a tool the catalog does not have.
pub trait ToolStates {
    /// The state of `tool`, or `None` when the catalog has no such tool.
    fn state(&self, tool: &str) -> Option<ToolState>;
}

impl ToolStates for BTreeMap<String, ToolState> {
    fn state(&self, tool: &str) -> Option<ToolState> {
        self.get(tool).copied()
    }
}

/// The states of a task's tools, each looked up once: the rules ask for them step by
/// step, sample by sample, and a lookup by name in the batch's states was ~2k
/// instructions of a task. Other names go to the batch's states.
struct Looked<'a> {
    states: Vec<(&'a str, Option<ToolState>)>,
    batch: &'a dyn ToolStates,
}

impl<'a> Looked<'a> {
    fn up(samples: &[Counted<'a>], batch: &'a dyn ToolStates) -> Self {
        let mut states: Vec<(&str, Option<ToolState>)> = Vec::new();
        for st in samples.iter().flat_map(|c| c.sample.steps.iter()) {
            // A handful is the rule; a task of thousands of tools is asked of the batch,
            // so a lookup here stays a few comparisons.
            if states.len() < 8 && !states.iter().any(|(t, _)| *t == &*st.tool) {
                states.push((&st.tool, batch.state(&st.tool)));
            }
        }
        Looked { states, batch }
    }
}

impl ToolStates for Looked<'_> {
    fn state(&self, tool: &str) -> Option<ToolState> {
        match self.states.iter().find(|(t, _)| *t == tool) {
            Some((_, state)) => *state,
            None => self.batch.state(tool),
        }
    }
}

/// accept, reject or defer: a value, never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
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
        match self {
            Verdict::Accept => "accept",
            Verdict::Defer => "defer",
            Verdict::Reject => "reject",
        }
    }
}

/// Why a verdict was reached. Codes are stable: scripts match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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
    /// The code as outputs write it (the one place it is spelled: serde writes this too).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ArgumentsAgree => "arguments_agree",
            Reason::ResultsAgree => "results_agree",
            Reason::NoDeterministicStep => "no_deterministic_step",
            Reason::FabricatedArguments => "fabricated_arguments",
            Reason::UnknownTool => "unknown_tool",
            Reason::NoSamples => "no_samples",
            Reason::InsufficientSamples => "insufficient_samples",
            Reason::EpochNotFixed => "epoch_not_fixed",
            Reason::ToolNotDeterministic => "tool_not_deterministic",
            Reason::ToolUnverified => "tool_unverified",
            Reason::ToolQuarantined => "tool_quarantined",
            Reason::TaintedByUpstream => "tainted_by_upstream",
            Reason::ToolSuspect => "tool_suspect",
            Reason::ResultInconclusive => "result_inconclusive",
            Reason::AmbiguousArguments => "ambiguous_arguments",
            Reason::DiffuseArguments => "diffuse_arguments",
            Reason::SchemaMismatch => "schema_mismatch",
            Reason::ReferentialMiss => "referential_miss",
        }
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

/// Samples per task up to which every agreement is computed once per run: a decision
/// holds several, nearly all of few samples, and their intervals' square roots and
/// divisions were 0.7% of `score`'s time.
const KNOWN_N: usize = 64;

/// `Agreement::new(count, n)` for every `count`, each row made when an agreement of its
/// `n` is first asked for.
static KNOWN: [std::sync::OnceLock<Box<[Agreement]>>; KNOWN_N + 1] =
    [const { std::sync::OnceLock::new() }; KNOWN_N + 1];

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
#[derive(Debug, Clone, Serialize)]
pub struct PlanStep {
    /// Tool name.
    pub tool: String,
    /// Canonical arguments, as their RFC 8785 text: the record writes it as it is, and
    /// serde as raw JSON (checked then, not each time a decision is made).
    #[serde(serialize_with = "crate::serde_bridge::verbatim")]
    pub arguments: String,
}

/// An argument path on which samples differ.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
pub struct Decision {
    /// The caller's task ID.
    pub task_id: String,
    /// The verdict.
    pub decision: Verdict,
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
}

impl Decision {
    /// A deferral a fresh, fully pinned epoch may settle: every reason for it is one
    /// a retry can change (see [`Reason::fixed_by_a_fresh_epoch`]); one it cannot
    /// (too few samples beside a changed source) would defer the retry too.
    pub fn retryable(&self) -> bool {
        self.decision == Verdict::Defer
            && !self.reasons.is_empty()
            && self.reasons.iter().all(|r| r.fixed_by_a_fresh_epoch())
    }
}

/// A task reduced to canonical keys; built once, classified when tool health is known.
#[derive(Debug, Clone)]
pub struct Prepared {
    task_id: String,
    label: Option<Label>,
    epoch_fixed: bool,
    samples: Vec<PreparedSample>,
    /// The modal plan: (index of its first sample, how many samples make it).
    modal_plan: Option<(usize, usize)>,
    malformed: Vec<MalformedSample>,
    warnings: Vec<String>,
}

#[derive(Debug, Clone)]
struct PreparedSample {
    plan: PlanKey,
    /// Steps in canonical order: the calls of each turn sorted by key (so a turn compares
    /// as a multiset), then lined up with the modal plan's turn for per-step analysis.
    /// Shared with the copies of a sample the reader shared (most samples of most tasks
    /// are such copies), which cost a count instead of a copy of every step.
    steps: Arc<Vec<PreparedStep>>,
    /// Turn lengths; empty when every call is its own turn.
    turns: Vec<usize>,
    /// The sample this one was prepared as (its own index when it was prepared for
    /// itself): a sample the reader shared is a copy of the first's preparation, and
    /// [`classify`] counts the copies once, with their number.
    first: usize,
}

impl PreparedSample {
    /// Sample `first`'s preparation (its copies keep `first`).
    fn of(first: usize, plan: PlanKey, steps: Vec<PreparedStep>, turns: Vec<usize>) -> Self {
        PreparedSample {
            plan,
            steps: Arc::new(steps),
            turns,
            first,
        }
    }
}

/// What samples agree on: the key ids of every step (each turn's sorted; shared, like the
/// steps, with the sample's copies) and the turn lengths, or an unreadable sample, which
/// agrees with nothing.
#[derive(Debug, Clone, Eq, PartialOrd, Ord)]
enum PlanKey {
    Steps(Arc<[u32]>, Vec<usize>),
    Malformed(usize),
}

/// Equal exactly when `Ord` says so, but two empty turn lists are equal without a call to
/// `memcmp`: an empty `Vec` points at a dangling address (0x8), and glibc's AVX-512
/// `memcmp` reads its first bytes with a masked load, which on the AMD EPYC (Zen 5) we
/// measured costs a microcode assist of about 150 ns for an address with no page behind
/// it. Plans of single-call turns (most of them) have empty turn lists, and these
/// comparisons were a fifth of `score`'s time there (see docs/benchmarks.md).
impl PartialEq for PlanKey {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (PlanKey::Steps(keys, turns), PlanKey::Steps(k, t)) => {
                keys == k && turns.len() == t.len() && (turns.is_empty() || turns == t)
            }
            (PlanKey::Malformed(a), PlanKey::Malformed(b)) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Clone)]
struct PreparedStep {
    tool: Arc<str>,
    /// Canonical arguments (shared by the samples that agree); the arguments as written
    /// when they break the schema; None when unreadable.
    args: Option<Arc<Value>>,
    /// Id of the canonical (tool, arguments) key, task-local.
    key: u32,
    /// Id of the result's key, task-local; None when nothing was observed.
    result: Option<u32>,
    /// How the arguments break the tool's schema, when they do.
    violations: Option<Arc<Vec<Violation>>>,
    /// What the call said of the things its arguments refer to, when it found nothing.
    miss: Option<Arc<Miss>>,
}

/// A call that found nothing for what its arguments refer to: a `not_found` answer, or
/// an `id` its resolver could not resolve.
#[derive(Debug)]
struct Miss {
    /// The call ended in a `not_found` error.
    not_found: bool,
    /// The reference parameters it was given (all its parameters when the schema marks
    /// none), with their values as the plan wrote them.
    params: Vec<(String, String)>,
    /// One of them is declared `must_exist`.
    must_exist: bool,
    /// Parameters whose `id` resolver found nothing, with the resolver's name.
    unresolved: Vec<(String, String)>,
}

/// What a step's call says of its references, when it found nothing.
fn reference_miss(
    spec: Option<&ToolSpec>,
    args: Option<&Value>,
    observed: &crate::task::Observed,
) -> Option<Arc<Miss>> {
    let spec = spec?;
    let args = args?.as_object()?;
    let not_found =
        matches!(observed, crate::task::Observed::Error { kind, .. } if kind == "not_found");
    let unresolved: Vec<(String, String)> = spec
        .references
        .iter()
        .filter_map(|r| {
            let resolver = r.resolver.as_ref()?;
            let v = args.get(&r.param)?.as_object()?;
            v.contains_key("$unresolved")
                .then(|| (r.param.clone(), resolver.clone()))
        })
        .collect();
    if !not_found && unresolved.is_empty() {
        return None;
    }
    let given: Vec<&crate::catalog::Reference> = spec
        .references
        .iter()
        .filter(|r| args.contains_key(&r.param))
        .collect();
    let params = if given.is_empty() {
        args.iter()
            .map(|(k, v)| (k.clone(), jcs::to_string(v)))
            .collect()
    } else {
        given
            .iter()
            .filter_map(|r| Some((r.param.clone(), jcs::to_string(args.get(&r.param)?))))
            .collect()
    };
    Some(Arc::new(Miss {
        not_found,
        params,
        must_exist: given.iter().any(|r| r.must_exist),
        unresolved,
    }))
}

impl Prepared {
    /// The task's ID.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }
    /// Records that the epoch was not fixed for this task (a live source it read changed).
    pub fn set_epoch_fixed(&mut self, fixed: bool) {
        self.epoch_fixed = fixed;
    }

    /// Whether every sample's steps are in the order the sample wrote its calls: no
    /// turn of several calls was put in another order (sorted, or lined up with the
    /// modal plan's). Then [`Prepared::steps_as_written`] reads them in that order; the
    /// naive scorer reads its plans from them where their ids have its equality
    /// ([`crate::baseline::naive_prepared`]).
    pub(crate) fn in_written_order(&self) -> bool {
        // Turn lengths are kept only for a sample with a turn of several calls; without
        // one, no step moved.
        self.samples.iter().all(|s| s.turns.is_empty())
    }

    /// Sample `i`'s steps as (id of the call's key, id of its result's, its canonical
    /// arguments: None for arguments that could not be read), one per call, in
    /// canonical order (the order written when [`Prepared::in_written_order`]).
    pub(crate) fn steps_as_written(
        &self,
        i: usize,
    ) -> impl Iterator<Item = (u32, Option<u32>, Option<&Arc<Value>>)> {
        let steps = self.samples.get(i).map_or(&[][..], |s| &s.steps[..]);
        steps.iter().map(|st| (st.key, st.result, st.args.as_ref()))
    }
}

/// One call's key: canonical arguments and the id of their (tool, arguments) key;
/// arguments that break the schema, keyed as written; or why they cannot be read.
#[derive(Debug, Clone)]
enum Canonical {
    Valid(Arc<Value>, u32),
    Violates(Arc<Value>, u32, Arc<Vec<Violation>>),
    Unreadable(Vec<String>),
}

/// Canonicalizes every call of every sample. `resolver` answers `id` hints (None: IDs
/// are compared as written).
pub fn prepare(
    task: &Task,
    catalog: &Catalog,
    mut resolver: Option<&mut (dyn Resolver + '_)>,
) -> Prepared {
    let mut malformed = Vec::new();
    let mut results = KeyInterner::new(Rfc8785Form);
    let mut calls = CallIds {
        keys: KeyInterner::new(Rfc8785Form),
        written: BoundedMemo::new(),
    };
    // Each tool's name once per task, shared by the steps that call it (the catalog's
    // copy, for a tool it has).
    let mut names: BoundedMemo<&str, Arc<str>> = BoundedMemo::new();
    // A sample the reader shared with an earlier one prepares as that one did, unless
    // that one was unreadable: its malformed entries name their own sample.
    let reusable = |s: &PreparedSample| !matches!(s.plan, PlanKey::Malformed(_));
    let mut samples = per_sample(&task.samples, reusable, |i, sample| {
        let mut steps: Vec<PreparedStep> = Vec::with_capacity(sample.calls.len());
        let mut bad = sample.malformed.is_some();
        malformed.extend(sample.malformed.iter().map(|why| MalformedSample {
            sample: i,
            step: None,
            place: None,
            problems: vec![why.clone()],
        }));
        let (ranges, turns) = Turns::of(sample);
        // Where each call as written landed in canonical order, for `$from` steps; only
        // kept once a turn was reordered.
        let mut moved: Option<Vec<usize>> = None;
        for range in ranges {
            let start = range.start;
            for j in range.clone() {
                let call = &sample.calls[j];
                let spec = catalog.get(&call.tool);
                let step = (start, moved.as_deref(), sample.calls.len() > 1);
                let canon = calls.of(call, step, spec, resolver.as_deref_mut());
                let (args, key, violations) = match canon {
                    Canonical::Valid(v, key) => (Some(v), key, None),
                    Canonical::Violates(v, key, why) => (Some(v), key, Some(why)),
                    Canonical::Unreadable(problems) => {
                        bad = true;
                        malformed.push(MalformedSample {
                            sample: i,
                            step: Some(j),
                            place: Some(call.place(i, j)),
                            problems,
                        });
                        (None, calls.keys.id(format!("\u{0}malformed:{i}:{j}")), None)
                    }
                };
                steps.push(PreparedStep {
                    miss: reference_miss(spec, args.as_deref(), &call.observed),
                    tool: match spec {
                        Some(spec) => Arc::clone(&spec.shared_name),
                        None => names.get_or(&call.tool, || Arc::from(call.tool.as_str())),
                    },
                    args,
                    key,
                    result: call.observed.key_id(&mut results),
                    violations,
                });
            }
            sort_turn(&mut steps, range.clone(), &mut moved, sample.calls.len());
        }
        let plan = if bad {
            PlanKey::Malformed(i)
        } else {
            PlanKey::Steps(steps.iter().map(|s| s.key).collect(), turns.clone())
        };
        PreparedSample::of(i, plan, steps, turns)
    });
    // Plan keys are final here, and lining up turns leaves them as they are: the modal
    // plan is found once, for the pairing and for every rule that names it.
    let modal_plan = modal(samples.iter().map(|s| &s.plan));
    line_up_turns(&mut samples, modal_plan);
    Prepared {
        task_id: task.task_id.clone(),
        label: task.label,
        epoch_fixed: task.epoch_fixed.unwrap_or(true),
        modal_plan,
        samples,
        malformed,
        warnings: task.warnings.clone(),
    }
}

/// A sample's turns as [`split_turns`] cuts them, in order. A native sample (every call
/// its own turn) has no turn to split or sort, and its one-call turns are not collected.
enum Turns {
    Split(std::vec::IntoIter<std::ops::Range<usize>>),
    Singles(std::ops::Range<usize>),
}

impl Turns {
    /// The turns of `sample`, and their lengths as [`turn_lengths`] keeps them.
    fn of(sample: &crate::task::Sample) -> (Self, Vec<usize>) {
        if sample.turns.is_empty() {
            return (Turns::Singles(0..sample.calls.len()), Vec::new());
        }
        let split = split_turns(sample);
        let lengths = turn_lengths(&split);
        (Turns::Split(split.into_iter()), lengths)
    }
}

impl Iterator for Turns {
    type Item = std::ops::Range<usize>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Turns::Split(turns) => turns.next(),
            Turns::Singles(calls) => calls.next().map(|j| j..j + 1),
        }
    }
}

/// Turn lengths as a prepared sample keeps them: empty when every call is its own turn,
/// as in [`crate::task::Sample::turns`].
fn turn_lengths(ranges: &[std::ops::Range<usize>]) -> Vec<usize> {
    if ranges.iter().all(|r| r.len() == 1) {
        return Vec::new();
    }
    ranges.iter().map(|r| r.len()).collect()
}

/// Sorts the calls of one turn by key (calls made together have no order), and
/// remembers where each went in `moved` so later `$from` steps name the same call.
fn sort_turn(
    steps: &mut Vec<PreparedStep>,
    range: std::ops::Range<usize>,
    moved: &mut Option<Vec<usize>>,
    calls: usize,
) {
    if range.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = range.clone().collect();
    order.sort_by_key(|&j| steps[j].key);
    if order.iter().zip(range.clone()).all(|(a, b)| *a == b) {
        return;
    }
    let m = moved.get_or_insert_with(|| (0..calls).collect());
    let sorted: Vec<PreparedStep> = order.iter().map(|&j| steps[j].clone()).collect();
    for (k, &j) in order.iter().enumerate() {
        m[j] = range.start + k;
    }
    steps.splice(range, sorted);
}

/// A sample's turns as index ranges, a turn cut before any call that refers (`$from`) to
/// a call of its own turn: that call needs the other's result first, so the two were not
/// made together, and it must never be sorted before it.
fn split_turns(sample: &crate::task::Sample) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for range in sample.turn_ranges() {
        let mut start = range.start;
        for j in range.clone().skip(1) {
            let refers_within = match &sample.calls[j].arguments {
                Arguments::Json(v) => refs_of(v).into_iter().any(|s| s >= start && s < j),
                Arguments::Malformed(_) => false,
            };
            if refers_within {
                out.push(start..j);
                start = j;
            }
        }
        out.push(start..range.end);
    }
    out
}

/// The steps every `$from` in `v` names.
fn refs_of(v: &Value) -> Vec<usize> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<usize>) {
        if let Some(r) = as_from_ref(v) {
            if let Some(s) = r
                .as_object()
                .and_then(|o| o.get("step"))
                .and_then(Value::as_u64)
            {
                out.push(usize::try_from(s).unwrap_or(usize::MAX));
            }
            return;
        }
        match v {
            Value::Object(o) => o.iter().for_each(|(_, sub)| walk(sub, out)),
            Value::Array(items) => items.iter().for_each(|sub| walk(sub, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// `v` with every `$from` step renumbered to where that call landed in canonical order,
/// or None when nothing changes (so the shared memo can be used).
fn renumbered(v: &Value, moved: &[usize]) -> Option<Value> {
    fn walk(v: &Value, moved: &[usize], changed: &mut bool) -> Value {
        if let Some(r) = as_from_ref(v)
            && let Some(o) = r.as_object()
            && let Some(s) = o.get("step").and_then(Value::as_u64)
            && let Some(&to) = usize::try_from(s).ok().and_then(|s| moved.get(s))
            && to as u64 != s
        {
            *changed = true;
            let mut o = o.clone();
            o.insert(
                "step",
                Value::Number(crate::json::Number::from_u64(to as u64)),
            );
            return Value::Object(Object::from_iter([("$from".to_string(), Value::Object(o))]));
        }
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, sub)| (k.clone(), walk(sub, moved, changed)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|sub| walk(sub, moved, changed)).collect())
            }
            other => other.clone(),
        }
    }
    if refs_of(v).is_empty() {
        return None;
    }
    let mut changed = false;
    let out = walk(v, moved, &mut changed);
    changed.then_some(out)
}

/// Lines up the calls of each turn of every sample that differs from the modal plan
/// with the modal plan's calls of that turn (same tool first, then most arguments in
/// common), so per-step agreement and argument paths compare like with like. The plan
/// keys are untouched: within a turn order never counted.
fn line_up_turns(samples: &mut [PreparedSample], modal_plan: Option<(usize, usize)>) {
    if samples.iter().all(|s| s.turns.is_empty()) {
        return;
    }
    let Some((m, _)) = modal_plan else {
        return;
    };
    let reference = samples[m].clone();
    let ref_ranges = turn_ranges(&reference.turns, reference.steps.len());
    for s in samples.iter_mut() {
        if s.plan == reference.plan || s.turns.is_empty() {
            continue;
        }
        for (t, range) in turn_ranges(&s.turns, s.steps.len()).into_iter().enumerate() {
            let Some(want) = ref_ranges.get(t) else { break };
            if range.len() < 2 {
                continue;
            }
            let targets = &reference.steps[want.clone()];
            let calls = &s.steps[range.clone()];
            let order = best_pairing(calls, targets);
            let lined: Vec<PreparedStep> = order.iter().map(|&k| calls[k].clone()).collect();
            Arc::make_mut(&mut s.steps).splice(range, lined);
        }
    }
}

/// The order of `calls` that lines them up best with `targets`: the same call first,
/// then the same tool, then the arguments that tell the target apart from the others of
/// its turn (a value every call of the turn shares says nothing about which is which),
/// then any argument in common. Exhaustive for turns of up to six calls, greedy past
/// that; calls left over keep their order at the end.
fn best_pairing(calls: &[PreparedStep], targets: &[PreparedStep]) -> Vec<usize> {
    type Score = (usize, usize, usize, usize, usize);
    let score = |c: &PreparedStep, t: &PreparedStep| -> Score {
        let (mut telling, mut shared, mut like) = (0, 0, 0);
        if let (Some(Value::Object(x)), Some(Value::Object(y))) =
            (c.args.as_deref(), t.args.as_deref())
        {
            for (k, v) in y.iter() {
                if let (Some(Value::String(a)), Value::String(b)) = (x.get(k), v) {
                    like += resemblance(a, b);
                }
                if x.get(k) != Some(v) {
                    continue;
                }
                shared += 1;
                // Only a plain value names the call: a list written in either order, or a
                // value every call of the turn has, says nothing about which is which.
                let plain = !matches!(v, Value::Array(_) | Value::Object(_));
                let common = targets.iter().filter(|o| o.tool == t.tool).all(|o| {
                    o.args
                        .as_deref()
                        .and_then(Value::as_object)
                        .and_then(|o| o.get(k))
                        == Some(v)
                });
                if plain && !common {
                    telling += 1;
                }
            }
        }
        (
            usize::from(c.key == t.key),
            usize::from(c.tool == t.tool),
            telling,
            // A harmless variant (`GOOGL` for `GOOG`) is closer to its own call than to
            // a made-up value.
            like,
            shared,
        )
    };
    let scores: Vec<Vec<Score>> = calls
        .iter()
        .map(|c| targets.iter().map(|t| score(c, t)).collect())
        .collect();
    let total = |perm: &[usize]| -> Score {
        perm.iter()
            .zip(0..targets.len())
            .fold((0, 0, 0, 0, 0), |acc, (&c, t)| {
                let s = scores[c][t];
                (
                    acc.0 + s.0,
                    acc.1 + s.1,
                    acc.2 + s.2,
                    acc.3 + s.3,
                    acc.4 + s.4,
                )
            })
    };
    best_order(calls.len(), targets.len(), |c, t| scores[c][t], total)
}

/// The order of `n` calls over `places` that maximizes `total`: exhaustive (Heap's
/// algorithm) for up to six calls, where the first best order wins so the pairing is
/// reproducible; greedy by `score` past that, calls left over at the end in their order.
fn best_order<S: Ord + Copy>(
    n: usize,
    places: usize,
    score: impl Fn(usize, usize) -> S,
    total: impl Fn(&[usize]) -> S,
) -> Vec<usize> {
    let mut best: Vec<usize> = (0..n).collect();
    if n <= 6 {
        let mut perm: Vec<usize> = (0..n).collect();
        let mut best_score = total(&perm);
        let mut c = vec![0; n];
        let mut i = 1;
        while i < n {
            if c[i] < i {
                if i % 2 == 0 {
                    perm.swap(0, i);
                } else {
                    perm.swap(c[i], i);
                }
                let sc = total(&perm);
                if sc > best_score {
                    best_score = sc;
                    best.clone_from(&perm);
                }
                c[i] += 1;
                i = 1;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        return best;
    }
    let mut left: Vec<usize> = (0..n).collect();
    best.clear();
    for t in (0..places).take(n) {
        let pick = left
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (score(**c, t), std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        match pick {
            Some(i) => best.push(left.remove(i)),
            None => break,
        }
    }
    best.extend(left);
    best
}

/// How alike two strings read: Dice's coefficient over character pairs, 0 to 1000.
fn resemblance(a: &str, b: &str) -> usize {
    let pairs = |s: &str| -> Vec<(char, char)> {
        let cs: Vec<char> = s.to_lowercase().chars().collect();
        let mut p: Vec<(char, char)> = cs.windows(2).map(|w| (w[0], w[1])).collect();
        p.sort_unstable();
        p
    };
    let (x, y) = (pairs(a), pairs(b));
    if x.is_empty() && y.is_empty() {
        return usize::from(a.eq_ignore_ascii_case(b)) * 1000;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2000 * common / (x.len() + y.len())
}

/// The ids of a task's calls by key ([`canonical_call`]'s). Samples mostly repeat each
/// other's calls: each distinct (tool, step, arguments as written) of a sample of several
/// calls is canonicalized and keyed once (the step matters because `$from` may only name
/// earlier steps). A sample of one call that repeats an earlier one was shared by the
/// reader when it repeated it whole, so what is left to find is a call that returned
/// something else, too rare to pay for comparing every such call with the earlier ones
/// (on the benchmark's 20,000 tasks the memo found 8% of them, and cost more than it
/// saved).
struct CallIds<'a> {
    keys: KeyInterner<'a, Rfc8785Form>,
    written: BoundedMemo<(&'a str, usize, &'a Value), Canonical>,
}

impl<'a> CallIds<'a> {
    /// `call`'s canonical form and key, at `step`: the index of its turn's first call,
    /// where each call as written landed in canonical order once a turn was reordered
    /// (its `$from` references are renumbered by it), and whether its sample has several
    /// calls (only then is it looked for among the earlier ones).
    fn of(
        &mut self,
        call: &'a Call,
        (start, moved, several): (usize, Option<&[usize]>, bool),
        spec: Option<&ToolSpec>,
        resolver: Option<&mut (dyn Resolver + '_)>,
    ) -> Canonical {
        let v = match &call.arguments {
            Arguments::Malformed(why) => return Canonical::Unreadable(vec![why.clone()]),
            Arguments::Json(v) => v,
        };
        let keys = &mut self.keys;
        if let Some(v) = moved.and_then(|m| renumbered(v, m)) {
            return canonical_call(&call.tool, &Arc::new(v), start, spec, resolver, keys);
        }
        if !several {
            return canonical_call(&call.tool, v, start, spec, resolver, keys);
        }
        self.written.get_or((call.tool.as_str(), start, &**v), || {
            canonical_call(&call.tool, v, start, spec, resolver, keys)
        })
    }
}

/// One call's key; `spec` is its tool's, when the catalog has it.
fn canonical_call<'a>(
    tool: &'a str,
    v: &Arc<Value>,
    step: usize,
    spec: Option<&ToolSpec>,
    resolver: Option<&mut (dyn Resolver + '_)>,
    keys: &mut KeyInterner<'a, Rfc8785Form>,
) -> Canonical {
    let v = match spec {
        Some(spec) => match canonicalize_shared(spec, v, step, resolver) {
            Ok(c) => c,
            Err(Invalid::Unreadable(problems)) => return Canonical::Unreadable(problems),
            Err(Invalid::Violates(why)) => {
                let id = keys.id(call_key(tool, v, true));
                return Canonical::Violates(Arc::clone(v), id, Arc::new(why));
            }
        },
        // No schema for an unknown tool: compare as written (the gate rejects such a
        // plan anyway when it is the modal one).
        None => match &**v {
            Value::Object(o) if o.duplicate_key().is_none() => Arc::clone(v),
            Value::Object(o) => {
                return Canonical::Unreadable(vec![format!(
                    "arguments: duplicate key {:?}",
                    o.duplicate_key().unwrap_or_default()
                )]);
            }
            other => {
                return Canonical::Unreadable(vec![format!(
                    "arguments: expected an object, found {}",
                    other.kind()
                )]);
            }
        },
    };
    let id = keys.call(tool, &v);
    Canonical::Valid(v, id)
}

/// The modal key: (index of its first occurrence, count). Ties go to the first seen,
/// so the choice is reproducible.
pub(crate) fn modal<K: Ord>(keys: impl Iterator<Item = K>) -> Option<(usize, usize)> {
    tally(keys.enumerate().map(|(i, k)| (i, k, 1))).1
}

/// How keys spread, each given as (index of its sample, key, how many samples it
/// stands for): the number of distinct keys, and the modal key's (index of its first
/// sample, count), ties to the first seen. Sorted once instead of counted in a map:
/// a task has a handful of samples, and a map cost an allocation and a search per key.
fn tally<K: Ord>(keys: impl Iterator<Item = (usize, K, usize)>) -> (usize, Option<(usize, usize)>) {
    let mut all: Vec<(K, usize, usize)> = keys.map(|(i, k, times)| (k, i, times)).collect();
    // Samples mostly agree: one key throughout needs no sort.
    if let Some((one, ..)) = all.first()
        && all.iter().all(|(k, ..)| k == one)
    {
        let first = all.iter().map(|(_, i, _)| *i).min();
        let count = all.iter().map(|(.., times)| times).sum();
        return (1, first.map(|f| (f, count)));
    }
    // Each key's samples together, its first one first.
    all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut distinct, mut best) = (0, None);
    let mut rest = &all[..];
    while let Some((key, first, _)) = rest.first() {
        let len = rest.iter().take_while(|(k, ..)| k == key).count();
        let count = rest[..len].iter().map(|(.., times)| times).sum();
        distinct += 1;
        if best.is_none_or(|(f, c)| count > c || count == c && *first < f) {
            best = Some((*first, count));
        }
        rest = &rest[len..];
    }
    (distinct, best)
}

/// A distinct sample of a task: its index, and how many samples it stands for (itself
/// and the later ones prepared as copies of it, see `PreparedSample::first`).
#[derive(Clone, Copy)]
struct Counted<'a> {
    at: usize,
    sample: &'a PreparedSample,
    times: usize,
}

/// The distinct samples of `p` in the order they first occur. Every measure of
/// [`analyse`] reads a sample's keys alone, so a copy counts as its first does, and
/// 56% of the bench's samples are copies.
fn counted(p: &Prepared) -> Vec<Counted<'_>> {
    let mut out: Vec<Counted> = Vec::with_capacity(p.samples.len());
    // Where each sample was counted in `out`.
    let mut at: Vec<usize> = Vec::with_capacity(p.samples.len());
    for (i, s) in p.samples.iter().enumerate() {
        match at.get(s.first).copied().filter(|_| s.first < i) {
            Some(k) => {
                out[k].times += 1;
                at.push(k);
            }
            None => {
                at.push(out.len());
                out.push(Counted {
                    at: i,
                    sample: s,
                    times: 1,
                });
            }
        }
    }
    out
}

/// Applies docs/design.md, "Decision" to a prepared task.
pub fn classify(p: &Prepared, tools: &dyn ToolStates, opts: &Options) -> Decision {
    let samples = counted(p);
    let tools = &Looked::up(&samples, tools);
    let mut d = analyse(p, &samples, tools);
    if d.n > 0 && !opts.arg_reject.missed_by(1, d.n) {
        d.warnings.push(
            Say::new("reject_unreachable: with n = ")
                .n(d.n)
                .s(" the smallest possible agreement is ")
                .of(1, d.n)
                .s(" = ")
                .s(&one_in(d.n))
                .s(", not below arg_reject ")
                .ratio(opts.arg_reject)
                .s("; nothing can be rejected for fabricated arguments")
                .done(),
        );
    }
    decide(&mut d, p, tools, opts);
    d
}

/// Everything the rule reads, measured: agreements, the modal plan, per-step agreement,
/// where plans differ, suspect tools and schema violations. The verdict is left to
/// [`decide`].
fn analyse(p: &Prepared, samples: &[Counted], tools: &dyn ToolStates) -> Decision {
    let n = p.samples.len();
    let (modal_idx, arg_count) = p.modal_plan.unwrap_or((0, 0));
    let arg = Agreement::new(arg_count, n);
    let modal_sample = p.samples.get(modal_idx);

    let is_det = |t: &str| tools.state(t).is_some_and(|s| s.declared_deterministic);
    // A sample's results: those of its deterministic steps, by step, all samples' in
    // one vector (`ends[i]` is where sample i's end).
    let mut results: Vec<(usize, Option<u32>)> = Vec::new();
    let mut ends = Vec::with_capacity(samples.len());
    for c in samples {
        for (j, st) in c.sample.steps.iter().enumerate() {
            if is_det(&st.tool) {
                results.push((j, st.result));
            }
        }
        ends.push(results.len());
    }
    let result = (!results.is_empty()).then(|| {
        let starts = std::iter::once(0).chain(ends.iter().copied());
        let keys = (samples.iter().zip(starts.zip(ends.iter())))
            .map(|(c, (a, &b))| (c.at, &results[a..b], c.times));
        let (_, count) = tally(keys).1.unwrap_or((0, 0));
        Agreement::new(count, n)
    });

    let max_steps = (samples.iter().map(|c| c.sample.steps.len()))
        .max()
        .unwrap_or(0);
    let mut steps = Vec::with_capacity(max_steps);
    let mut first_divergent_step = None;
    for j in 0..max_steps {
        // None: the sample has no step j.
        let keys =
            (samples.iter()).map(|c| (c.at, c.sample.steps.get(j).map(|st| st.key), c.times));
        let (mi, c) = tally(keys).1.unwrap_or((0, 0));
        if c < n && first_divergent_step.is_none() {
            first_divergent_step = Some(j);
        }
        steps.push(StepAgreement {
            step: j,
            tool: p.samples[mi].steps.get(j).map(|st| String::from(&*st.tool)),
            agreement: Agreement::new(c, n),
        });
    }
    let mut divergent_paths = path_agreements(samples, n, max_steps);
    divergent_paths.truncate(MAX_PATHS);

    let mut tools_called: Vec<&str> = (samples.iter())
        .flat_map(|c| c.sample.steps.iter().map(|st| &*st.tool))
        .collect();
    tools_called.sort_unstable();
    tools_called.dedup();
    Decision {
        task_id: p.task_id.clone(),
        decision: Verdict::Defer,
        reasons: Vec::new(),
        explanation: Vec::new(),
        n,
        arg_agreement: arg,
        result_agreement: result,
        modal_plan: modal_sample
            .filter(|s| matches!(s.plan, PlanKey::Steps(..)))
            .map(|s| {
                s.steps
                    .iter()
                    .map(|st| PlanStep {
                        tool: String::from(&*st.tool),
                        arguments: (st.args.as_deref())
                            .map_or_else(|| "null".into(), jcs::to_string),
                    })
                    .collect()
            }),
        divergent_paths,
        steps,
        first_divergent_step,
        tools: tools_called.into_iter().map(String::from).collect(),
        // Samples whose results all agree leave no tool suspect: one answered alike
        // wherever it was called.
        suspect_tools: match result {
            Some(r) if r.count < n => suspect_tools(samples, &is_det),
            _ => Vec::new(),
        },
        malformed: p.malformed.clone(),
        schema_violations: schema_violations(p),
        warnings: p.warnings.clone(),
        label: p.label,
    }
}

/// Each distinct way steps break their schema, with the samples that break it so.
fn schema_violations(p: &Prepared) -> Vec<SchemaViolation> {
    let mut out: Vec<SchemaViolation> = Vec::new();
    // Where each distinct violation is listed, so many samples stay linear.
    let mut listed: BTreeMap<(usize, &str, &str, &str), usize> = BTreeMap::new();
    for (i, s) in p.samples.iter().enumerate() {
        for (j, st) in s.steps.iter().enumerate() {
            for v in st.violations.iter().flat_map(|v| v.iter()) {
                let at = (j, &*st.tool, v.path.as_str(), v.message.as_str());
                match listed.get(&at) {
                    Some(&k) => out[k].samples.push(i),
                    None => {
                        listed.insert(at, out.len());
                        out.push(SchemaViolation {
                            step: j,
                            tool: String::from(&*st.tool),
                            path: v.path.clone(),
                            keyword: v.keyword.clone(),
                            message: v.message.clone(),
                            samples: vec![i],
                        });
                    }
                }
            }
        }
    }
    out
}

/// The rule, in the seed's order: what cannot be judged, then the located-fabrication
/// reject, then what results say once arguments agree.
fn decide(d: &mut Decision, p: &Prepared, tools: &dyn ToolStates, opts: &Options) {
    let n = d.n;
    let a = d.arg_agreement.count;
    if n == 0 {
        return set(
            d,
            Verdict::Defer,
            Reason::NoSamples,
            "the task has no samples".into(),
        );
    }
    if let Some(plan) = &d.modal_plan {
        let unknown: Vec<&str> = plan
            .iter()
            .map(|s| s.tool.as_str())
            .filter(|t| tools.state(t).is_none())
            .collect();
        if !unknown.is_empty() {
            return set(
                d,
                Verdict::Reject,
                Reason::UnknownTool,
                format!(
                    "the modal plan calls {} that the catalog does not have",
                    quoted(&unknown)
                ),
            );
        }
    }
    if sample_preconditions_fail(d, p, opts) {
        return;
    }
    if opts.arg_reject.missed_by(a, n) {
        return low_agreement(d, p, tools, opts);
    }
    if let Some(v) = modal_violation(d, p).filter(|_| opts.rule == Rule::Gate) {
        return set(
            d,
            Verdict::Defer,
            Reason::SchemaMismatch,
            format!(
                "argument agreement {a}/{n}, but the modal plan breaks {:?}'s schema at step {} \
                 ({}, keyword `{}`): either the model or the schema is wrong, which is not a \
                 fabrication signature",
                v.tool,
                v.step,
                if v.path.is_empty() {
                    "the arguments".to_string()
                } else {
                    format!("arguments{}", v.path)
                },
                v.keyword
            ),
        );
    }
    if opts.arg_accept.met_by(a, n) {
        // Agreeing plans can still agree on an invented value: execution, not
        // agreement, tells.
        if let Some((verdict, why)) = referential_miss(p, tools).filter(|_| opts.rule == Rule::Gate)
        {
            return set(d, verdict, Reason::ReferentialMiss, why);
        }
        return agreeing_arguments(d, tools, opts);
    }
    set(
        d,
        Verdict::Defer,
        Reason::AmbiguousArguments,
        Say::new("argument agreement ")
            .of(a, n)
            .s(" is between arg_reject ")
            .ratio(opts.arg_reject)
            .s(" and arg_accept ")
            .ratio(opts.arg_accept)
            .done(),
    );
}

/// Seed conditions 3 and 4: enough samples, and a fixed epoch. True when one failed
/// (the task is then deferred, with every failed condition named).
fn sample_preconditions_fail(d: &mut Decision, p: &Prepared, opts: &Options) -> bool {
    let n = d.n;
    let mut blocked = false;
    if n < opts.min_samples {
        set(
            d,
            Verdict::Defer,
            Reason::InsufficientSamples,
            format!("{n} samples, fewer than min_samples {}", opts.min_samples),
        );
        blocked = true;
    }
    if !p.epoch_fixed {
        set(
            d,
            Verdict::Defer,
            Reason::EpochNotFixed,
            "the epoch was not fixed: a source the task read changed".into(),
        );
        blocked = true;
    }
    blocked
}

/// Seed condition 1 for every tool the samples call: declared deterministic, verified
/// this epoch, not quarantined. True when one failed (the task is then deferred, with
/// every failed condition named).
fn tool_conditions_fail(d: &mut Decision, tools: &dyn ToolStates, why_low: &str) -> bool {
    let names = d.tools.clone();
    untrusted_tools_defer(d, tools, &names, true, |list, what| {
        format!("{why_low}, but {list} {what}: cannot reject")
    })
}

/// Defers the task, naming each group of `names` that fails seed condition 1 (not
/// declared deterministic, when `nondeterministic_fails`; declared but not verified;
/// quarantined) with its reason, the sentence written by `say(tools, what they are)`.
/// True when a group failed.
fn untrusted_tools_defer(
    d: &mut Decision,
    tools: &dyn ToolStates,
    names: &[String],
    nondeterministic_fails: bool,
    say: impl Fn(&str, &str) -> String,
) -> bool {
    let states: Vec<(&String, ToolState)> = names
        .iter()
        .filter_map(|t| tools.state(t).map(|s| (t, s)))
        .collect();
    let failing = |f: &dyn Fn(&ToolState) -> bool| -> Vec<&String> {
        let mut out: Vec<&String> = (states.iter().filter(|(_, s)| f(s)))
            .map(|(t, _)| *t)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let nondet = failing(&|s| nondeterministic_fails && !s.declared_deterministic);
    let unverified = failing(&|s| s.declared_deterministic && !s.verified && !s.quarantined);
    let quarantined = failing(&|s| s.declared_deterministic && s.quarantined);
    let mut deferred = false;
    for (list, reason, what) in [
        (
            &nondet,
            Reason::ToolNotDeterministic,
            "not declared deterministic",
        ),
        (
            &unverified,
            Reason::ToolUnverified,
            "not verified this epoch",
        ),
        (
            &quarantined,
            Reason::ToolQuarantined,
            "quarantined in this batch",
        ),
    ] {
        if !list.is_empty() {
            set(d, Verdict::Defer, reason, say(&quoted(list), what));
            deferred = true;
        }
    }
    deferred
}

/// Argument agreement below arg_reject. A reject needs every tool verified
/// deterministic (seed condition 1), no upstream taint, and a located fabrication: one
/// path whose own agreement is below arg_reject. Several paths that each vary harmlessly
/// (a date in two formats, an optional field sometimes given) make every plan distinct
/// without any fabricated value; such a task defers.
fn low_agreement(d: &mut Decision, p: &Prepared, tools: &dyn ToolStates, opts: &Options) {
    let (n, a) = (d.n, d.arg_agreement.count);
    let why_low = Say::new("argument agreement ")
        .of(a, n)
        .s(" is below arg_reject ")
        .ratio(opts.arg_reject)
        .done();
    let deferred = tool_conditions_fail(d, tools, &why_low);
    if deferred {
        return;
    }
    if let Some(step) = tainting_step(p, d.first_divergent_step) {
        return set(
            d,
            Verdict::Defer,
            Reason::TaintedByUpstream,
            format!(
                "{why_low}, but results of step {step} already disagreed and the arguments \
                 diverge only after it: the model may have read those results"
            ),
        );
    }
    let described = |paths: &mut dyn Iterator<Item = &DivergentPath>| -> String {
        let mut say = Say::new("");
        for (i, p) in paths.take(3).enumerate() {
            say = say
                .s(if i == 0 { "" } else { "; " })
                .s(&p.path)
                .s(": ")
                .n(p.distinct)
                .s(" distinct values, agreement ")
                .of(p.agreement.count, n);
        }
        say.done()
    };
    let scattered = |x: &&DivergentPath| opts.arg_reject.missed_by(x.agreement.count, n);
    if d.divergent_paths.iter().any(|x| scattered(&x)) {
        let located = described(&mut d.divergent_paths.iter().filter(scattered));
        return set(
            d,
            Verdict::Reject,
            Reason::FabricatedArguments,
            Say::new(&why_low)
                .s(", and scattered where the plans differ (")
                .s(&located)
                .s(")")
                .done(),
        );
    }
    if opts.rule == Rule::Seed {
        let differ = described(&mut d.divergent_paths.iter());
        return set(
            d,
            Verdict::Reject,
            Reason::FabricatedArguments,
            if differ.is_empty() {
                why_low
            } else {
                format!("{why_low} ({differ})")
            },
        );
    }
    let spread = described(&mut d.divergent_paths.iter());
    set(
        d,
        Verdict::Defer,
        Reason::DiffuseArguments,
        format!(
            "{why_low}, but no single path is scattered below it (each path's agreement is at \
             least arg_reject{}): harmless variation in several places, not a located \
             fabrication",
            if spread.is_empty() {
                String::new()
            } else {
                format!(": {spread}")
            }
        ),
    );
}

/// A consistent fabrication: the modal plan refers to something a verified deterministic
/// tool, in a fixed epoch, says does not exist. Agreement cannot see it (every sample
/// repeats the invented value, every call fails alike), execution can. Rejected when the
/// parameter is declared `must_exist` or its `id` resolver found nothing; otherwise
/// deferred, since "does o_9 exist?" has `not_found` as its right answer.
fn referential_miss(p: &Prepared, tools: &dyn ToolStates) -> Option<(Verdict, String)> {
    let (m, _) = p.modal_plan?;
    let modal_plan = &p.samples[m];
    let sound = |t: &str| {
        tools
            .state(t)
            .is_some_and(|s| s.declared_deterministic && s.verified && !s.quarantined)
    };
    let agreeing: Vec<&PreparedSample> = p
        .samples
        .iter()
        .filter(|s| s.plan == modal_plan.plan)
        .collect();
    for (j, st) in modal_plan.steps.iter().enumerate() {
        let Some(miss) = &st.miss else { continue };
        if !sound(&st.tool) {
            continue;
        }
        let named: Vec<String> = miss
            .params
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        let named = named.join(", ");
        // Most samples that make the modal plan got not_found here, not just one.
        let not_found = agreeing
            .iter()
            .filter(|s| {
                s.steps
                    .get(j)
                    .and_then(|x| x.miss.as_ref())
                    .is_some_and(|x| x.not_found)
            })
            .count();
        let resolved_nothing: Vec<&(String, String)> = miss
            .unresolved
            .iter()
            .filter(|(_, resolver)| sound(resolver))
            .collect();
        if let Some((param, resolver)) = resolved_nothing.first() {
            return Some((
                Verdict::Reject,
                format!(
                    "referential miss at step {j} ({:?}): the resolver {resolver:?} finds no \
                     {param} for {named} in this epoch, in every sample that makes the modal plan",
                    st.tool
                ),
            ));
        }
        if 2 * not_found <= agreeing.len() {
            continue;
        }
        let what = format!(
            "referential miss at step {j} ({:?}): {not_found} of {} samples that make the modal \
             plan got not_found for {named} from a verified deterministic tool in a fixed epoch",
            st.tool,
            agreeing.len()
        );
        return Some(if miss.must_exist {
            (
                Verdict::Reject,
                format!("{what}, and the parameter is declared must_exist: the value was invented"),
            )
        } else {
            (
                Verdict::Defer,
                format!(
                    "{what}; the parameter is not declared must_exist, so not_found may be the \
                     right answer: cannot accept"
                ),
            )
        });
    }
    None
}

/// The first way the modal plan breaks its tools' schemas, if it does.
fn modal_violation<'d>(d: &'d Decision, p: &Prepared) -> Option<&'d SchemaViolation> {
    let (m, _) = p.modal_plan?;
    d.schema_violations.iter().find(|v| v.samples.contains(&m))
}

/// Arguments agree: results decide between accept and the tool being suspect. Only the
/// results of tools declared deterministic, verified and not quarantined can support an
/// accept: a quarantined tool's agreeing `not_found`s would otherwise accept the very
/// fabrication its quarantine hid from the referential-miss check.
fn agreeing_arguments(d: &mut Decision, tools: &dyn ToolStates, opts: &Options) {
    let (n, a) = (d.n, d.arg_agreement.count);
    let agree = Say::new("argument agreement ")
        .of(a, n)
        .s(" meets arg_accept ")
        .ratio(opts.arg_accept)
        .done();
    match d.result_agreement {
        None => {
            set(d, Verdict::Accept, Reason::ArgumentsAgree, agree);
            set(
                d,
                Verdict::Accept,
                Reason::NoDeterministicStep,
                "no step's tool is declared deterministic, so results are not compared".into(),
            );
        }
        Some(r) if opts.result_accept.met_by(r.count, n) => {
            let untrusted = |t: &String| {
                (tools.state(t))
                    .is_some_and(|s| s.declared_deterministic && (s.quarantined || !s.verified))
            };
            let any_untrusted = match &d.modal_plan {
                Some(plan) => plan.iter().any(|st| untrusted(&st.tool)),
                None => d.tools.iter().any(untrusted),
            };
            // Words only for a task that defers: an accept costs one look per step.
            if opts.rule == Rule::Gate && any_untrusted {
                let modal_tools: Vec<String> = match &d.modal_plan {
                    Some(plan) => plan.iter().map(|st| st.tool.clone()).collect(),
                    None => d.tools.clone(),
                };
                let results_agree = Say::new(&agree)
                    .s(" and result agreement ")
                    .of(r.count, n)
                    .s(" meets result_accept ")
                    .ratio(opts.result_accept)
                    .done();
                let untrusted =
                    untrusted_tools_defer(d, tools, &modal_tools, false, |list, what| {
                        format!(
                            "{results_agree}, but the modal plan calls {list} {what}: its results \
                         cannot support an accept"
                        )
                    });
                if untrusted {
                    return;
                }
            }
            set(d, Verdict::Accept, Reason::ArgumentsAgree, agree);
            set(
                d,
                Verdict::Accept,
                Reason::ResultsAgree,
                Say::new("result agreement ")
                    .of(r.count, n)
                    .s(" meets result_accept ")
                    .ratio(opts.result_accept)
                    .done(),
            );
        }
        Some(r) if opts.result_suspect.missed_by(r.count, n) => {
            let who = if d.suspect_tools.is_empty() {
                String::new()
            } else {
                format!(": suspect {}", quoted(&d.suspect_tools))
            };
            set(
                d,
                Verdict::Defer,
                Reason::ToolSuspect,
                Say::new(&agree)
                    .s(", but result agreement ")
                    .of(r.count, n)
                    .s(" is below result_suspect ")
                    .ratio(opts.result_suspect)
                    .s(&who)
                    .done(),
            );
        }
        Some(r) => {
            set(
                d,
                Verdict::Defer,
                Reason::ResultInconclusive,
                Say::new(&agree)
                    .s(", but result agreement ")
                    .of(r.count, n)
                    .s(" is below result_accept ")
                    .ratio(opts.result_accept)
                    .done(),
            );
        }
    }
}

fn set(d: &mut Decision, v: Verdict, r: Reason, why: String) {
    d.decision = v;
    d.reasons.push(r);
    d.explanation.push(why);
}

/// An explanation, written piece by piece: a `format!` cost about 700 instructions, and
/// a task explains itself two or three times.
struct Say(String);

impl Say {
    fn new(text: &str) -> Self {
        let mut s = String::with_capacity(text.len() + 96);
        s.push_str(text);
        Say(s)
    }
    fn s(mut self, text: &str) -> Self {
        self.0.push_str(text);
        self
    }
    fn n(mut self, v: usize) -> Self {
        jcs::write_usize(v, &mut self.0);
        self
    }
    /// `count/n`.
    fn of(self, count: usize, n: usize) -> Self {
        self.n(count).s("/").n(n)
    }
    fn ratio(mut self, r: Ratio) -> Self {
        r.write_to(&mut self.0);
        self
    }
    fn done(self) -> String {
        self.0
    }
}

/// Agreements of up to this many samples have `1/n` to two places in [`ONE_IN`].
const ONE_IN_N: usize = 64;
/// `1/n` to two places (`{:.2}`) for `n <= ONE_IN_N`, written once per process.
static ONE_IN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// `1/n` to two places, as `{:.2}` writes it.
fn one_in(n: usize) -> std::borrow::Cow<'static, str> {
    let two_places = |n: usize| format!("{:.2}", 1.0 / n as f64);
    match ONE_IN
        .get_or_init(|| (0..=ONE_IN_N).map(two_places).collect())
        .get(n)
    {
        Some(text) => text.into(),
        None => two_places(n).into(),
    }
}

fn quoted<S: AsRef<str>>(names: &[S]) -> String {
    let q: Vec<String> = names.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!(
        "{} {}",
        if q.len() == 1 { "tool" } else { "tools" },
        q.join(", ")
    )
}

/// The first step before `divergent` whose results disagree, if any.
fn tainting_step(p: &Prepared, divergent: Option<usize>) -> Option<usize> {
    let d = divergent?;
    (0..d).find(|&j| {
        let results: BTreeSet<u32> = p
            .samples
            .iter()
            .filter_map(|s| s.steps.get(j).and_then(|st| st.result))
            .collect();
        results.len() > 1
    })
}

/// Deterministic tools that answered identical calls (same plan so far) differently.
fn suspect_tools(samples: &[Counted], is_det: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = BTreeSet::new();
    // Each sample's plan so far by id: (id of the prefix before, key of this step) ->
    // id. Samples that agree up to step j share an id, found without comparing whole
    // prefixes, which made plans of thousands of steps quadratic.
    let mut prefixes: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut prefix = vec![u32::MAX; samples.len()];
    let max = (samples.iter().map(|c| c.sample.steps.len()))
        .max()
        .unwrap_or(0);
    for j in 0..max {
        // Per prefix: the tool, its first result, and whether another result differed.
        let mut groups: BTreeMap<u32, (&str, u32, bool)> = BTreeMap::new();
        for (c, prefix) in samples.iter().zip(prefix.iter_mut()) {
            let Some(st) = c.sample.steps.get(j) else {
                continue;
            };
            let next = u32::try_from(prefixes.len()).unwrap_or(u32::MAX - 1);
            *prefix = *prefixes.entry((*prefix, st.key)).or_insert(next);
            if st.args.is_none() || !is_det(&st.tool) {
                continue;
            }
            let Some(r) = st.result else {
                continue;
            };
            let group = groups.entry(*prefix).or_insert((&st.tool, r, false));
            group.2 |= group.1 != r;
        }
        for (tool, _, differ) in groups.into_values() {
            if differ {
                out.insert(String::from(tool));
            }
        }
    }
    out.into_iter().collect()
}

/// Paths listed in a decision, most scattered first.
const MAX_PATHS: usize = 32;
/// Paths walked per task at most, so one enormous argument cannot stall a run.
const PATH_WALK_LIMIT: usize = 10_000;

/// Every place where the samples' plans differ: the plan's length, each step's tool, and
/// each argument path (objects are walked, arrays of one length too; absence counts as
/// a value; unreadable arguments agree with nothing), each with its number of distinct
/// values and how many samples share its most common one. Most scattered first.
fn path_agreements(samples: &[Counted], n: usize, max_steps: usize) -> Vec<DivergentPath> {
    let mut out = Vec::new();
    // The path is spelled only where samples differ: most tasks agree on every step.
    fn push_counted(
        path: impl FnOnce() -> String,
        (distinct, modal): (usize, Option<(usize, usize)>),
        n: usize,
        out: &mut Vec<DivergentPath>,
    ) {
        if distinct > 1 {
            out.push(DivergentPath {
                path: path(),
                distinct,
                agreement: Agreement::new(modal.map_or(0, |(_, count)| count), n),
            });
        }
    }
    let lens = samples
        .iter()
        .map(|c| (c.at, c.sample.steps.len(), c.times));
    push_counted(|| "$.steps".into(), tally(lens), n, &mut out);
    for j in 0..max_steps {
        let tools = samples.iter().map(|c| {
            let t = c.sample.steps.get(j).map_or("\u{0}", |st| &*st.tool);
            (c.at, t, c.times)
        });
        let step = |what: &str| {
            let mut path = String::with_capacity(32);
            path.push_str("$.steps[");
            jcs::write_usize(j, &mut path);
            path.push_str("].");
            path.push_str(what);
            path
        };
        push_counted(|| step("tool"), tally(tools), n, &mut out);
        // Arguments are compared among readable samples; unreadable ones are listed in
        // the decision on their own. When every sample has this step and the readable
        // ones share one (tool, arguments) key, their arguments print the same and
        // there is nothing to walk.
        let mut keys =
            (samples.iter()).map(|c| c.sample.steps.get(j).map(|st| (st.key, st.args.is_some())));
        let mut readable = keys.clone().flatten().filter(|(_, ok)| *ok).map(|(k, _)| k);
        let first = readable.next();
        if keys.all(|k| k.is_some()) && readable.all(|k| Some(k) == first) {
            continue;
        }
        let args: Vec<(Option<&Value>, usize)> = (samples.iter())
            .filter_map(|c| match c.sample.steps.get(j) {
                None => Some((None, c.times)),
                Some(st) => st.args.as_deref().map(|v| (Some(v), c.times)),
            })
            .collect();
        walk(&mut step("arguments"), &args, n, &mut out);
    }
    out.sort_by_key(|p| p.agreement.count);
    out
}

/// Lists where `values` differ below `path` (the buffer is left as it was given); each
/// value comes with how many samples hold it.
fn walk(
    path: &mut String,
    values: &[(Option<&Value>, usize)],
    n: usize,
    out: &mut Vec<DivergentPath>,
) {
    if out.len() >= PATH_WALK_LIMIT {
        return;
    }
    // Objects, and arrays of one length, are walked without being printed: where they
    // print alike so does every member, and nothing below them is listed. Printing
    // them at each level made a deep argument cost its depth times its size.
    if values
        .iter()
        .all(|(v, _)| matches!(v, Some(Value::Object(_))))
    {
        let objs: Vec<(&Object, usize)> = values
            .iter()
            .filter_map(|(v, times)| Some((v.and_then(Value::as_object)?, *times)))
            .collect();
        let mut names: Vec<&String> = objs.iter().flat_map(|(o, _)| o.keys()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let sub: Vec<(Option<&Value>, usize)> = objs
                .iter()
                .map(|(o, times)| (o.get(name), *times))
                .collect();
            let len = path.len();
            push_member(path, name);
            walk(path, &sub, n, out);
            path.truncate(len);
        }
        return;
    }
    if let Some((Some(Value::Array(first)), _)) = values.first() {
        let same_len = values
            .iter()
            .all(|(v, _)| matches!(v, Some(Value::Array(a)) if a.len() == first.len()));
        if same_len {
            for i in 0..first.len() {
                let sub: Vec<(Option<&Value>, usize)> = values
                    .iter()
                    .map(|(v, times)| (v.and_then(Value::as_array).and_then(|a| a.get(i)), *times))
                    .collect();
                let len = path.len();
                path.push('[');
                jcs::write_usize(i, path);
                path.push(']');
                walk(path, &sub, n, out);
                path.truncate(len);
            }
            return;
        }
    }
    // Values equal as trees print equal: where every value is the first, nothing is
    // printed; a value met again among the last few is not printed again, and the
    // bound keeps many distinct values linear.
    if values.iter().all(|(v, _)| *v == values[0].0) {
        return;
    }
    // Each distinct print gets the next id, and the count at that index.
    let mut printed: BoundedMemo<Option<&Value>, usize> = BoundedMemo::new();
    let mut ids: BTreeMap<Leaf, usize> = BTreeMap::new();
    let mut counts: Vec<usize> = Vec::new();
    for (v, times) in values {
        let id = printed.get_or(*v, || {
            let next = ids.len();
            let leaf = match v {
                Some(Value::String(text)) => Leaf::Text(text),
                Some(other) => Leaf::Printed(jcs::to_string(other)),
                None => Leaf::Printed("\u{0}".into()),
            };
            *ids.entry(leaf).or_insert(next)
        });
        if id == counts.len() {
            counts.push(0);
        }
        counts[id] += times;
    }
    if counts.len() <= 1 {
        return;
    }
    out.push(DivergentPath {
        path: path.clone(),
        distinct: counts.len(),
        agreement: Agreement::new(counts.iter().copied().max().unwrap_or(0), n),
    });
}

/// A value as [`walk`] tells values apart: a string by its text (it prints like
/// another exactly when the texts are equal, and never like a value of another kind),
/// anything else by its RFC 8785 print; printing a string was most of the walk.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Leaf<'a> {
    Text(&'a str),
    Printed(String),
}

/// One step of a `$.a.b["odd key"]` path: `.name` for plain identifiers, else a
/// bracketed JSON string, so every path plangate prints reads the same way.
pub fn path_member(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 4);
    push_member(&mut s, name);
    s
}

/// Appends [`path_member`]'s step.
fn push_member(path: &mut String, name: &str) {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        path.push('.');
        path.push_str(name);
    } else {
        path.push('[');
        jcs::write_string(name, path);
        path.push(']');
    }
}

/// Tool states as the catalog records them (`verified` as given, nothing quarantined):
/// what `plangate score` judges by, since its results may come from other epochs.
pub fn tool_states(catalog: &Catalog) -> BTreeMap<String, ToolState> {
    catalog
        .tools()
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                ToolState {
                    declared_deterministic: t.deterministic,
                    verified: t.verified.unwrap_or(false),
                    quarantined: false,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_out_of_order_are_refused_naming_both() {
        let r = |s: &str| s.parse::<Ratio>().unwrap();
        assert_eq!(Options::default().check(), Ok(()));
        let equal = Options {
            arg_reject: r("0.5"),
            arg_accept: r("0.50"),
            ..Options::default()
        };
        assert_eq!(equal.check(), Ok(()));
        let args = Options {
            arg_reject: r("0.9"),
            arg_accept: r("0.1"),
            ..Options::default()
        };
        let e = args.check().unwrap_err();
        assert_eq!((e.lower, e.upper), ("arg_reject", "arg_accept"));
        assert_eq!(
            e.to_string(),
            "arg_reject 0.9 is above arg_accept 0.1: arg_reject must be at most arg_accept"
        );
        let results = Options {
            result_suspect: r("0.9"),
            result_accept: r("0.1"),
            ..Options::default()
        };
        assert_eq!(results.check().unwrap_err().lower, "result_suspect");
    }

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

    #[test]
    fn one_in_n_reads_as_two_places_do() {
        for n in 1..=ONE_IN_N * 4 {
            assert_eq!(one_in(n), format!("{:.2}", 1.0 / n as f64), "1/{n}");
        }
        assert_eq!(one_in(8), "0.12", "a tie rounds as {{:.2}} rounds it");
    }

    #[test]
    fn walk_lists_only_leaves_that_print_apart() {
        let walked = |texts: &[&str]| {
            let values: Vec<Value> = texts.iter().map(|t| parse(t).unwrap()).collect();
            let refs: Vec<(Option<&Value>, usize)> = values.iter().map(|v| (Some(v), 1)).collect();
            let mut out = Vec::new();
            let mut path = String::from("$");
            walk(&mut path, &refs, refs.len(), &mut out);
            assert_eq!(path, "$", "the path buffer is handed back as it came");
            out.into_iter()
                .map(|p| (p.path, p.distinct, p.agreement.count))
                .collect::<Vec<_>>()
        };
        // Different trees, one print: nothing differs.
        assert_eq!(walked(&[r#"{"a":{"b":1}}"#, r#"{"a":{"b":1.0}}"#]), vec![]);
        assert_eq!(
            walked(&[
                r#"{"a":[1,{"c":"x"}],"odd key":2,"z":1}"#,
                r#"{"a":[1,{"c":"y"}],"odd key":3,"z":1}"#,
                r#"{"a":[1,{"c":"x"}],"odd key":2}"#,
            ]),
            vec![
                ("$.a[1].c".to_string(), 2, 2),
                ("$[\"odd key\"]".to_string(), 2, 2),
                ("$.z".to_string(), 2, 2),
            ]
        );
        // Arrays of different lengths are one value.
        assert_eq!(
            walked(&["[1,2]", "[1]", "[1]"]),
            vec![("$".to_string(), 2, 2)]
        );
    }

    /// The map `modal` used before: (first index, count) per key, ties to the first.
    fn tally_by_map(keys: &[(usize, u8, usize)]) -> (usize, Option<(usize, usize)>) {
        let mut counts: BTreeMap<u8, (usize, usize)> = BTreeMap::new();
        for &(i, k, times) in keys {
            counts.entry(k).or_insert((i, 0)).1 += times;
        }
        let best = (counts.values().copied()).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)));
        (counts.len(), best)
    }

    #[test]
    fn plan_keys_are_equal_as_they_order() {
        let keys = [
            PlanKey::Steps(Arc::from([1, 2]), vec![]),
            PlanKey::Steps(Arc::from([1, 2]), vec![]),
            PlanKey::Steps(Arc::from([1, 2]), vec![1, 1]),
            PlanKey::Steps(Arc::from([1, 2]), vec![2]),
            PlanKey::Steps(Arc::from([1, 2]), vec![1]),
            PlanKey::Steps(Arc::from([1, 3]), vec![]),
            PlanKey::Steps(Arc::from([]), vec![]),
            PlanKey::Malformed(0),
            PlanKey::Malformed(1),
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(a == b, a.cmp(b).is_eq(), "{a:?} and {b:?}");
            }
        }
    }

    #[test]
    fn tally_counts_as_a_map_counts() {
        let mut draw = crate::jcs::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = |m: u64| draw(m) as usize;
        for _ in 0..5_000 {
            let len = next(12);
            let keys: Vec<(usize, u8, usize)> = (0..len)
                .map(|i| (i * 3 + next(3), next(4) as u8, 1 + next(3)))
                .collect();
            assert_eq!(tally(keys.iter().copied()), tally_by_map(&keys), "{keys:?}");
        }
        assert_eq!(tally(std::iter::empty::<(usize, u8, usize)>()), (0, None));
        // One key throughout: its first sample, whatever order the samples come in.
        assert_eq!(tally([(4, 7, 1), (2, 7, 3)].into_iter()), (1, Some((2, 4))));
        // A tie goes to the key seen first, whatever the order keys sort in.
        assert_eq!(tally([(0, 9, 2), (1, 1, 2)].into_iter()), (2, Some((0, 2))));
    }

    #[test]
    fn say_writes_what_format_writes() {
        let r: Ratio = "0.80".parse().unwrap();
        let said = Say::new("a ").of(4, 5).s(" b ").ratio(r).n(12_345).done();
        assert_eq!(said, format!("a 4/5 b {r}12345"));
        assert_eq!(said, "a 4/5 b 0.812345");
    }
    use crate::json::parse;
    use crate::task::parse_task_line;

    fn catalog() -> Catalog {
        Catalog::from_value(
            &parse(
                r#"[{"name":"w","input_schema":{"type":"object","properties":{
                  "city":{"type":"string"},"unit":{"type":"string","default":"c"}},"required":["city"]},
                  "x-plangate":{"deterministic":true,"verified":true}}]"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    /// Calls keyed by fingerprint, unprinted while no two meet, get the ids their printed
    /// keys would: valid calls (spellings the hints merge among them), calls that break
    /// the schema, and unreadable ones, numbered by first appearance.
    #[test]
    fn call_ids_are_the_ids_of_their_printed_keys() {
        let c = catalog();
        let call =
            |args: &str| format!(r#"{{"calls":[{{"tool":"w","arguments":{args},"result":1}}]}}"#);
        let samples = [
            call(r#"{"city":"Oslo"}"#),
            call(r#"{"city":7}"#),
            call(r#"{"city":"Rome","unit":"c"}"#),
            call(r#"{"city":"Oslo","unit":"c"}"#),
            call(r#"{"city":"Oslo","city":"Rome"}"#),
            call(r#"{"city":"Rome"}"#),
            call(r#"{"city":7}"#),
            call(r#"{"city":1.0}"#),
        ];
        let line = format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(","));
        let p = prepare(&parse_task_line(line.as_bytes()).unwrap(), &c, None);
        let mut forms: Vec<String> = Vec::new();
        let mut want = Vec::new();
        for (i, s) in p.samples.iter().enumerate() {
            let step = &s.steps[0];
            let form = match &step.args {
                Some(v) => call_key("w", v, step.violations.is_some()),
                None => format!("\u{0}malformed:{i}:0"),
            };
            let id = forms.iter().position(|f| *f == form).unwrap_or_else(|| {
                forms.push(form);
                forms.len() - 1
            });
            want.push(id as u32);
        }
        let keys: Vec<u32> = p.samples.iter().map(|s| s.steps[0].key).collect();
        assert_eq!(keys, want);
        assert_eq!(keys, [0, 1, 2, 0, 3, 2, 1, 4]);
    }

    /// A call of a sample of several calls is canonicalized once for the samples that
    /// repeat it (they share its canonical tree); a sample's only call is canonicalized
    /// anew, to the same key.
    #[test]
    fn calls_of_several_call_samples_are_looked_up_again() {
        let c = catalog();
        let line = r#"{"task_id":"t","samples":[{"calls":[
          {"tool":"w","arguments":{"city":"Oslo"},"result":1},
          {"tool":"w","arguments":{"city":"Rome"},"result":2}]}]}"#;
        let t = parse_task_line(line.as_bytes()).unwrap();
        let mut ids = CallIds {
            keys: KeyInterner::new(Rfc8785Form),
            written: BoundedMemo::new(),
        };
        let mut of = |j: usize, several: bool| match ids.of(
            &t.samples[0].calls[j],
            (j, None, several),
            c.get("w"),
            None,
        ) {
            Canonical::Valid(v, key) => (v, key),
            other => panic!("{other:?}"),
        };
        let (first, key) = of(0, true);
        let (again, key_again) = of(0, true);
        assert!(Arc::ptr_eq(&first, &again) && key == key_again);
        let (single, key_single) = of(1, false);
        let (single_again, key_single_again) = of(1, false);
        assert!(!Arc::ptr_eq(&single, &single_again));
        assert_eq!((key_single, key_single_again), (1, 1));
    }

    fn decide_line(line: &str) -> serde_json::Value {
        let c = catalog();
        let t = parse_task_line(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        let d = classify(
            &prepare(&t, &c, None),
            &tool_states(&c),
            &Options::default(),
        );
        serde_json::to_value(&d).unwrap()
    }

    /// One task, its parallel calls shuffled per sample, written natively, as OpenAI
    /// transcripts and as Anthropic transcripts: the same decision, field for field.
    #[test]
    fn a_task_decides_alike_in_every_sample_shape() {
        // (calls in the order this sample made them: city, unit or none, result)
        let samples: Vec<Vec<(&str, Option<&str>, u32)>> = vec![
            vec![("Oslo", None, 3), ("Rome", Some("c"), 19)],
            vec![("Rome", None, 19), ("Oslo", None, 3)],
            vec![("Oslo", Some("c"), 3), ("Rome", None, 19)],
            vec![("Rome", None, 19), ("Oslo", None, 3)],
            vec![("Rome", None, 19), ("Oslo", Some("c"), 3)],
            vec![("Oslo", None, 3), ("Bergen", None, 7)],
        ];
        let args = |city: &str, unit: Option<&str>| match unit {
            Some(u) => serde_json::json!({"city": city, "unit": u}),
            None => serde_json::json!({"city": city}),
        };
        let native: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let turn: Vec<_> = s
                    .iter()
                    .map(|(c, u, r)| serde_json::json!({"tool": "w", "arguments": args(c, *u), "result": {"t": r}}))
                    .collect();
                serde_json::json!({"turns": [turn]})
            })
            .collect();
        let openai: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let calls: Vec<_> = s.iter().enumerate().map(|(k, (c, u, _))| serde_json::json!({"id": format!("c{k}"), "type": "function", "function": {"name": "w", "arguments": args(c, *u).to_string()}})).collect();
                let mut messages = vec![
                    serde_json::json!({"role": "user", "content": "weather?"}),
                    serde_json::json!({"role": "assistant", "content": null, "tool_calls": calls}),
                ];
                for (k, (_, _, r)) in s.iter().enumerate().rev() {
                    messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{k}"), "content": format!("{{\"t\": {r}}}")}));
                }
                serde_json::json!({"messages": messages})
            })
            .collect();
        let anthropic: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let uses: Vec<_> = s.iter().enumerate().map(|(k, (c, u, _))| serde_json::json!({"type": "tool_use", "id": format!("t{k}"), "name": "w", "input": args(c, *u)})).collect();
                let results: Vec<_> = s.iter().enumerate().map(|(k, (_, _, r))| serde_json::json!({"type": "tool_result", "tool_use_id": format!("t{k}"), "content": [{"type": "text", "text": format!("{{\"t\":{r}}}")}]})).collect();
                serde_json::json!({"messages": [
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "content": uses},
                    {"role": "user", "content": results}]})
            })
            .collect();
        let line = |samples: Vec<serde_json::Value>| {
            serde_json::json!({"task_id": "t", "samples": samples}).to_string()
        };
        let want = decide_line(&line(native));
        assert_eq!(want["decision"], "accept", "{want:#}");
        assert_eq!(want["arg_agreement"]["count"], 5, "{want:#}");
        for other in [openai, anthropic] {
            assert_eq!(decide_line(&line(other)), want);
        }
    }

    /// A task whose samples repeat, differ in arguments and in results, counted once per
    /// distinct sample: every measure equals that of the samples read apart.
    #[test]
    fn counted_samples_measure_as_every_sample() {
        let c = catalog();
        let call = |city: &str, t: u32| {
            format!(
                r#"{{"calls":[{{"tool":"w","arguments":{{"city":"{city}"}},"result":{{"t":{t}}}}}]}}"#
            )
        };
        let (oslo, oslo_other, rome) = (call("Oslo", 3), call("Oslo", 4), call("Rome", 19));
        let line = format!(
            r#"{{"task_id":"t","samples":[{rome},{oslo},{oslo},{oslo_other},{rome},{oslo},{rome}]}}"#
        );
        let shared = parse_task_line(line.as_bytes()).unwrap();
        let apart = Task {
            samples: (shared.samples.iter())
                .map(|s| Arc::new((**s).clone()))
                .collect(),
            ..shared.clone()
        };
        let prepared = prepare(&shared, &c, None);
        let distinct: Vec<(usize, usize)> = (counted(&prepared).iter())
            .map(|c| (c.at, c.times))
            .collect();
        assert_eq!(distinct, [(0, 3), (1, 3), (3, 1)]);
        let apart_prepared = prepare(&apart, &c, None);
        assert_eq!(counted(&apart_prepared).len(), 7);
        let decided = |p: &Prepared| {
            let d = classify(p, &tool_states(&c), &Options::default());
            // The record writer prints what serde does (tests/records.rs); record.rs
            // imports this file, so its tests here may not import it back.
            serde_json::to_string(&d).unwrap()
        };
        let d = decided(&prepared);
        assert_eq!(d, decided(&apart_prepared));
        for part in [
            r#""arg_agreement":{"count":4,"n":7"#,
            r#""result_agreement":{"count":3,"n":7"#,
            r#""path":"$.steps[0].arguments.city","distinct":2,"agreement":{"count":4"#,
            r#""suspect_tools":["w"]"#,
        ] {
            assert!(d.contains(part), "{part} in {d}");
        }
    }

    /// Samples the reader shared (written byte for byte alike) decide as the same
    /// samples read apart, a sample spoiled by a repeated key included: its malformed
    /// entries name each sample, not the first.
    #[test]
    fn shared_samples_decide_as_samples_read_apart() {
        let c = catalog();
        let good = r#"{"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":3}]}"#;
        let other = r#"{"calls":[{"tool":"w","arguments":{"city":"Rome"},"result":19}]}"#;
        let spoiled =
            r#"{"calls":[{"tool":"w","arguments":{"city":"Oslo","city":"Rome"},"result":3}]}"#;
        let line = format!(
            r#"{{"task_id":"t","samples":[{good},{spoiled},{good},{other},{spoiled},{good}]}}"#
        );
        let shared = parse_task_line(line.as_bytes()).unwrap();
        assert!(Arc::ptr_eq(&shared.samples[1], &shared.samples[4]));
        let apart = Task {
            samples: shared
                .samples
                .iter()
                .map(|s| Arc::new((**s).clone()))
                .collect(),
            ..shared.clone()
        };
        let decided = |t: &Task| {
            let d = classify(&prepare(t, &c, None), &tool_states(&c), &Options::default());
            serde_json::to_value(&d).unwrap()
        };
        let d = decided(&shared);
        assert_eq!(d, decided(&apart));
        let spoiled_at: Vec<&serde_json::Value> = d["malformed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["sample"])
            .collect();
        assert_eq!(spoiled_at, [1, 4], "{d}");
    }

    /// A step names its tool with the catalog's copy of the name; a tool the catalog
    /// lacks is named once per task.
    #[test]
    fn steps_share_their_tool_names() {
        let c = catalog();
        let line = r#"{"task_id":"t","samples":[
          {"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":1},
                    {"tool":"v","arguments":{},"result":1}]},
          {"calls":[{"tool":"v","arguments":{"a":1},"result":1}]}]}"#;
        let p = prepare(&parse_task_line(line.as_bytes()).unwrap(), &c, None);
        let tool = |i: usize, j: usize| &p.samples[i].steps[j].tool;
        assert!(Arc::ptr_eq(tool(0, 0), &c.get("w").unwrap().shared_name));
        assert!(Arc::ptr_eq(tool(0, 1), tool(1, 0)) && &**tool(1, 0) == "v");
    }

    /// The copies of a sample the reader shared hold its steps, not copies of them; a
    /// copy lined up with the modal plan gets steps of its own, and the others keep theirs.
    #[test]
    fn shared_samples_share_their_steps() {
        let c = catalog();
        let call = |city: &str, r: u32| {
            format!(r#"{{"tool":"w","arguments":{{"city":"{city}"}},"result":{r}}}"#)
        };
        let turn = |a: &str, b: &str| format!(r#"{{"turns":[[{},{}]]}}"#, call(a, 1), call(b, 2));
        let (modal, off) = (turn("Oslo", "Rome"), turn("Rome", "Pisa"));
        let line = format!(r#"{{"task_id":"t","samples":[{modal},{modal},{off},{off},{modal}]}}"#);
        let mut t = parse_task_line(line.as_bytes()).unwrap();
        // As the reader shares copies of a sample (it does so for native `calls` lines).
        for (copy, of) in [(1, 0), (3, 2), (4, 0)] {
            t.samples[copy] = Arc::clone(&t.samples[of]);
        }
        let p = prepare(&t, &c, None);
        let steps = |i: usize| &p.samples[i].steps;
        assert!(Arc::ptr_eq(steps(0), steps(1)) && Arc::ptr_eq(steps(0), steps(4)));
        let keys = |i: usize| -> Vec<u32> { steps(i).iter().map(|st| st.key).collect() };
        assert_eq!(
            (keys(0), keys(2), keys(3)),
            (vec![0, 1], vec![2, 1], vec![2, 1])
        );
    }
}
