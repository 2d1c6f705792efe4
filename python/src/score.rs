//! `plangate.score`: the gate's [`Scorer`] over a samples file or a Python iterable,
//! as an iterator of decision records. Lines go to worker threads in chunks (the GIL
//! released while they score, and pickle the chunk's records); records come back in
//! input order, a chunk at a time, turned into dicts by one `pickle.loads` each.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::Options;
use plangate_gate::score::{Decided, Scored, Scorer, bad_line_record};
use plangate_gate::seed::{self, SeedOptions};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyModule};
use pyo3::{PyTraverseError, PyVisit};

use crate::args::{self, Thresholds};
use crate::pickled::{Encoded, Loads, Record};
use crate::samples::{After, Chunk, Input};

/// What a worker scores with; one per run, shared by the workers.
struct Shared {
    catalog: Catalog,
    opts: Options,
    seed_compat: Option<seed::Entry>,
    max_line_bytes: u64,
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
    work: Option<SyncSender<(usize, Chunk)>>,
    /// Behind a lock only so that waiting on it can release the GIL.
    done: Mutex<Receiver<(usize, Encoded)>>,
    waiting: BTreeMap<usize, Encoded>,
    sent: usize,
    next: usize,
    in_flight: usize,
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
        jobs=None, max_line_bytes=64 << 20))]
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
            Some("gate") => Some(seed::Entry::GateOrRaise),
            Some("classify") => Some(seed::Entry::ClassifyPlan),
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
        });
        let in_flight = 4 * jobs;
        let (work, work_rx) = mpsc::sync_channel(in_flight);
        let work_rx = Arc::new(Mutex::new(work_rx));
        let (done_tx, done) = mpsc::channel();
        for i in 0..jobs {
            let (shared, work_rx, done_tx) = (shared.clone(), work_rx.clone(), done_tx.clone());
            std::thread::Builder::new()
                .name(format!("plangate-score-{i}"))
                .spawn(move || score_chunks(&shared, &work_rx, &done_tx))
                .map_err(|e| PyValueError::new_err(format!("cannot start a thread: {e}")))?;
        }
        let loads = Loads::new(py)?;
        Ok(Scores {
            state: Mutex::new(State {
                input: Some(input),
                work: Some(work),
                done: Mutex::new(done),
                waiting: BTreeMap::new(),
                sent: 0,
                next: 0,
                in_flight,
                ready: VecDeque::new(),
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
            state.work = None;
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
            while self.sent - self.next < self.in_flight && self.input.is_some() {
                let chunk = self.read_chunk(py)?;
                if chunk.lines.is_empty() {
                    continue;
                }
                if let Some(work) = &self.work {
                    work.send((self.sent, chunk))
                        .map_err(|_| PyValueError::new_err("plangate's scoring threads stopped"))?;
                }
                self.sent += 1;
            }
            if self.next == self.sent {
                self.work = None;
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
            if let Some(records) = self.waiting.remove(&self.next) {
                self.next += 1;
                return Ok(records);
            }
            let done = &self.done;
            let got = py.detach(|| {
                let rx = done
                    .lock()
                    .map_err(|_| mpsc::RecvTimeoutError::Disconnected)?;
                rx.recv_timeout(Duration::from_millis(100))
            });
            match got {
                Ok((seq, records)) => {
                    self.waiting.insert(seq, records);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => py.check_signals()?,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(PyValueError::new_err("plangate's scoring threads stopped"));
                }
            }
        }
    }

    /// Up to a chunk of lines from the input; the input is dropped at its end.
    fn read_chunk(&mut self, py: Python<'_>) -> PyResult<Chunk> {
        let Some(input) = self.input.as_mut() else {
            return Ok(Chunk::default());
        };
        let (chunk, after) = input.read(py, self.max_line_bytes);
        match after {
            After::More => {}
            After::Ended => self.input = None,
            After::Failed(e) => {
                self.input = None;
                self.failed = Some(e);
            }
        }
        Ok(chunk)
    }
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

/// A worker: scores chunks until there are no more, or no one takes the records.
fn score_chunks(
    shared: &Shared,
    work: &Mutex<Receiver<(usize, Chunk)>>,
    done: &Sender<(usize, Encoded)>,
) {
    let scorer = Scorer {
        seed_compat: shared
            .seed_compat
            .map(|entry| (entry, SeedOptions::from_gate(&shared.opts))),
        ..Scorer::new(&shared.catalog, shared.opts)
    };
    loop {
        // The lock is held only to take the next chunk, not to score it.
        let next = work
            .lock()
            .map_err(drop)
            .and_then(|rx| rx.recv().map_err(drop));
        let Ok((seq, chunk)) = next else { return };
        let mut records = Vec::with_capacity(chunk.lines.len());
        // A `--seed-compat` record's text; taken by each record written to it.
        let mut text = String::new();
        for (number, at) in &chunk.lines {
            let decided = match at {
                Ok(range) => scorer.decide_guarded(&chunk.data[range.clone()], &mut text),
                Err(unread) => Decided::Scored(Scored::Bad(unread.error(shared.max_line_bytes))),
            };
            records.push(match decided {
                Decided::Gate(d, _) => Record::Decision(d),
                Decided::Scored(Scored::Record(..)) => Record::Text(std::mem::take(&mut text)),
                Decided::Scored(Scored::Bad(e)) => Record::Text(bad_line_record(*number, &e)),
                // This scorer is never a shard's: it decides every line.
                Decided::Scored(Scored::Other | Scored::Kept(_)) => {
                    unreachable!("plangate.score runs no shard")
                }
            });
        }
        if done.send((seq, Encoded::of(&records))).is_err() {
            return;
        }
    }
}
