//! One samples line scored from its recorded results, as `plangate score` decides it:
//! the gate's decision (or the `--seed-compat` judgement), or why the line is not a
//! task. The CLI's pipeline and the Python package both call [`LineScorer::score`] and
//! write what it returns through [`crate::record`], so their records cannot drift apart.

use crate::baseline::{naive_decided, naive_verdict};
use crate::calibration::{Grid, Observation};
use crate::catalog::Catalog;
use crate::decide::{self, Decision, Options, Prepared, ProseParameter, Verdict, prose_like};
use crate::errors::{ErrorConvention, recognise_errors};
use crate::outcome::TrialOutcomes;
use crate::record::{BadLine, Record, SeedRecord, Sink};
use crate::seed::{self, SeedOptions, SeedOutcome};
use crate::task::{Label, Observed, ReadingNotes, Task, TaskError, parse_task_line};

/// What scoring one line gave.
#[derive(Debug)]
pub enum Scored {
    /// The gate decided the task.
    Decided(Box<ScoredTask>),
    /// The seed's gate (`--seed-compat`) judged the task.
    Seed(Box<SeedJudged>),
    /// The line is not a task.
    Bad(TaskError),
    /// A shard's scorer: another shard decides this task.
    Other,
}

/// A task the gate decided, with what the run counts of it beside its record.
#[derive(Debug)]
pub struct ScoredTask {
    /// The decision: the record written for the task.
    pub decision: Decision,
    /// The naive scorer's comparison, when the task is compared.
    pub compared: Option<Compared>,
    /// What reading the line noted for the run (call ids matched by rule, unknown fields).
    pub notes: ReadingNotes,
    /// The parameters that looked like unmarked prose ([`prose_like`]).
    pub prose: Vec<ProseParameter>,
    /// The prepared task, kept for a shard's evidence: `merge` classifies it again.
    pub prepared: Option<Prepared>,
}

impl ScoredTask {
    /// How the task's samples fared where they came from.
    pub fn trial_outcomes(&self) -> Option<TrialOutcomes> {
        TrialOutcomes::of(self.decision.outcomes.iter().copied())
    }
}

/// A task the seed's gate judged (`--seed-compat`), with what the run counts of it.
#[derive(Debug)]
pub struct SeedJudged {
    /// The task's ID.
    pub task_id: String,
    /// The seed's verdict and agreements, or its refusal.
    pub outcome: SeedOutcome,
    /// What reading the line noted for the run.
    pub notes: ReadingNotes,
    /// How the task's samples fared where they came from.
    pub outcomes: Option<TrialOutcomes>,
}

impl SeedJudged {
    /// The record written for it.
    pub fn record(&self) -> SeedRecord<'_> {
        SeedRecord {
            task_id: &self.task_id,
            outcome: &self.outcome,
        }
    }
}

impl Scored {
    /// The record written for the line when it is a task this scorer decides, as
    /// [`Record`]s are written: through any sink.
    pub fn emit<S: Sink + ?Sized>(&self, s: &mut S) -> bool {
        match self {
            Scored::Decided(d) => d.decision.emit(s),
            Scored::Seed(j) => j.record().emit(s),
            Scored::Bad(_) | Scored::Other => return false,
        }
        true
    }

    /// The task's verdict, when the line has one (the seed's refusal has none).
    pub fn verdict(&self) -> Option<Verdict> {
        match self {
            Scored::Decided(d) => Some(d.decision.verdict),
            Scored::Seed(j) => j.outcome.verdict(),
            Scored::Bad(_) | Scored::Other => None,
        }
    }
}

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

/// How a [`LineScorer`] decides: thresholds, the rule's mode and what it computes
/// beside the decision.
#[derive(Clone, Copy, Default)]
pub struct ScoreConfig<'a> {
    /// The gate's thresholds.
    pub opts: Options,
    /// Reproduce the seed's code (`--seed-compat`) through this entry point.
    pub seed_compat: Option<(seed::EntryPoint, SeedOptions)>,
    /// Compare the gate with the naive scorer, on labelled tasks and, with
    /// [`ScoreConfig::baseline`], on every task.
    pub compare: bool,
    /// Also score every task the naive way (`--baseline`); labelled tasks always are
    /// when the scorer compares.
    pub baseline: bool,
    /// A shard's scorer (`--shard K/M`) decides only the tasks whose ID this says it
    /// owns, and keeps each one's prepared form ([`ScoredTask::prepared`]).
    pub shard: Option<&'a (dyn Fn(&str) -> bool + Sync)>,
    /// Calibrate on a grid around [`ScoreConfig::opts`]: each labelled task is also
    /// decided at every point of it, and its observation comes back with its
    /// comparison ([`Compared::calibration`]).
    pub calibrate: bool,
    /// How a benchmark's results write errors, for the tools whose catalog entry does
    /// not say (`errors`): a results file's own convention ([`ErrorConvention::tau_bench`]).
    pub errors: Option<&'a ErrorConvention>,
}

impl std::fmt::Debug for ScoreConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScoreConfig")
            .field("opts", &self.opts)
            .field("seed_compat", &self.seed_compat)
            .field("compare", &self.compare)
            .field("baseline", &self.baseline)
            .field("shard", &self.shard.is_some())
            .field("calibrate", &self.calibrate)
            .field("errors", &self.errors.is_some())
            .finish()
    }
}

/// Everything a line is decided against; shared read-only by the threads that score.
#[derive(Debug)]
pub struct LineScorer<'a> {
    /// The tools, whose states are read from it as it records them
    /// ([`decide::tool_states`]).
    catalog: &'a Catalog,
    config: ScoreConfig<'a>,
    /// The calibration grid, when the scorer calibrates.
    grid: Option<Grid>,
}

impl<'a> LineScorer<'a> {
    /// A scorer over `catalog`, with the catalog's recorded tool states.
    pub fn new(catalog: &'a Catalog, config: ScoreConfig<'a>) -> Self {
        LineScorer {
            catalog,
            grid: config.calibrate.then(|| Grid::around(&config.opts)),
            config,
        }
    }

    /// The grid labelled tasks are calibrated on, when the scorer calibrates.
    pub fn grid(&self) -> Option<&Grid> {
        self.grid.as_ref()
    }

    /// Scores one line (without its line ending). A panic inside (a bug in plangate)
    /// is that line's failure: the rest of the run is still decided, and the summary
    /// counts the line.
    pub fn score(&self, line: &[u8]) -> Scored {
        guarded(|| self.score_unguarded(line), Scored::Bad)
    }

    fn score_unguarded(&self, line: &[u8]) -> Scored {
        let mut task = match parse_task_line(line) {
            Ok(t) => t,
            Err(e) => return Scored::Bad(e),
        };
        let config = &self.config;
        if config.shard.is_some_and(|owns| !owns(&task.task_id)) {
            return Scored::Other;
        }
        if let Some((entry, seed_opts)) = config.seed_compat {
            let outcome = seed::judge(&task, self.catalog, entry, &seed_opts);
            return Scored::Seed(Box::new(SeedJudged {
                outcome,
                outcomes: TrialOutcomes::of(task.samples.iter().map(|s| s.outcome)),
                task_id: task.task_id,
                notes: task.notes,
            }));
        }
        // Most catalogs say nothing of errors, and most runs read no benchmark's file:
        // their results are read as written, at no cost.
        if self.catalog.has_error_conventions() || config.errors.is_some() {
            let catalog = self.catalog;
            recognise_errors(&mut task, |tool| {
                (catalog.get(tool).and_then(|t| t.errors.as_ref())).or(config.errors)
            });
        }
        if let Some(bad) = missing_result(&task) {
            return Scored::Bad(TaskError {
                field: bad,
                message: "no result or error: plangate score decides observed results; \
                          use plangate eval to execute calls"
                    .into(),
                task_id: Some(task.task_id.clone()),
            });
        }
        let prepared = decide::prepare(&task, self.catalog, None);
        let (decision, observation) = match &self.grid {
            Some(grid) => grid.classify(&prepared, self.catalog),
            None => (
                decide::classify(&prepared, self.catalog, &config.opts),
                None,
            ),
        };
        let compared = config
            .compare
            .then(|| self.compared(&task, &prepared, observation))
            .flatten();
        let prose = self.prose_like(&task, &decision);
        Scored::Decided(Box::new(ScoredTask {
            decision,
            compared,
            notes: task.notes,
            prose,
            prepared: config.shard.is_some().then_some(prepared),
        }))
    }

    /// The parameters of `task` that looked like unmarked prose ([`prose_like`]), looked
    /// for only where its arguments do not meet arg_accept: words that kept a task from
    /// accepting are worth a warning, and most tasks agree (they are not read again).
    fn prose_like(&self, task: &Task, d: &Decision) -> Vec<ProseParameter> {
        if self
            .config
            .opts
            .arg_accept
            .met_by(d.arg_agreement.count, d.n)
        {
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
        compares_baseline(self.config.baseline, task).then(|| {
            let threshold = self.config.opts.arg_accept;
            let counted =
                task.label.is_some() && (self.grid.is_some() || self.config.shard.is_some());
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
}

/// `f()`, or a panic inside it as the line's error.
fn guarded<T>(f: impl FnOnce() -> T, bad: impl FnOnce(TaskError) -> T) -> T {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
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
    crate::record::json(&BadLine {
        line: number,
        error: e,
    })
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

    /// A panic while deciding a line becomes the line's error.
    #[test]
    fn a_panic_is_the_lines_error() {
        let scored = guarded(|| -> Result<(), TaskError> { panic!("halfway") }, Err);
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
        let scorer = LineScorer::new(&catalog, ScoreConfig::default());
        let line = |texts: &[String]| {
            let samples: Vec<String> = (texts.iter())
                .map(|t| {
                    format!(r#"{{"calls":[{{"tool":"send","arguments":{{"to":"ada",{t}}},"result":1}}]}}"#)
                })
                .collect();
            format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(","))
        };
        let found = |texts: &[String]| match scorer.score(line(texts).as_bytes()) {
            Scored::Decided(d) => (Some(d.decision.verdict), d.prose),
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
