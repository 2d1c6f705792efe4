//! The sentences of a decision's explanations. The rule's steps say why they decide as
//! a [`Ground`], the numbers and names a reason rests on; its sentence is written here,
//! once, for the verdict the task gets (never for the verdicts of a threshold sweep),
//! piece by piece: the rule explains every task, and appending stays cheaper than
//! formatting each sentence.

use smallvec::SmallVec;

use super::decision::{DivergentPath, Reason, SchemaViolation};
use super::measure::{MissFound, ReferentialMiss};
use crate::jcs;
use crate::stats::Ratio;

/// Argument agreement `a` of `n` against one threshold.
#[derive(Debug, Clone, Copy)]
pub(super) struct Against {
    pub(super) a: usize,
    pub(super) n: usize,
    pub(super) threshold: Ratio,
}

impl Against {
    /// `argument agreement a/n is below arg_reject t`.
    fn below_reject(self) -> Sentence {
        Sentence::new("argument agreement ")
            .of(self.a, self.n)
            .s(" is below arg_reject ")
            .ratio(self.threshold)
    }

    /// `argument agreement a/n meets arg_accept t`.
    fn meets_accept(self) -> Sentence {
        Sentence::new("argument agreement ")
            .of(self.a, self.n)
            .s(" meets arg_accept ")
            .ratio(self.threshold)
    }
}

/// Result agreement `r` of `n` against one threshold.
#[derive(Debug, Clone, Copy)]
pub(super) struct Results {
    pub(super) r: usize,
    pub(super) n: usize,
    pub(super) threshold: Ratio,
}

/// The paths a sentence names (at most three, most scattered first).
pub(super) type Named<'m> = SmallVec<[&'m DivergentPath; 3]>;

/// Why tools fail seed condition 1, and what that stops.
#[derive(Debug, Clone, Copy)]
pub(super) enum Untrusted {
    /// Argument agreement is low, and a reject needs every tool sound.
    CannotReject(Against),
    /// Arguments and results agree, and an accept needs every result sound.
    CannotAccept(Against, Results),
}

/// What a reason rests on: its code's numbers and names, as the step that found it
/// measured them. [`Ground::code`] is the reason code; [`Ground::sentence`] says it.
#[derive(Debug, Clone)]
pub(super) enum Ground<'m> {
    NoSamples,
    /// The modal plan's tools the catalog does not have, in plan order.
    UnknownTool(Vec<&'m str>),
    InsufficientSamples {
        n: usize,
        min_samples: usize,
    },
    EpochNotFixed,
    /// One group of tools failing seed condition 1: `code` is `tool_not_deterministic`,
    /// `tool_unverified` or `tool_quarantined`; `tools` sorted, once each.
    UntrustedTools {
        code: Reason,
        tools: Vec<&'m str>,
        stops: Untrusted,
    },
    TaintedByUpstream {
        low: Against,
        step: usize,
    },
    /// `located`: the paths are the scattered ones; else (the seed's rule) any.
    FabricatedArguments {
        low: Against,
        paths: Named<'m>,
        located: bool,
    },
    DiffuseArguments {
        low: Against,
        paths: Named<'m>,
    },
    SchemaMismatch {
        a: usize,
        n: usize,
        violation: &'m SchemaViolation,
    },
    ReferentialMiss(ReferentialMiss<'m>),
    ArgumentsAgree(Against),
    NoDeterministicStep,
    ResultsAgree(Results),
    ToolSuspect {
        agree: Against,
        results: Results,
        suspects: &'m [String],
    },
    ResultInconclusive {
        agree: Against,
        results: Results,
    },
    AmbiguousArguments {
        a: usize,
        n: usize,
        arg_reject: Ratio,
        arg_accept: Ratio,
    },
}

impl Ground<'_> {
    /// The reason code.
    pub(super) fn code(&self) -> Reason {
        match self {
            Ground::NoSamples => Reason::NoSamples,
            Ground::UnknownTool(_) => Reason::UnknownTool,
            Ground::InsufficientSamples { .. } => Reason::InsufficientSamples,
            Ground::EpochNotFixed => Reason::EpochNotFixed,
            Ground::UntrustedTools { code, .. } => *code,
            Ground::TaintedByUpstream { .. } => Reason::TaintedByUpstream,
            Ground::FabricatedArguments { .. } => Reason::FabricatedArguments,
            Ground::DiffuseArguments { .. } => Reason::DiffuseArguments,
            Ground::SchemaMismatch { .. } => Reason::SchemaMismatch,
            Ground::ReferentialMiss(_) => Reason::ReferentialMiss,
            Ground::ArgumentsAgree(_) => Reason::ArgumentsAgree,
            Ground::NoDeterministicStep => Reason::NoDeterministicStep,
            Ground::ResultsAgree(_) => Reason::ResultsAgree,
            Ground::ToolSuspect { .. } => Reason::ToolSuspect,
            Ground::ResultInconclusive { .. } => Reason::ResultInconclusive,
            Ground::AmbiguousArguments { .. } => Reason::AmbiguousArguments,
        }
    }

    /// The reason in a sentence, with the names and numbers behind it.
    pub(super) fn sentence(&self) -> String {
        match self {
            Ground::NoSamples => "the task has no samples".into(),
            Ground::UnknownTool(tools) => format!(
                "the modal plan calls {} that the catalog does not have",
                quoted(tools)
            ),
            Ground::InsufficientSamples { n, min_samples } => {
                format!("{n} samples, fewer than min_samples {min_samples}")
            }
            Ground::EpochNotFixed => {
                "the epoch was not fixed: a source the task read changed".into()
            }
            Ground::UntrustedTools { code, tools, stops } => untrusted(*code, tools, *stops),
            Ground::TaintedByUpstream { low, step } => low
                .below_reject()
                .s(", but results of step ")
                .n(*step)
                .s(
                    " already disagreed and the arguments diverge only after it: the model \
                    may have read those results",
                )
                .done(),
            Ground::FabricatedArguments {
                low,
                paths,
                located,
            } => fabricated(*low, paths, *located),
            Ground::DiffuseArguments { low, paths } => diffuse(*low, paths),
            Ground::SchemaMismatch { a, n, violation: v } => format!(
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
            Ground::ReferentialMiss(miss) => referential_miss(miss),
            Ground::ArgumentsAgree(agree) => agree.meets_accept().done(),
            Ground::NoDeterministicStep => {
                "no step's tool is declared deterministic, so results are not compared".into()
            }
            Ground::ResultsAgree(r) => Sentence::new("result agreement ")
                .of(r.r, r.n)
                .s(" meets result_accept ")
                .ratio(r.threshold)
                .done(),
            Ground::ToolSuspect {
                agree,
                results: r,
                suspects,
            } => {
                let say = (agree.meets_accept())
                    .s(", but result agreement ")
                    .of(r.r, r.n)
                    .s(" is below result_suspect ")
                    .ratio(r.threshold);
                if suspects.is_empty() {
                    say.done()
                } else {
                    say.s(": suspect ").s(&quoted(suspects)).done()
                }
            }
            Ground::ResultInconclusive { agree, results: r } => (agree.meets_accept())
                .s(", but result agreement ")
                .of(r.r, r.n)
                .s(" is below result_accept ")
                .ratio(r.threshold)
                .done(),
            Ground::AmbiguousArguments {
                a,
                n,
                arg_reject,
                arg_accept,
            } => Sentence::new("argument agreement ")
                .of(*a, *n)
                .s(" is between arg_reject ")
                .ratio(*arg_reject)
                .s(" and arg_accept ")
                .ratio(*arg_accept)
                .done(),
        }
    }
}

/// A reject for low argument agreement: the scattered paths when `located`, else (the
/// seed's rule) any paths the plans differ on, if they differ on one.
fn fabricated(low: Against, paths: &[&DivergentPath], located: bool) -> String {
    let say = low.below_reject();
    if located {
        (say.s(", and scattered where the plans differ (")
            .paths(paths, low.n))
        .s(")")
        .done()
    } else if paths.is_empty() {
        say.done()
    } else {
        say.s(" (").paths(paths, low.n).s(")").done()
    }
}

/// Low argument agreement with no path scattered below arg_reject, and each path's own.
fn diffuse(low: Against, paths: &[&DivergentPath]) -> String {
    let say = low.below_reject().s(
        ", but no single path is scattered below it (each path's agreement is at least \
         arg_reject",
    );
    let say = if paths.is_empty() {
        say
    } else {
        say.s(": ").paths(paths, low.n)
    };
    (say.s("): harmless variation in several places, not a located fabrication")).done()
}

/// A group of tools failing seed condition 1, and what that stops.
fn untrusted(code: Reason, tools: &[&str], stops: Untrusted) -> String {
    let what = match code {
        Reason::ToolNotDeterministic => "not declared deterministic",
        Reason::ToolUnverified => "not verified this epoch",
        _ => "quarantined in this batch",
    };
    let list = quoted(tools);
    match stops {
        Untrusted::CannotReject(low) => (low.below_reject())
            .s(", but ")
            .s(&list)
            .s(" ")
            .s(what)
            .s(": cannot reject")
            .done(),
        Untrusted::CannotAccept(agree, r) => (agree.meets_accept())
            .s(" and result agreement ")
            .of(r.r, r.n)
            .s(" meets result_accept ")
            .ratio(r.threshold)
            .s(", but the modal plan calls ")
            .s(&list)
            .s(" ")
            .s(what)
            .s(": its results cannot support an accept")
            .done(),
    }
}

/// A referential miss: where, what the call was given, and how it was found.
fn referential_miss(miss: &ReferentialMiss) -> String {
    let named: Vec<String> = (miss.params.iter())
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    let named = named.join(", ");
    let (j, tool) = (miss.step, miss.tool);
    match miss.found {
        MissFound::Unresolved { param, resolver } => format!(
            "referential miss at step {j} ({tool:?}): the resolver {resolver:?} finds no \
             {param} for {named} in this epoch, in every sample that makes the modal plan"
        ),
        MissFound::NotFound {
            count,
            of,
            must_exist,
        } => {
            let what = format!(
                "referential miss at step {j} ({tool:?}): {count} of {of} samples that make \
                 the modal plan got not_found for {named} from a verified deterministic tool \
                 in a fixed epoch"
            );
            if must_exist {
                format!("{what}, and the parameter is declared must_exist: the value was invented")
            } else {
                format!(
                    "{what}; the parameter is not declared must_exist, so not_found may be the \
                     right answer: cannot accept"
                )
            }
        }
    }
}

/// An explanation, written piece by piece: `format!` costs far more than appending, and
/// a task explains itself two or three times.
pub(super) struct Sentence(String);

impl Sentence {
    pub(super) fn new(text: &str) -> Self {
        let mut s = String::with_capacity(text.len() + 96);
        s.push_str(text);
        Sentence(s)
    }
    pub(super) fn s(mut self, text: &str) -> Self {
        self.0.push_str(text);
        self
    }
    pub(super) fn n(mut self, v: usize) -> Self {
        jcs::write_usize(v, &mut self.0);
        self
    }
    /// `count/n`.
    pub(super) fn of(self, count: usize, n: usize) -> Self {
        self.n(count).s("/").n(n)
    }
    pub(super) fn ratio(mut self, r: Ratio) -> Self {
        r.write_to(&mut self.0);
        self
    }
    /// Each path with its distinct values and its own agreement of `n`, `; ` between.
    fn paths(mut self, paths: &[&DivergentPath], n: usize) -> Self {
        for (i, p) in paths.iter().enumerate() {
            self = (self.s(if i == 0 { "" } else { "; " }).s(&p.path))
                .s(": ")
                .n(p.distinct)
                .s(" distinct values, agreement ")
                .of(p.agreement.count, n);
        }
        self
    }
    pub(super) fn done(self) -> String {
        self.0
    }
}

/// `1/n` to two places, as `{:.2}` writes it.
pub(super) fn one_in(n: usize) -> std::borrow::Cow<'static, str> {
    let two_places = |n: usize| format!("{:.2}", 1.0 / n as f64);
    match ONE_IN
        .get_or_init(|| (0..=ONE_IN_N).map(two_places).collect())
        .get(n)
    {
        Some(text) => text.into(),
        None => two_places(n).into(),
    }
}

/// Tool names as every sentence names them: `tool "a"`, or `tools "a", "b"`.
pub(super) fn quoted<S: AsRef<str>>(names: &[S]) -> String {
    let q: Vec<String> = names.iter().map(|s| format!("{:?}", s.as_ref())).collect();
    format!(
        "{} {}",
        if q.len() == 1 { "tool" } else { "tools" },
        q.join(", ")
    )
}

/// Agreements of up to this many samples have `1/n` to two places in [`ONE_IN`].
const ONE_IN_N: usize = 64;
/// `1/n` to two places (`{:.2}`) for `n <= ONE_IN_N`, written once per process.
static ONE_IN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_n_reads_as_two_places_do() {
        for n in 1..=ONE_IN_N * 4 {
            assert_eq!(one_in(n), format!("{:.2}", 1.0 / n as f64), "1/{n}");
        }
        assert_eq!(one_in(8), "0.12", "a tie rounds as {{:.2}} rounds it");
    }

    #[test]
    fn a_sentence_writes_what_format_writes() {
        let r: Ratio = "0.80".parse().unwrap();
        let said = Sentence::new("a ")
            .of(4, 5)
            .s(" b ")
            .ratio(r)
            .n(12_345)
            .done();
        assert_eq!(said, format!("a 4/5 b {r}12345"));
        assert_eq!(said, "a 4/5 b 0.812345");
    }
}
