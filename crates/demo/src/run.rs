//! The demo's run: the generated batch executed by the real harness in one pinned epoch
//! while the world driver changes the live state beside it, then the defer path, then
//! four judges of the same executions (naive, the seed's rule, the gate on the first
//! epoch, the gate after retries) counted into the report.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use plangate_gate::baseline::naive;
use plangate_gate::decide::{Decision, Options, Rule};
use plangate_gate::task::{Label, Task, parse_task_line};
use plangate_harness::{
    ClassifiedTask, Eval, EvalOptions, EvalRun, HarnessError, PreparedBatch, Retried, RetryReport,
    WorldOptions,
};
use plangate_report::agreement::{Plots, Series};

use crate::driver::{copy_tree, drive, private_catalog};
use crate::error::DemoError;
use crate::results::{Column, DemoReport, RetryPrice};
use crate::scenario::Generated;
use crate::{Batch, RunOptions};

/// What running the batch produced: the harness's results, the naive scorer's column
/// (it judges each task as it is executed) and what the world driver did.
pub(crate) struct BatchRun {
    finished: PreparedBatch,
    /// The first epoch's decisions, classified once for the retry and both gate
    /// columns.
    first: Vec<ClassifiedTask>,
    naive: Column,
    driver_actions: Vec<String>,
    /// The defer path's last decision for each task it retried, by line.
    retried: BTreeMap<usize, Retried>,
    retry: RetryReport,
    /// Wall time of the defer path: picking the tasks from the first epoch's decisions,
    /// then its rounds.
    retry_s: f64,
}

/// The whole demo after its batch is drawn: run, judged four ways, summed up.
pub(crate) fn run(batch: &Batch, opts: &RunOptions) -> Result<(DemoReport, Plots), DemoError> {
    let ran = run_batch(batch, opts)?;
    let elapsed = opts.started.elapsed().as_secs_f64();
    let tasks = &batch.tasks;
    let first = ran.first.iter().map(|d| Ok((d.line, d.decision.clone())));
    let (one_epoch, _) = judge_gate(tasks, first)?;
    let retried = &ran.retried;
    let last = ran.first.iter().map(|d| {
        Ok(match retried.get(&d.line) {
            Some(r) => (d.line, r.decision.clone()),
            None => (d.line, d.decision.clone()),
        })
    });
    let (gate, plots) = judge_gate(tasks, last)?;
    let seed_rule = judge_seed_rule(&opts.decide, tasks, &ran.finished)?;
    let report = demo_report(batch, ran, [one_epoch, gate], seed_rule, elapsed)?;
    Ok((report, plots))
}

/// Runs the batch through the harness in one pinned epoch, with the world driver
/// changing a private copy of the live state beside it.
fn run_batch(batch: &Batch, opts: &RunOptions) -> Result<BatchRun, DemoError> {
    let dir = &batch.world;
    let seed = batch.config.seed;
    // The driver writes to a private copy of live/, so the demo never changes the
    // repository's fixtures.
    let scratch = tempfile::tempdir().map_err(DemoError::Scratch)?;
    let live = scratch.path().join("live");
    copy_tree(&dir.join("live"), &live)?;
    let catalog = private_catalog(dir, &live)?;
    let mut eval_opts = EvalOptions {
        decide: opts.decide,
        ..EvalOptions::default()
    };
    if let Some(j) = opts.jobs {
        eval_opts.jobs = j;
    }
    let world_opts = WorldOptions {
        random_seed: seed,
        ..WorldOptions::default()
    };
    let run = EvalRun::new(
        Arc::new(catalog),
        dir,
        world_opts,
        eval_opts,
        opts.retry_rounds,
    );
    let world = run.pin(None).map_err(DemoError::Pin)?;
    let eval = run.start(world.clone(), None);
    let (naive, driver_actions) = execute_with_driver(&eval, batch, opts, &live);
    // PreparedBatch before the scratch folder goes: the end of the batch rechecks live/.
    // The retry epoch snapshots the live state as the driver left it.
    let finished = eval.finish()?;
    let tasks = &batch.tasks;
    let mut tasks_at = |lines: &BTreeSet<usize>| {
        lines
            .iter()
            .map(|&l| {
                parse_task_line(tasks[l - 1].line.as_bytes())
                    .map(|t| (l, t))
                    .map_err(|e| format!("generated line {l}: {e}"))
            })
            .collect()
    };
    // The demo judges the first epoch whether or not it retries, so that pass is the
    // first epoch's, not the retry's.
    let first: Vec<ClassifiedTask> = finished.decisions().collect::<Result<_, _>>()?;
    let retry_started = Instant::now();
    let (retried, retry) = run.retry_from(
        &finished.epoch_id,
        first.iter().cloned().map(Ok),
        &mut tasks_at,
    )?;
    let retry_s = retry_started.elapsed().as_secs_f64();
    Ok(BatchRun {
        finished,
        first,
        naive,
        driver_actions,
        retried,
        retry,
        retry_s,
    })
}

/// Phase one: every generated task executed, the naive scorer counting each as it
/// finishes, and the driver (unless turned off) acting on `live` as the batch
/// progresses. Returns the naive column and the driver's log.
fn execute_with_driver(
    eval: &Eval<'_>,
    batch: &Batch,
    opts: &RunOptions,
    live: &Path,
) -> (Column, Vec<String>) {
    let tasks = &batch.tasks;
    let done = AtomicUsize::new(0);
    let naive_col = Mutex::new(Column::default());
    let threshold = opts.decide.arg_accept;
    let on_done = |line: usize, task: &Task| {
        let d = naive(task, threshold);
        naive_col.lock().unwrap_or_else(|e| e.into_inner()).count(
            d.decision,
            task.label,
            tasks[line - 1].consistent,
            &[],
        );
        done.fetch_add(1, Ordering::Relaxed);
        // The demo counts the naive column itself; nothing waits with the task.
        None
    };
    let total = tasks.len();
    let actions = Mutex::new(Vec::new());
    let writer = batch.world.join("writer");
    std::thread::scope(|s| {
        if opts.driver {
            s.spawn(|| drive(&writer, live, &done, total, &actions));
        }
        eval.execute(&on_done, |feeder| {
            for (i, g) in tasks.iter().enumerate() {
                match parse_task_line(g.line.as_bytes()) {
                    Ok(t) => feeder.push(i + 1, t),
                    // The generator writes every line; a bad one is a bug worth stopping on.
                    Err(e) => panic!("generated line {} does not parse: {e}", i + 1),
                }
            }
        });
    });
    (
        naive_col.into_inner().unwrap_or_else(|e| e.into_inner()),
        actions.into_inner().unwrap_or_else(|e| e.into_inner()),
    )
}

/// The gate's side of the comparison: its column and its verdicts counted by reason
/// code and by tool.
struct GateResults {
    column: Column,
    reasons: BTreeMap<String, usize>,
    by_tool: BTreeMap<String, BTreeMap<&'static str, usize>>,
}

/// Counts the gate's decisions (line, decision), and gives each task's point for the
/// HTML plots.
fn judge_gate(
    tasks: &[Generated],
    decisions: impl Iterator<Item = Result<(usize, Decision), HarnessError>>,
) -> Result<(GateResults, Plots), DemoError> {
    let mut gate = GateResults {
        column: Column::default(),
        reasons: BTreeMap::new(),
        by_tool: BTreeMap::new(),
    };
    let mut plots = Plots::default();
    for d in decisions {
        let (line, dec) = d?;
        let dec = &dec;
        let g = &tasks[line - 1];
        plots.add(
            Series::of(label_of(g.hallucinated)),
            (dec.arg_agreement.count, dec.arg_agreement.n),
            dec.result_agreement.map(|r| (r.count, r.n)),
            [g.tool],
        );
        *gate
            .by_tool
            .entry(g.tool.to_string())
            .or_default()
            .entry(dec.verdict.as_str())
            .or_insert(0) += 1;
        gate.column.count(
            dec.verdict,
            label_of(g.hallucinated),
            g.consistent,
            &dec.reasons,
        );
        for r in &dec.reasons {
            let code = serde_json::to_value(r)?
                .as_str()
                .unwrap_or_default()
                .to_string();
            *gate.reasons.entry(code).or_insert(0) += 1;
        }
    }
    gate.column.close();
    Ok((gate, plots))
}

/// The seed's decision boundary alone on the same evidence: the comparison's middle
/// column, which shows what the gate's additions change.
fn judge_seed_rule(
    decide: &Options,
    tasks: &[Generated],
    finished: &PreparedBatch,
) -> Result<Column, DemoError> {
    let mut seed_rule = Column::default();
    let seed_options = Options {
        rule: Rule::Seed,
        ..*decide
    };
    for d in finished.decisions_with(seed_options) {
        let d = d?;
        let g = &tasks[d.line - 1];
        seed_rule.count(
            d.decision.verdict,
            label_of(g.hallucinated),
            g.consistent,
            &d.decision.reasons,
        );
    }
    seed_rule.close();
    Ok(seed_rule)
}

/// The whole `--json` report, from the three columns and what the run found.
fn demo_report(
    batch: &Batch,
    ran: BatchRun,
    [one_epoch, gate]: [GateResults; 2],
    seed_rule: Column,
    elapsed: f64,
) -> Result<DemoReport, DemoError> {
    let BatchRun {
        finished,
        mut naive,
        driver_actions,
        retry,
        retry_s,
        ..
    } = ran;
    naive.close();
    let tasks = &batch.tasks;
    let first_calls = finished.stats.calls_executed + finished.stats.probe_calls;
    let calls = first_calls + retry.calls;
    let price = RetryPrice::of(first_calls, &retry, elapsed - retry_s, retry_s);
    Ok(DemoReport {
        tasks: tasks.len(),
        samples: batch.config.samples,
        seed: batch.config.seed,
        hallucinated_tasks: tasks.iter().filter(|g| g.hallucinated).count(),
        consistent_fabrications: tasks.iter().filter(|g| g.consistent).count(),
        naive,
        seed_rule,
        gate_one_epoch: one_epoch.column,
        gate: gate.column,
        retry,
        retry_price: price,
        quarantined: finished
            .quarantined()
            .into_iter()
            .map(str::to_string)
            .collect(),
        quarantine_evidence: finished
            .health
            .tools
            .iter()
            .filter(|t| t.quarantined)
            .map(|t| Ok((t.name.clone(), serde_json::to_value(&t.evidence)?)))
            .collect::<Result<_, DemoError>>()?,
        changed_live_mounts: finished
            .changed_live_mounts()
            .into_iter()
            .map(str::to_string)
            .collect(),
        driver_actions,
        epoch_id: finished.epoch_id.clone(),
        calls,
        elapsed_s: elapsed,
        calls_per_s: calls as f64 / elapsed,
        gate_reasons: gate.reasons,
        gate_by_tool: gate.by_tool,
    })
}

fn label_of(hallucinated: bool) -> Option<Label> {
    Some(if hallucinated {
        Label::Hallucinated
    } else {
        Label::Correct
    })
}
