//! What a task's samples scored where they came from (a benchmark's trials and their
//! rewards), grouped per task, so a run can set its verdicts beside the benchmark's own
//! judgement of the same trials. The rule never reads an outcome (docs/inputs.md,
//! "Outcomes").

use serde::{Deserialize, Serialize};

use crate::decide::Verdict;

/// A reward this close below 1 still counts as a success: rewards are sums of floats
/// (tau-bench counts a trial as passed within the same margin).
const SUCCESS_MARGIN: f64 = 1e-6;

/// Whether an outcome is a success: a reward of 1 (or `true`).
pub fn succeeded(outcome: f64) -> bool {
    outcome >= 1.0 - SUCCESS_MARGIN
}

/// How the samples of one task fared, among those with an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialOutcomes {
    /// Every sample with an outcome succeeded.
    AllSucceeded,
    /// Some succeeded, some failed.
    SomeFailed,
    /// None succeeded.
    AllFailed,
}

impl TrialOutcomes {
    /// Every group, in the order summaries list them.
    pub const ALL: [TrialOutcomes; 3] = [
        TrialOutcomes::AllSucceeded,
        TrialOutcomes::SomeFailed,
        TrialOutcomes::AllFailed,
    ];

    /// The group of a task whose samples scored `outcomes` (None: no outcome known), or
    /// None when no sample has one.
    pub fn of(outcomes: impl IntoIterator<Item = Option<f64>>) -> Option<TrialOutcomes> {
        let (mut good, mut bad) = (0usize, 0usize);
        for x in outcomes.into_iter().flatten() {
            if succeeded(x) {
                good += 1;
            } else {
                bad += 1;
            }
        }
        match (good, bad) {
            (0, 0) => None,
            (_, 0) => Some(TrialOutcomes::AllSucceeded),
            (0, _) => Some(TrialOutcomes::AllFailed),
            _ => Some(TrialOutcomes::SomeFailed),
        }
    }

    /// The group's name as summaries write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialOutcomes::AllSucceeded => "all_succeeded",
            TrialOutcomes::SomeFailed => "some_failed",
            TrialOutcomes::AllFailed => "all_failed",
        }
    }

    /// The group in words, for a summary line.
    pub fn words(self) -> &'static str {
        match self {
            TrialOutcomes::AllSucceeded => "every sample succeeded",
            TrialOutcomes::SomeFailed => "some samples failed",
            TrialOutcomes::AllFailed => "every sample failed",
        }
    }
}

/// The gate's verdicts counted by each task's [`TrialOutcomes`]: a run's summary of
/// what the gate said about tasks the benchmark passed, split and failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerdictsByOutcome {
    /// `counts[group][verdict]`, groups in [`TrialOutcomes::ALL`] order, verdicts as
    /// [`Verdict`] numbers them.
    counts: [[u64; 3]; 3],
}

impl VerdictsByOutcome {
    /// Counts one decided task whose samples scored `outcomes`.
    pub fn count(&mut self, outcomes: &[Option<f64>], verdict: Verdict) {
        self.count_group(TrialOutcomes::of(outcomes.iter().copied()), verdict);
    }

    /// Counts one decided task of `group` (None: its samples had no outcome).
    pub fn count_group(&mut self, group: Option<TrialOutcomes>, verdict: Verdict) {
        if let Some(group) = group {
            self.counts[group as usize][verdict as usize] += 1;
        }
    }

    /// Whether no counted task had an outcome.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().flatten().all(|&c| c == 0)
    }

    /// How many tasks of `group` got `verdict`.
    pub fn get(&self, group: TrialOutcomes, verdict: Verdict) -> u64 {
        self.counts[group as usize][verdict as usize]
    }

    /// One sentence for a summary, or None when no task had an outcome.
    pub fn line(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let parts: Vec<String> = TrialOutcomes::ALL
            .iter()
            .map(|&g| {
                let [a, r, d] =
                    [Verdict::Accept, Verdict::Reject, Verdict::Defer].map(|v| self.get(g, v));
                format!(
                    "{} tasks where {}: {a} accepted, {r} rejected, {d} deferred",
                    a + r + d,
                    g.words()
                )
            })
            .collect();
        Some(format!("by outcome: {}", parts.join("; ")))
    }
}

impl std::ops::AddAssign for VerdictsByOutcome {
    fn add_assign(&mut self, other: VerdictsByOutcome) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
    }
}

/// Written as `{"all_succeeded": {"accept": 3, "reject": 0, "defer": 1}, ...}`, the
/// shape of a summary's `by_label`.
impl Serialize for VerdictsByOutcome {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(3))?;
        for g in TrialOutcomes::ALL {
            let row = Row {
                accept: self.get(g, Verdict::Accept),
                reject: self.get(g, Verdict::Reject),
                defer: self.get(g, Verdict::Defer),
            };
            m.serialize_entry(g.as_str(), &row)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for VerdictsByOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let rows = std::collections::BTreeMap::<TrialOutcomes, Row>::deserialize(d)?;
        let mut v = VerdictsByOutcome::default();
        for (g, row) in rows {
            v.counts[g as usize][Verdict::Accept as usize] = row.accept;
            v.counts[g as usize][Verdict::Reject as usize] = row.reject;
            v.counts[g as usize][Verdict::Defer as usize] = row.defer;
        }
        Ok(v)
    }
}

#[derive(Serialize, Deserialize)]
struct Row {
    accept: u64,
    reject: u64,
    defer: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_read_only_known_outcomes() {
        assert_eq!(TrialOutcomes::of([]), None);
        assert_eq!(TrialOutcomes::of([None, None]), None);
        assert_eq!(
            TrialOutcomes::of([Some(1.0), None, Some(0.9999999)]),
            Some(TrialOutcomes::AllSucceeded)
        );
        assert_eq!(
            TrialOutcomes::of([Some(1.0), Some(0.5)]),
            Some(TrialOutcomes::SomeFailed)
        );
        assert_eq!(
            TrialOutcomes::of([Some(0.0), Some(0.99)]),
            Some(TrialOutcomes::AllFailed)
        );
    }

    #[test]
    fn counts_add_and_read_back_as_written() {
        let mut a = VerdictsByOutcome::default();
        assert!(a.is_empty() && a.line().is_none());
        a.count(&[Some(1.0), Some(1.0)], Verdict::Accept);
        a.count(&[None], Verdict::Reject);
        let mut b = VerdictsByOutcome::default();
        b.count(&[Some(0.0), Some(1.0)], Verdict::Defer);
        b.count(&[Some(0.0)], Verdict::Reject);
        a += b;
        assert_eq!(a.get(TrialOutcomes::AllSucceeded, Verdict::Accept), 1);
        assert_eq!(a.get(TrialOutcomes::SomeFailed, Verdict::Defer), 1);
        assert_eq!(a.get(TrialOutcomes::AllFailed, Verdict::Reject), 1);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            r#"{"all_succeeded":{"accept":1,"reject":0,"defer":0},"some_failed":{"accept":0,"reject":0,"defer":1},"all_failed":{"accept":0,"reject":1,"defer":0}}"#
        );
        assert_eq!(serde_json::from_str::<VerdictsByOutcome>(&text).unwrap(), a);
        assert_eq!(
            a.line().unwrap(),
            "by outcome: 1 tasks where every sample succeeded: 1 accepted, 0 rejected, 0 deferred; \
             1 tasks where some samples failed: 0 accepted, 0 rejected, 1 deferred; \
             1 tasks where every sample failed: 0 accepted, 1 rejected, 0 deferred"
        );
    }

    #[test]
    fn outcomes_are_read_per_sample_and_echoed_in_the_record() {
        use crate::catalog::Catalog;
        use crate::{decide, json, task};
        let catalog = Catalog::from_value(
            &json::parse(r#"{"tools":[{"name":"a","deterministic":true,"verified":true}]}"#)
                .expect("json"),
        )
        .expect("catalog");
        let call = r#"{"tool":"a","arguments":{},"result":1}"#;
        let line = format!(
            r#"{{"task_id":"t","samples":[{{"calls":[{call}],"outcome":1.0}},{{"calls":[{call}]}},{{"calls":[{call}],"outcome":false}},{{"messages":[],"outcome":0.5}}]}}"#
        );
        let t = task::parse_task_line(line.as_bytes()).expect("a task");
        let outcomes: Vec<_> = t.samples.iter().map(|s| s.outcome).collect();
        assert_eq!(outcomes, [Some(1.0), None, Some(0.0), Some(0.5)]);
        let p = decide::prepare(&t, &catalog, None);
        let d = decide::classify(
            &p,
            &decide::tool_states(&catalog),
            &decide::Options::default(),
        );
        let record = crate::record::json(&d);
        assert!(
            record.ends_with(r#","outcomes":[1.0,null,0.0,0.5]}"#),
            "{record}"
        );
        // Read back from a prepared line (eval's spill, a shard's evidence), the same.
        let again = decide::Prepared::from_line(&p.to_line()).expect("prepared line");
        let d2 = decide::classify(
            &again,
            &decide::tool_states(&catalog),
            &decide::Options::default(),
        );
        assert_eq!(d2.outcomes, d.outcomes);
        // A task without outcomes writes no `outcomes` at all.
        let plain = format!(r#"{{"task_id":"t","samples":[{{"calls":[{call}]}}]}}"#);
        let t = task::parse_task_line(plain.as_bytes()).expect("a task");
        let d = decide::classify(
            &decide::prepare(&t, &catalog, None),
            &decide::tool_states(&catalog),
            &decide::Options::default(),
        );
        assert!(!crate::record::json(&d).contains("outcomes"));
        // An outcome that is not a number or a boolean names its field.
        let bad = format!(r#"{{"task_id":"t","samples":[{{"calls":[{call}],"outcome":"pass"}}]}}"#);
        let e = task::parse_task_line(bad.as_bytes()).expect_err("refused");
        assert_eq!(e.field, "samples[0].outcome");
    }
}
