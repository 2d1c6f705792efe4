//! The count of what happened to every input line (decided, refused, skipped, blank),
//! shared by `score` and `eval`: one summary wording and one exit-code rule for both.

use plangate_gate::calibration::Calibration;
use plangate_gate::decide::{Decision, PROSE_CHARS, PROSE_WORDS, ProseParameter, Verdict};
use plangate_gate::invented::InventedCount;
use plangate_gate::outcome::{TrialOutcomes, VerdictsByOutcome};
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
    /// Verdicts by how each task's samples fared where they came from (their outcomes).
    #[serde(default)]
    pub(crate) by_outcome: VerdictsByOutcome,
    /// Parameters that looked like unmarked prose, said once for the run.
    #[serde(default)]
    pub(crate) prose: ProseTally,
    /// The labelled tasks' calibration, when the run writes a summary (docs/design.md,
    /// "Calibration"); kept in checkpoints with the rest.
    #[serde(default, skip_serializing_if = "Calibration::is_empty")]
    pub(crate) calibration: Calibration,
    /// The decisions' invented references, counted.
    #[serde(default)]
    pub(crate) invented: InventedCount,
}

/// The parameters that looked like prose not marked `prose` (the gate's
/// `decide::prose_like`), with how many tasks each was found in.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct ProseTally {
    /// Tasks with at least one such parameter.
    tasks: usize,
    /// Each parameter with its number of tasks, sorted by parameter; at most
    /// [`PROSE_KEPT`] of them, so a run over many tools stays small in memory and in
    /// every checkpoint.
    found: Vec<(ProseParameter, usize)>,
    /// Findings of parameters past the first [`PROSE_KEPT`].
    unkept: usize,
}

/// Distinct parameters a run keeps count of; the warning names the first few.
const PROSE_KEPT: usize = 64;
/// Parameters the warning names.
const PROSE_LISTED: usize = 3;

impl ProseTally {
    /// Counts one task's parameters.
    pub(crate) fn add(&mut self, task: &[ProseParameter]) {
        if task.is_empty() {
            return;
        }
        self.tasks += 1;
        for p in task {
            match self.found.binary_search_by(|(q, _)| q.cmp(p)) {
                Ok(i) => self.found[i].1 += 1,
                Err(i) if self.found.len() < PROSE_KEPT => self.found.insert(i, (p.clone(), 1)),
                Err(_) => self.unkept += 1,
            }
        }
    }

    /// The run's one warning, or None when no task had such a parameter: the most
    /// frequent parameters with their tasks, and the hint for the first of them.
    pub(crate) fn line(&self) -> Option<String> {
        let mut by_tasks: Vec<&(ProseParameter, usize)> = self.found.iter().collect();
        by_tasks.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let (top, _) = by_tasks.first()?;
        let named: Vec<String> = (by_tasks.iter().take(PROSE_LISTED))
            .map(|(p, tasks)| {
                format!(
                    "tool {:?} {} in {tasks} task{}",
                    p.tool,
                    p.path,
                    if *tasks == 1 { "" } else { "s" }
                )
            })
            .collect();
        // Unkept findings come only once every kept place is taken, so more are named.
        let more = match by_tasks.len().saturating_sub(PROSE_LISTED) {
            0 => String::new(),
            m => format!(" and {m} more"),
        };
        Some(format!(
            "warning: text that looks like prose ({PROSE_WORDS}+ words, {PROSE_CHARS}+ characters) was written differently in most samples of {} task{}, at {}{more}: free text never agrees word for word, so it keeps a task from accepting and can reject it for its words. If such a parameter is free text, mark it prose in its tool's schema to compare it by presence only: {}: {{\"type\": \"string\", \"x-plangate\": {{\"canon\": [\"prose\"]}}}} (docs/design.md, \"Prose\")",
            self.tasks,
            if self.tasks == 1 { "" } else { "s" },
            named.join(", "),
            serde_json::Value::from(top.key.as_str())
        ))
    }
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
    /// Counts one decided task, alike for `score`, `eval` and `merge`: its verdict, the
    /// verdict by its samples' outcomes, and its invented references, by `model` when
    /// the input names the model that wrote its samples.
    pub(crate) fn decided(&mut self, d: &Decision, model: Option<&str>) {
        self.count(d.verdict);
        self.by_outcome.count(&d.outcomes, d.verdict);
        self.invented.add(&d.invented_references, model);
    }

    pub(crate) fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Accept => self.accept += 1,
            Verdict::Reject => self.reject += 1,
            Verdict::Defer => self.defer += 1,
        }
    }

    /// Tasks accepted while every sample with an outcome failed; None when no task had
    /// an outcome.
    pub(crate) fn accepted_all_failed(&self) -> Option<u64> {
        (!self.by_outcome.is_empty()).then(|| {
            self.by_outcome
                .get(TrialOutcomes::AllFailed, Verdict::Accept)
        })
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
        if let Some(line) = self.prose.line() {
            eprintln!("plangate: {source}: {line}");
        }
        eprintln!("plangate: {}", self.summary(source));
        if let Some(line) = self.baseline.line() {
            eprintln!("plangate: {line}");
        }
        if let Some(line) = self.by_outcome.line() {
            eprintln!("plangate: {line}");
        }
        if let Some(n) = self.accepted_all_failed() {
            eprintln!(
                "plangate: {n} accepted task(s) where every sample failed: accept means the \
                 samples agree, not that the plan is right (a consistent plan, not a \
                 hallucinated one)"
            );
        }
        if let Some(line) = self.invented.line() {
            eprintln!("plangate: {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(tool: &str, key: &str) -> ProseParameter {
        ProseParameter {
            tool: tool.into(),
            path: format!("$.{key}"),
            key: key.into(),
        }
    }

    #[test]
    fn prose_is_said_once_with_the_most_frequent_parameters_and_the_hint() {
        let mut t = ProseTally::default();
        assert_eq!(t.line(), None);
        t.add(&[]);
        assert_eq!(t.line(), None, "a task without prose is not counted");
        for _ in 0..3 {
            t.add(&[param("notify", "summary"), param("think", "thought")]);
        }
        t.add(&[param("think", "thought")]);
        t.add(&[param("close", "reason")]);
        t.add(&[param("log", "why")]);
        let line = t.line().unwrap();
        assert!(line.contains("most samples of 6 tasks"), "{line}");
        assert!(
            line.contains(
                r#"at tool "think" $.thought in 4 tasks, tool "notify" $.summary in 3 tasks, tool "close" $.reason in 1 task and 1 more:"#
            ),
            "{line}"
        );
        assert!(
            line.contains(r#""thought": {"type": "string", "x-plangate": {"canon": ["prose"]}}"#),
            "{line}"
        );
        // Past the parameters it keeps, a run counts findings without naming them.
        let mut many = ProseTally::default();
        for i in 0..PROSE_KEPT + 5 {
            many.add(&[param(&format!("t{i:03}"), "summary")]);
        }
        assert_eq!(
            (many.found.len(), many.unkept, many.tasks),
            (PROSE_KEPT, 5, PROSE_KEPT + 5)
        );
        assert!(
            many.line()
                .unwrap()
                .contains(&format!(" and {} more:", PROSE_KEPT - PROSE_LISTED))
        );
    }

    /// A checkpoint of a `score --resume` journal written before the prose count reads
    /// with none, and one written with it reads back whole.
    #[test]
    fn checkpoints_carry_the_prose_count() {
        let mut t = Tally::default();
        t.prose.add(&[param("notify", "summary")]);
        let mut old = serde_json::to_value(&t).unwrap();
        old.as_object_mut().unwrap().remove("prose");
        let read: Tally = serde_json::from_value(old).unwrap();
        assert_eq!(read.prose.line(), None);
        let back: Tally = serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back.prose.line(), t.prose.line());
        assert!(back.prose.line().is_some());
    }

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
