//! `plangate.Gate`: a warm gate held in-process, as `plangate serve` holds one. It pins
//! (or replays) one epoch and probes its tools once; then `eval(task)` executes one
//! task's calls in that epoch and decides it at once with the tool health known so far,
//! and `decide(task)` decides a task whose results came recorded. Each returns the
//! record the server answers (`/v1/eval`, `/v1/decide`), read back as a dict. The work
//! runs with the GIL released; one gate may be called from many threads at once.

use std::sync::Arc;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use plangate_gate::score::{LineScorer, ScoreConfig, Scored, bad_line_record};
use plangate_harness::{LimitsGiven, WarmGate, WorldOptions};
use pyo3::prelude::*;

use crate::args::{self, Thresholds, chain};
use crate::pickled::{JsonText, Loads, Pickler};
use crate::{PlangateError, dumps};

/// What a gate remembers across tasks, at most (first answers kept for determinism
/// witnesses, resolved IDs), by default: `plangate serve --remember-calls`'s default.
const REMEMBER_CALLS: usize = 20_000;

/// One pinned epoch, its tools probed, deciding task after task.
#[pyclass(frozen, module = "plangate._plangate")]
pub(crate) struct Gate {
    /// None when a catalog tool has no module: the gate decides, and executes nothing.
    gate: Option<Arc<WarmGate>>,
    /// Why there is no warm gate.
    cold: String,
    catalog: Arc<Catalog>,
    decide: Options,
}

#[pymethods]
impl Gate {
    #[new]
    #[pyo3(signature = (catalog, *, base_dir=None, epoch=None, quarantine=None, seed=0,
        probe_runs=2, jobs=None, arg_accept=None, arg_reject=None, result_accept=None,
        result_suspect=None, min_samples=None, fuel=None, memory_mb=None, timeout_ms=None,
        output_bytes=None, remember_calls=REMEMBER_CALLS))]
    #[expect(clippy::too_many_arguments, reason = "the CLI's flags, each a keyword")]
    fn new<'py>(
        py: Python<'py>,
        catalog: &Bound<'py, PyAny>,
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
        remember_calls: usize,
    ) -> PyResult<Gate> {
        let loaded = args::catalog(py, catalog)?;
        let mut settled = args::RunArgs {
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
        settled.eval.remember_calls = Some(remember_calls.max(1));
        let catalog = Arc::new(loaded.catalog);
        let decide = settled.eval.decide;
        let world_opts = WorldOptions {
            manifest: settled.manifest,
            ..settled.world
        };
        if let Some(t) = catalog.tools().iter().find(|t| t.module.is_none()) {
            let cold = format!("the catalog's tool {:?} has no module", t.name);
            return Ok(Gate {
                gate: None,
                cold,
                catalog,
                decide,
            });
        }
        let gate = py
            .detach(|| WarmGate::pin(&catalog, &settled.base, world_opts, settled.eval))
            .map_err(|e| {
                PlangateError::new_err(format!(
                    "failed to pin an epoch for {}: {}",
                    loaded.name,
                    chain(&e)
                ))
            })?;
        Ok(Gate {
            gate: Some(Arc::new(gate)),
            cold: String::new(),
            catalog,
            decide,
        })
    }

    /// The id of the epoch every call runs in; None for a gate that executes nothing.
    #[getter]
    fn epoch_id(&self) -> Option<String> {
        self.gate.as_ref().map(|g| g.epoch_id().to_string())
    }

    /// Executes `task` (a dict, or a samples line as str or bytes) in the gate's epoch
    /// and decides it at once: the record `plangate eval` writes for it, with the epoch
    /// id; a task that cannot be read gives its bad-line record.
    fn eval<'py>(&self, py: Python<'py>, task: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        let gate = self.warm()?;
        let line = line_of(py, task)?;
        let text = py.detach(|| match gate.eval_line(&line) {
            Ok((_, record)) => record,
            Err(bad) => bad,
        });
        record(py, &text)
    }

    /// Decides `task`, whose calls carry their recorded results, as `plangate score`
    /// does: its record, or its bad-line record.
    fn decide<'py>(&self, py: Python<'py>, task: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        let line = line_of(py, task)?;
        let text = py.detach(|| {
            let config = ScoreConfig {
                opts: self.decide,
                ..ScoreConfig::default()
            };
            let scored = LineScorer::new(&self.catalog, config).score(&line);
            let mut text = String::new();
            if scored.emit(&mut plangate_gate::record::Json::new(&mut text)) {
                return text;
            }
            match scored {
                Scored::Bad(e) => bad_line_record(1, &e),
                _ => String::from("{}"),
            }
        });
        record(py, &text)
    }

    /// The tools' health as known now: `{"epoch_id", "tools": [...]}`, each tool with
    /// its declaration, probe, verification, quarantine and evidence, as
    /// `tool-health.json` gives them; an error for a gate that executes nothing.
    fn health<'py>(&self, py: Python<'py>) -> PyResult<Py<PyAny>> {
        let report = py.detach(|| self.warm().map(|g| g.health()))?;
        let text =
            serde_json::to_string(&report).map_err(|e| PlangateError::new_err(e.to_string()))?;
        record(py, &text)
    }
}

impl Gate {
    /// The warm gate, or the error of a gate that executes nothing.
    fn warm(&self) -> PyResult<&WarmGate> {
        self.gate.as_deref().ok_or_else(|| {
            PlangateError::new_err(format!(
                "this gate executes nothing, so it cannot eval: {}",
                self.cold
            ))
        })
    }
}

/// A task's samples line: a dict as `plangate.dumps` writes it, or the text given.
fn line_of(py: Python<'_>, task: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = task.extract::<String>() {
        return Ok(s.trim_end_matches(['\n', '\r']).as_bytes().to_vec());
    }
    if let Ok(b) = task.cast::<pyo3::types::PyBytes>() {
        let b = b.as_bytes();
        let end = b
            .iter()
            .rposition(|c| !matches!(c, b'\n' | b'\r'))
            .map_or(0, |i| i + 1);
        return Ok(b[..end].to_vec());
    }
    dumps::line(py, task)
}

/// A record's JSON text read back as `plangate.score` reads its records.
fn record(py: Python<'_>, text: &str) -> PyResult<Py<PyAny>> {
    let loads = Loads::new(py)?;
    let mut records = Pickler::new(1);
    records.push(&JsonText(text));
    let list = records.finish().load(py, &loads)?;
    Ok(list.get_item(0)?.unbind())
}
