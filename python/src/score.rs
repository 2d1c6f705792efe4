//! `plangate.score`: the gate's [`LineScorer`] over a samples file or a Python iterable,
//! as an iterator of decision records. Lines go to worker threads in chunks (the GIL
//! released while they score, and pickle the chunk's records); records come back in
//! input order, a chunk at a time, turned into dicts by one `pickle.loads` each.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plangate_gate::calibration::{Calibration, Grid};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use plangate_gate::errors::ErrorConvention;
use plangate_gate::record::BadLine;
use plangate_gate::score::{LineScorer, ScoreConfig, Scored};
use plangate_gate::seed::{self, SeedOptions};
use plangate_gate::task::RunNotes;
use plangate_harness::pipeline::{self, InOrder, NotReady, WorkQueue};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyModule};
use pyo3::{PyTraverseError, PyVisit};

use crate::args::{self, Thresholds};
use crate::pickled::{Encoded, Loads, Pickler};
use crate::samples::{After, Chunk, Input};
use plangate_harness::trials::Places;
use plangate_harness::trials::place;

/// What a worker scores with; one per run, shared by the workers.
struct Shared {
    catalog: Catalog,
    opts: Options,
    seed_compat: Option<seed::EntryPoint>,
    max_line_bytes: u64,
    /// Where a results file's lines came from in it.
    places: Option<Places>,
    /// How the benchmark that wrote a results file writes its tools' errors.
    errors: Option<ErrorConvention>,
    /// The calibration grid, when asked for (`calibrate=True`).
    calibration: Option<Grid>,
}

/// A worker's chunk, scored: its records, and what its labelled tasks add to the
/// calibration.
struct ChunkScored {
    records: Encoded,
    calibration: Calibration,
    notes: RunNotes,
}

/// Decision records, in input order, as dicts equal to the lines `plangate score`
/// writes; lines that are not tasks come back as `{"line": N, "task_id": ..., "error":
/// {...}}`. Lazy: at most a few chunks of lines are read ahead of what was taken.
#[pyclass(module = "plangate._plangate")]
pub(crate) struct Scores {
    state: Mutex<State>,
}

struct State {
    input: Option<Input>,
    /// Where chunks go to the workers; dropped at the input's end.
    feed: Option<WorkQueue<Chunk>>,
    /// The workers' records, in input order.
    scored: InOrder<Chunk, ChunkScored>,
    /// The calibration of the labelled tasks of the records taken so far.
    calibration: Calibration,
    /// Whether the run calibrates.
    calibrating: bool,
    /// What reading the lines taken so far noted, said once the input ends.
    notes: RunNotes,
    ready: VecDeque<Py<PyAny>>,
    max_line_bytes: u64,
    loads: Loads,
    /// The input's failure, raised once the records of the lines read before it are out.
    failed: Option<PyErr>,
}

#[pymethods]
impl Scores {
    #[new]
    #[pyo3(signature = (catalog, samples, *, arg_accept=None, arg_reject=None,
        result_accept=None, result_suspect=None, min_samples=None, seed_compat=None,
        jobs=None, max_line_bytes=64 << 20, calibrate=false))]
    #[expect(clippy::too_many_arguments, reason = "the CLI's flags, each a keyword")]
    fn new<'py>(
        py: Python<'py>,
        catalog: &Bound<'py, PyAny>,
        samples: &Bound<'py, PyAny>,
        arg_accept: Option<Bound<'py, PyAny>>,
        arg_reject: Option<Bound<'py, PyAny>>,
        result_accept: Option<Bound<'py, PyAny>>,
        result_suspect: Option<Bound<'py, PyAny>>,
        min_samples: Option<usize>,
        seed_compat: Option<&str>,
        jobs: Option<usize>,
        max_line_bytes: u64,
        calibrate: bool,
    ) -> PyResult<Self> {
        let opts = Thresholds {
            arg_accept,
            arg_reject,
            result_accept,
            result_suspect,
            min_samples,
        }
        .options()?;
        let seed_compat = match seed_compat {
            None => None,
            Some("gate") => Some(seed::EntryPoint::GateOrRaise),
            Some("classify") => Some(seed::EntryPoint::ClassifyPlan),
            Some(other) => {
                return Err(PyValueError::new_err(format!(
                    "seed_compat: expected \"gate\" or \"classify\", got {other:?}"
                )));
            }
        };
        if max_line_bytes == 0 {
            return Err(PyValueError::new_err("max_line_bytes: at least 1"));
        }
        let jobs = args::jobs(jobs)?;
        let loaded = args::catalog(py, catalog)?;
        let input = Input::of(samples, max_line_bytes)?;
        let shared = Arc::new(Shared {
            catalog: loaded.catalog,
            opts,
            seed_compat,
            max_line_bytes,
            errors: input.places().as_ref().map(Places::errors),
            places: input.places(),
            calibration: calibrate.then(|| Grid::around(&opts)),
        });
        let worker = move || {
            let shared = shared.clone();
            move |chunk: &mut Chunk| score_chunk(&shared, chunk)
        };
        let (feed, scored) = pipeline::start("plangate-score", jobs, worker)
            .map_err(|e| PyValueError::new_err(format!("cannot start a thread: {e}")))?;
        let loads = Loads::new(py)?;
        Ok(Scores {
            state: Mutex::new(State {
                input: Some(input),
                feed: Some(feed),
                scored,
                calibration: Calibration::default(),
                calibrating: calibrate,
                ready: VecDeque::new(),
                notes: RunNotes::default(),
                max_line_bytes,
                loads,
                failed: None,
            }),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.state()?.next_record(py)
    }

    /// The calibration block of `--summary-json` over the records taken so far (the
    /// whole input's once the iterator is done), as a dict: None without
    /// `calibrate=True`, and until a labelled task was taken.
    #[getter]
    fn calibration(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let state = self.state()?;
        let Some(report) = state.calibration.report().filter(|_| state.calibrating) else {
            return Ok(None);
        };
        let text =
            serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(Some(
            py.import("json")?
                .getattr("loads")?
                .call1((text,))?
                .unbind(),
        ))
    }

    /// The records not yet taken, as a list: `print(plangate.score(...))` shows the
    /// decisions. Reading them keeps them, so iterating afterwards still yields them;
    /// only a `repr` holds a whole input in memory.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut state = self.state()?;
        let mut rest = Vec::new();
        while let Some(record) = state.next_record(py)? {
            rest.push(record);
        }
        let list = PyList::new(py, rest.iter().map(|r| r.clone_ref(py)))?;
        // Every earlier record was taken above, so these are the rest, in order.
        state.ready.extend(rest);
        Ok(list.repr()?.to_string())
    }

    /// What the collector follows from an iterator: the iterable it reads and the
    /// records it holds. An iterator in a cycle (an object holding it whose generator
    /// it reads) is then freed, and its worker threads stop.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // Held means running: it is reachable from the running frame, not garbage.
        let Ok(state) = self.state.try_lock() else {
            return Ok(());
        };
        if let Some(Input::Items(items, _)) = &state.input {
            visit.call(items)?;
        }
        for record in &state.ready {
            visit.call(record)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        if let Ok(mut state) = self.state.try_lock() {
            state.input = None;
            state.feed = None;
            state.ready.clear();
        }
    }
}

impl Scores {
    /// The iterator's state. An iterator advanced while it is already advancing (from
    /// another thread, or from the samples generator it is reading) is refused, as a
    /// running generator refuses: waiting would hold the GIL the running one needs.
    fn state(&self) -> PyResult<std::sync::MutexGuard<'_, State>> {
        match self.state.try_lock() {
            Ok(state) => Ok(state),
            Err(std::sync::TryLockError::WouldBlock) => Err(PyValueError::new_err(
                "plangate.score: this iterator is already running (in another thread, or in \
                 the samples it reads)",
            )),
            Err(std::sync::TryLockError::Poisoned(_)) => Err(PyValueError::new_err(
                "a previous call failed inside plangate",
            )),
        }
    }
}

impl State {
    fn next_record(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        loop {
            if let Some(record) = self.ready.pop_front() {
                return Ok(Some(record));
            }
            // Between chunks: Ctrl-C raises KeyboardInterrupt here, and the workers stop
            // when this iterator is dropped.
            py.check_signals()?;
            while self.input.is_some()
                && let Some(mut chunk) = self.feed.as_ref().and_then(WorkQueue::try_spare)
            {
                self.read_chunk(py, &mut chunk);
                if chunk.lines.is_empty() {
                    self.scored.recycle(chunk);
                    continue;
                }
                if let Some(feed) = self.feed.as_mut() {
                    feed.send(chunk).map_err(|_| stopped())?;
                }
            }
            let sent = self
                .feed
                .as_ref()
                .map_or(self.scored.taken(), WorkQueue::sent);
            if self.scored.taken() == sent {
                if self.feed.take().is_some() {
                    args::warn_notes(py, "plangate.score", &self.notes)?;
                }
                return match self.failed.take() {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            }
            let records = self.wait_for_next(py)?;
            let list = {
                let _paused = GcPause::new(py)?;
                records.load(py, &self.loads)?
            };
            self.ready.extend(list.iter().map(Bound::unbind));
        }
    }

    /// The next chunk's records, waiting for its worker with the GIL released, and
    /// checking for Ctrl-C every so often.
    fn wait_for_next(&mut self, py: Python<'_>) -> PyResult<Encoded> {
        loop {
            let scored = &mut self.scored;
            match py.detach(|| scored.next_within(Duration::from_millis(100))) {
                Ok(Some((mut chunk, scored))) => {
                    chunk.clear();
                    self.scored.recycle(chunk);
                    self.calibration.merge(&scored.calibration);
                    self.notes.merge(&scored.notes);
                    return Ok(scored.records);
                }
                Err(NotReady::NotYet) => py.check_signals()?,
                Ok(None) | Err(NotReady::Lost(_)) => return Err(stopped()),
            }
        }
    }

    /// Lines from the input into `chunk`; the input is dropped at its end.
    fn read_chunk(&mut self, py: Python<'_>, chunk: &mut Chunk) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match input.read_into(py, self.max_line_bytes, chunk) {
            After::More => {}
            After::Ended => self.input = None,
            After::Failed(e) => {
                self.input = None;
                self.failed = Some(e);
            }
        }
    }
}

/// The workers are gone (one panicked): no more records can come.
fn stopped() -> PyErr {
    PyValueError::new_err("plangate's scoring threads stopped")
}

/// Python's cyclic collector paused while one chunk's records are built, and resumed
/// as it was when this is dropped. The collector starts a pass every 700 container
/// allocations, and every tenth pass also walks an older generation: a chunk of
/// records is thousands of dicts and lists, so a caller who keeps many objects alive
/// (the task dicts it passed in, the records it collected) would pay for walking them
/// again and again, more than for building the records (docs/benchmarks.md, "The Python
/// package"). Paused, the young generation is walked once per chunk; the records stay
/// tracked, so a cycle a caller makes later is still collected. The GIL is held from
/// pause to resume, so no other thread runs with the collector off.
pub(crate) struct GcPause<'py> {
    gc: Option<Bound<'py, PyModule>>,
}

impl<'py> GcPause<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyResult<Self> {
        let gc = py.import("gc")?;
        if !gc.call_method0("isenabled")?.is_truthy()? {
            return Ok(GcPause { gc: None });
        }
        gc.call_method0("disable")?;
        Ok(GcPause { gc: Some(gc) })
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc {
            // `gc.enable()` cannot fail; were it to, Python sees the error rather than
            // a destructor losing it.
            if let Err(e) = gc.call_method0("enable") {
                e.restore(gc.py());
            }
        }
    }
}

/// A worker's chunk: every line scored, the records encoded for one `pickle.loads`,
/// the labelled tasks counted in the chunk's calibration when the run calibrates, and
/// what reading the chunk's lines noted. The gate's scorer is made per chunk: its tool
/// states are a few small allocations, against a chunk's hundreds of lines.
fn score_chunk(shared: &Shared, chunk: &mut Chunk) -> ChunkScored {
    let scorer = LineScorer::new(
        &shared.catalog,
        ScoreConfig {
            opts: shared.opts,
            seed_compat: shared
                .seed_compat
                .map(|entry| (entry, SeedOptions::from_gate(&shared.opts))),
            // The package reads the naive comparison only to calibrate.
            compare: shared.calibration.is_some(),
            calibrate: shared.calibration.is_some(),
            errors: shared.errors.as_ref(),
            ..ScoreConfig::default()
        },
    );
    let mut records = Pickler::new(chunk.lines.len());
    let mut calibration = Calibration::default();
    let mut notes = RunNotes::default();
    for (number, at) in &chunk.lines {
        let scored = match at {
            Ok(range) => scorer.score(&chunk.data[range.clone()]),
            Err(unread) => Scored::Bad(unread.error(shared.max_line_bytes)),
        };
        match scored {
            Scored::Decided(d) => {
                notes.add(&d.notes);
                if let (Some(grid), Some(o)) =
                    (&shared.calibration, d.compared.and_then(|c| c.calibration))
                {
                    calibration.add(grid, &o);
                }
                records.push(&d.decision);
            }
            Scored::Seed(j) => {
                notes.add(&j.notes);
                records.push(&j.record());
            }
            Scored::Bad(e) => {
                let e = place(shared.places.as_ref(), *number, e);
                records.push(&BadLine {
                    line: *number,
                    error: &e,
                });
            }
            // This scorer is never a shard's: it decides every line.
            Scored::Other => unreachable!("plangate.score runs no shard"),
        }
    }
    ChunkScored {
        records: records.finish(),
        calibration,
        notes,
    }
}
