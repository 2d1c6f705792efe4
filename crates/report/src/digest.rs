//! What a run's page shows of its decisions, gathered decision by decision as the
//! decisions are written: verdicts by label, reasons by verdict, the agreement plots'
//! counts and the bounded lists of tasks worth a look. Its size does not grow with the
//! batch, and parts add up ([`RunDigest::absorb`]): a line-by-line run gathers one per
//! chunk on its workers, a resumed run starts from the parts its checkpoints kept, and
//! `merge` gathers the whole batch's again, each giving the page one pass would.

use std::collections::BTreeMap;

use plangate_gate::decide::{Decision, Verdict};
use serde::{Deserialize, Serialize};

use crate::agreement::{Plots, Series};
use crate::notable::Notable;

/// A run's decisions, digested for its page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDigest {
    /// Tasks by series ([`Series`] index) and verdict (`Verdict as usize`).
    verdicts: [[u64; 3]; 3],
    /// Tasks per reason code, by verdict.
    reasons: BTreeMap<String, [u64; 3]>,
    /// The agreement plots' counts.
    plots: Plots,
    /// The tasks worth a look.
    notable: Notable,
}

impl RunDigest {
    /// Counts the decision of the task on input line `line`. Its rows in the per-tool
    /// plot are the tools its modal plan calls.
    pub fn add(&mut self, line: usize, d: &Decision) {
        let series = Series::of(d.label);
        let v = d.verdict as usize;
        self.verdicts[series as usize][v] += 1;
        for r in &d.reasons {
            match self.reasons.get_mut(r.as_str()) {
                Some(by) => by[v] += 1,
                None => self.reasons.entry(r.as_str().to_string()).or_default()[v] += 1,
            }
        }
        let mut tools: Vec<&str> = Vec::new();
        for step in d.modal_plan.as_deref().unwrap_or_default() {
            if !tools.contains(&step.tool.as_str()) {
                tools.push(&step.tool);
            }
        }
        self.plots.add(
            series,
            (d.arg_agreement.count, d.arg_agreement.n),
            d.result_agreement.map(|a| (a.count, a.n)),
            tools,
        );
        self.notable.add(line, d);
    }

    /// Adds another part (a chunk's, a shard's, a checkpoint's) to this one, and
    /// returns what a later merge needs of that part to rebuild this sum: all of it
    /// but the listed tasks this sum did not keep (a journal keeps only that).
    pub fn absorb(&mut self, part: RunDigest) -> RunDigest {
        for (mine, theirs) in self.verdicts.iter_mut().zip(&part.verdicts) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        for (code, by) in &part.reasons {
            let mine = self.reasons.entry(code.clone()).or_default();
            for (a, b) in mine.iter_mut().zip(by) {
                *a += b;
            }
        }
        self.plots.merge(&part.plots);
        let notable = self.notable.merge(part.notable);
        RunDigest { notable, ..part }
    }

    /// Tasks decided.
    pub fn tasks(&self) -> u64 {
        self.verdicts.iter().flatten().sum()
    }

    /// Tasks of `series` with verdict `v`.
    pub fn verdicts(&self, series: Series, v: Verdict) -> u64 {
        self.verdicts[series as usize][v as usize]
    }

    /// Tasks per reason code, by verdict (`Verdict as usize`).
    pub fn reasons(&self) -> &BTreeMap<String, [u64; 3]> {
        &self.reasons
    }

    /// The agreement plots' counts.
    pub fn plots(&self) -> &Plots {
        &self.plots
    }

    /// The tasks worth a look.
    pub fn notable(&self) -> &Notable {
        &self.notable
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::notable::LIST_LEN;
    use plangate_gate::decide::{
        Agreement, DivergentPath, PlanStep, Reason, SchemaViolation, Verdict,
    };
    use plangate_gate::task::Label;

    /// A decision of task `i` with what the page reads varied by `i`.
    pub(crate) fn decision(i: usize) -> Decision {
        let n = 5 + i % 6;
        let count = (i * 7) % (n + 1);
        let verdict = [Verdict::Accept, Verdict::Defer, Verdict::Reject][i % 3];
        let mut reasons = vec![[Reason::ArgumentsAgree, Reason::AmbiguousArguments][i % 2]];
        if i.is_multiple_of(5) {
            reasons.push(Reason::ReferentialMiss);
        }
        if i.is_multiple_of(7) {
            reasons.push(Reason::SchemaMismatch);
        }
        Decision {
            task_id: format!("t-{i} <&>"),
            verdict,
            reasons,
            explanation: vec![format!("sentence {i}"), "x".repeat(1000)],
            n,
            arg_agreement: Agreement::new(count, n),
            result_agreement: (!i.is_multiple_of(4)).then(|| Agreement::new((i * 3) % (n + 1), n)),
            modal_plan: Some(vec![
                PlanStep {
                    tool: ["get_user", "search", "read"][i % 3].into(),
                    arguments: format!("{{\"id\":\"u_{i}\"}}"),
                },
                PlanStep {
                    tool: "get_user".into(),
                    arguments: "{}".into(),
                },
            ]),
            divergent_paths: (i % 2 == 1)
                .then(|| DivergentPath {
                    path: format!("$.steps[0].arguments.k{i}"),
                    distinct: 1 + i % 4,
                    agreement: Agreement::new((i * 11) % (n + 1), n),
                })
                .into_iter()
                .collect(),
            steps: Vec::new(),
            first_divergent_step: None,
            tools: Vec::new(),
            suspect_tools: Vec::new(),
            malformed: Vec::new(),
            schema_violations: vec![SchemaViolation {
                step: 0,
                tool: "search".into(),
                path: String::new(),
                keyword: "required".into(),
                message: "\"q\" is a required property".into(),
                samples: vec![0, 1],
            }],
            warnings: Vec::new(),
            label: [None, Some(Label::Correct), Some(Label::Hallucinated)][i % 3],
            outcomes: Vec::new(),
            invented_references: Default::default(),
        }
    }

    fn whole(range: std::ops::Range<usize>) -> RunDigest {
        let mut d = RunDigest::default();
        for i in range {
            d.add(i + 1, &decision(i));
        }
        d
    }

    #[test]
    fn a_digest_counts_every_decision_once() {
        let d = whole(0..300);
        assert_eq!(d.tasks(), 300);
        assert_eq!(d.verdicts(Series::Unlabelled, Verdict::Accept), 100);
        assert_eq!(d.verdicts(Series::Correct, Verdict::Defer), 100);
        assert_eq!(d.reasons()["referential_miss"].iter().sum::<u64>(), 60);
        let n = d.notable();
        assert_eq!(n.referential.tasks, 60);
        assert_eq!(n.schema.tasks, 43);
        assert_eq!(n.scattered.tasks, 150);
        for list in [&n.scattered, &n.referential, &n.schema] {
            assert_eq!(list.entries().len(), LIST_LEN);
            assert!(list.entries().windows(2).all(|w| w[0].rank < w[1].rank));
        }
        // Rejections first, then by line.
        let first = &n.referential.entries()[0];
        assert_eq!((first.verdict, first.rank.line), (Verdict::Reject, 6));
        // Text is cut where it would make the page large.
        assert!(first.explanation[1].chars().count() <= 401);
        // The plots count each task once, in each distinct tool of its plan.
        let rows = d.plots().tool_rows(&[], 10);
        let get_user = rows.iter().find(|r| r.tool == "get_user").unwrap();
        assert_eq!(get_user.tasks, 300);
        assert_eq!(
            d.plots().histogram().bins.iter().flatten().sum::<u64>(),
            300
        );
    }

    /// Parts cut anywhere and absorbed in order give the whole; so does rebuilding
    /// from what each absorb returned (a journal's deltas), as a resumed run does.
    #[test]
    fn parts_and_their_deltas_add_up_to_the_whole() {
        let want = whole(0..500);
        for cuts in [
            vec![0, 500],
            vec![0, 1, 250, 500],
            (0..=500).step_by(37).chain([500]).collect(),
        ] {
            let mut sum = RunDigest::default();
            let mut rebuilt = RunDigest::default();
            for w in cuts.windows(2) {
                let delta = sum.absorb(whole(w[0]..w[1]));
                // A delta holds no more listed tasks than the part did.
                assert!(delta.notable.scattered.entries().len() <= LIST_LEN);
                let _ = rebuilt
                    .absorb(serde_json::from_str(&serde_json::to_string(&delta).unwrap()).unwrap());
            }
            assert_eq!(sum, want);
            assert_eq!(rebuilt, want);
        }
        // Once the lists are full of early tasks, later parts add none to a journal.
        let mut sum = whole(0..500);
        let delta = sum.absorb(whole(500..510));
        assert!(delta.notable.referential.entries().is_empty());
        assert_eq!(delta.notable.referential.tasks, 2);
    }
}
