//! One eval run as every front end makes it (`plangate eval`, `plangate demo`,
//! `plangate.eval`): the epoch pinned or replayed, phase one started with its stop
//! flag and journal, and the defer path's rounds after phase two. The front ends feed the lines and keep their own files,
//! progress and interrupts; the order of the phases and the retry live here once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use plangate_gate::catalog::Catalog;
use plangate_sandbox::EpochManifest;

use crate::error::HarnessError;
use crate::eval::{ClassifiedTask, Eval, PreparedBatch};
use crate::journal::Journal;
use crate::retry::{Retried, RetryPlan, RetryReport, TasksAt};
use crate::warm::EvalOptions;
use crate::world::{World, WorldOptions};

/// What the defer path did: each retried task's last decision by input line, and the
/// report (`None` when the run retries nothing).
#[derive(Debug, Default)]
pub struct Retries {
    /// The last decision of each task retried, by input line.
    pub retried: BTreeMap<usize, Retried>,
    /// The rounds and how the deferrals ended; `None` with no rounds.
    pub report: Option<RetryReport>,
}

/// One eval run: the catalog, the folder its paths are relative to, how its epochs
/// are pinned and its tasks executed and decided, and how many defer-path rounds
/// follow.
#[derive(Debug, Clone)]
pub struct EvalRun<'a> {
    catalog: Arc<Catalog>,
    base_dir: &'a Path,
    world: WorldOptions,
    eval: EvalOptions,
    retry_rounds: usize,
    stop: Option<&'a AtomicBool>,
}

impl<'a> EvalRun<'a> {
    /// A run of `catalog` (paths relative to `base_dir`), its first epoch pinned with
    /// `world` (the manifest to replay, if any, is given to [`EvalRun::pin`]), executed
    /// and decided with `eval`, followed by `retry_rounds` defer-path rounds at most.
    pub fn new(
        catalog: Arc<Catalog>,
        base_dir: &'a Path,
        world: WorldOptions,
        eval: EvalOptions,
        retry_rounds: usize,
    ) -> Self {
        EvalRun {
            catalog,
            base_dir,
            world: WorldOptions {
                manifest: None,
                ..world
            },
            eval,
            retry_rounds,
            stop: None,
        }
    }

    /// Stops the run when `flag` is set (Ctrl-C): phase one stops taking calls, and a
    /// retry round ends with [`HarnessError::Interrupted`].
    pub fn stop_when(mut self, flag: &'a AtomicBool) -> Self {
        self.stop = Some(flag);
        self
    }

    /// How the run probes, executes and decides.
    pub fn options(&self) -> &EvalOptions {
        &self.eval
    }

    /// Whether the defer path runs after phase two.
    pub fn retries(&self) -> bool {
        self.retry_rounds > 0
    }

    /// Pins the first epoch, or replays `manifest` (an earlier run's).
    pub fn pin(&self, manifest: Option<EpochManifest>) -> Result<Arc<World>, HarnessError> {
        World::build(
            &self.catalog,
            self.base_dir,
            WorldOptions {
                manifest,
                ..self.world.clone()
            },
        )
        .map(Arc::new)
    }

    /// Phase one in `world`: every tool declared deterministic probed, and the
    /// executor ready for the lines, with the run's stop flag and `journal` (the calls
    /// an interrupted run made, and where this run's go).
    pub fn start<'w>(&'w self, world: Arc<World>, journal: Option<&'w Journal>) -> Eval<'w> {
        let mut eval = Eval::start(world, self.catalog.clone(), self.eval.clone());
        if let Some(j) = journal {
            eval.journal(j);
        }
        if let Some(stop) = self.stop {
            eval.stop_when(stop);
        }
        eval
    }

    /// The defer path after phase two: the retryable deferrals of `first` executed
    /// again, round after round, each in a fresh epoch with every source pinned.
    /// `tasks_at` reads the tasks on given input lines again.
    pub fn retry(
        &self,
        first: &PreparedBatch,
        tasks_at: &mut TasksAt<'_>,
    ) -> Result<Retries, HarnessError> {
        if !self.retries() {
            return Ok(Retries::default());
        }
        let (retried, report) = self.plan().run(first, tasks_at)?;
        Ok(Retries {
            retried,
            report: Some(report),
        })
    }

    /// [`EvalRun::retry`] from decisions already taken out of the first epoch's
    /// [`PreparedBatch`] (`epoch_id` is that epoch's). With no rounds, the report is an
    /// empty one, not `None`: a caller that always shows the defer path shows zeros.
    pub fn retry_from(
        &self,
        epoch_id: &str,
        decisions: impl IntoIterator<Item = Result<ClassifiedTask, HarnessError>>,
        tasks_at: &mut TasksAt<'_>,
    ) -> Result<(BTreeMap<usize, Retried>, RetryReport), HarnessError> {
        self.plan().run_from(epoch_id, decisions, tasks_at)
    }

    fn plan(&self) -> RetryPlan<'_> {
        RetryPlan {
            catalog: self.catalog.clone(),
            base_dir: self.base_dir,
            world: self.world.clone(),
            eval: self.eval.clone(),
            rounds: self.retry_rounds,
            stop: self.stop,
        }
    }
}
