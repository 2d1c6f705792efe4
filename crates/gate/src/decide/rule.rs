//! Phase two: the rule of docs/design.md, "The rule", applied to a measured task, in
//! the order the rules fire. The seed's boundary and what the gate adds to it read
//! here in one place. Its cases are data, one file per rule, in `crates/gate/tests/cases/`.

use std::collections::BTreeSet;

use smallvec::SmallVec;

use super::decision::{Decision, DivergentPath, Reason, SchemaViolation, Verdict};
use super::explain::{Sentence, one_in, quoted};
use super::health::{TaskToolStates, ToolState, ToolStates};
use super::measure::{analyse, distinct_samples};
use super::options::{Options, Rule};
use super::prepare::{Prepared, PreparedSample};

/// Applies docs/design.md, "Decision" to a prepared task.
pub fn classify(p: &Prepared, tools: &dyn ToolStates, opts: &Options) -> Decision {
    classify_also(p, tools, opts, |_, _| {})
}

/// [`classify`], and the verdicts the same rule gives the task under other options
/// (a threshold sweep, `crate::calibration`). `others` is handed the counts the rule
/// compares with the argument thresholds ([`argument_counts`]) and a function that
/// applies the rule under the options it is given and says the verdict. The task is
/// measured once, and each verdict is the rule's own steps, run on the measured task
/// and then taken back: the rule writes only the verdict, its reasons and its
/// sentences.
pub fn classify_also(
    p: &Prepared,
    tools: &dyn ToolStates,
    opts: &Options,
    others: impl FnOnce(&[usize], &mut dyn FnMut(&Options) -> Verdict),
) -> Decision {
    let samples = distinct_samples(p);
    let tools = &TaskToolStates::of(&samples, tools);
    let mut d = analyse(p, &samples, tools);
    let counts = argument_counts(&d);
    others(&counts, &mut |other: &Options| {
        let (verdict, reasons, said) = (d.decision, d.reasons.len(), d.explanation.len());
        apply(&mut d, p, tools, other);
        let decided = d.decision;
        d.decision = verdict;
        d.reasons.truncate(reasons);
        d.explanation.truncate(said);
        decided
    });
    if d.n > 0 && !opts.arg_reject.missed_by(1, d.n) {
        d.warnings.push(
            Sentence::new("reject_unreachable: with n = ")
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
    apply(&mut d, p, tools, opts);
    d
}

/// Every count (of the task's n) that [`apply`] compares with `arg_reject` or
/// `arg_accept`, in order, once each: the argument agreement and each divergent path's
/// own. The rule reads the two thresholds through these comparisons alone, so options
/// whose argument thresholds meet the same of these counts (their other thresholds
/// equal) decide the task alike. A comparison added to the rule is added here, or
/// `tests/calibration.rs` finds a sweep that is not the rule's.
fn argument_counts(d: &Decision) -> SmallVec<[usize; 8]> {
    let mut counts: SmallVec<[usize; 8]> = std::iter::once(d.arg_agreement.count)
        .chain(d.divergent_paths.iter().map(|p| p.agreement.count))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// What the gate's rule adds to the seed's boundary. Every way `Rule::Seed` decides
/// otherwise than `Rule::Gate` is one of these, each read by the step it changes; the
/// seed's rule turns them all off, to measure what they change (the demo's "seed's
/// rule" column).
#[derive(Debug, Clone, Copy)]
struct Additions {
    /// A reject for low argument agreement needs a located fabrication (a path scattered
    /// on its own), else the task defers `diffuse_arguments`: harmless variation in
    /// several places makes every plan distinct without a fabricated value. The seed
    /// rejects any low agreement whose preconditions hold.
    located_fabrication: bool,
    /// A modal plan that breaks its tool's schema defers `schema_mismatch`: the plans
    /// agree, so the model or the schema is wrong. The seed reads no schema.
    schema_check: bool,
    /// Agreeing plans that refer to something a verified deterministic tool says does
    /// not exist defer or reject `referential_miss`: agreement cannot see a fabrication
    /// every sample repeats. The seed accepts them.
    referential_check: bool,
    /// Only the results of tools declared deterministic, verified and not quarantined
    /// can support an accept, or a quarantine would hide a referential miss and accept
    /// it. The seed, with no referential check, has nothing for a quarantine to unlock.
    trusted_results_only: bool,
}

impl Additions {
    fn of(rule: Rule) -> Self {
        let gate = match rule {
            Rule::Gate => true,
            Rule::Seed => false,
        };
        Additions {
            located_fabrication: gate,
            schema_check: gate,
            referential_check: gate,
            trusted_results_only: gate,
        }
    }
}

/// The rule, in the seed's order: what cannot be judged, then the located-fabrication
/// reject, then what results say once arguments agree.
fn apply(d: &mut Decision, p: &Prepared, tools: &dyn ToolStates, opts: &Options) {
    let adds = Additions::of(opts.rule);
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
    if unknown_tools_reject(d, tools) {
        return;
    }
    if sample_preconditions_fail(d, p, opts) {
        return;
    }
    if opts.arg_reject.missed_by(a, n) {
        return low_agreement(d, p, tools, opts, adds);
    }
    if adds.schema_check && schema_mismatch_defers(d, p) {
        return;
    }
    if opts.arg_accept.met_by(a, n) {
        // Agreeing plans can still agree on an invented value: execution, not
        // agreement, tells.
        if adds.referential_check
            && let Some((verdict, why)) = referential_miss(p, tools)
        {
            return set(d, verdict, Reason::ReferentialMiss, why);
        }
        return agreeing_arguments(d, tools, opts, adds);
    }
    set(
        d,
        Verdict::Defer,
        Reason::AmbiguousArguments,
        Sentence::new("argument agreement ")
            .of(a, n)
            .s(" is between arg_reject ")
            .ratio(opts.arg_reject)
            .s(" and arg_accept ")
            .ratio(opts.arg_accept)
            .done(),
    );
}

/// Rejects the task when its modal plan calls a tool the catalog does not have, whatever
/// the agreement, the samples or the epoch: a made-up tool name is a hallucination. True
/// when it did.
fn unknown_tools_reject(d: &mut Decision, tools: &dyn ToolStates) -> bool {
    if let Some(plan) = &d.modal_plan {
        let unknown: Vec<&str> = plan
            .iter()
            .map(|s| s.tool.as_str())
            .filter(|t| tools.state(t).is_none())
            .collect();
        if !unknown.is_empty() {
            set(
                d,
                Verdict::Reject,
                Reason::UnknownTool,
                format!(
                    "the modal plan calls {} that the catalog does not have",
                    quoted(&unknown)
                ),
            );
            return true;
        }
    }
    false
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

/// Argument agreement below arg_reject. A reject needs every tool verified
/// deterministic (seed condition 1), no upstream taint, and, unless the rule is the
/// seed's, a located fabrication: one path whose own agreement is below arg_reject.
/// Several paths that each vary harmlessly (a date in two formats, an optional field
/// sometimes given) make every plan distinct without any fabricated value; such a task
/// defers.
fn low_agreement(
    d: &mut Decision,
    p: &Prepared,
    tools: &dyn ToolStates,
    opts: &Options,
    adds: Additions,
) {
    let (n, a) = (d.n, d.arg_agreement.count);
    let why_low = Sentence::new("argument agreement ")
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
        let mut say = Sentence::new("");
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
            Sentence::new(&why_low)
                .s(", and scattered where the plans differ (")
                .s(&located)
                .s(")")
                .done(),
        );
    }
    if !adds.located_fabrication {
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

/// Defers the task when its modal plan breaks its tool's schema. True when it did.
fn schema_mismatch_defers(d: &mut Decision, p: &Prepared) -> bool {
    let (n, a) = (d.n, d.arg_agreement.count);
    let Some(v) = modal_violation(d, p) else {
        return false;
    };
    let why = format!(
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
    );
    set(d, Verdict::Defer, Reason::SchemaMismatch, why);
    true
}

/// The first way the modal plan breaks its tools' schemas, if it does.
fn modal_violation<'d>(d: &'d Decision, p: &Prepared) -> Option<&'d SchemaViolation> {
    let (m, _) = p.modal_plan?;
    d.schema_violations.iter().find(|v| v.samples.contains(&m))
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

/// Arguments agree: results decide between accept and the tool being suspect. Unless the
/// rule is the seed's, only the results of tools declared deterministic, verified and not
/// quarantined can support an accept: a quarantined tool's agreeing `not_found`s would
/// otherwise accept the very fabrication its quarantine hid from the referential-miss
/// check.
fn agreeing_arguments(d: &mut Decision, tools: &dyn ToolStates, opts: &Options, adds: Additions) {
    let (n, a) = (d.n, d.arg_agreement.count);
    let agree = Sentence::new("argument agreement ")
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
            if adds.trusted_results_only && any_untrusted {
                let modal_tools: Vec<String> = match &d.modal_plan {
                    Some(plan) => plan.iter().map(|st| st.tool.clone()).collect(),
                    None => d.tools.clone(),
                };
                let results_agree = Sentence::new(&agree)
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
                Sentence::new("result agreement ")
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
                Sentence::new(&agree)
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
                Sentence::new(&agree)
                    .s(", but result agreement ")
                    .of(r.count, n)
                    .s(" is below result_accept ")
                    .ratio(opts.result_accept)
                    .done(),
            );
        }
    }
}

/// Records a verdict with its reason and sentence. Reasons add up, so a deferral for
/// several failed conditions names each; the verdict is the last one set.
fn set(d: &mut Decision, v: Verdict, r: Reason, why: String) {
    d.decision = v;
    d.reasons.push(r);
    d.explanation.push(why);
}
