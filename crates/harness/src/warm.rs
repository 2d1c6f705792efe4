//! The warm gate: one pinned world with its tools' health and loaded modules, which
//! executes and prepares one task at a time. Classifying is a separate step, so batch
//! [`crate::Eval`] keeps its end-of-batch semantics (it runs its workers over a warm
//! gate and classifies once the whole batch is known) while a server classifies each
//! task at once with the health known so far (docs/design.md, "Serving").

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Decision, Prepared, ToolState, ToolStates};
use plangate_gate::jcs;
use plangate_gate::task::{Arguments, Observed, Sample, Task};
use plangate_sandbox::{CallRecord, Outcome};

use crate::HarnessError;
use crate::health::{Evidence, HealthReport, PairKind, ToolFindings, WitnessBook, witness_key};
use crate::journal::{CallAt, Journal};
use crate::observe::observed_by;
use crate::probe::{ProbeRun, probe_arguments};
use crate::refs::substitute;
use crate::repeats::{Repeats, Take};
use crate::resolver::{SandboxResolver, TaskResolver};
use crate::world::{World, WorldOptions};
use serde::Serialize;

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
    /// Distinct calls whose first answer is kept for determinism witnesses, and IDs
    /// whose resolved answer is kept, at most (the oldest forgotten first); `None`
    /// keeps all, as a batch does. A server bounds them (`--remember-calls`).
    pub remember_calls: Option<usize>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            probe_runs: 2,
            jobs: crate::limits::default_jobs(),
            decide: decide::Options::default(),
            quarantine: None,
            reuse_repeats: false,
            remember_calls: None,
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

/// Witness evidence kept per tool: the first few make the case; the rest are counted.
const MAX_WITNESS_EVIDENCE: usize = 3;

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

/// What the gate knows of its tools: each one's book, and the first answer of every
/// distinct call, against which a later different one is a determinism witness.
struct Health {
    tools: BTreeMap<String, ToolFindings>,
    witnesses: WitnessBook,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A task executed and prepared by a [`WarmGate`], ready to be classified.
#[derive(Debug, Clone)]
pub struct Executed {
    /// The task's canonical keys, ids resolved in the gate's epoch.
    pub prepared: Prepared,
    /// Guest paths of the live mounts its calls (and the resolver calls its arguments
    /// needed) could read: if one changed, the task was not in a fixed epoch.
    pub live: Vec<String>,
}

/// One pinned world, its tools loaded and their health known so far. `Sync`: share it
/// with every thread that executes; it owns what it runs, so a server can keep it.
pub struct WarmGate {
    world: Arc<World>,
    catalog: Arc<Catalog>,
    opts: EvalOptions,
    resolver: SandboxResolver,
    health: Mutex<Health>,
    /// Declared-deterministic tools not yet probed with the tasks' own arguments: each
    /// is probed once more with the first plain call made to it (in input order, so
    /// reruns probe alike), since catalog `probe` arguments may miss what the tasks
    /// exercise (a set's order shows only with two elements or more).
    unprobed: Mutex<BTreeSet<String>>,
    /// Calls made so far, for reuse when `reuse_repeats` is on.
    repeats: Repeats,
    counters: Counters,
}

impl std::fmt::Debug for WarmGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmGate")
            .field("world", &self.world)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl WarmGate {
    /// Pins a fresh epoch over `catalog` (or replays `world.manifest`) and starts a gate
    /// over it: what a server or `plangate.Gate` holds warm. Blocks while the tools load
    /// and are probed.
    pub fn pin(
        catalog: &Arc<Catalog>,
        base_dir: &std::path::Path,
        world: WorldOptions,
        opts: EvalOptions,
    ) -> Result<WarmGate, HarnessError> {
        let world = World::build(catalog, base_dir, world)?;
        Ok(WarmGate::start(Arc::new(world), catalog.clone(), opts))
    }

    /// A gate over `world`: applies an earlier quarantine and probes every
    /// declared-deterministic tool that has `probe` arguments (none with
    /// `probe_runs` below 2).
    pub fn start(world: Arc<World>, catalog: Arc<Catalog>, opts: EvalOptions) -> WarmGate {
        let health = Health {
            tools: books(&catalog, &opts),
            witnesses: WitnessBook::new(opts.remember_calls),
        };
        let gate = WarmGate {
            resolver: SandboxResolver::new(world.clone(), &catalog, opts.remember_calls),
            health: Mutex::new(health),
            unprobed: Mutex::new(BTreeSet::new()),
            repeats: Repeats::default(),
            counters: Counters::default(),
            world,
            catalog,
            opts,
        };
        for t in gate.catalog.tools().iter().filter(|t| t.deterministic) {
            let args = probe_arguments(t);
            if !args.is_empty() {
                gate.probe(&t.name, &args);
            }
            lock(&gate.unprobed).insert(t.name.clone());
        }
        gate
    }

    /// The world the gate runs in.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, shared.
    pub fn world_arc(&self) -> &Arc<World> {
        &self.world
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// How the gate probes, executes and decides.
    pub fn options(&self) -> &EvalOptions {
        &self.opts
    }

    /// The id of the epoch every call runs in.
    pub fn epoch_id(&self) -> &str {
        self.world.epoch().id()
    }

    fn probe(&self, tool: &str, args: &[Vec<u8>]) {
        if self.opts.probe_runs < 2 {
            return;
        }
        let Some(run) = ProbeRun::run(&self.world, tool, args, self.opts.probe_runs) else {
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

    /// Probes each declared-deterministic tool `task` is the first to call plainly
    /// (arguments without `$from`) with that call's arguments.
    pub fn probe_on_first_use(&self, task: &Task) {
        let mut pending = lock(&self.unprobed);
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
            self.probe(&call.tool, &[jcs::to_string(&args).into_bytes()]);
        }
    }

    /// Executes every sample of `task` on this thread, one after another, and prepares
    /// it: a one-task run, for a caller that classifies at once. Blocks: call it from a
    /// plain thread, never an async runtime's worker.
    pub fn execute(&self, mut task: Task) -> Executed {
        self.probe_on_first_use(&task);
        let mut touched = BTreeSet::new();
        for (i, sample) in task.samples.iter_mut().enumerate() {
            touched.extend(self.execute_sample(0, i, Arc::make_mut(sample), None));
        }
        self.prepare(&task, touched)
    }

    /// Executes one call of `tool` with `stdin`, counted and witnessed like a task's
    /// call: `plangate call`'s way into the sandbox. None when the world has no such
    /// tool.
    pub fn execute_call(&self, tool: &str, stdin: &[u8]) -> Option<Arc<CallRecord>> {
        self.world.has(tool).then(|| {
            let at = CallAt {
                line: 0,
                sample: 0,
                call: 0,
            };
            self.run_call(at, tool, &[], stdin, None)
        })
    }

    /// Executes one sample's calls in order (sample `index` of the task on input line
    /// `line`), replaying what `journal` recorded of an interrupted run; returns the
    /// tools it ran.
    pub(crate) fn execute_sample(
        &self,
        line: usize,
        index: usize,
        sample: &mut Sample,
        journal: Option<&Journal>,
    ) -> BTreeSet<String> {
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
                    not_executed(
                        "unknown_tool",
                        format!("the catalog has no tool {:?}", call.tool),
                    ),
                ),
                (Arguments::Malformed(why), true) => {
                    (Vec::new(), not_executed("malformed_arguments", why.clone()))
                }
                (Arguments::Json(raw), true) => match substitute(raw, &results) {
                    Err(why) => (Vec::new(), not_executed("unresolved_reference", why)),
                    Ok(args) => {
                        let stdin = jcs::to_string(&args).into_bytes();
                        let record = self.run_call(at, &call.tool, &upstream, &stdin, journal);
                        touched.insert(call.tool.clone());
                        let errors = self.catalog.get(&call.tool).and_then(|t| t.errors.as_ref());
                        (stdin, observed_by(&record, errors))
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
        journal: Option<&Journal>,
    ) -> Arc<CallRecord> {
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
        let record = Arc::new(self.call(at, tool, stdin, journal));
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
    fn call(&self, at: CallAt, tool: &str, stdin: &[u8], journal: Option<&Journal>) -> CallRecord {
        if let Some(j) = journal
            && let Some(r) = j.replay(at, tool, stdin)
        {
            return r;
        }
        let record = self
            .world
            .call(tool, stdin)
            .expect("the world has every catalog tool");
        if let Some(j) = journal {
            j.record(at, tool, stdin, &record);
        }
        record
    }

    /// Records an execution under its witness key (`steps` earlier steps in its
    /// sample): a different answer than the key's first is a determinism witness.
    fn witness(&self, tool: &str, key: [u8; 32], steps: usize, stdin: &[u8], record: &CallRecord) {
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

    /// Prepares an executed task (canonical keys, ids resolved in this epoch) and
    /// counts it; `touched` are the tools its calls ran.
    pub(crate) fn prepare(&self, task: &Task, mut touched: BTreeSet<String>) -> Executed {
        let mut resolver = TaskResolver {
            shared: &self.resolver,
            used: BTreeSet::new(),
        };
        let prepared = decide::prepare(task, &self.catalog, Some(&mut resolver));
        touched.extend(resolver.used);
        self.counters.tasks.fetch_add(1, Ordering::Relaxed);
        self.counters
            .samples
            .fetch_add(task.samples.len(), Ordering::Relaxed);
        let live: BTreeSet<&String> = touched
            .iter()
            .flat_map(|t| self.world.live_mounts(t))
            .collect();
        Executed {
            prepared,
            live: live.into_iter().cloned().collect(),
        }
    }

    /// Classifies an executed task with the tool health known so far; its epoch was
    /// not fixed when one of the live mounts it read is in `changed`.
    pub fn classify(&self, executed: &Executed, changed: &BTreeSet<String>) -> Decision {
        self.classify_with(executed, changed, &self.states())
    }

    /// [`WarmGate::classify`] with the caller's view of the tools' states (a proxy's,
    /// which adds the tools it judges on their arguments only).
    pub fn classify_with(
        &self,
        executed: &Executed,
        changed: &BTreeSet<String>,
        states: &dyn ToolStates,
    ) -> Decision {
        let mut prepared = executed.prepared.clone();
        prepared.set_epoch_fixed(!executed.live.iter().any(|g| changed.contains(g)));
        decide::classify(&prepared, states, &self.opts.decide)
    }

    /// Executes `task` as one served request, the epoch's live mounts digested just
    /// before and just after it: the executed task, and the guest paths of the live
    /// mounts it read that changed while it ran (a mount that cannot be digested counts
    /// as changed). Blocks, as [`WarmGate::execute`] does.
    pub fn execute_at_once(&self, task: Task) -> (Executed, BTreeSet<String>) {
        let before = self.live_digests();
        let executed = self.execute(task);
        let after = self.live_digests();
        let changed = executed
            .live
            .iter()
            .filter(|g| match (&before, &after) {
                (Some(b), Some(a)) => b.get(*g) != a.get(*g),
                _ => true,
            })
            .cloned()
            .collect();
        (executed, changed)
    }

    /// [`WarmGate::execute_at_once`], classified at once with the health known so far.
    pub fn decide_at_once(&self, task: Task) -> Decision {
        let (executed, changed) = self.execute_at_once(task);
        self.classify(&executed, &changed)
    }

    /// Each live mount's digest now, by guest path; `None` when one cannot be read.
    fn live_digests(&self) -> Option<BTreeMap<String, String>> {
        let checks = self.world.epoch().recheck_live().ok()?;
        Some(checks.into_iter().map(|c| (c.guest, c.now)).collect())
    }

    /// What the gate knows of each tool, in catalog order.
    pub fn books(&self) -> Vec<ToolFindings> {
        let h = lock(&self.health);
        self.catalog
            .tools()
            .iter()
            .map(|t| h.tools[&t.name].clone())
            .collect()
    }

    /// Each tool's state as tasks are classified with it now.
    pub fn states(&self) -> BTreeMap<String, ToolState> {
        lock(&self.health)
            .tools
            .iter()
            .map(|(name, b)| (name.clone(), b.state()))
            .collect()
    }

    /// The tools' health as `tool-health.json` reports it, as known so far.
    pub fn health(&self) -> HealthReport {
        judge_tools(&self.books(), self.epoch_id()).1
    }

    /// Counts of what the gate did so far.
    pub fn stats(&self) -> EvalStats {
        let c = &self.counters;
        EvalStats {
            tasks: c.tasks.load(Ordering::Relaxed),
            samples: c.samples.load(Ordering::Relaxed),
            calls_executed: c.executed.load(Ordering::Relaxed),
            calls_reused: c.reused.load(Ordering::Relaxed),
            calls_not_executed: c.not_executed.load(Ordering::Relaxed),
            probe_calls: c.probe_calls.load(Ordering::Relaxed),
            witnesses: lock(&self.health).tools.values().map(|b| b.witnesses).sum(),
            outcomes: lock(&c.outcomes).clone(),
        }
    }
}

/// The result a call gets when it is not executed.
fn not_executed(kind: &str, message: String) -> Observed {
    Observed::Error {
        kind: kind.into(),
        message,
    }
}

/// Every catalog tool's book as a run starts: its declaration and annotations, and what
/// an earlier run's quarantine file says of it.
fn books(catalog: &Catalog, opts: &EvalOptions) -> BTreeMap<String, ToolFindings> {
    let mut tools = BTreeMap::new();
    for t in catalog.tools() {
        tools.insert(
            t.name.clone(),
            ToolFindings {
                name: t.name.clone(),
                declared: t.deterministic,
                annotations: t
                    .annotations
                    .as_ref()
                    .and_then(|a| serde_json::from_str(&jcs::to_string(a)).ok()),
                ..ToolFindings::default()
            },
        );
    }
    if let Some((file, report)) = &opts.quarantine {
        for earlier in report.tools.iter().filter(|t| t.quarantined) {
            match tools.get_mut(&earlier.name) {
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
    tools
}

/// Tool health from every tool's book, in catalog order: the states tasks are
/// classified with, and the report.
pub fn judge_tools(
    books: &[ToolFindings],
    epoch_id: &str,
) -> (BTreeMap<String, ToolState>, HealthReport) {
    let states = books.iter().map(|b| (b.name.clone(), b.state())).collect();
    let report = HealthReport {
        epoch_id: Some(epoch_id.to_string()),
        tools: books.iter().map(ToolFindings::health).collect(),
    };
    (states, report)
}
