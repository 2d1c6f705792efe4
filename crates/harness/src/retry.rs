//! The defer path (docs/design.md, "The defer path"): a task deferred because of its
//! epoch or its tools' results (a live source changed under it, a tool drifted or was
//! quarantined) is executed again in a fresh epoch in which every source is pinned and
//! every tool probed again, and decided on that evidence. The samples never change (they
//! are the model's); only the executions, the resolved IDs and the epoch do.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{Decision, Reason, Verdict};
use plangate_gate::task::Task;
use serde::Serialize;

use crate::error::HarnessError;
use crate::eval::{ClassifiedTask, Eval, PreparedBatch};
use crate::warm::EvalOptions;
use crate::world::{World, WorldOptions};

/// One decision a task had before its last: its epoch, verdict and reasons.
#[derive(Debug, Clone, Serialize)]
pub struct Attempt {
    /// The epoch it was decided in.
    pub epoch_id: String,
    /// The verdict then (a deferral).
    pub decision: Verdict,
    /// Its reasons.
    pub reasons: Vec<Reason>,
}

impl Attempt {
    /// A decision made in the epoch `epoch_id`, as a later one's history keeps it.
    pub fn of(d: &Decision, epoch_id: &str) -> Self {
        Attempt {
            epoch_id: epoch_id.to_string(),
            decision: d.verdict,
            reasons: d.reasons.clone(),
        }
    }
}

/// A retried task's last decision, the epoch it was made in, and what came before.
#[derive(Debug, Clone)]
pub struct Retried {
    /// The decision of the last retry.
    pub decision: Decision,
    /// The retry epoch it was made in.
    pub epoch_id: String,
    /// Earlier decisions, first one first.
    pub history: Vec<Attempt>,
}

/// What one retry round did.
#[derive(Debug, Clone, Serialize)]
pub struct RetryRound {
    /// The round's fresh, fully pinned epoch.
    pub epoch_id: String,
    /// Tasks executed again.
    pub tasks: usize,
    /// Calls the round spent: executed calls and probe calls.
    pub calls: usize,
    /// Calls that took the record of two executions that answered alike (same tool,
    /// stdin and upstream) instead of running again: every source is pinned.
    pub reused: usize,
    /// Tools quarantined in the round's own epoch (drift with every source pinned).
    pub quarantined: Vec<String>,
}

/// The defer path's figures for a run: rounds, and how the retried deferrals ended, by
/// the reason they were first deferred for.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RetryReport {
    /// Each round.
    pub rounds: Vec<RetryRound>,
    /// Distinct tasks retried at least once.
    pub tasks_retried: usize,
    /// Calls spent on retries, probes included.
    pub calls: usize,
    /// Calls the retries reused instead of executing (see [`RetryRound::reused`]).
    pub reused: usize,
    /// First deferral reason -> final verdict -> tasks.
    pub resolved: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

/// How to retry: the catalog and folder the first epoch was built from, the options to
/// build and run each retry epoch with, and how many rounds at most.
#[derive(Debug, Clone)]
pub struct RetryPlan<'a> {
    /// The run's catalog.
    pub catalog: Arc<Catalog>,
    /// The catalog's folder.
    pub base_dir: &'a Path,
    /// The first epoch's options: each round takes its limits and engine, with every
    /// source pinned and a seed of its own.
    pub world: WorldOptions,
    /// How each round probes, executes and decides (as the first epoch did).
    pub eval: EvalOptions,
    /// Rounds at most (0: no retry).
    pub rounds: usize,
    /// When set (Ctrl-C), a round stops taking calls and the retry ends with
    /// [`HarnessError::Interrupted`].
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Where a retry gets the tasks on the given input lines (the samples, read again).
pub type TasksAt<'t> = dyn FnMut(&BTreeSet<usize>) -> Result<Vec<(usize, Task)>, String> + 't;

/// The code a reason is written as.
fn code(r: Reason) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl RetryPlan<'_> {
    /// Retries the retryable deferrals of `first`, round after round while some remain
    /// and rounds are left. Returns each retried task's last decision by input line,
    /// and the report.
    pub fn run(
        &self,
        first: &PreparedBatch,
        tasks_at: &mut TasksAt<'_>,
    ) -> Result<(BTreeMap<usize, Retried>, RetryReport), HarnessError> {
        self.run_from(&first.epoch_id, first.decisions(), tasks_at)
    }

    /// [`RetryPlan::run`] from the first epoch's decisions (epoch `first_epoch`) as
    /// the caller already has them, so a caller that keeps them does not classify every
    /// task a second time.
    pub fn run_from(
        &self,
        first_epoch: &str,
        first: impl IntoIterator<Item = Result<ClassifiedTask, HarnessError>>,
        tasks_at: &mut TasksAt<'_>,
    ) -> Result<(BTreeMap<usize, Retried>, RetryReport), HarnessError> {
        let mut retried: BTreeMap<usize, Retried> = BTreeMap::new();
        // The reason each task was first deferred for, which the report counts by.
        let mut first_reason: BTreeMap<usize, String> = BTreeMap::new();
        let mut pending = BTreeSet::new();
        for d in first {
            let d = d?;
            if !d.decision.retryable() {
                continue;
            }
            let reason = d.decision.reasons.iter().copied();
            let reason = reason.filter(|r| r.fixed_by_a_fresh_epoch()).map(code);
            first_reason.insert(d.line, reason.into_iter().next().unwrap_or_default());
            retried.insert(
                d.line,
                Retried {
                    history: vec![Attempt::of(&d.decision, first_epoch)],
                    epoch_id: first_epoch.to_string(),
                    decision: d.decision,
                },
            );
            pending.insert(d.line);
        }
        let mut report = RetryReport::default();
        for round in 0..self.rounds {
            if pending.is_empty() {
                break;
            }
            if self
                .stop
                .is_some_and(|f| f.load(std::sync::atomic::Ordering::Relaxed))
            {
                return Err(HarnessError::Interrupted);
            }
            let tasks = tasks_at(&pending).map_err(HarnessError::Retry)?;
            let finished = self.round(round, tasks)?;
            let calls = finished.stats.calls_executed + finished.stats.probe_calls;
            report.calls += calls;
            report.reused += finished.stats.calls_reused;
            report.rounds.push(RetryRound {
                epoch_id: finished.epoch_id.clone(),
                tasks: pending.len(),
                calls,
                reused: finished.stats.calls_reused,
                quarantined: finished
                    .quarantined()
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
            });
            pending.clear();
            for d in finished.decisions() {
                let d = d?;
                let Some(r) = retried.get_mut(&d.line) else {
                    continue;
                };
                if d.decision.task_id != r.decision.task_id {
                    return Err(HarnessError::Retry(format!(
                        "input line {} now holds task {:?}, not {:?}: the samples changed during the run",
                        d.line, d.decision.task_id, r.decision.task_id
                    )));
                }
                if d.decision.retryable() && round + 1 < self.rounds {
                    pending.insert(d.line);
                }
                let before = std::mem::replace(&mut r.decision, d.decision);
                if r.epoch_id != first_epoch {
                    r.history.push(Attempt::of(&before, &r.epoch_id));
                }
                r.epoch_id = finished.epoch_id.clone();
            }
        }
        // Tasks whose round never came (no rounds asked for) keep their first decision
        // and are not reported as retried.
        retried.retain(|_, r| r.epoch_id != first_epoch);
        report.tasks_retried = retried.len();
        for (line, r) in &retried {
            *report
                .resolved
                .entry(first_reason[line].clone())
                .or_default()
                .entry(r.decision.verdict.as_str())
                .or_default() += 1;
        }
        Ok((retried, report))
    }

    /// One round: a fresh epoch with every source pinned (its own seed), every tool
    /// probed again, the tasks executed (a task's repeated calls reused once two
    /// executions agree) and decided.
    fn round(
        &self,
        round: usize,
        tasks: Vec<(usize, Task)>,
    ) -> Result<PreparedBatch, HarnessError> {
        let world = retry_world(&self.catalog, self.base_dir, &self.world, round)?;
        let mut eval = Eval::start(
            Arc::new(world),
            self.catalog.clone(),
            retry_options(&self.eval),
        );
        if let Some(flag) = self.stop {
            eval.stop_when(flag);
        }
        eval.execute(&|_, _| None, |feeder| {
            for (line, task) in tasks {
                feeder.push(line, task);
            }
        });
        // Calls were dropped: the round cannot be decided.
        if eval.stopped() {
            return Err(HarnessError::Interrupted);
        }
        eval.finish()
    }
}

/// Round `round`'s epoch: fresh, every source pinned, a seed of its own.
fn retry_world(
    catalog: &Catalog,
    base_dir: &Path,
    first: &WorldOptions,
    round: usize,
) -> Result<World, HarnessError> {
    let world = World::build(
        catalog,
        base_dir,
        WorldOptions {
            manifest: None,
            random_seed: first.random_seed.wrapping_add(round as u64 + 1),
            pin_all: true,
            ..first.clone()
        },
    )?;
    tracing::info!(epoch_id = world.epoch().id(), round, "retry epoch pinned");
    Ok(world)
}

/// How a retry epoch executes: as the first did, a task's repeated calls reused once
/// two executions agree (every source is pinned).
fn retry_options(first: &EvalOptions) -> EvalOptions {
    EvalOptions {
        reuse_repeats: true,
        ..first.clone()
    }
}

/// The defer path's gate for one task decided at once (a served request): a fresh
/// epoch with every source pinned (the first round's, as [`RetryPlan`] pins it), every
/// tool probed again, a task's repeated calls reused once two executions agree. Blocks.
pub fn retry_gate(
    catalog: &Arc<Catalog>,
    base_dir: &Path,
    world: &WorldOptions,
    eval: &EvalOptions,
) -> Result<crate::warm::WarmGate, HarnessError> {
    let world = Arc::new(retry_world(catalog, base_dir, world, 0)?);
    Ok(crate::warm::WarmGate::start(
        world,
        catalog.clone(),
        retry_options(eval),
    ))
}
