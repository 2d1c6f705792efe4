//! The decision (design.md section 6), in two phases so a whole batch can run before any
//! task is judged: [`prepare`] turns a task into canonical keys once, and [`classify`]
//! applies the rules with the tool health known at the end of the batch.
//!
//! Two signals stay apart: argument agreement (over canonical plans) decides reject,
//! result agreement (over deterministic steps) only ever defers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::canon::{Resolver, canonicalize_arguments};
use crate::catalog::Catalog;
use crate::convert::raw;
use crate::jcs;
use crate::json::Value;
use crate::stats::{Ratio, wilson};
use crate::task::{Arguments, Keys, Label, Recent, Task};

/// The thresholds of design.md section 6.
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

/// accept, reject or defer: a value, never an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Arguments agree at or above `arg_accept`.
    ArgumentsAgree,
    /// Results of deterministic steps agree at or above `result_accept`.
    ResultsAgree,
    /// No step's tool is declared deterministic, so results carry no signal.
    NoDeterministicStep,
    /// Argument agreement below `arg_reject` with every precondition met.
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
    /// Canonical arguments, verbatim.
    pub arguments: Box<RawValue>,
}

/// An argument path on which samples differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DivergentPath {
    /// `$.steps[1].arguments.user_id`.
    pub path: String,
    /// How many distinct values (absence counts as one).
    pub distinct: usize,
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
#[derive(Debug, Clone, Serialize)]
pub struct MalformedSample {
    /// Sample index.
    pub sample: usize,
    /// Step index, when one call is at fault.
    pub step: Option<usize>,
    /// What is wrong.
    pub problems: Vec<String>,
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
    /// Rules that cannot fire for this task.
    pub warnings: Vec<String>,
    /// Ground truth, echoed.
    pub label: Option<Label>,
}

/// A task reduced to canonical keys; built once, classified when tool health is known.
#[derive(Debug, Clone)]
pub struct Prepared {
    task_id: String,
    label: Option<Label>,
    epoch_fixed: bool,
    samples: Vec<PreparedSample>,
    malformed: Vec<MalformedSample>,
}

#[derive(Debug, Clone)]
struct PreparedSample {
    plan: PlanKey,
    steps: Vec<PreparedStep>,
}

/// What samples agree on: the key ids of every step, or a malformed sample, which
/// agrees with nothing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum PlanKey {
    Steps(Vec<u32>),
    Malformed(usize),
}

#[derive(Debug, Clone)]
struct PreparedStep {
    tool: String,
    /// Canonical arguments (shared by the samples that agree); None when malformed.
    args: Option<Arc<Value>>,
    /// Id of the canonical (tool, arguments) key, task-local.
    key: u32,
    /// Id of the result's key, task-local; None when nothing was observed.
    result: Option<u32>,
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
}

/// Canonical arguments and the id of their (tool, arguments) key, or why the sample is
/// malformed.
type Canonical = Result<(Arc<Value>, u32), Vec<String>>;

/// Canonicalizes every call of every sample. `resolver` answers `id` hints (None: IDs
/// are compared as written).
pub fn prepare(
    task: &Task,
    catalog: &Catalog,
    mut resolver: Option<&mut (dyn Resolver + '_)>,
) -> Prepared {
    let mut samples = Vec::with_capacity(task.samples.len());
    let mut malformed = Vec::new();
    let mut results = Keys::new(jcs::to_string);
    let mut calls: Keys<'_, fn(&Value) -> String> = Keys::new(jcs::to_string);
    // Samples mostly repeat each other's calls: canonicalize and key each distinct
    // (tool, step, arguments) once. The step matters because `$from` may only name
    // earlier steps.
    let mut canonical: Recent<(&str, usize, &Value), Canonical> = Recent::new();
    for (i, sample) in task.samples.iter().enumerate() {
        let mut steps = Vec::with_capacity(sample.calls.len());
        let mut bad = sample.malformed.is_some();
        if let Some(why) = &sample.malformed {
            malformed.push(MalformedSample {
                sample: i,
                step: None,
                problems: vec![why.clone()],
            });
        }
        for (j, call) in sample.calls.iter().enumerate() {
            let canon = match &call.arguments {
                Arguments::Malformed(why) => Err(vec![why.clone()]),
                Arguments::Json(v) => {
                    let id = (call.tool.as_str(), j, v);
                    let resolver = resolver.as_deref_mut();
                    canonical.get_or(id, || {
                        canonical_call(&call.tool, v, j, catalog, resolver, &mut calls)
                    })
                }
            };
            let (args, key) = match canon {
                Ok((v, key)) => (Some(v), key),
                Err(problems) => {
                    bad = true;
                    malformed.push(MalformedSample {
                        sample: i,
                        step: Some(j),
                        problems,
                    });
                    (None, calls.id(format!("\u{0}malformed:{i}:{j}")))
                }
            };
            steps.push(PreparedStep {
                tool: call.tool.clone(),
                args,
                key,
                result: call.observed.key_id(&mut results),
            });
        }
        let plan = if bad {
            PlanKey::Malformed(i)
        } else {
            PlanKey::Steps(steps.iter().map(|s| s.key).collect())
        };
        samples.push(PreparedSample { plan, steps });
    }
    Prepared {
        task_id: task.task_id.clone(),
        label: task.label,
        epoch_fixed: task.epoch_fixed.unwrap_or(true),
        samples,
        malformed,
    }
}

/// One call's canonical arguments and the id of its (tool, arguments) key.
fn canonical_call(
    tool: &str,
    v: &Value,
    step: usize,
    catalog: &Catalog,
    resolver: Option<&mut (dyn Resolver + '_)>,
    calls: &mut Keys<'_, fn(&Value) -> String>,
) -> Canonical {
    let v = match catalog.get(tool) {
        Some(spec) => canonicalize_arguments(spec, v, step, resolver)?,
        // No schema for an unknown tool: compare as written (the gate rejects such a
        // plan anyway when it is the modal one).
        None => match v {
            Value::Object(o) if o.duplicate_key().is_none() => v.clone(),
            Value::Object(o) => {
                return Err(vec![format!(
                    "arguments: duplicate key {:?}",
                    o.duplicate_key().unwrap_or_default()
                )]);
            }
            other => {
                return Err(vec![format!(
                    "arguments: expected an object, found {}",
                    other.kind()
                )]);
            }
        },
    };
    let mut key = String::from("{\"arguments\":");
    jcs::write(&v, &mut key);
    key.push_str(",\"tool\":");
    jcs::write_string(tool, &mut key);
    key.push('}');
    let id = calls.id(key);
    Ok((Arc::new(v), id))
}

/// The modal key: (index of its first occurrence, count). Ties go to the first seen,
/// so the choice is reproducible.
pub(crate) fn modal<K: Ord>(keys: impl Iterator<Item = K>) -> Option<(usize, usize)> {
    let mut counts: BTreeMap<K, (usize, usize)> = BTreeMap::new();
    for (i, k) in keys.enumerate() {
        counts.entry(k).or_insert((i, 0)).1 += 1;
    }
    counts
        .values()
        .copied()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
}

/// Applies design.md section 6 to a prepared task.
pub fn classify(p: &Prepared, tools: &dyn ToolStates, opts: &Options) -> Decision {
    let n = p.samples.len();
    let (modal_idx, arg_count) = modal(p.samples.iter().map(|s| &s.plan)).unwrap_or((0, 0));
    let arg = Agreement::new(arg_count, n);
    let modal_sample = p.samples.get(modal_idx);

    let is_det = |t: &str| tools.state(t).is_some_and(|s| s.declared_deterministic);
    // A sample's results: those of its deterministic steps, by step.
    let result_keys: Vec<Vec<(usize, Option<u32>)>> = p
        .samples
        .iter()
        .map(|s| {
            s.steps
                .iter()
                .enumerate()
                .filter(|(_, st)| is_det(&st.tool))
                .map(|(j, st)| (j, st.result))
                .collect()
        })
        .collect();
    let any_det = p
        .samples
        .iter()
        .any(|s| s.steps.iter().any(|st| is_det(&st.tool)));
    let result = any_det.then(|| {
        let (_, c) = modal(result_keys.iter()).unwrap_or((0, 0));
        Agreement::new(c, n)
    });

    let max_steps = p.samples.iter().map(|s| s.steps.len()).max().unwrap_or(0);
    let mut steps = Vec::with_capacity(max_steps);
    let mut first_divergent_step = None;
    for j in 0..max_steps {
        // None: the sample has no step j.
        let keys = p.samples.iter().map(|s| s.steps.get(j).map(|st| st.key));
        let (mi, c) = modal(keys).unwrap_or((0, 0));
        if c < n && first_divergent_step.is_none() {
            first_divergent_step = Some(j);
        }
        steps.push(StepAgreement {
            step: j,
            tool: p.samples[mi].steps.get(j).map(|st| st.tool.clone()),
            agreement: Agreement::new(c, n),
        });
    }
    let divergent_paths = divergent_paths(p, max_steps);

    let tools_called: BTreeSet<&str> = p
        .samples
        .iter()
        .flat_map(|s| s.steps.iter().map(|st| st.tool.as_str()))
        .collect();
    let suspect_tools = suspect_tools(p, &is_det);

    let mut d = Decision {
        task_id: p.task_id.clone(),
        decision: Verdict::Defer,
        reasons: Vec::new(),
        explanation: Vec::new(),
        n,
        arg_agreement: arg,
        result_agreement: result,
        modal_plan: modal_sample
            .filter(|s| matches!(s.plan, PlanKey::Steps(_)))
            .map(|s| {
                s.steps
                    .iter()
                    .map(|st| PlanStep {
                        tool: st.tool.clone(),
                        arguments: raw(st
                            .args
                            .as_deref()
                            .map_or_else(|| "null".into(), jcs::to_string)),
                    })
                    .collect()
            }),
        divergent_paths,
        steps,
        first_divergent_step,
        tools: tools_called.iter().map(|t| t.to_string()).collect(),
        suspect_tools,
        malformed: p.malformed.clone(),
        warnings: Vec::new(),
        label: p.label,
    };
    if n > 0 && !opts.arg_reject.missed_by(1, n) {
        d.warnings.push(format!(
            "reject_unreachable: with n = {n} the smallest possible agreement is 1/{n} = {:.2}, \
             not below arg_reject {}; nothing can be rejected for fabricated arguments",
            1.0 / n as f64,
            opts.arg_reject
        ));
    }
    decide(&mut d, p, tools, opts);
    d
}

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
    if blocked {
        return;
    }
    if opts.arg_reject.missed_by(a, n) {
        let states: Vec<(String, ToolState)> = d
            .tools
            .iter()
            .filter_map(|t| tools.state(t).map(|s| (t.clone(), s)))
            .collect();
        let failing = |f: fn(&ToolState) -> bool| -> Vec<String> {
            states
                .iter()
                .filter(|(_, s)| f(s))
                .map(|(t, _)| t.clone())
                .collect()
        };
        let nondet = failing(|s| !s.declared_deterministic);
        let unverified = failing(|s| s.declared_deterministic && !s.verified && !s.quarantined);
        let quarantined = failing(|s| s.declared_deterministic && s.quarantined);
        let why_low = format!(
            "argument agreement {a}/{n} is below arg_reject {}",
            opts.arg_reject
        );
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
                set(
                    d,
                    Verdict::Defer,
                    reason,
                    format!("{why_low}, but {} {what}: cannot reject", quoted(list)),
                );
                deferred = true;
            }
        }
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
        let top: Vec<String> = d
            .divergent_paths
            .iter()
            .take(3)
            .map(|p| format!("{}: {} distinct values", p.path, p.distinct))
            .collect();
        return set(
            d,
            Verdict::Reject,
            Reason::FabricatedArguments,
            if top.is_empty() {
                why_low
            } else {
                format!("{why_low} ({})", top.join("; "))
            },
        );
    }
    if opts.arg_accept.met_by(a, n) {
        let agree = format!(
            "argument agreement {a}/{n} meets arg_accept {}",
            opts.arg_accept
        );
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
                set(d, Verdict::Accept, Reason::ArgumentsAgree, agree);
                set(
                    d,
                    Verdict::Accept,
                    Reason::ResultsAgree,
                    format!(
                        "result agreement {}/{n} meets result_accept {}",
                        r.count, opts.result_accept
                    ),
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
                    format!(
                        "{agree}, but result agreement {}/{n} is below result_suspect {}{who}",
                        r.count, opts.result_suspect
                    ),
                );
            }
            Some(r) => {
                set(
                    d,
                    Verdict::Defer,
                    Reason::ResultInconclusive,
                    format!(
                        "{agree}, but result agreement {}/{n} is below result_accept {}",
                        r.count, opts.result_accept
                    ),
                );
            }
        }
        return;
    }
    set(
        d,
        Verdict::Defer,
        Reason::AmbiguousArguments,
        format!(
            "argument agreement {a}/{n} is between arg_reject {} and arg_accept {}",
            opts.arg_reject, opts.arg_accept
        ),
    );
}

fn set(d: &mut Decision, v: Verdict, r: Reason, why: String) {
    d.decision = v;
    d.reasons.push(r);
    d.explanation.push(why);
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
fn suspect_tools(p: &Prepared, is_det: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut out = BTreeSet::new();
    // Each sample's plan so far by id: (id of the prefix before, key of this step) ->
    // id. Samples that agree up to step j share an id, found without comparing whole
    // prefixes, which made plans of thousands of steps quadratic.
    let mut prefixes: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    let mut prefix = vec![u32::MAX; p.samples.len()];
    let max = p.samples.iter().map(|s| s.steps.len()).max().unwrap_or(0);
    for j in 0..max {
        let mut groups: BTreeMap<u32, (&str, BTreeSet<u32>)> = BTreeMap::new();
        for (s, prefix) in p.samples.iter().zip(prefix.iter_mut()) {
            let Some(st) = s.steps.get(j) else { continue };
            let next = u32::try_from(prefixes.len()).unwrap_or(u32::MAX - 1);
            *prefix = *prefixes.entry((*prefix, st.key)).or_insert(next);
            if st.args.is_none() || !is_det(&st.tool) {
                continue;
            }
            let Some(r) = st.result else {
                continue;
            };
            groups
                .entry(*prefix)
                .or_insert_with(|| (&st.tool, BTreeSet::new()))
                .1
                .insert(r);
        }
        for (tool, results) in groups.into_values() {
            if results.len() > 1 {
                out.insert(tool.to_string());
            }
        }
    }
    out.into_iter().collect()
}

const MAX_PATHS: usize = 32;

fn divergent_paths(p: &Prepared, max_steps: usize) -> Vec<DivergentPath> {
    let mut out = Vec::new();
    let lens: BTreeSet<usize> = p.samples.iter().map(|s| s.steps.len()).collect();
    if lens.len() > 1 {
        out.push(DivergentPath {
            path: "$.steps".into(),
            distinct: lens.len(),
        });
    }
    for j in 0..max_steps {
        let tools: Vec<Option<&str>> = p
            .samples
            .iter()
            .map(|s| s.steps.get(j).map(|st| st.tool.as_str()))
            .collect();
        let distinct_tools: BTreeSet<Option<&str>> = tools.iter().copied().collect();
        if distinct_tools.len() > 1 {
            out.push(DivergentPath {
                path: format!("$.steps[{j}].tool"),
                distinct: distinct_tools.len(),
            });
        }
        // Arguments are compared among well-formed samples; malformed ones are listed
        // in the decision on their own. When every sample has this step and the
        // well-formed ones share one (tool, arguments) key, their arguments print the
        // same and there is nothing to diff.
        let mut keys = p
            .samples
            .iter()
            .map(|s| s.steps.get(j).map(|st| (st.key, st.args.is_some())));
        let mut well_formed = keys.clone().flatten().filter(|(_, ok)| *ok).map(|(k, _)| k);
        let first = well_formed.next();
        if keys.all(|k| k.is_some()) && well_formed.all(|k| Some(k) == first) {
            continue;
        }
        let args: Vec<Option<&Value>> = p
            .samples
            .iter()
            .filter_map(|s| match s.steps.get(j) {
                None => Some(None),
                Some(st) => st.args.as_deref().map(Some),
            })
            .collect();
        diff(&format!("$.steps[{j}].arguments"), &args, &mut out);
    }
    out.truncate(MAX_PATHS);
    out
}

fn diff(path: &str, values: &[Option<&Value>], out: &mut Vec<DivergentPath>) {
    if out.len() >= MAX_PATHS {
        return;
    }
    // Values equal as trees print equal: print each such value once.
    let mut unlike: Vec<Option<&Value>> = Vec::new();
    for v in values {
        if !unlike.contains(v) {
            unlike.push(*v);
        }
    }
    let keys: BTreeSet<String> = unlike
        .iter()
        .map(|v| v.map_or_else(|| "\u{0}".into(), jcs::to_string))
        .collect();
    if keys.len() <= 1 {
        return;
    }
    if values.iter().all(|v| matches!(v, Some(Value::Object(_)))) {
        let objs: Vec<_> = values
            .iter()
            .filter_map(|v| v.and_then(Value::as_object))
            .collect();
        let names: BTreeSet<&String> = objs.iter().flat_map(|o| o.keys()).collect();
        for name in names {
            let sub: Vec<Option<&Value>> = objs.iter().map(|o| o.get(name)).collect();
            diff(&format!("{path}{}", path_member(name)), &sub, out);
        }
        return;
    }
    if let Some(Some(Value::Array(first))) = values.first() {
        let same_len = values
            .iter()
            .all(|v| matches!(v, Some(Value::Array(a)) if a.len() == first.len()));
        if same_len {
            for i in 0..first.len() {
                let sub: Vec<Option<&Value>> = values
                    .iter()
                    .map(|v| v.and_then(Value::as_array).and_then(|a| a.get(i)))
                    .collect();
                diff(&format!("{path}[{i}]"), &sub, out);
            }
            return;
        }
    }
    out.push(DivergentPath {
        path: path.to_string(),
        distinct: keys.len(),
    });
}

/// One step of a `$.a.b["odd key"]` path: `.name` for plain identifiers, else a
/// bracketed JSON string, so every path plangate prints reads the same way.
pub fn path_member(name: &str) -> String {
    let plain = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!(".{name}")
    } else {
        let mut s = String::from("[");
        jcs::write_string(name, &mut s);
        s.push(']');
        s
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
