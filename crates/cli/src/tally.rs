//! The count of what happened to every input line (decided, refused, skipped, blank),
//! shared by `score` and `eval`: one summary wording and one exit-code rule for both.

use plangate_gate::decide::Verdict;
use plangate_gate::task::{Label, RunNotes};

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
    /// What reading the lines noted (transcript results placed by a reused call id or
    /// by position, fields passed over): read, and said once for the run. Flattened, so
    /// a journal keeps the call-id counts under `ids` as it always has.
    #[serde(flatten)]
    pub(crate) notes: RunNotes,
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

    /// Says on stderr what reading noted, once for the run, what the run did with its
    /// lines, and the baseline's comparison.
    pub(crate) fn report(&self, source: &str) {
        for line in self.notes.warnings() {
            eprintln!("plangate: {source}: warning: {line}");
        }
        eprintln!("plangate: {}", self.summary(source));
        if let Some(line) = self.baseline.line() {
            eprintln!("plangate: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint keeps the run's notes, and one written before the tally kept field
    /// names still reads its call-id counts.
    #[test]
    fn a_journal_keeps_the_runs_notes() {
        let line = plangate_gate::task::parse_task_line(
            br#"{"task_id":"t","trial":1,"samples":[{"calls":[{"tool":"a","result":1,"id":"c"}]}]}"#,
        )
        .unwrap();
        let mut tally = Tally::default();
        tally.notes.add(&line.notes);
        let text = serde_json::to_string(&tally).unwrap();
        let back: Tally = serde_json::from_str(&text).unwrap();
        assert_eq!(back.notes, tally.notes);
        assert_eq!(back.notes.warnings().len(), 2, "{text}");
        let mut old = serde_json::to_value(Tally::default()).unwrap();
        let old = old.as_object_mut().unwrap();
        old.remove("unknown_fields");
        old.remove("unnamed");
        old.insert(
            "ids".into(),
            serde_json::json!({"reused": 3, "positional": 4}),
        );
        let back: Tally = serde_json::from_value(serde_json::Value::Object(old.clone())).unwrap();
        assert_eq!((back.notes.ids.reused, back.notes.ids.positional), (3, 4));
        assert!(back.notes.unknown_fields.is_empty());
    }
}
