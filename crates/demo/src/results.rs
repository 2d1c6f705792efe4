//! What the demo measured: one column of counts per scorer, the `--json` report, and
//! the rows of its table. The terminal table (`table`) and the HTML page (`page`) both
//! print these rows, so they live apart from either.

use std::collections::BTreeMap;

use plangate_gate::decide::{Reason, Verdict};
use plangate_gate::task::Label;
use serde::Serialize;

/// One scorer's column of the table.
#[derive(Debug, Default, Clone, Serialize)]
pub(crate) struct Column {
    pub(crate) rejected: usize,
    pub(crate) rejected_correct: usize,
    /// Share of rejected plans that were correct.
    pub(crate) false_positive_rate: f64,
    pub(crate) deferred: usize,
    pub(crate) accepted: usize,
    /// Hallucinated plans rejected.
    pub(crate) hallucinations_caught: usize,
    pub(crate) accepted_hallucinated: usize,
    /// Consistent fabrications (one invented value repeated in nearly every sample):
    /// rejected for disagreeing arguments.
    pub(crate) consistent_caught_by_agreement: usize,
    /// Consistent fabrications rejected for a referential miss.
    pub(crate) consistent_caught_by_referential_miss: usize,
    pub(crate) consistent_deferred: usize,
    pub(crate) consistent_accepted: usize,
}

impl Column {
    /// Counts one task's verdict; `reasons` tell a referential miss from disagreement.
    pub(crate) fn count(
        &mut self,
        v: Verdict,
        label: Option<Label>,
        consistent: bool,
        reasons: &[Reason],
    ) {
        let hallucinated = label == Some(Label::Hallucinated);
        if consistent {
            match v {
                Verdict::Reject if reasons.contains(&Reason::ReferentialMiss) => {
                    self.consistent_caught_by_referential_miss += 1;
                }
                Verdict::Reject => self.consistent_caught_by_agreement += 1,
                Verdict::Defer => self.consistent_deferred += 1,
                Verdict::Accept => self.consistent_accepted += 1,
            }
        }
        match v {
            Verdict::Reject => {
                self.rejected += 1;
                if hallucinated {
                    self.hallucinations_caught += 1;
                } else {
                    self.rejected_correct += 1;
                }
            }
            Verdict::Defer => self.deferred += 1,
            Verdict::Accept => {
                self.accepted += 1;
                if hallucinated {
                    self.accepted_hallucinated += 1;
                }
            }
        }
    }

    /// Works out the shares, once every task is counted.
    pub(crate) fn close(&mut self) {
        self.false_positive_rate = if self.rejected == 0 {
            0.0
        } else {
            self.rejected_correct as f64 / self.rejected as f64
        };
    }
}

/// What `--json` writes: the batch, each judge's column, the defer path and its price,
/// what the run found (quarantined tools, changed live sources) and what it cost.
#[derive(Debug, Clone, Serialize)]
pub struct DemoReport {
    pub(crate) tasks: usize,
    pub(crate) samples: usize,
    pub(crate) seed: u64,
    pub(crate) hallucinated_tasks: usize,
    /// Hallucinated tasks whose samples repeat one invented value.
    pub(crate) consistent_fabrications: usize,
    pub(crate) naive: Column,
    /// The seed's decision boundary alone, on the same canonical evidence.
    pub(crate) seed_rule: Column,
    /// The gate on the first epoch alone, before the defer path.
    pub(crate) gate_one_epoch: Column,
    /// The gate's final verdicts, after the defer path's retries.
    pub(crate) gate: Column,
    /// The defer path: rounds, tasks retried, calls spent, how deferrals ended by reason.
    pub(crate) retry: plangate_harness::RetryReport,
    /// What the defer path added to the run, in calls and in wall time.
    pub(crate) retry_price: RetryPrice,
    pub(crate) quarantined: Vec<String>,
    /// Each quarantined tool's evidence (probe drift, witnesses), as tool-health.json has it.
    pub(crate) quarantine_evidence: BTreeMap<String, serde_json::Value>,
    pub(crate) changed_live_mounts: Vec<String>,
    pub(crate) driver_actions: Vec<String>,
    pub(crate) epoch_id: String,
    pub(crate) calls: usize,
    pub(crate) elapsed_s: f64,
    pub(crate) calls_per_s: f64,
    /// Gate decisions by reason code, for the curious.
    pub(crate) gate_reasons: BTreeMap<String, usize>,
    /// Gate verdicts per tool the plans were drawn for (`a>b` for a two-step chain).
    pub(crate) gate_by_tool: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

/// The defer path's price beside the run without it, both sides measured in one run:
/// the calls it added (executed or reused) and the wall time it took, each as a share of
/// what the run spent without it.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct RetryPrice {
    /// The first epoch's calls: executed and probes.
    pub(crate) first_epoch_calls: usize,
    /// Calls the retry decided on: executed (probes included) and reused.
    pub(crate) retry_calls: usize,
    /// `retry_calls / first_epoch_calls`.
    pub(crate) calls_share: f64,
    /// The executed part alone, over `first_epoch_calls`.
    pub(crate) executed_share: f64,
    /// The run's wall time less the defer path's.
    pub(crate) wall_without_retry_s: f64,
    /// The defer path's wall time (choosing the tasks, pinning, probing, executing,
    /// deciding).
    pub(crate) retry_wall_s: f64,
    /// `retry_wall_s / wall_without_retry_s`.
    pub(crate) wall_share: f64,
}

impl RetryPrice {
    pub(crate) fn of(
        first_epoch_calls: usize,
        retry: &plangate_harness::RetryReport,
        wall_without_retry_s: f64,
        retry_wall_s: f64,
    ) -> RetryPrice {
        let share = |part: f64, whole: f64| if whole > 0.0 { part / whole } else { 0.0 };
        let retry_calls = retry.calls + retry.reused;
        RetryPrice {
            first_epoch_calls,
            retry_calls,
            calls_share: share(retry_calls as f64, first_epoch_calls as f64),
            executed_share: share(retry.calls as f64, first_epoch_calls as f64),
            wall_without_retry_s,
            retry_wall_s,
            wall_share: share(retry_wall_s, wall_without_retry_s),
        }
    }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// One row of the demo's table: a stable key (the HTML's cell ids), its label, whether
/// it details the row above, and the cells of each of [`COLUMNS`]. The terminal table
/// and the HTML report both print these.
pub(crate) struct Row {
    pub(crate) key: &'static str,
    pub(crate) name: &'static str,
    pub(crate) sub: bool,
    pub(crate) cells: [String; 4],
}

/// The table's rows, once for both outputs.
pub(crate) fn table_rows(r: &DemoReport) -> Vec<Row> {
    type Cell = fn(&Column, &DemoReport) -> String;
    let rows: [(&'static str, &'static str, bool, Cell); 11] = [
        ("rejected", "rejected", false, |c, _| c.rejected.to_string()),
        ("rejected_correct", "of which correct", true, |c, _| {
            c.rejected_correct.to_string()
        }),
        (
            "false_positive_rate",
            "false-positive share",
            true,
            |c, _| pct(c.false_positive_rate),
        ),
        ("deferred", "deferred", false, |c, _| c.deferred.to_string()),
        ("accepted", "accepted", false, |c, _| c.accepted.to_string()),
        (
            "hallucinations_caught",
            "hallucinations caught",
            false,
            |c, r| format!("{} of {}", c.hallucinations_caught, r.hallucinated_tasks),
        ),
        (
            "accepted_hallucinated",
            "hallucinations accepted",
            false,
            |c, _| c.accepted_hallucinated.to_string(),
        ),
        (
            "consistent_caught_by_agreement",
            "consistent: by disagreement",
            false,
            |c, r| {
                format!(
                    "{} of {}",
                    c.consistent_caught_by_agreement, r.consistent_fabrications
                )
            },
        ),
        (
            "consistent_caught_by_referential_miss",
            "by referential miss",
            true,
            |c, _| c.consistent_caught_by_referential_miss.to_string(),
        ),
        ("consistent_deferred", "deferred", true, |c, _| {
            c.consistent_deferred.to_string()
        }),
        ("consistent_accepted", "accepted", true, |c, _| {
            c.consistent_accepted.to_string()
        }),
    ];
    rows.into_iter()
        .map(|(key, name, sub, cell)| Row {
            key,
            name,
            sub,
            cells: [
                cell(&r.naive, r),
                cell(&r.seed_rule, r),
                cell(&r.gate_one_epoch, r),
                cell(&r.gate, r),
            ],
        })
        .collect()
}

/// The column heads, in the order of [`Row::cells`], with the HTML's id prefixes.
pub(crate) const COLUMNS: [(&str, &str); 4] = [
    ("naive", "naive scorer"),
    ("seed", "seed's rule"),
    ("gate_one_epoch", "gate, one epoch"),
    ("gate", "gate + retry"),
];
