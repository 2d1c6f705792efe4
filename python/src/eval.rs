//! `plangate.eval`: a whole run through the harness, as `plangate eval` makes it. The
//! epoch is pinned (or replayed), deterministic tools are probed, every call runs in
//! the sandbox, tools are quarantined, and every task is decided once tool health is
//! known. The run happens on a thread of its own while this one, holding the GIL only
//! briefly, watches for Ctrl-C: a `KeyboardInterrupt` sets the harness's stop flag, the
//! workers drop the calls still queued, and the exception is raised once they are done.
//! With `retry_deferred`, the defer path's rounds follow on the same thread.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use plangate_gate::baseline::naive;
use plangate_gate::calibration::Calibration;
use plangate_gate::record::BadLine;
use plangate_gate::task::{RunNotes, Task, parse_task_line};
use plangate_harness::{
    EvalRecord, EvalRun, HarnessError, LimitsGiven, LineOutcome, PreparedBatch, Retries, World,
};
use pyo3::prelude::*;

use crate::PlangateError;
use crate::args::{self, Thresholds, chain};
use crate::pickled::{Loads, Pickler};
use crate::samples::{After, Input};
use plangate_harness::trials::place;

/// Runs the whole evaluation; returns a dict: `decisions` (the records `plangate eval`
/// writes, bad lines in their place), `tool_health`, `epoch_id`, `epoch` (the manifest
/// to replay), `stats`, `quarantined`, `live_mounts`, `retry` and `calibration` (the
/// summary's block for labelled tasks, or None).
#[pyfunction]
#[pyo3(signature = (catalog, samples, *, base_dir=None, epoch=None, quarantine=None,
    seed=0, probe_runs=2, jobs=None, arg_accept=None, arg_reject=None, result_accept=None,
    result_suspect=None, min_samples=None, fuel=None, memory_mb=None, timeout_ms=None,
    output_bytes=None, max_line_bytes=64 << 20, retry_deferred=0))]
#[expect(clippy::too_many_arguments, reason = "the CLI's flags, each a keyword")]
pub(crate) fn eval<'py>(
    py: Python<'py>,
    catalog: &Bound<'py, PyAny>,
    samples: &Bound<'py, PyAny>,
    base_dir: Option<&Bound<'py, PyAny>>,
    epoch: Option<&Bound<'py, PyAny>>,
    quarantine: Option<&Bound<'py, PyAny>>,
    seed: u64,
    probe_runs: usize,
    jobs: Option<usize>,
    arg_accept: Option<Bound<'py, PyAny>>,
    arg_reject: Option<Bound<'py, PyAny>>,
    result_accept: Option<Bound<'py, PyAny>>,
    result_suspect: Option<Bound<'py, PyAny>>,
    min_samples: Option<usize>,
    fuel: Option<u64>,
    memory_mb: Option<u64>,
    timeout_ms: Option<u64>,
    output_bytes: Option<usize>,
    max_line_bytes: u64,
    retry_deferred: usize,
) -> PyResult<Py<PyAny>> {
    let loaded = args::catalog(py, catalog)?;
    let settled = args::RunArgs {
        base_dir,
        epoch,
        quarantine,
        seed,
        probe_runs,
        jobs,
        thresholds: Thresholds {
            arg_accept,
            arg_reject,
            result_accept,
            result_suspect,
            min_samples,
        },
        limits: LimitsGiven {
            fuel,
            memory_mb,
            timeout_ms,
            output_bytes,
        },
    }
    .settle(py, &loaded)?;
    let input = Input::of(samples, max_line_bytes)?;
    let (base, manifest) = (settled.base, settled.manifest);
    let (world_opts, eval_opts) = (settled.world, settled.eval);
    let run = EvalRun::new(
        Arc::new(loaded.catalog.clone()),
        &base,
        world_opts,
        eval_opts,
        retry_deferred,
    );
    let world = py.detach(|| run.pin(manifest)).map_err(|e| {
        let message = format!("failed to pin an epoch for {}: {}", loaded.name, chain(&e));
        PlangateError::new_err(message)
    })?;
    let ran = run_watched(py, &run, &world, input, max_line_bytes)?;
    args::warn_notes(py, "plangate.eval", &ran.notes)?;
    result(py, &world, &ran)
}

/// A finished run: the first epoch (the lines that were not tasks in their place),
/// what the defer path retried, when it ran, and what reading the lines noted.
struct EvalDone {
    finished: PreparedBatch,
    retries: Retries,
    notes: RunNotes,
}

/// Runs the batch, then the defer path, on a thread of their own, checking for Ctrl-C
/// on this one.
fn run_watched(
    py: Python<'_>,
    run: &EvalRun<'_>,
    world: &Arc<World>,
    input: Input,
    max: u64,
) -> PyResult<EvalDone> {
    let stop = AtomicBool::new(false);
    let run = run.clone().stop_when(&stop);
    let mut interrupt = None;
    let ran = std::thread::scope(|s| {
        let handle = s.spawn(|| run_batch(&run, world, input, max, &stop));
        while !handle.is_finished() {
            py.detach(|| std::thread::sleep(Duration::from_millis(50)));
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::Relaxed);
                interrupt.get_or_insert(e);
            }
        }
        handle
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    match interrupt {
        Some(e) => Err(e),
        None => ran,
    }
}

/// Phase one on this thread (tasks fed from the input, a chunk at a time, while the
/// harness's workers execute them), then phase two, then the defer path's rounds.
/// With the defer path on, each task's line is kept: an iterable cannot be read twice.
fn run_batch(
    run: &EvalRun<'_>,
    world: &Arc<World>,
    mut input: Input,
    max: u64,
    stop: &AtomicBool,
) -> PyResult<EvalDone> {
    let mut kept: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    let places = input.places();
    let mut notes = RunNotes::default();
    let eval = run.start(world.clone(), None);
    // A labelled task is scored the naive way too, as the CLI scores it: the
    // calibration ranks it by the naive scorer's agreement beside the gate's.
    let threshold = run.options().decide.arg_accept;
    let on_done = |_: usize, task: &Task| task.label.is_some().then(|| naive(task, threshold));
    let fed: PyResult<()> = eval.execute(&on_done, |feeder| {
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let (chunk, after) = Python::attach(|py| input.read(py, max));
            for (number, at) in &chunk.lines {
                let read = match at {
                    Ok(range) => {
                        let line = &chunk.data[range.clone()];
                        if run.retries() {
                            kept.insert(*number, line.to_vec());
                        }
                        parse_task_line(line)
                    }
                    Err(unread) => Err(unread.error(max)),
                };
                match read {
                    Ok(task) => {
                        notes.add(&task.notes);
                        feeder.push(*number, task);
                    }
                    Err(e) => feeder.skip(*number, place(places.as_ref(), *number, e)),
                }
            }
            match after {
                After::More => {}
                After::Ended => return Ok(()),
                After::Failed(e) => return Err(e),
            }
        }
    });
    fed?;
    if eval.stopped() {
        return Err(interrupted());
    }
    let finished = eval
        .finish()
        .map_err(|e| PlangateError::new_err(chain(&e)))?;
    let mut tasks_at = |lines: &BTreeSet<usize>| {
        lines
            .iter()
            .map(|n| {
                let line = kept.get(n).ok_or(format!("input line {n} was not kept"))?;
                let task = parse_task_line(line).map_err(|e| format!("input line {n}: {e}"))?;
                Ok((*n, task))
            })
            .collect()
    };
    let retries = run.retry(&finished, &mut tasks_at).map_err(|e| match e {
        HarnessError::Interrupted => interrupted(),
        e => PlangateError::new_err(format!("the defer path failed: {}", chain(&e))),
    })?;
    Ok(EvalDone {
        finished,
        retries,
        notes,
    })
}

fn interrupted() -> PyErr {
    pyo3::exceptions::PyKeyboardInterrupt::new_err("plangate.eval was interrupted")
}

/// The run as Python objects: decisions with the bad lines in their input place, and
/// the run's tool health, epoch and counts.
fn result(py: Python<'_>, world: &World, ran: &EvalDone) -> PyResult<Py<PyAny>> {
    let finished = &ran.finished;
    let mut records = Pickler::new(0);
    let mut calibration = Calibration::default();
    for line in finished.calibrated_lines() {
        let d = match line.map_err(|e| PlangateError::new_err(chain(&e)))? {
            LineOutcome::Task(d) => d,
            LineOutcome::Bad(line, e) => {
                records.push(&BadLine { line, error: &e });
                continue;
            }
        };
        if let Some(o) = &d.calibration {
            calibration.add(finished.grid(), o);
        }
        records.push(&EvalRecord::of(
            &d,
            &finished.epoch_id,
            &ran.retries.retried,
        ));
    }
    let rest = serde_json::json!({
        "epoch_id": finished.epoch_id,
        "epoch": world.epoch().manifest(),
        "tool_health": finished.health,
        "stats": finished.stats,
        "quarantined": finished.quarantined(),
        "live_mounts": finished.live.iter().map(|c| serde_json::json!({
            "guest": c.guest, "at_start": c.at_start, "at_end": c.now, "changed": c.changed(),
        })).collect::<Vec<_>>(),
        "retry": ran.retries.report,
        "calibration": calibration.report(),
    });
    let loads = py.import("json")?.getattr("loads")?;
    let out = loads.call1((rest.to_string(),))?;
    let decisions = {
        let _paused = crate::score::GcPause::new(py)?;
        records.finish().load(py, &Loads::new(py)?)?
    };
    out.set_item("decisions", decisions)?;
    Ok(out.unbind())
}
