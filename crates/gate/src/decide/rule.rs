//! Phase two: the rule of docs/design.md, "The rule", applied to a measured task. Each
//! step reads the measured task and the options, and either rules (a verdict with the
//! grounds for it) or passes to the next; [`STEPS`] chains them in the order the design
//! numbers them, and the first that rules decides. No step writes anything: the
//! decision is put together once, from the measured task and the ruling. The seed's
//! boundary and what the gate adds to it read here in one place. Its cases are data,
//! one file per rule, in `crates/gate/tests/cases/`.

use smallvec::{SmallVec, smallvec};

use super::decision::{Decision, DivergentPath, Reason, Verdict};
use super::explain::{Against, Ground, Named, Results, Sentence, Untrusted, one_in};
use super::health::{TaskToolStates, ToolState, ToolStates};
use super::measure::{Measured, MissFound, measure};
use super::options::{Options, Rule};
use super::prepared::{Prepared, distinct_samples};

/// Applies docs/design.md, "Decision" to a prepared task.
pub fn classify(p: &Prepared, tools: &dyn ToolStates, opts: &Options) -> Decision {
    classify_and_sweep(p, tools, opts, |_, _| {})
}

/// [`classify`], and the verdicts the same rule gives the task under other options
/// (a threshold sweep, `crate::calibration`). `sweep` is handed the counts the rule
/// compares with the argument thresholds ([`argument_counts`]) and a function that
/// says the verdict the rule gives under the options it is given. The task is measured
/// once; the rule reads it under each of the options and writes nothing, and only the
/// verdict under `opts` is explained.
pub fn classify_and_sweep(
    p: &Prepared,
    tools: &dyn ToolStates,
    opts: &Options,
    sweep: impl FnOnce(&[usize], &mut dyn FnMut(&Options) -> Verdict),
) -> Decision {
    let samples = distinct_samples(p);
    let tools = &TaskToolStates::of(&samples, tools);
    let mut m = measure(p, &samples, tools);
    sweep(&argument_counts(&m), &mut |other: &Options| {
        rule(&m, other).verdict
    });
    if let Some(warning) = reject_unreachable(m.n, opts) {
        m.warnings.push(warning);
    }
    let ruling = rule(&m, opts);
    let reasons = ruling.grounds.iter().map(Ground::code).collect();
    let explanation = ruling.grounds.iter().map(Ground::sentence).collect();
    let verdict = ruling.verdict;
    drop(ruling);
    m.decided(verdict, reasons, explanation)
}

/// The `reject_unreachable` warning, when with `n` samples even the smallest agreement,
/// 1/n, is not below arg_reject.
fn reject_unreachable(n: usize, opts: &Options) -> Option<String> {
    (n > 0 && !opts.arg_reject.missed_by(1, n)).then(|| {
        Sentence::new("reject_unreachable: with n = ")
            .n(n)
            .s(" the smallest possible agreement is ")
            .of(1, n)
            .s(" = ")
            .s(&one_in(n))
            .s(", not below arg_reject ")
            .ratio(opts.arg_reject)
            .s("; nothing can be rejected for fabricated arguments")
            .done()
    })
}

/// Every count (of the task's n) that the rule compares with `arg_reject` or
/// `arg_accept`, in order, once each: the argument agreement and each divergent path's
/// own. The rule reads the two thresholds through these comparisons alone, so options
/// whose argument thresholds meet the same of these counts (their other thresholds
/// equal) decide the task alike. A comparison added to the rule is added here, or
/// `tests/calibration.rs` finds a sweep that is not the rule's.
fn argument_counts(m: &Measured) -> SmallVec<[usize; 8]> {
    let mut counts: SmallVec<[usize; 8]> = std::iter::once(m.arg_agreement.count)
        .chain(m.divergent_paths.iter().map(|p| p.agreement.count))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// What a step of the rule decides: a verdict, and the grounds for it in the order the
/// decision names them (a deferral for several failed conditions names each).
#[derive(Debug, Clone)]
pub(super) struct Ruling<'m> {
    pub(super) verdict: Verdict,
    pub(super) grounds: SmallVec<[Ground<'m>; 2]>,
}

impl<'m> Ruling<'m> {
    fn one(verdict: Verdict, ground: Ground<'m>) -> Self {
        Ruling {
            verdict,
            grounds: smallvec![ground],
        }
    }

    /// A deferral on every ground given, or None when there is none.
    fn defer_on(grounds: SmallVec<[Ground<'m>; 2]>) -> Option<Self> {
        (!grounds.is_empty()).then_some(Ruling {
            verdict: Verdict::Defer,
            grounds,
        })
    }
}

/// A step of the rule: it rules on the measured task under the options, or passes.
type Step = for<'m> fn(&'m Measured<'_>, &Options) -> Option<Ruling<'m>>;

/// The steps of docs/design.md, "The rule", in its numbering. The last always rules.
const STEPS: [Step; 7] = [
    no_samples,
    unknown_tool,
    preconditions,
    low_agreement,
    schema_mismatch,
    agreeing_arguments,
    ambiguous_arguments,
];

/// The ruling of the first step that rules.
fn rule<'m>(m: &'m Measured<'_>, opts: &Options) -> Ruling<'m> {
    STEPS
        .iter()
        .find_map(|step| step(m, opts))
        .expect("the last step always rules")
}

/// What the gate's rule adds to the seed's boundary. Every way `Rule::Seed` decides
/// otherwise than `Rule::Gate` is one of these, each read by the step it changes; the
/// seed's rule turns them all off, to measure what they change (the demo's "seed's
/// rule" column).
#[derive(Debug, Clone, Copy)]
struct GateChecks {
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

impl GateChecks {
    fn of(rule: Rule) -> Self {
        let gate = match rule {
            Rule::Gate => true,
            Rule::Seed => false,
        };
        GateChecks {
            located_fabrication: gate,
            schema_check: gate,
            referential_check: gate,
            trusted_results_only: gate,
        }
    }
}

/// Step 1: a task with no samples defers.
fn no_samples<'m>(m: &'m Measured<'_>, _: &Options) -> Option<Ruling<'m>> {
    (m.n == 0).then(|| Ruling::one(Verdict::Defer, Ground::NoSamples))
}

/// Step 2: a modal plan that calls a tool the catalog does not have is rejected, whatever
/// the agreement, the samples or the epoch: a made-up tool name is a hallucination.
fn unknown_tool<'m>(m: &'m Measured<'_>, _: &Options) -> Option<Ruling<'m>> {
    let unknown: Vec<&str> = (m.modal_plan.iter().flatten())
        .map(|s| s.tool.as_str())
        .filter(|t| m.tool_states.state(t).is_none())
        .collect();
    (!unknown.is_empty()).then(|| Ruling::one(Verdict::Reject, Ground::UnknownTool(unknown)))
}

/// Step 3, seed conditions 3 and 4: enough samples, and a fixed epoch. The task defers
/// with every failed condition named.
fn preconditions<'m>(m: &'m Measured<'_>, opts: &Options) -> Option<Ruling<'m>> {
    let mut failed = SmallVec::new();
    if m.n < opts.min_samples {
        failed.push(Ground::InsufficientSamples {
            n: m.n,
            min_samples: opts.min_samples,
        });
    }
    if !m.epoch_fixed {
        failed.push(Ground::EpochNotFixed);
    }
    Ruling::defer_on(failed)
}

/// Step 4, argument agreement below arg_reject. A reject needs every tool verified
/// deterministic (seed condition 1), no upstream taint, and, unless the rule is the
/// seed's, a located fabrication: one path whose own agreement is below arg_reject.
/// Several paths that each vary harmlessly (a date in two formats, an optional field
/// sometimes given) make every plan distinct without any fabricated value; such a task
/// defers.
fn low_agreement<'m>(m: &'m Measured<'_>, opts: &Options) -> Option<Ruling<'m>> {
    let (n, a) = (m.n, m.arg_agreement.count);
    if !opts.arg_reject.missed_by(a, n) {
        return None;
    }
    let low = Against {
        a,
        n,
        threshold: opts.arg_reject,
    };
    let called = m.tools.iter().map(String::as_str);
    let untrusted = untrusted_tools(m, called, true, Untrusted::CannotReject(low));
    if untrusted.is_some() {
        return untrusted;
    }
    if let Some(step) = m.tainting_step() {
        return Some(Ruling::one(
            Verdict::Defer,
            Ground::TaintedByUpstream { low, step },
        ));
    }
    let scattered = |x: &&DivergentPath| opts.arg_reject.missed_by(x.agreement.count, n);
    let named = |paths: &mut dyn Iterator<Item = &'m DivergentPath>| -> Named<'m> {
        paths.take(3).collect()
    };
    let located: Named = named(&mut m.divergent_paths.iter().filter(scattered));
    let all = || named(&mut m.divergent_paths.iter());
    Some(if !located.is_empty() {
        Ruling::one(
            Verdict::Reject,
            Ground::FabricatedArguments {
                low,
                paths: located,
                located: true,
            },
        )
    } else if !GateChecks::of(opts.rule).located_fabrication {
        Ruling::one(
            Verdict::Reject,
            Ground::FabricatedArguments {
                low,
                paths: all(),
                located: false,
            },
        )
    } else {
        Ruling::one(
            Verdict::Defer,
            Ground::DiffuseArguments { low, paths: all() },
        )
    })
}

/// Seed condition 1 for `names`: a deferral naming each group that fails it (not
/// declared deterministic, when `nondeterministic_fails`; declared but not verified;
/// quarantined), each with its reason, saying what the failure `stops`. None when no
/// group fails.
fn untrusted_tools<'m>(
    m: &Measured<'_>,
    names: impl Iterator<Item = &'m str>,
    nondeterministic_fails: bool,
    stops: Untrusted,
) -> Option<Ruling<'m>> {
    let states: Vec<(&str, ToolState)> = names
        .filter_map(|t| m.tool_states.state(t).map(|s| (t, s)))
        .collect();
    let failing = |f: &dyn Fn(&ToolState) -> bool| -> Vec<&'m str> {
        let mut out: Vec<&str> = (states.iter().filter(|(_, s)| f(s)))
            .map(|(t, _)| *t)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let groups = [
        (
            Reason::ToolNotDeterministic,
            failing(&|s| nondeterministic_fails && !s.declared_deterministic),
        ),
        (
            Reason::ToolUnverified,
            failing(&|s| s.declared_deterministic && !s.verified && !s.quarantined),
        ),
        (
            Reason::ToolQuarantined,
            failing(&|s| s.declared_deterministic && s.quarantined),
        ),
    ];
    Ruling::defer_on(
        (groups.into_iter())
            .filter(|(_, tools)| !tools.is_empty())
            .map(|(code, tools)| Ground::UntrustedTools { code, tools, stops })
            .collect(),
    )
}

/// Step 5: a modal plan that breaks its tool's schema defers: the plans agree, so the
/// model or the schema is wrong. The seed's rule reads no schema.
fn schema_mismatch<'m>(m: &'m Measured<'_>, opts: &Options) -> Option<Ruling<'m>> {
    if !GateChecks::of(opts.rule).schema_check {
        return None;
    }
    let violation = m.modal_violation()?;
    Some(Ruling::one(
        Verdict::Defer,
        Ground::SchemaMismatch {
            a: m.arg_agreement.count,
            n: m.n,
            violation,
        },
    ))
}

/// Step 6, argument agreement at arg_accept or above. Agreeing plans can still agree on
/// an invented value: execution, not agreement, tells (a referential miss, unless the
/// rule is the seed's). Otherwise results decide between accept and the tool being
/// suspect. Unless the rule is the seed's, only the results of tools declared
/// deterministic, verified and not quarantined can support an accept: a quarantined
/// tool's agreeing `not_found`s would otherwise accept the very fabrication its
/// quarantine hid from the referential-miss check.
fn agreeing_arguments<'m>(m: &'m Measured<'_>, opts: &Options) -> Option<Ruling<'m>> {
    let (n, a) = (m.n, m.arg_agreement.count);
    if !opts.arg_accept.met_by(a, n) {
        return None;
    }
    let checks = GateChecks::of(opts.rule);
    if checks.referential_check
        && let Some(miss) = m.referential_miss()
    {
        // A resolver that finds nothing, or a parameter declared to exist, says the value
        // was invented; otherwise "does o_9 exist?" may have not_found as its answer.
        let invented = match miss.found {
            MissFound::Unresolved { .. } => true,
            MissFound::NotFound { must_exist, .. } => must_exist,
        };
        let verdict = if invented {
            Verdict::Reject
        } else {
            Verdict::Defer
        };
        return Some(Ruling::one(verdict, Ground::ReferentialMiss(miss)));
    }
    let agree = Against {
        a,
        n,
        threshold: opts.arg_accept,
    };
    let Some(r) = m.result_agreement else {
        return Some(Ruling {
            verdict: Verdict::Accept,
            grounds: smallvec![Ground::ArgumentsAgree(agree), Ground::NoDeterministicStep],
        });
    };
    let results = |threshold| Results {
        r: r.count,
        n,
        threshold,
    };
    if opts.result_accept.met_by(r.count, n) {
        let results = results(opts.result_accept);
        if checks.trusted_results_only {
            let untrusted = untrusted_results(m, Untrusted::CannotAccept(agree, results));
            if untrusted.is_some() {
                return untrusted;
            }
        }
        return Some(Ruling {
            verdict: Verdict::Accept,
            grounds: smallvec![Ground::ArgumentsAgree(agree), Ground::ResultsAgree(results)],
        });
    }
    Some(Ruling::one(
        Verdict::Defer,
        if opts.result_suspect.missed_by(r.count, n) {
            Ground::ToolSuspect {
                agree,
                results: results(opts.result_suspect),
                suspects: &m.suspect_tools,
            }
        } else {
            Ground::ResultInconclusive {
                agree,
                results: results(opts.result_accept),
            }
        },
    ))
}

/// The deferral of an accept whose modal plan (every called tool, when no plan is
/// modal) calls a tool declared deterministic that is quarantined or not verified.
fn untrusted_results<'m>(m: &'m Measured<'_>, stops: Untrusted) -> Option<Ruling<'m>> {
    let untrusted = |t: &str| {
        (m.tool_states.state(t))
            .is_some_and(|s| s.declared_deterministic && (s.quarantined || !s.verified))
    };
    // The modal plan's tools, or every called tool when no plan is modal.
    let named = || {
        (m.modal_plan.iter().flatten().map(|st| st.tool.as_str()))
            .chain((m.tools.iter().filter(|_| m.modal_plan.is_none())).map(String::as_str))
    };
    // Groups only for a task that defers: an accept costs one look per step.
    if !named().any(untrusted) {
        return None;
    }
    untrusted_tools(m, named(), false, stops)
}

/// Step 7, argument agreement between the two thresholds: the task defers.
fn ambiguous_arguments<'m>(m: &'m Measured<'_>, opts: &Options) -> Option<Ruling<'m>> {
    Some(Ruling::one(
        Verdict::Defer,
        Ground::AmbiguousArguments {
            a: m.arg_agreement.count,
            n: m.n,
            arg_reject: opts.arg_reject,
            arg_accept: opts.arg_accept,
        },
    ))
}
