//! The count of what happened to every input line (decided, refused, skipped, blank),
//! shared by `score` and `eval`: one summary wording and one exit-code rule for both.

use plangate_gate::calibration::Calibration;
use plangate_gate::decide::Verdict;
use plangate_gate::task::{IdMatching, Label};

use crate::exit;

/// What happened to every input line, for the summary and the exit code. Kept in a
/// `score` journal's checkpoints, so a resumed run counts the lines it did not redo.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Tally {
    pub(crate) lines: usize,
    pub(crate) blank: usize,
    pub(crate) accept: usize,
    pub(crate) reject: usize,
    pub(crate) defer: usize,
    /// Tasks seed-compat mode refused (HallucinationGateError).
    pub(crate) refused: usize,
    /// Lines that could not be read as a task.
    pub(crate) skipped: usize,
    /// Lines another shard decides (`--shard K/M`).
    #[serde(default)]
    pub(crate) other_shards: usize,
    /// The naive scorer beside the gate, when asked for or when tasks carry labels.
    pub(crate) baseline: BaselineTally,
    /// Transcript results placed by a reused call id or by position (no id): read, and
    /// said once for the run.
    #[serde(default)]
    pub(crate) ids: IdMatching,
    /// The labelled tasks' calibration, when the run writes a summary (docs/design.md,
    /// "Calibration"); kept in checkpoints with the rest.
    #[serde(default, skip_serializing_if = "Calibration::is_empty")]
    pub(crate) calibration: Calibration,
}

/// Rejections by the gate and by the naive scorer (docs/design.md, "Naive baseline"),
/// and how many of them were labelled correct: the false-positive share of each.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct BaselineTally {
    tasks: usize,
    labelled: usize,
    gate_rejected: usize,
    gate_rejected_correct: usize,
    naive_rejected: usize,
    naive_rejected_correct: usize,
}

impl BaselineTally {
    pub(crate) fn count(&mut self, gate: Verdict, naive: Verdict, label: Option<Label>) {
        self.tasks += 1;
        self.labelled += usize::from(label.is_some());
        let correct = label == Some(Label::Correct);
        if gate == Verdict::Reject {
            self.gate_rejected += 1;
            self.gate_rejected_correct += usize::from(correct);
        }
        if naive == Verdict::Reject {
            self.naive_rejected += 1;
            self.naive_rejected_correct += usize::from(correct);
        }
    }

    /// One line for the summary, or None when no task was compared.
    pub(crate) fn line(&self) -> Option<String> {
        if self.tasks == 0 {
            return None;
        }
        let side = |rejected: usize, correct: usize| {
            if self.labelled == 0 {
                format!("rejected {rejected}")
            } else {
                let share = if rejected == 0 {
                    0.0
                } else {
                    100.0 * correct as f64 / rejected as f64
                };
                format!(
                    "rejected {rejected}, {correct} of them labelled correct ({share:.1}% false positives)"
                )
            }
        };
        Some(format!(
            "{} tasks ({} labelled): gate {}; naive scorer {}",
            self.tasks,
            self.labelled,
            side(self.gate_rejected, self.gate_rejected_correct),
            side(self.naive_rejected, self.naive_rejected_correct)
        ))
    }
}

impl Tally {
    pub(crate) fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Accept => self.accept += 1,
            Verdict::Reject => self.reject += 1,
            Verdict::Defer => self.defer += 1,
        }
    }

    pub(crate) fn exit_code(&self) -> u8 {
        if self.skipped > 0 {
            exit::USAGE
        } else if self.reject > 0 {
            exit::REJECT
        } else {
            exit::OK
        }
    }

    pub(crate) fn summary(&self, source: &str) -> String {
        let mut s = format!(
            "{source}: {} lines: {} accepted, {} rejected, {} deferred",
            self.lines, self.accept, self.reject, self.defer
        );
        if self.refused > 0 {
            s.push_str(&format!(", {} refused by the seed's gate", self.refused));
        }
        s.push_str(&format!(", {} skipped (bad input)", self.skipped));
        if self.blank > 0 {
            s.push_str(&format!(", {} blank", self.blank));
        }
        if self.other_shards > 0 {
            s.push_str(&format!(", {} in other shards", self.other_shards));
        }
        s
    }

    /// Says on stderr what the run did with its lines, and the baseline's comparison.
    /// The run's one warning about call ids, or None when every result named its call
    /// by an id no other call carries.
    pub(crate) fn ids_line(&self) -> Option<String> {
        if self.ids.is_exact() {
            return None;
        }
        Some(format!(
            "warning: {} tool results found their call by a call id other calls carry too and {} by position (no id): each answers the first waiting call with its id in the latest turn that has one, or the oldest waiting call (docs/inputs.md, \"Matching results to calls\")",
            self.ids.reused, self.ids.positional
        ))
    }

    pub(crate) fn report(&self, source: &str) {
        if let Some(line) = self.ids_line() {
            eprintln!("plangate: {source}: {line}");
        }
        eprintln!("plangate: {}", self.summary(source));
        if let Some(line) = self.baseline.line() {
            eprintln!("plangate: {line}");
        }
    }
}
