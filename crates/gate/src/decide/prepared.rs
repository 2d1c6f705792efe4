//! A prepared task: what phase one (`prepare`) keeps of a task and phase two
//! (`measure`, `rule`) reads, and the samples that stand for their copies. The types
//! sit apart from the code that fills them, so that code (with `turns`) and the code
//! that reads them import these alone.

use std::sync::Arc;

use super::decision::MalformedSample;
use crate::canon::Violation;
use crate::json::Value;
use crate::task::Label;

/// A task reduced to canonical keys; built once, classified when tool health is known.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(super) task_id: String,
    pub(super) label: Option<Label>,
    pub(super) epoch_fixed: bool,
    pub(super) samples: Vec<PreparedSample>,
    /// The modal plan: (index of its first sample, how many samples make it).
    pub(super) modal_plan: Option<(usize, usize)>,
    pub(super) malformed: Vec<MalformedSample>,
    pub(super) warnings: Vec<String>,
    /// Each sample's outcome, in input order; empty when no sample has one.
    pub(super) outcomes: Vec<Option<f64>>,
    /// The task's invented references, found while its calls are at hand.
    pub(super) invented_references: std::sync::Arc<[crate::invented::InventedReference]>,
}

impl Prepared {
    /// The task's ID.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }
    /// The number of samples.
    pub fn n(&self) -> usize {
        self.samples.len()
    }
    /// The task's label, when it carries one.
    pub fn label(&self) -> Option<Label> {
        self.label
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

#[derive(Debug, Clone)]
pub(super) struct PreparedSample {
    pub(super) plan: PlanKey,
    /// Steps in canonical order: the calls of each turn sorted by key (so a turn compares
    /// as a multiset), then lined up with the modal plan's turn for per-step analysis.
    /// Shared with the copies of a sample the reader shared (most samples of most tasks
    /// are such copies), which then cost a count instead of a copy of every step.
    pub(super) steps: Arc<Vec<PreparedStep>>,
    /// Turn lengths; empty when every call is its own turn.
    pub(super) turns: Vec<usize>,
    /// The sample this one was prepared as (its own index when it was prepared for
    /// itself): a sample the reader shared is a copy of the first's preparation, and
    /// [`classify`](super::classify) counts the copies once, with their number.
    pub(super) first: usize,
}

impl PreparedSample {
    /// Sample `first`'s preparation (its copies keep `first`).
    pub(super) fn of(
        first: usize,
        plan: PlanKey,
        steps: Vec<PreparedStep>,
        turns: Vec<usize>,
    ) -> Self {
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
pub(super) enum PlanKey {
    Steps(Arc<[u32]>, Vec<usize>),
    Malformed(usize),
}

/// Equal exactly when `Ord` says so, but two empty turn lists are equal without a call to
/// `memcmp`: an empty `Vec` points at a dangling address, and glibc's AVX-512 `memcmp`
/// reads its first bytes with a masked load, which on some CPUs (AMD Zen 5) takes a slow
/// microcode assist for an address with no page behind it. Plans of single-call turns
/// (most of them) have empty turn lists, so these comparisons are frequent (see
/// docs/benchmarks.md).
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
pub(super) struct PreparedStep {
    pub(super) tool: Arc<str>,
    /// Canonical arguments (shared by the samples that agree); the arguments as written
    /// when they break the schema; None when unreadable.
    pub(super) args: Option<Arc<Value>>,
    /// Id of the canonical (tool, arguments) key, task-local.
    pub(super) key: u32,
    /// Id of the result's key, task-local; None when nothing was observed.
    pub(super) result: Option<u32>,
    /// How the arguments break the tool's schema, when they do.
    pub(super) violations: Option<Arc<Vec<Violation>>>,
    /// What the call said of the things its arguments refer to, when it found nothing.
    pub(super) miss: Option<Arc<Miss>>,
}

/// A call that found nothing for what its arguments refer to: a `not_found` answer, or
/// an `id` its resolver could not resolve.
#[derive(Debug)]
pub(super) struct Miss {
    /// The call ended in a `not_found` error.
    pub(super) not_found: bool,
    /// The reference parameters it was given (all its parameters when the schema marks
    /// none), with their values as the plan wrote them.
    pub(super) params: Vec<(String, String)>,
    /// One of them is declared `must_exist`.
    pub(super) must_exist: bool,
    /// Parameters whose `id` resolver found nothing, with the resolver's name.
    pub(super) unresolved: Vec<(String, String)>,
}

/// A distinct sample of a task: its index, and how many samples it stands for (itself
/// and the later ones prepared as copies of it, see `PreparedSample::first`).
#[derive(Clone, Copy)]
pub(super) struct DistinctSample<'a> {
    pub(super) at: usize,
    pub(super) sample: &'a PreparedSample,
    pub(super) times: usize,
}

/// The distinct samples of `p` in the order they first occur. Every measure of
/// [`measure`](super::measure::measure) reads a sample's keys alone, so a copy counts as its first does, and
/// copies are common (a model often writes the same plan again).
pub(super) fn distinct_samples(p: &Prepared) -> Vec<DistinctSample<'_>> {
    let mut out: Vec<DistinctSample> = Vec::with_capacity(p.samples.len());
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
                out.push(DistinctSample {
                    at: i,
                    sample: s,
                    times: 1,
                });
            }
        }
    }
    out
}
