//! `plangate eval` as a library: probe, execute every call of every sample concurrently,
//! collect witnesses, then classify every task once tool health is known (two-phase,
//! docs/design.md, "Decision"). Tasks stream in; what is kept per task is its
//! [`Prepared`] form, never the raw samples.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard};

use plangate_gate::baseline::NaiveDecision;
use plangate_gate::calibration::{Grid, Observation};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Decision, ToolState, Verdict};
use plangate_gate::jcs;
use plangate_gate::task::{Arguments, Label, Observed, ReadingNotes, Sample, Task, TaskError};
use plangate_sandbox::{LiveCheck, Outcome};
use serde::Serialize;

use crate::error::HarnessError;
use crate::health::{Evidence, HealthReport, PairKind, ToolBook, WitnessBook, witness_key};
use crate::journal::{CallAt, Journal};
use crate::observe::observed;
use crate::probe::{ProbeRun, probe_arguments};
use crate::refs::substitute;
use crate::repeats::{Repeats, Take};
use crate::resolver::{SandboxResolver, TaskResolver};
use crate::spill::{Spill, Spilled, SpilledLine};
use crate::world::World;

/// Witness evidence kept per tool: the first few make the case; the rest are counted.
const MAX_WITNESS_EVIDENCE: usize = 3;

/// How a run probes, executes and decides.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Calls per probe argument (fewer than 2 probes nothing: every tool is unverified).
    pub probe_runs: usize,
    /// Worker threads executing calls.
    pub jobs: usize,
    /// Decision thresholds.
    pub decide: decide::Options,
    /// An earlier run's tool health, and the file it came from: its quarantined tools
    /// start this run quarantined.
    pub quarantine: Option<(String, HealthReport)>,
    /// Reuse the record of a call to a tool whose every source is pinned once two
    /// executions of it answered alike (the defer path's retry epochs; see `repeats`).
    pub reuse_repeats: bool,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            probe_runs: 2,
            jobs: crate::limits::default_jobs(),
            decide: decide::Options::default(),
            quarantine: None,
            reuse_repeats: false,
        }
    }
}

/// Counts of what the run did.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct EvalStats {
    /// Tasks executed.
    pub tasks: usize,
    /// Samples executed.
    pub samples: usize,
    /// Tool calls executed in the sandbox (probes and resolver look-ups excluded).
    pub calls_executed: usize,
    /// Tool calls that took the record of identical earlier executions instead of
    /// running (with [`EvalOptions::reuse_repeats`]).
    #[serde(default)]
    pub calls_reused: usize,
    /// Calls not executed: unknown tool, malformed arguments, unresolved `$from`.
    pub calls_not_executed: usize,
    /// Probe calls.
    pub probe_calls: usize,
    /// Determinism witnesses found.
    pub witnesses: usize,
    /// How the executed calls ended, per tool: outcome (`exit:0`, `exit:7`, `out_of_fuel`,
    /// `timeout`, `memory_limit`, `output_limit`, `trap:stack_overflow`, ...) -> calls.
    /// Decisions hold no results, so this is where a run shows what its tools did.
    pub outcomes: BTreeMap<String, BTreeMap<String, usize>>,
}

impl EvalStats {
    /// Adds another run's counts (another shard's) to these.
    pub fn add(&mut self, other: &EvalStats) {
        self.tasks += other.tasks;
        self.samples += other.samples;
        self.calls_executed += other.calls_executed;
        self.calls_reused += other.calls_reused;
        self.calls_not_executed += other.calls_not_executed;
        self.probe_calls += other.probe_calls;
        self.witnesses += other.witnesses;
        for (tool, outcomes) in &other.outcomes {
            let mine = self.outcomes.entry(tool.clone()).or_default();
            for (outcome, n) in outcomes {
                *mine.entry(outcome.clone()).or_default() += n;
            }
        }
    }
}

/// The name [`EvalStats::outcomes`] counts a call under: the exit code and trap kind
/// are kept, since `exit:7` and `exit:0` are different stories.
fn outcome_name(o: &Outcome) -> String {
    match o {
        Outcome::Exit { code } => format!("exit:{code}"),
        Outcome::Trap { kind } => format!("trap:{}", kind.as_str()),
        other => other.as_str().to_string(),
    }
}

#[derive(Default)]
struct Counters {
    tasks: AtomicUsize,
    samples: AtomicUsize,
    executed: AtomicUsize,
    reused: AtomicUsize,
    not_executed: AtomicUsize,
    probe_calls: AtomicUsize,
    outcomes: Mutex<BTreeMap<String, BTreeMap<String, usize>>>,
}

#[derive(Default)]
struct Health {
    tools: BTreeMap<String, ToolBook>,
    witnesses: WitnessBook,
}

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One run over one [`World`].
pub struct Eval<'w> {
    world: &'w World,
    catalog: &'w Catalog,
    opts: EvalOptions,
    resolver: SandboxResolver<'w>,
    health: Mutex<Health>,
    /// Every pushed line's entry, in input order, on disk.
    spill: Mutex<Spill>,
    /// Lines pushed so far: the next line's place in the spill.
    pushed: AtomicUsize,
    counters: Counters,
    /// Declared-deterministic tools not yet probed with the batch's own arguments: each
    /// is probed once more with the first plain call the batch makes to it (in input
    /// order, so reruns probe alike), since catalog `probe` arguments may miss what the
    /// batch exercises (a set's order shows only with two elements or more).
    unprobed: Mutex<BTreeSet<String>>,
    /// Where executed calls are recorded, and an interrupted run's calls replayed.
    journal: Option<&'w Journal>,
    /// Calls made so far, for reuse when `reuse_repeats` is on.
    repeats: Repeats,
    /// When set (Ctrl-C), workers drop the calls still queued.
    stop: Option<&'w std::sync::atomic::AtomicBool>,
}

impl std::fmt::Debug for Eval<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Eval")
            .field("world", self.world)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl<'w> Eval<'w> {
    /// Starts a run: applies an earlier quarantine and probes every declared-deterministic
    /// tool that has `probe` arguments.
    pub fn start(world: &'w World, catalog: &'w Catalog, opts: EvalOptions) -> Eval<'w> {
        let mut health = Health::default();
        for t in catalog.tools() {
            health.tools.insert(
                t.name.clone(),
                ToolBook {
                    name: t.name.clone(),
                    declared: t.deterministic,
                    annotations: t
                        .annotations
                        .as_ref()
                        .and_then(|a| serde_json::from_str(&plangate_gate::jcs::to_string(a)).ok()),
                    ..ToolBook::default()
                },
            );
        }
        if let Some((file, report)) = &opts.quarantine {
            for earlier in report.tools.iter().filter(|t| t.quarantined) {
                match health.tools.get_mut(&earlier.name) {
                    Some(book) => {
                        book.earlier = true;
                        book.evidence.push(Evidence::EarlierRun {
                            file: file.clone(),
                            epoch_id: report.epoch_id.clone(),
                        });
                        book.evidence.extend(
                            earlier
                                .evidence
                                .iter()
                                .filter(|e| !matches!(e, Evidence::EarlierRun { .. }))
                                .cloned(),
                        );
                    }
                    None => tracing::warn!(
                        tool = earlier.name,
                        "the quarantine file names a tool the catalog does not have"
                    ),
                }
            }
        }
        let eval = Eval {
            world,
            catalog,
            resolver: SandboxResolver::new(world, catalog),
            health: Mutex::new(health),
            spill: Mutex::new(Spill::new()),
            pushed: AtomicUsize::new(0),
            counters: Counters::default(),
            unprobed: Mutex::new(BTreeSet::new()),
            journal: None,
            stop: None,
            repeats: Repeats::default(),
            opts,
        };
        for t in catalog.tools().iter().filter(|t| t.deterministic) {
            let args = probe_arguments(t);
            if !args.is_empty() {
                eval.probe(&t.name, &args);
            }
            lock(&eval.unprobed).insert(t.name.clone());
        }
        eval
    }

    fn probe(&self, tool: &str, args: &[Vec<u8>]) {
        if self.opts.probe_runs < 2 {
            return;
        }
        let Some(run) = ProbeRun::run(self.world, tool, args, self.opts.probe_runs) else {
            return;
        };
        self.counters
            .probe_calls
            .fetch_add(args.len() * self.opts.probe_runs, Ordering::Relaxed);
        let drift = run.drift();
        tracing::info!(tool, verified = drift.is_empty(), "probed");
        let mut h = lock(&self.health);
        if let Some(book) = h.tools.get_mut(tool) {
            book.probed = true;
            book.drift |= !drift.is_empty();
            book.evidence.extend(drift);
        }
    }

    /// Runs `feed` on this thread while a pool of `opts.jobs` plain threads executes the
    /// tasks it pushes; returns what `feed` returns once every pushed task is executed.
    /// `on_done` sees each task as it finishes executing (see [`OnDone`]).
    pub fn execute<R>(
        &self,
        on_done: &OnDone<'_>,
        feed: impl FnOnce(&mut Feeder<'_, 'w>) -> R,
    ) -> R {
        let jobs = self.opts.jobs.max(1);
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
            let mut feeder = Feeder {
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
            let touched = self.run_sample(job.shell.line, job.sample, &mut job.body);
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
        mut touched: BTreeSet<String>,
        naive: Option<NaiveDecision>,
    ) {
        let mut resolver = TaskResolver {
            shared: &self.resolver,
            used: BTreeSet::new(),
        };
        let prepared = decide::prepare(&task, self.catalog, Some(&mut resolver));
        touched.extend(resolver.used);
        self.counters.tasks.fetch_add(1, Ordering::Relaxed);
        self.counters
            .samples
            .fetch_add(task.samples.len(), Ordering::Relaxed);
        let live: BTreeSet<&String> = touched
            .iter()
            .flat_map(|t| self.world.live_mounts(t))
            .collect();
        let entry = SpilledLine::Task {
            line,
            prepared,
            live: live.into_iter().cloned().collect(),
            naive: naive.map(|d| d.decision),
            naive_agreement: naive.map(|d| (d.agreement.count, d.agreement.n)),
        };
        let text = entry.to_line();
        lock(&self.spill).put(index, text);
    }

    /// Executes one sample's calls in order (sample `index` of the task on input line
    /// `line`); returns the tools it ran.
    fn run_sample(&self, line: usize, index: usize, sample: &mut Sample) -> BTreeSet<String> {
        let mut touched = BTreeSet::new();
        let mut upstream: Vec<Vec<u8>> = Vec::with_capacity(sample.calls.len());
        let mut results: Vec<Observed> = Vec::with_capacity(sample.calls.len());
        for (i, call) in sample.calls.iter_mut().enumerate() {
            let at = CallAt {
                line,
                sample: index,
                call: i,
            };
            let known = self.catalog.get(&call.tool).is_some() && self.world.has(&call.tool);
            let (stdin, obs) = match (&call.arguments, known) {
                (_, false) => (
                    Vec::new(),
                    Observed::Error {
                        kind: "unknown_tool".into(),
                        message: format!("the catalog has no tool {:?}", call.tool),
                    },
                ),
                (Arguments::Malformed(why), true) => (
                    Vec::new(),
                    Observed::Error {
                        kind: "malformed_arguments".into(),
                        message: why.clone(),
                    },
                ),
                (Arguments::Json(raw), true) => match substitute(raw, &results) {
                    Err(why) => (
                        Vec::new(),
                        Observed::Error {
                            kind: "unresolved_reference".into(),
                            message: why,
                        },
                    ),
                    Ok(args) => {
                        let stdin = jcs::to_string(&args).into_bytes();
                        let record = self.run_call(at, &call.tool, &upstream, &stdin);
                        touched.insert(call.tool.clone());
                        (stdin, observed(&record))
                    }
                },
            };
            if stdin.is_empty() {
                self.counters.not_executed.fetch_add(1, Ordering::Relaxed);
            }
            upstream.push(stdin);
            results.push(obs.clone());
            call.observed = obs;
        }
        touched
    }

    /// One call with its upstream context: the record of identical earlier executions
    /// when `reuse_repeats` allows it, else executed, counted and checked for a witness.
    fn run_call(
        &self,
        at: CallAt,
        tool: &str,
        upstream: &[Vec<u8>],
        stdin: &[u8],
    ) -> Arc<plangate_sandbox::CallRecord> {
        let key = witness_key(tool, upstream, stdin);
        let ticket = if self.opts.reuse_repeats && self.world.pinned(tool) {
            match self.repeats.take(key) {
                Take::Reuse(record) => {
                    self.counters.reused.fetch_add(1, Ordering::Relaxed);
                    return record;
                }
                Take::Execute(ticket) => Some(ticket),
            }
        } else {
            None
        };
        let record = Arc::new(self.call(at, tool, stdin));
        if let Some(ticket) = ticket {
            ticket.done(&record);
        }
        self.counters.executed.fetch_add(1, Ordering::Relaxed);
        *lock(&self.counters.outcomes)
            .entry(tool.to_string())
            .or_default()
            .entry(outcome_name(&record.outcome))
            .or_default() += 1;
        self.witness(tool, key, upstream.len(), stdin, &record);
        record
    }

    /// One call: replayed from an interrupted run's journal when it made it, else
    /// executed (and journalled).
    fn call(&self, at: CallAt, tool: &str, stdin: &[u8]) -> plangate_sandbox::CallRecord {
        if let Some(j) = self.journal
            && let Some(r) = j.replay(at, tool, stdin)
        {
            return r;
        }
        let record = self
            .world
            .call(tool, stdin)
            .expect("the world has every catalog tool");
        if let Some(j) = self.journal {
            j.record(at, tool, stdin, &record);
        }
        record
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

    /// Records an execution under its witness key (`steps` earlier steps in its
    /// sample): a different answer than the key's first is a determinism witness.
    fn witness(
        &self,
        tool: &str,
        key: [u8; 32],
        steps: usize,
        stdin: &[u8],
        record: &plangate_sandbox::CallRecord,
    ) {
        // Wall time is a safety net, not part of the epoch: a timeout is no evidence.
        if record.outcome == Outcome::Timeout {
            return;
        }
        let mut h = lock(&self.health);
        let declared = h.tools.get(tool).is_some_and(|b| b.declared);
        if !declared {
            return;
        }
        if let Some((first, later)) = h.witnesses.record(key, record) {
            tracing::info!(tool, "determinism witness");
            let book = h.tools.get_mut(tool).expect("declared tools have a book");
            book.witnesses += 1;
            if book.witnesses <= MAX_WITNESS_EVIDENCE {
                book.evidence.push(Evidence::pair(
                    PairKind::Witness(steps),
                    stdin,
                    &first,
                    &later,
                ));
            }
        }
    }

    /// Phase two: rechecks live mounts, fixes tool health, and readies every task for
    /// classification.
    pub fn finish(self) -> Result<Finished, HarnessError> {
        let live = self.world.epoch().recheck_live()?;
        for c in live.iter().filter(|c| c.changed()) {
            tracing::warn!(guest = c.guest, "a live mount changed during the batch");
        }
        let health = self.health.into_inner().unwrap_or_else(|e| e.into_inner());
        let books: Vec<ToolBook> = self
            .catalog
            .tools()
            .iter()
            .map(|t| health.tools[&t.name].clone())
            .collect();
        let spilled = self
            .spill
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .finish()?;
        let c = self.counters;
        let stats = EvalStats {
            tasks: c.tasks.load(Ordering::Relaxed),
            samples: c.samples.load(Ordering::Relaxed),
            calls_executed: c.executed.load(Ordering::Relaxed),
            calls_reused: c.reused.load(Ordering::Relaxed),
            calls_not_executed: c.not_executed.load(Ordering::Relaxed),
            probe_calls: c.probe_calls.load(Ordering::Relaxed),
            witnesses: books.iter().map(|b| b.witnesses).sum(),
            outcomes: c.outcomes.into_inner().unwrap_or_else(|e| e.into_inner()),
        };
        let epoch_id = self.world.epoch().id().to_string();
        Ok(Finished::new(
            epoch_id,
            books,
            live,
            spilled,
            self.opts.decide,
            stats,
        ))
    }
}

/// Pushes tasks to the workers; handed to the `feed` closure of [`Eval::execute`].
pub struct Feeder<'e, 'w> {
    eval: &'e Eval<'w>,
    tx: SyncSender<Job>,
    on_done: &'e OnDone<'e>,
}

impl std::fmt::Debug for Feeder<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feeder").finish_non_exhaustive()
    }
}

impl Feeder<'_, '_> {
    /// Queues every sample of `task` (read from input line `line`). Blocks while the
    /// queue is full, so reading never runs far ahead of execution.
    pub fn push(&mut self, line: usize, task: Task) {
        let eval = self.eval;
        self.probe_on_first_use(&task);
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
        let text = SpilledLine::Bad { line, error }.to_line();
        lock(&self.eval.spill).put(index, text);
    }

    fn probe_on_first_use(&self, task: &Task) {
        let eval = self.eval;
        let mut pending = lock(&eval.unprobed);
        if pending.is_empty() {
            return;
        }
        for call in task.samples.iter().flat_map(|s| &s.calls) {
            if !pending.contains(&call.tool) {
                continue;
            }
            // Arguments with a `$from` depend on an execution; wait for a plain call.
            let Arguments::Json(raw) = &call.arguments else {
                continue;
            };
            let Ok(args) = substitute(raw, &[]) else {
                continue;
            };
            pending.remove(&call.tool);
            eval.probe(&call.tool, &[jcs::to_string(&args).into_bytes()]);
        }
    }
}

/// A task decided in phase two.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The input line it came from.
    pub line: usize,
    /// The decision.
    pub decision: Decision,
    /// The naive scorer's verdict, when it compared the task.
    pub naive: Option<Verdict>,
    /// What the task adds to the run's calibration: a labelled task's, from
    /// [`Finished::calibrated_lines`].
    pub calibration: Option<Observation>,
}

/// One input line's outcome, in input order: a decision, or why the line is no task.
#[derive(Debug, Clone)]
pub enum LineOutcome {
    /// A task, decided.
    Task(Box<Decided>),
    /// A line that is not a task.
    Bad(usize, TaskError),
}

/// Tool health from every tool's book, in catalog order: the states tasks are
/// classified with, and the report.
pub fn judge_tools(
    books: &[ToolBook],
    epoch_id: &str,
) -> (BTreeMap<String, ToolState>, HealthReport) {
    let states = books.iter().map(|b| (b.name.clone(), b.state())).collect();
    let report = HealthReport {
        epoch_id: Some(epoch_id.to_string()),
        tools: books.iter().map(ToolBook::health).collect(),
    };
    (states, report)
}

/// Everything phase one learned: tool health, live checks, and every task prepared
/// (on disk, read back for each pass over the decisions).
pub struct Finished {
    /// The epoch every call ran in.
    pub epoch_id: String,
    /// Tool health (`tool-health.json`).
    pub health: HealthReport,
    /// Tool states the tasks are classified with.
    pub states: BTreeMap<String, ToolState>,
    /// What the run learned of each tool, in catalog order (a shard's evidence).
    pub books: Vec<ToolBook>,
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

impl std::fmt::Debug for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finished")
            .field("epoch_id", &self.epoch_id)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Finished {
    /// A finished run from its parts: also how `plangate merge` builds one from the
    /// union of its shards (their books and live checks added up, their entries merged
    /// in input order).
    pub fn new(
        epoch_id: String,
        books: Vec<ToolBook>,
        live: Vec<LiveCheck>,
        spilled: Spilled,
        options: decide::Options,
        stats: EvalStats,
    ) -> Finished {
        let (states, health) = judge_tools(&books, &epoch_id);
        let changed = live
            .iter()
            .filter(|c| c.changed())
            .map(|c| c.guest.clone())
            .collect();
        Finished {
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

    /// [`Finished::lines`], each labelled task also decided at every point of the run's
    /// calibration grid ([`Finished::grid`]), its observation in
    /// [`Decided::calibration`]: the pass that writes a run's summary.
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

    /// The grid [`Finished::calibrated_lines`] decides labelled tasks on: around the
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
    pub fn decisions(&self) -> impl Iterator<Item = Result<Decided, HarnessError>> + '_ {
        self.decisions_with(self.options)
    }

    /// [`Finished::decisions`] under other options.
    pub fn decisions_with(
        &self,
        options: decide::Options,
    ) -> impl Iterator<Item = Result<Decided, HarnessError>> + '_ {
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
    entry: SpilledLine,
    changed: &BTreeSet<String>,
    states: &BTreeMap<String, ToolState>,
    under: Sweep<'_>,
) -> LineOutcome {
    match entry {
        SpilledLine::Task {
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
            LineOutcome::Task(Box::new(Decided {
                line,
                decision,
                naive,
                calibration: calibration.map(|mut o| {
                    o.naive = naive_agreement;
                    o
                }),
            }))
        }
        SpilledLine::Bad { line, error } => LineOutcome::Bad(line, error),
    }
}

/// Reads the quarantine file for [`EvalOptions::quarantine`].
pub fn read_quarantine(path: &Path) -> Result<(String, HealthReport), HarnessError> {
    Ok((path.display().to_string(), HealthReport::read(path)?))
}
