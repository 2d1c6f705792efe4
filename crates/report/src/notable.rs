//! The tasks a run's page lists for a reader to look at: the most scattered argument
//! paths, the referential misses and the schema mismatches, each task with its
//! decision's explanation. Each list keeps the first [`LIST_LEN`] tasks of a fixed
//! order (and counts the rest), so a page stays small whatever the batch, and lists
//! gathered apart (chunks, shards, the checkpoints of a resumed run) merge into the
//! list one pass would have kept.

use std::cmp::Ordering;

use plangate_gate::decide::{Decision, Reason, Verdict};
use plangate_gate::outcome::TrialOutcomes;
use plangate_gate::task::Label;
use serde::{Deserialize, Serialize};

use crate::html::cut;

/// Tasks kept in each list.
pub const LIST_LEN: usize = 25;
/// Characters kept of a task ID.
const ID_CHARS: usize = 120;
/// Characters kept of an entry's detail (a path, a plan, a schema error).
const DETAIL_CHARS: usize = 240;
/// Characters kept of each sentence of an explanation.
const SENTENCE_CHARS: usize = 400;
/// Sentences kept of an explanation.
const SENTENCES: usize = 8;

/// Where an entry stands in its list, first first: a share `num/den` (compared exactly),
/// then `tie`, then the input line, which no two tasks of a run share.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rank {
    /// The share's numerator.
    pub num: u64,
    /// Its denominator (at least 1).
    pub den: u64,
    /// Between equal shares, lower first.
    pub tie: u64,
    /// The task's input line.
    pub line: u64,
}

impl Ord for Rank {
    fn cmp(&self, other: &Self) -> Ordering {
        let a = u128::from(self.num) * u128::from(other.den);
        let b = u128::from(other.num) * u128::from(self.den);
        a.cmp(&b)
            .then(self.tie.cmp(&other.tie))
            .then(self.line.cmp(&other.line))
    }
}

impl PartialOrd for Rank {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One task in a list: what the page shows of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its place in the list (its input line is `rank.line`).
    pub rank: Rank,
    /// Its task ID (cut).
    pub task_id: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// Its label, when it has one.
    pub label: Option<Label>,
    /// Its reason codes.
    pub reasons: Vec<String>,
    /// What put it on the list (the path, the plan, the schema error).
    pub detail: String,
    /// Its decision's explanation (each sentence cut).
    pub explanation: Vec<String>,
}

impl Entry {
    fn of(rank: Rank, d: &Decision, detail: &str) -> Entry {
        Entry {
            rank,
            task_id: cut(&d.task_id, ID_CHARS),
            verdict: d.verdict,
            label: d.label,
            reasons: d.reasons.iter().map(|r| r.as_str().to_string()).collect(),
            detail: cut(detail, DETAIL_CHARS),
            explanation: d
                .explanation
                .iter()
                .take(SENTENCES)
                .map(|s| cut(s, SENTENCE_CHARS))
                .collect(),
        }
    }
}

/// One list: the first [`LIST_LEN`] entries by rank, and how many tasks were offered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounded {
    /// Tasks offered in all, the kept ones among them.
    pub tasks: u64,
    entries: Vec<Entry>,
}

impl Bounded {
    /// Offers a task: it is kept when it ranks among the first; its entry is only made
    /// then.
    fn offer(&mut self, rank: Rank, make: impl FnOnce() -> Entry) {
        self.tasks += 1;
        if self.entries.len() >= LIST_LEN && self.entries.last().is_some_and(|e| e.rank < rank) {
            return;
        }
        let at = self.entries.partition_point(|e| e.rank < rank);
        self.entries.insert(at, make());
        self.entries.truncate(LIST_LEN);
    }

    /// Adds another list's tasks; returns that list with only the entries this one
    /// kept. A task left out now can never be among the first later (the bar only
    /// rises), so the entries returned are all a later merge needs of `other`.
    fn merge(&mut self, other: Bounded) -> Bounded {
        self.tasks += other.tasks;
        let theirs: Vec<Rank> = other.entries.iter().map(|e| e.rank).collect();
        let mut all = std::mem::take(&mut self.entries);
        all.extend(other.entries);
        all.sort_by_key(|e| e.rank);
        all.dedup_by(|a, b| a.rank == b.rank);
        all.truncate(LIST_LEN);
        let kept_of_other = all
            .iter()
            .filter(|e| theirs.contains(&e.rank))
            .cloned()
            .collect();
        self.entries = all;
        Bounded {
            tasks: other.tasks,
            entries: kept_of_other,
        }
    }

    /// The kept entries, first first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

/// The three lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notable {
    /// Tasks whose samples differ on some argument path, the least agreeing path first.
    pub scattered: Bounded,
    /// Tasks with a referential miss, rejections first.
    pub referential: Bounded,
    /// Tasks whose modal plan breaks its tool's schema, rejections first.
    pub schema: Bounded,
    /// Tasks with invented references, the most first.
    #[serde(default)]
    pub invented: Bounded,
    /// Tasks accepted while every sample with an outcome failed: agreement without
    /// success, a consistent plan rather than a hallucinated one.
    #[serde(default)]
    pub agreed_failing: Bounded,
}

/// References named in an entry's detail.
const REFERENCES_SHOWN: usize = 3;

/// Rejections, then deferrals, then acceptances.
fn severity(v: Verdict) -> u64 {
    match v {
        Verdict::Reject => 0,
        Verdict::Defer => 1,
        Verdict::Accept => 2,
    }
}

impl Notable {
    /// Offers the task on input line `line` to every list it belongs on.
    pub fn add(&mut self, line: usize, d: &Decision) {
        let line = line as u64;
        // The least agreeing path, and of those the one with the most distinct values.
        if let Some(p) = d.divergent_paths.iter().min_by(|a, b| {
            let (x, y) = (&a.agreement, &b.agreement);
            (x.count * y.n.max(1))
                .cmp(&(y.count * x.n.max(1)))
                .then(b.distinct.cmp(&a.distinct))
        }) {
            let rank = Rank {
                num: p.agreement.count as u64,
                den: p.agreement.n.max(1) as u64,
                tie: u64::MAX - p.distinct as u64,
                line,
            };
            self.scattered.offer(rank, || {
                let detail = format!(
                    "{}: {} distinct values; {} of {} samples share the most common",
                    p.path, p.distinct, p.agreement.count, p.agreement.n
                );
                Entry::of(rank, d, &detail)
            });
        }
        let by_verdict = Rank {
            num: severity(d.verdict),
            den: 1,
            tie: 0,
            line,
        };
        if d.reasons.contains(&Reason::ReferentialMiss) {
            self.referential.offer(by_verdict, || {
                let plan = d.modal_plan.as_deref().unwrap_or_default();
                let steps: Vec<String> = plan
                    .iter()
                    .map(|s| format!("{} {}", s.tool, s.arguments))
                    .collect();
                Entry::of(by_verdict, d, &steps.join("; "))
            });
        }
        self.offer_invented(line, d);
        self.offer_agreed_failing(line, d);
        if d.reasons.contains(&Reason::SchemaMismatch) {
            self.schema.offer(by_verdict, || {
                let detail = d.schema_violations.first().map_or_else(String::new, |v| {
                    format!(
                        "{} at {}: {}: {} ({} of {} samples)",
                        v.tool,
                        if v.path.is_empty() {
                            "the arguments"
                        } else {
                            &v.path
                        },
                        v.keyword,
                        v.message,
                        v.samples.len(),
                        d.n
                    )
                });
                Entry::of(by_verdict, d, &detail)
            });
        }
    }

    /// Offers a task with invented references to that list, the most first.
    fn offer_invented(&mut self, line: u64, d: &Decision) {
        if !d.invented_references.is_empty() {
            let rank = Rank {
                num: 0,
                den: 1,
                tie: u64::MAX - d.invented_references.len() as u64,
                line,
            };
            self.invented.offer(rank, || {
                let shown: Vec<String> = (d.invented_references.iter())
                    .take(REFERENCES_SHOWN)
                    .map(|r| {
                        format!(
                            "sample {} call {}: {} {} = {:?} ({})",
                            r.sample, r.call, r.tool, r.parameter, r.value, r.error
                        )
                    })
                    .collect();
                let more = d.invented_references.len().saturating_sub(REFERENCES_SHOWN);
                let more = if more > 0 {
                    format!("; {more} more")
                } else {
                    String::new()
                };
                Entry::of(rank, d, &format!("{}{more}", shown.join("; ")))
            });
        }
    }

    /// Offers a task accepted while every sample with an outcome failed.
    fn offer_agreed_failing(&mut self, line: u64, d: &Decision) {
        if d.verdict == Verdict::Accept
            && TrialOutcomes::of(d.outcomes.iter().copied()) == Some(TrialOutcomes::AllFailed)
        {
            let rank = Rank {
                num: 0,
                den: 1,
                tie: 0,
                line,
            };
            self.agreed_failing.offer(rank, || {
                let failed = d.outcomes.iter().flatten().count();
                let detail = format!(
                    "{failed} of {} samples failed where they ran, and {} of {} agree: a \
                     consistent plan, not a hallucinated one",
                    d.n, d.arg_agreement.count, d.arg_agreement.n
                );
                Entry::of(rank, d, &detail)
            });
        }
    }

    /// Adds another part's lists; returns that part with only the entries kept (see
    /// [`Bounded::merge`]).
    pub fn merge(&mut self, other: Notable) -> Notable {
        Notable {
            scattered: self.scattered.merge(other.scattered),
            referential: self.referential.merge(other.referential),
            schema: self.schema.merge(other.schema),
            invented: self.invented.merge(other.invented),
            agreed_failing: self.agreed_failing.merge(other.agreed_failing),
        }
    }
}
