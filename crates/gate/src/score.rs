//! One samples line scored from its recorded results, as `plangate score` writes it: the
//! decision record (or the `--seed-compat` one), or why the line is not a task, and the
//! record written in its place. The CLI's pipeline and the Python package both call
//! this, so their records cannot drift apart.

use std::collections::BTreeMap;

use serde_json::json;

use crate::baseline::naive_verdict;
use crate::catalog::Catalog;
use crate::decide::{self, Options, Prepared, Verdict};
use crate::seed::{self, SeedOptions};
use crate::task::{Label, Observed, ReadingNotes, Task, TaskError, parse_task_line};

/// What scoring one line produced.
#[derive(Debug)]
pub enum Scored {
    /// A record, written to the caller's buffer: the verdict it carries (None: the
    /// seed's gate refused), the naive scorer's verdict with the task's label when they
    /// are compared, the task's ID, and what reading it noted for the run.
    Record(
        Option<Verdict>,
        Option<(Verdict, Option<Label>)>,
        String,
        ReadingNotes,
    ),
    /// The line is not a task.
    Bad(TaskError),
    /// A shard's scorer: another shard decides this task.
    Other,
    /// A shard's scorer: a decision, its record written to the caller's buffer, with
    /// what `plangate merge` needs of it.
    Kept(Box<KeptDecision>),
}

/// A shard's decision with its prepared task, the naive scorer's verdict (with the
/// task's label) when they are compared, and what reading it noted for the run: `merge`
/// classifies the prepared task again.
pub type KeptDecision = (
    decide::Decision,
    decide::Prepared,
    Option<(Verdict, Option<Label>)>,
    ReadingNotes,
);

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
}

impl std::fmt::Debug for LineScorer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineScorer")
            .field("opts", &self.opts)
            .field("seed_compat", &self.seed_compat)
            .field("baseline", &self.baseline)
            .field("shard", &self.shard.is_some())
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
        }
    }

    /// Scores one line (without its line ending), appending its record, if it has
    /// one, to `out`: the records of many lines go to one buffer, not a string each.
    pub fn score(&self, line: &[u8], out: &mut String) -> Scored {
        match self.decide_comparing(line, out, true) {
            (DecidedLine::Gate(d, task), compared) => {
                crate::record::write_decision(&d, out);
                Scored::Record(Some(d.decision), compared, task.task_id, task.notes)
            }
            (DecidedLine::Scored(Scored::Kept(kept)), _) => {
                crate::record::write_decision(&kept.0, out);
                Scored::Kept(kept)
            }
            (DecidedLine::Scored(scored), _) => scored,
        }
    }

    /// Decides one line as [`LineScorer::score`] does, but hands the gate's decision over
    /// as it is, with its task, instead of its record: the Python package builds its
    /// records from the decision itself, and reads no naive comparison. A
    /// `--seed-compat` record (written to `out`), a shard's work (its record not
    /// written) and a line that is not a task come back as `score` gives them.
    pub fn decide(&self, line: &[u8], out: &mut String) -> DecidedLine {
        self.decide_comparing(line, out, false).0
    }

    /// [`LineScorer::decide`], with the naive scorer's verdict on a task the gate decided
    /// when `compare` asks for it (and the task is compared), found the cheapest way
    /// before the preparation is dropped ([`naive_verdict`]).
    fn decide_comparing(
        &self,
        line: &[u8],
        out: &mut String,
        compare: bool,
    ) -> (DecidedLine, Option<(Verdict, Option<Label>)>) {
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
            let record = Scored::Record(outcome.verdict(), None, task.task_id, task.notes);
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
        let d = decide::classify(&prepared, &self.states, &self.opts);
        if self.shard.is_some() {
            let compared = self.compared(&task, &prepared);
            let kept = Scored::Kept(Box::new((d, prepared, compared, task.notes)));
            return (DecidedLine::Scored(kept), None);
        }
        let compared = if compare {
            self.compared(&task, &prepared)
        } else {
            None
        };
        drop(prepared);
        (DecidedLine::Gate(Box::new(d), Box::new(task)), compared)
    }

    /// [`LineScorer::score`], with a panic (a bug in plangate) reported as that line's
    /// failure: the rest of the run is still decided, and the summary counts the line.
    pub fn score_guarded(&self, line: &[u8], out: &mut String) -> Scored {
        guarded(out, |out| self.score(line, out), Scored::Bad)
    }

    /// The naive scorer's verdict on `task`, with its label, when the two are compared.
    fn compared(&self, task: &Task, prepared: &Prepared) -> Option<(Verdict, Option<Label>)> {
        compares_baseline(self.baseline, task).then(|| {
            let threshold = self.opts.arg_accept;
            (naive_verdict(task, prepared, threshold), task.label)
        })
    }

    /// [`LineScorer::decide`], guarded as [`LineScorer::score_guarded`] is.
    pub fn decide_guarded(&self, line: &[u8], out: &mut String) -> DecidedLine {
        guarded(
            out,
            |out| self.decide(line, out),
            |e| DecidedLine::Scored(Scored::Bad(e)),
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
}
