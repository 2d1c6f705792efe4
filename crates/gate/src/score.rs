//! One samples line scored from its recorded results, as `plangate score` writes it: the
//! decision record (or the `--seed-compat` one), or why the line is not a task, and the
//! record written in its place. The CLI's pipeline and the Python package both call
//! this, so their records cannot drift apart.

use std::collections::BTreeMap;

use serde_json::json;

use crate::baseline::{naive_decided, naive_verdict};
use crate::calibration::{Grid, Observation};
use crate::catalog::Catalog;
use crate::decide::{self, Options, Prepared, ProseParameter, Verdict, prose_like};
use crate::outcome::TrialOutcomes;
use crate::seed::{self, SeedOptions};
use crate::task::{Label, Observed, ReadingNotes, Task, TaskError, parse_task_line};

/// What scoring one line produced.
#[derive(Debug)]
pub enum Scored {
    /// A record, written to the caller's buffer, with what the run counts of it.
    Record(Box<ScoredRecord>),
    /// The line is not a task.
    Bad(TaskError),
    /// A shard's scorer: another shard decides this task.
    Other,
    /// A shard's scorer: a decision, its record written to the caller's buffer, with
    /// what `plangate merge` needs of it.
    Kept(Box<KeptDecision>),
}

/// What a run counts of a line [`Scored::Record`] wrote.
#[derive(Debug)]
pub struct ScoredRecord {
    /// The verdict (None: the seed's gate refused).
    pub verdict: Option<Verdict>,
    /// The naive scorer's comparison, when there is one.
    pub compared: Option<Compared>,
    /// The task's ID.
    pub task_id: String,
    /// What reading it noted for the run (call ids matched by rule, unknown fields).
    pub notes: ReadingNotes,
    /// How its samples fared where they came from.
    pub outcomes: Option<TrialOutcomes>,
    /// The parameters that looked like unmarked prose ([`prose_like`]; none for the
    /// seed's gate, which reads no hints).
    pub prose: Vec<ProseParameter>,
}

/// A shard's decision with its prepared task, the naive scorer's comparison when there
/// is one, what reading it noted for the run, and the parameters that looked like
/// unmarked prose: `merge` classifies the prepared task again.
pub type KeptDecision = (
    decide::Decision,
    decide::Prepared,
    Option<Compared>,
    ReadingNotes,
    Vec<ProseParameter>,
);

/// The naive scorer beside the gate on one task (`--baseline`, or a labelled task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compared {
    /// The naive scorer's verdict.
    pub naive: Verdict,
    /// Its agreement, (count, n): counted for a labelled task when the scorer calibrates
    /// or is a shard's (`merge` calibrates from the shards' evidence).
    pub naive_agreement: Option<(usize, usize)>,
    /// The task's label.
    pub label: Option<Label>,
    /// What a labelled task adds to the run's calibration, when the scorer calibrates.
    pub calibration: Option<Observation>,
}

/// Everything a line is decided against; shared read-only by the threads that score.
pub struct LineScorer<'a> {
    /// The catalog.
    pub catalog: &'a Catalog,
    /// Each tool's state, as the catalog records it ([`decide::tool_states`]).
    pub states: BTreeMap<String, decide::ToolState>,
    /// The gate's thresholds.
    pub opts: Options,
    /// Reproduce the seed's code (`--seed-compat`) through this entry point.
    pub seed_compat: Option<(seed::EntryPoint, SeedOptions)>,
    /// Also score every task the naive way (`--baseline`); labelled tasks always are.
    pub baseline: bool,
    /// A shard's scorer (`--shard K/M`) decides only the tasks whose ID this says it
    /// owns, and keeps each one's prepared form ([`Scored::Kept`]).
    pub shard: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    /// Calibrate on this grid (around [`LineScorer::opts`]): each labelled task is also
    /// decided at every point of it, and its observation comes back with its
    /// comparison ([`Compared::calibration`]).
    pub calibration: Option<Grid>,
}

impl std::fmt::Debug for LineScorer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineScorer")
            .field("opts", &self.opts)
            .field("seed_compat", &self.seed_compat)
            .field("baseline", &self.baseline)
            .field("shard", &self.shard.is_some())
            .field("calibration", &self.calibration.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> LineScorer<'a> {
    /// A scorer with the catalog's recorded tool states.
    pub fn new(catalog: &'a Catalog, opts: Options) -> Self {
        LineScorer {
            catalog,
            states: decide::tool_states(catalog),
            opts,
            seed_compat: None,
            baseline: false,
            shard: None,
            calibration: None,
        }
    }

    /// Scores one line (without its line ending), appending its record, if it has
    /// one, to `out`: the records of many lines go to one buffer, not a string each.
    pub fn score(&self, line: &[u8], out: &mut String) -> Scored {
        self.score_seeing(line, out, |_| {})
    }

    /// [`LineScorer::score`], showing `see` the gate's decision, when the line has
    /// one, before its record is written: a run's page digests it there, on the
    /// thread that decided it.
    pub fn score_seeing(
        &self,
        line: &[u8],
        out: &mut String,
        see: impl FnOnce(&decide::Decision),
    ) -> Scored {
        match self.decide_comparing(line, out, true) {
            (DecidedLine::Gate(d, task), compared) => {
                see(&d);
                crate::record::write_decision(&d, out);
                Scored::Record(Box::new(ScoredRecord {
                    verdict: Some(d.verdict),
                    compared,
                    outcomes: TrialOutcomes::of(d.outcomes.iter().copied()),
                    prose: self.prose_like(&task, &d),
                    task_id: task.task_id,
                    notes: task.notes,
                }))
            }
            (DecidedLine::Scored(Scored::Kept(kept)), _) => {
                see(&kept.0);
                crate::record::write_decision(&kept.0, out);
                Scored::Kept(kept)
            }
            (DecidedLine::Scored(scored), _) => scored,
        }
    }

    /// Decides one line as [`LineScorer::score`] does, but hands the gate's decision over
    /// as it is, with its task, instead of its record: the Python package builds its
    /// records from the decision itself. It reads the naive comparison only to
    /// calibrate, so a task is compared only when the scorer calibrates. A
    /// `--seed-compat` record (written to `out`), a shard's work (its record not
    /// written) and a line that is not a task come back as `score` gives them.
    pub fn decide(&self, line: &[u8], out: &mut String) -> (DecidedLine, Option<Compared>) {
        self.decide_comparing(line, out, self.calibration.is_some())
    }

    /// [`LineScorer::decide`], with the naive scorer's verdict on a task the gate decided
    /// when `compare` asks for it (and the task is compared), found the cheapest way
    /// before the preparation is dropped ([`naive_verdict`]).
    fn decide_comparing(
        &self,
        line: &[u8],
        out: &mut String,
        compare: bool,
    ) -> (DecidedLine, Option<Compared>) {
        let task = match parse_task_line(line) {
            Ok(t) => t,
            Err(e) => return (DecidedLine::Scored(Scored::Bad(e)), None),
        };
        if self.shard.is_some_and(|owns| !owns(&task.task_id)) {
            return (DecidedLine::Scored(Scored::Other), None);
        }
        if let Some((entry, seed_opts)) = self.seed_compat {
            let outcome = seed::judge(&task, self.catalog, entry, &seed_opts);
            crate::record::write_seed(&task.task_id, &outcome, out);
            let record = Scored::Record(Box::new(ScoredRecord {
                verdict: outcome.verdict(),
                compared: None,
                outcomes: TrialOutcomes::of(task.samples.iter().map(|s| s.outcome)),
                prose: Vec::new(),
                task_id: task.task_id,
                notes: task.notes,
            }));
            return (DecidedLine::Scored(record), None);
        }
        if let Some(bad) = missing_result(&task) {
            let bad = Scored::Bad(TaskError {
                field: bad,
                message: "no result or error: plangate score decides observed results; \
                          use plangate eval to execute calls"
                    .into(),
                task_id: Some(task.task_id.clone()),
            });
            return (DecidedLine::Scored(bad), None);
        }
        let prepared = decide::prepare(&task, self.catalog, None);
        let (d, observation) = match &self.calibration {
            Some(grid) => grid.classify(&prepared, &self.states),
            None => (decide::classify(&prepared, &self.states, &self.opts), None),
        };
        if self.shard.is_some() {
            let compared = self.compared(&task, &prepared, observation);
            let prose = self.prose_like(&task, &d);
            let notes = task.notes;
            let kept = Scored::Kept(Box::new((d, prepared, compared, notes, prose)));
            return (DecidedLine::Scored(kept), None);
        }
        let compared = if compare {
            self.compared(&task, &prepared, observation)
        } else {
            None
        };
        drop(prepared);
        (DecidedLine::Gate(Box::new(d), Box::new(task)), compared)
    }

    /// [`LineScorer::score`], with a panic (a bug in plangate) reported as that line's
    /// failure: the rest of the run is still decided, and the summary counts the line.
    pub fn score_guarded(&self, line: &[u8], out: &mut String) -> Scored {
        self.score_guarded_seeing(line, out, |_| {})
    }

    /// [`LineScorer::score_seeing`], guarded as [`LineScorer::score_guarded`] is.
    pub fn score_guarded_seeing(
        &self,
        line: &[u8],
        out: &mut String,
        see: impl FnOnce(&decide::Decision),
    ) -> Scored {
        guarded(out, |out| self.score_seeing(line, out, see), Scored::Bad)
    }

    /// The parameters of `task` that looked like unmarked prose ([`prose_like`]), looked
    /// for only where its arguments do not meet arg_accept: words that kept a task from
    /// accepting are worth a warning, and most tasks agree (they are not read again).
    fn prose_like(&self, task: &Task, d: &decide::Decision) -> Vec<ProseParameter> {
        if self.opts.arg_accept.met_by(d.arg_agreement.count, d.n) {
            return Vec::new();
        }
        prose_like(task, self.catalog)
    }

    /// The naive scorer's comparison on `task`, when the two are compared, with the
    /// task's calibration `observation` and the naive agreement it ranks the task by.
    /// The agreement is counted for a labelled task when a calibration or a shard's
    /// evidence reads it; else the verdict alone is found, the cheapest way.
    fn compared(
        &self,
        task: &Task,
        prepared: &Prepared,
        observation: Option<Observation>,
    ) -> Option<Compared> {
        compares_baseline(self.baseline, task).then(|| {
            let threshold = self.opts.arg_accept;
            let counted =
                task.label.is_some() && (self.calibration.is_some() || self.shard.is_some());
            let (naive, naive_agreement) = if counted {
                let d = naive_decided(task, prepared, threshold);
                (d.decision, Some((d.agreement.count, d.agreement.n)))
            } else {
                (naive_verdict(task, prepared, threshold), None)
            };
            Compared {
                naive,
                naive_agreement,
                label: task.label,
                calibration: observation.map(|mut o| {
                    o.naive = naive_agreement;
                    o
                }),
            }
        })
    }

    /// [`LineScorer::decide`], guarded as [`LineScorer::score_guarded`] is.
    pub fn decide_guarded(&self, line: &[u8], out: &mut String) -> (DecidedLine, Option<Compared>) {
        guarded(
            out,
            |out| self.decide(line, out),
            |e| (DecidedLine::Scored(Scored::Bad(e)), None),
        )
    }
}

/// What [`LineScorer::decide`] made of a line: the gate's decision with its task, or what
/// [`LineScorer::score`] hands over for it.
#[derive(Debug)]
pub enum DecidedLine {
    /// The gate decided the task.
    Gate(Box<decide::Decision>, Box<Task>),
    /// Anything else, as `score` gives it.
    Scored(Scored),
}

/// `f(out)`, or a panic inside it as the line's error, with whatever part of a record
/// it wrote to `out` taken back.
fn guarded<T>(
    out: &mut String,
    f: impl FnOnce(&mut String) -> T,
    bad: impl FnOnce(TaskError) -> T,
) -> T {
    let start = out.len();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(out))).unwrap_or_else(|panic| {
        out.truncate(start);
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        bad(TaskError {
            field: String::new(),
            message: format!("internal error while deciding this line ({what}); please report it"),
            task_id: None,
        })
    })
}

/// Whether a task is also scored the naive way: when asked for, and always for a
/// labelled task, whose false-positive share is the comparison's point.
pub fn compares_baseline(asked: bool, task: &Task) -> bool {
    asked || task.label.is_some()
}

/// The record written in place of input line `number` when it is not a task.
pub fn bad_line_record(number: usize, e: &TaskError) -> String {
    json!({
        "line": number,
        "task_id": e.task_id,
        "error": {"kind": "input", "field": e.field, "message": e.message},
    })
    .to_string()
}

fn missing_result(task: &Task) -> Option<String> {
    for (i, s) in task.samples.iter().enumerate() {
        for (j, c) in s.calls.iter().enumerate() {
            if matches!(c.observed, Observed::Missing) {
                return Some(c.place(i, j));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic halfway through a record leaves none of it in the buffer the records
    /// before it share, and becomes the line's error.
    #[test]
    fn a_panic_takes_back_the_half_written_record() {
        let mut out = String::from("{\"earlier\":1}\n");
        let scored = guarded(
            &mut out,
            |out| -> Result<(), TaskError> {
                out.push_str("{\"task_id\":");
                panic!("halfway");
            },
            Err,
        );
        assert_eq!(out, "{\"earlier\":1}\n");
        let e = scored.unwrap_err();
        assert!(
            e.message
                .contains("internal error while deciding this line (halfway)")
        );
    }

    /// A line's record comes with the parameters that looked like unmarked prose, but
    /// only where they kept the task from accepting: texts a hint already merges
    /// (here `casefold`) are distinct as written, and say nothing worth a warning.
    #[test]
    fn prose_is_reported_only_for_tasks_it_kept_from_accepting() {
        let catalog = Catalog::from_value(
            &crate::json::parse(
                r#"{"tools":[{"name":"send","deterministic":true,"verified":true,"parameters":
                {"type":"object","properties":{"to":{"type":"string"},
                "note":{"type":"string","x-plangate":{"canon":["casefold"]}}}}}]}"#,
            )
            .unwrap(),
        )
        .unwrap();
        let scorer = LineScorer::new(&catalog, Options::default());
        let line = |texts: &[String]| {
            let samples: Vec<String> = (texts.iter())
                .map(|t| {
                    format!(r#"{{"calls":[{{"tool":"send","arguments":{{"to":"ada",{t}}},"result":1}}]}}"#)
                })
                .collect();
            format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(","))
        };
        let found =
            |texts: &[String]| match scorer.score(line(texts).as_bytes(), &mut String::new()) {
                Scored::Record(r) => (r.verdict, r.prose),
                other => panic!("{other:?}"),
            };
        let sentence = "the report for the quarter is in your inbox";
        let cased: Vec<String> = (0..6)
            .map(|i| {
                let mut s: Vec<char> = sentence.chars().collect();
                s[i] = s[i].to_ascii_uppercase();
                format!(r#""note":"{}""#, s.into_iter().collect::<String>())
            })
            .collect();
        assert_eq!(found(&cased), (Some(Verdict::Accept), vec![]));
        assert_eq!(
            decide::prose_like(&parse_task_line(line(&cased).as_bytes()).unwrap(), &catalog).len(),
            1,
            "distinct as written"
        );
        let worded: Vec<String> = (0..6)
            .map(|i| format!(r#""note":"Note {i}: {sentence}""#))
            .collect();
        let (verdict, prose) = found(&worded);
        assert_eq!(verdict, Some(Verdict::Reject));
        let places: Vec<(&str, &str)> = (prose.iter())
            .map(|p| (p.tool.as_str(), p.path.as_str()))
            .collect();
        assert_eq!(places, [("send", "$.note")]);
    }
}
