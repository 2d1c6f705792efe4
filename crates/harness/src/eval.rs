//! `plangate eval` as a library: probe, execute every call of every sample concurrently,
//! collect witnesses, then classify every task once tool health is known (two-phase,
//! docs/design.md, "Decision"). Tasks stream in; what is kept per task is its
//! [`Prepared`] form, never the raw samples.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};

use plangate_gate::baseline::NaiveDecision;
use plangate_gate::calibration::{Grid, Observation};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Decision, ToolState, Verdict};
use plangate_gate::task::{Label, ReadingNotes, Sample, Task, TaskError};
use plangate_sandbox::LiveCheck;

use crate::error::HarnessError;
use crate::health::{HealthReport, ToolFindings};
use crate::journal::Journal;
use crate::spill::{PreparedEntry, Spill, Spilled};
use crate::warm::{EvalOptions, EvalStats, Executed, WarmGate, judge_tools, lock};
use crate::world::World;

/// A task whose samples are out on the workers.
struct Shell {
    index: usize,
    /// The input line the task was read from.
    line: usize,
    task_id: String,
    label: Option<Label>,
    /// What reading the line noted, for the decision.
    warnings: Vec<String>,
    notes: ReadingNotes,
    samples: Mutex<Vec<Option<Sample>>>,
    remaining: AtomicUsize,
    touched: Mutex<BTreeSet<String>>,
}

/// Called with each task as it finishes executing (from a worker), its calls carrying
/// what they returned, and the input line it was pushed with; returns the naive
/// scorer's decision when it compares the task, kept with the task for phase two (its
/// verdict, and its agreement for the calibration of a labelled task).
pub type OnDone<'a> = dyn Fn(usize, &Task) -> Option<NaiveDecision> + Sync + 'a;

struct Job {
    shell: Arc<Shell>,
    sample: usize,
    body: Sample,
}

/// One batch run over a [`WarmGate`]: its tasks executed by a pool of workers and
/// spilled prepared, to be classified once the whole batch is known.
pub struct Eval<'w> {
    gate: WarmGate,
    /// Every pushed line's entry, in input order, on disk.
    spill: Mutex<Spill>,
    /// Lines pushed so far: the next line's place in the spill.
    pushed: AtomicUsize,
    /// Where executed calls are recorded, and an interrupted run's calls replayed.
    journal: Option<&'w Journal>,
    /// When set (Ctrl-C), workers drop the calls still queued.
    stop: Option<&'w std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Eval<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eval")
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl<'w> Eval<'w> {
    /// Starts a run: a warm gate over `world` (an earlier quarantine applied, every
    /// declared-deterministic tool with `probe` arguments probed).
    pub fn start(world: Arc<World>, catalog: Arc<Catalog>, opts: EvalOptions) -> Eval<'w> {
        Eval::over(WarmGate::start(world, catalog, opts))
    }

    /// A run over a gate already warm.
    pub fn over(gate: WarmGate) -> Eval<'w> {
        Eval {
            gate,
            spill: Mutex::new(Spill::new()),
            pushed: AtomicUsize::new(0),
            journal: None,
            stop: None,
        }
    }

    /// The warm gate the run executes in.
    pub fn gate(&self) -> &WarmGate {
        &self.gate
    }

    /// Runs `feed` on this thread while a pool of `opts.jobs` plain threads executes the
    /// tasks it pushes; returns what `feed` returns once every pushed task is executed.
    /// `on_done` sees each task as it finishes executing (see [`OnDone`]).
    pub fn execute<R>(
        &self,
        on_done: &OnDone<'_>,
        feed: impl FnOnce(&mut TaskQueue<'_, 'w>) -> R,
    ) -> R {
        let jobs = self.gate.options().jobs.max(1);
        let (tx, rx) = sync_channel::<Job>(jobs * 4);
        let rx = Mutex::new(rx);
        std::thread::scope(|s| {
            for i in 0..jobs {
                let rx = &rx;
                std::thread::Builder::new()
                    .name(format!("plangate-exec-{i}"))
                    .spawn_scoped(s, move || self.work(rx, on_done))
                    .expect("spawn an executor thread");
            }
            let mut feeder = TaskQueue {
                eval: self,
                tx,
                on_done,
            };
            feed(&mut feeder)
            // The feeder drops here, closing the queue; the scope waits for the workers.
        })
    }

    fn work(&self, rx: &Mutex<Receiver<Job>>, on_done: &OnDone<'_>) {
        loop {
            let job = lock(rx).recv();
            let Ok(mut job) = job else { return };
            if self.stopped() {
                // Dropped unexecuted: a stopped run is resumed, not finished.
                continue;
            }
            let touched =
                self.gate
                    .execute_sample(job.shell.line, job.sample, &mut job.body, self.journal);
            lock(&job.shell.touched).extend(touched);
            lock(&job.shell.samples)[job.sample] = Some(job.body);
            if job.shell.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                let shell = &job.shell;
                let samples = std::mem::take(&mut *lock(&shell.samples))
                    .into_iter()
                    .map(|s| Arc::new(s.expect("every sample of a finished task is back")))
                    .collect();
                let touched = std::mem::take(&mut *lock(&shell.touched));
                let task = Task {
                    task_id: shell.task_id.clone(),
                    samples,
                    label: shell.label,
                    epoch_fixed: None,
                    warnings: shell.warnings.clone(),
                    notes: shell.notes.clone(),
                };
                let naive = on_done(shell.line, &task);
                self.settle(shell.index, shell.line, task, touched, naive);
            }
        }
    }

    /// Prepares an executed task (canonical keys, IDs resolved), spills it, and drops
    /// its samples.
    fn settle(
        &self,
        index: usize,
        line: usize,
        task: Task,
        touched: BTreeSet<String>,
        naive: Option<NaiveDecision>,
    ) {
        let Executed { prepared, live } = self.gate.prepare(&task, touched);
        let entry = PreparedEntry::Task {
            line,
            prepared,
            live,
            naive: naive.map(|d| d.decision),
            naive_agreement: naive.map(|d| (d.agreement.count, d.agreement.n)),
        };
        let text = entry.to_line();
        lock(&self.spill).put(index, text);
    }

    /// Records executed calls in `journal` and replays the calls it holds from an
    /// earlier run of this batch instead of executing them again.
    pub fn journal(&mut self, journal: &'w Journal) {
        self.journal = Some(journal);
    }

    /// Stops the run early once `flag` is set (Ctrl-C): calls still queued are then
    /// dropped, so [`Eval::execute`] returns soon, and the run can no longer be
    /// finished, only resumed from its journal.
    pub fn stop_when(&mut self, flag: &'w std::sync::atomic::AtomicBool) {
        self.stop = Some(flag);
    }

    /// Whether the flag given to [`Eval::stop_when`] is set.
    pub fn stopped(&self) -> bool {
        self.stop.is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// Phase two: rechecks live mounts, fixes tool health, and readies every task for
    /// classification.
    pub fn finish(self) -> Result<PreparedBatch, HarnessError> {
        let live = self.gate.world().epoch().recheck_live()?;
        for c in live.iter().filter(|c| c.changed()) {
            tracing::warn!(guest = c.guest, "a live mount changed during the batch");
        }
        let books = self.gate.books();
        let spilled = self
            .spill
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .finish()?;
        let stats = self.gate.stats();
        let epoch_id = self.gate.epoch_id().to_string();
        Ok(PreparedBatch::new(
            epoch_id,
            books,
            live,
            spilled,
            self.gate.options().decide,
            stats,
        ))
    }
}

/// Pushes tasks to the workers; handed to the `feed` closure of [`Eval::execute`].
pub struct TaskQueue<'e, 'w> {
    eval: &'e Eval<'w>,
    tx: SyncSender<Job>,
    on_done: &'e OnDone<'e>,
}

impl std::fmt::Debug for TaskQueue<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskQueue").finish_non_exhaustive()
    }
}

impl TaskQueue<'_, '_> {
    /// Queues every sample of `task` (read from input line `line`). Blocks while the
    /// queue is full, so reading never runs far ahead of execution.
    pub fn push(&mut self, line: usize, task: Task) {
        let eval = self.eval;
        eval.gate.probe_on_first_use(&task);
        let index = eval.pushed.fetch_add(1, Ordering::Relaxed);
        if task.samples.is_empty() {
            let naive = (self.on_done)(line, &task);
            eval.settle(index, line, task, BTreeSet::new(), naive);
            return;
        }
        let n = task.samples.len();
        let shell = Arc::new(Shell {
            index,
            line,
            task_id: task.task_id,
            label: task.label,
            warnings: task.warnings,
            notes: task.notes,
            samples: Mutex::new((0..n).map(|_| None).collect()),
            remaining: AtomicUsize::new(n),
            touched: Mutex::new(BTreeSet::new()),
        });
        for (i, body) in task.samples.into_iter().enumerate() {
            let job = Job {
                shell: shell.clone(),
                sample: i,
                // Samples the reader shared are executed apart, each for its own results.
                body: Arc::unwrap_or_clone(body),
            };
            if self.tx.send(job).is_err() {
                // Only when every worker died, which the scope reports as a panic.
                return;
            }
        }
    }

    /// Records input line `line` as not a task, to be reported in its place.
    pub fn skip(&mut self, line: usize, error: TaskError) {
        let index = self.eval.pushed.fetch_add(1, Ordering::Relaxed);
        let text = PreparedEntry::Bad { line, error }.to_line();
        lock(&self.eval.spill).put(index, text);
    }
}

/// A task decided in phase two.
#[derive(Debug, Clone)]
pub struct ClassifiedTask {
    /// The input line it came from.
    pub line: usize,
    /// The decision.
    pub decision: Decision,
    /// The naive scorer's verdict, when it compared the task.
    pub naive: Option<Verdict>,
    /// What the task adds to the run's calibration: a labelled task's, from
    /// [`PreparedBatch::calibrated_lines`].
    pub calibration: Option<Observation>,
}

/// One input line's outcome, in input order: a decision, or why the line is no task.
#[derive(Debug, Clone)]
pub enum LineOutcome {
    /// A task, decided.
    Task(Box<ClassifiedTask>),
    /// A line that is not a task.
    Bad(usize, TaskError),
}

/// Everything phase one learned: tool health, live checks, and every task prepared
/// (on disk, read back for each pass over the decisions).
pub struct PreparedBatch {
    /// The epoch every call ran in.
    pub epoch_id: String,
    /// Tool health (`tool-health.json`).
    pub health: HealthReport,
    /// Tool states the tasks are classified with.
    pub states: BTreeMap<String, ToolState>,
    /// What the run learned of each tool, in catalog order (a shard's evidence).
    pub books: Vec<ToolFindings>,
    /// Live mounts, digested at epoch start and batch end.
    pub live: Vec<LiveCheck>,
    /// Counts.
    pub stats: EvalStats,
    /// Guest paths of live mounts that changed: tasks that read one were not in a fixed
    /// epoch.
    changed: BTreeSet<String>,
    spilled: Spilled,
    options: decide::Options,
    /// The calibration grid around `options`.
    grid: Grid,
}

impl std::fmt::Debug for PreparedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedBatch")
            .field("epoch_id", &self.epoch_id)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl PreparedBatch {
    /// A finished run from its parts: also how `plangate merge` builds one from the
    /// union of its shards (their books and live checks added up, their entries merged
    /// in input order).
    pub fn new(
        epoch_id: String,
        books: Vec<ToolFindings>,
        live: Vec<LiveCheck>,
        spilled: Spilled,
        options: decide::Options,
        stats: EvalStats,
    ) -> PreparedBatch {
        let (states, health) = judge_tools(&books, &epoch_id);
        let changed = live
            .iter()
            .filter(|c| c.changed())
            .map(|c| c.guest.clone())
            .collect();
        PreparedBatch {
            epoch_id,
            health,
            states,
            books,
            live,
            stats,
            changed,
            spilled,
            grid: Grid::around(&options),
            options,
        }
    }

    /// Every input line's outcome, in input order, classified as it is read back.
    pub fn lines(&self) -> impl Iterator<Item = Result<LineOutcome, HarnessError>> + '_ {
        self.lines_with(self.options)
    }

    /// [`PreparedBatch::lines`], each labelled task also decided at every point of the run's
    /// calibration grid ([`PreparedBatch::grid`]), its observation in
    /// [`ClassifiedTask::calibration`]: the pass that writes a run's summary.
    pub fn calibrated_lines(&self) -> impl Iterator<Item = Result<LineOutcome, HarnessError>> + '_ {
        self.spilled.entries().map(move |e| {
            Ok(classify_entry(
                e?,
                &self.changed,
                &self.states,
                Sweep::Grid(&self.grid),
            ))
        })
    }

    /// The grid [`PreparedBatch::calibrated_lines`] decides labelled tasks on: around the
    /// run's options.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The same evidence classified under other options (another rule, other
    /// thresholds), for comparing decision boundaries on one run.
    pub fn lines_with(
        &self,
        options: decide::Options,
    ) -> impl Iterator<Item = Result<LineOutcome, HarnessError>> + '_ {
        self.spilled.entries().map(move |e| {
            let under = Sweep::Options(&options);
            Ok(classify_entry(e?, &self.changed, &self.states, under))
        })
    }

    /// Every task's decision, in input order (lines that are no task left out).
    pub fn decisions(&self) -> impl Iterator<Item = Result<ClassifiedTask, HarnessError>> + '_ {
        self.decisions_with(self.options)
    }

    /// [`PreparedBatch::decisions`] under other options.
    pub fn decisions_with(
        &self,
        options: decide::Options,
    ) -> impl Iterator<Item = Result<ClassifiedTask, HarnessError>> + '_ {
        self.lines_with(options).filter_map(|l| match l {
            Ok(LineOutcome::Task(d)) => Some(Ok(*d)),
            Ok(LineOutcome::Bad(..)) => None,
            Err(e) => Some(Err(e)),
        })
    }

    /// The prepared entries, as a shard hands them to `plangate merge`.
    pub fn spilled(&self) -> &Spilled {
        &self.spilled
    }

    /// Names of quarantined tools.
    pub fn quarantined(&self) -> Vec<&str> {
        self.health.quarantined().collect()
    }

    /// Guest paths of live mounts that changed during the batch.
    pub fn changed_live_mounts(&self) -> Vec<&str> {
        self.changed.iter().map(String::as_str).collect()
    }
}

/// What phase two classifies a task under: options, or a calibration grid (around the
/// run's options) for a labelled task's observation.
#[derive(Clone, Copy)]
enum Sweep<'a> {
    Options(&'a decide::Options),
    Grid(&'a Grid),
}

/// Phase two for one line: a task is classified, its epoch not fixed if a live mount
/// it read changed.
fn classify_entry(
    entry: PreparedEntry,
    changed: &BTreeSet<String>,
    states: &BTreeMap<String, ToolState>,
    under: Sweep<'_>,
) -> LineOutcome {
    match entry {
        PreparedEntry::Task {
            line,
            mut prepared,
            live,
            naive,
            naive_agreement,
        } => {
            prepared.set_epoch_fixed(!live.iter().any(|g| changed.contains(g)));
            let (decision, calibration) = match under {
                Sweep::Options(options) => (decide::classify(&prepared, states, options), None),
                Sweep::Grid(grid) => grid.classify(&prepared, states),
            };
            LineOutcome::Task(Box::new(ClassifiedTask {
                line,
                decision,
                naive,
                calibration: calibration.map(|mut o| {
                    o.naive = naive_agreement;
                    o
                }),
            }))
        }
        PreparedEntry::Bad { line, error } => LineOutcome::Bad(line, error),
    }
}

/// Reads the quarantine file for [`EvalOptions::quarantine`].
pub fn read_quarantine(path: &Path) -> Result<(String, HealthReport), HarnessError> {
    Ok((path.display().to_string(), HealthReport::read(path)?))
}
