//! Samples as lines, whatever they come from: a file read through the harness's
//! [`LineReader`] (numbered, bounded and trimmed as the CLI reads it), or a Python
//! iterable whose items (task dicts, or JSON lines as `str` or `bytes`) are numbered
//! from 1 the same way. `score` and `eval` both take their lines from here, a chunk at
//! a time.

use std::io::BufRead;

use plangate_gate::task::TaskError;
use plangate_harness::pipeline;
use plangate_harness::trials::{self, Places, Samples};
use plangate_harness::{LineReader, is_blank, too_long};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator, PyString};

use crate::{args, dumps};

/// Consecutive lines, in one buffer, as the harness's pipeline hands them to workers:
/// each line's number, and its byte range or why it is not there.
pub(crate) type Chunk = pipeline::Chunk<Unread>;

/// A line that is not in the chunk's buffer, and so becomes that line's error record.
pub(crate) enum Unread {
    /// Its length in bytes, over the limit.
    TooLong(u64),
    /// A task dict `json.dumps` refuses (a set, a lone surrogate), or a `str` line with
    /// no UTF-8 form: why.
    NotJson(String),
}

impl Unread {
    /// The error the line's record carries, as for a line of a file.
    pub(crate) fn error(&self, max: u64) -> TaskError {
        match self {
            Unread::TooLong(bytes) => too_long(*bytes, max),
            Unread::NotJson(why) => TaskError {
                field: String::new(),
                message: why.clone(),
                task_id: None,
            },
        }
    }
}

/// What follows a chunk.
pub(crate) enum After {
    /// More lines.
    More,
    /// The input's end.
    Ended,
    /// The input failed here (the iterable raised, an item is not a task dict or a
    /// line, a file could not be read): the error is raised once the chunk's records,
    /// the lines read before it, are all out, and nothing after it is read.
    Failed(PyErr),
}

/// A samples file's lines: its own, or those a benchmark's results file makes.
type FileLines = LineReader<Box<dyn BufRead + Send>>;

/// What the lines come from.
pub(crate) enum Input {
    /// A file's lines, with where a results file's tasks came from in it.
    File(FileLines, Option<Places>),
    /// Items of a Python iterable, numbered from 1 as lines are.
    Items(Py<PyIterator>, usize),
}

impl Input {
    /// The samples a Python value names: a path (`str` or `os.PathLike`) is read as a
    /// file; anything else is iterated.
    pub(crate) fn of(samples: &Bound<'_, PyAny>, max_line_bytes: u64) -> PyResult<Input> {
        if args::is_path(samples) {
            let path = args::path_of(samples, "samples")?;
            let opened = trials::open(args::open_samples(&path)?, max_line_bytes)
                .map_err(|e| PyValueError::new_err(format!("samples {}: {e}", path.display())))?;
            let (lines, places): (Box<dyn BufRead + Send>, _) = match opened {
                Samples::Lines(lines) => (Box::new(lines), None),
                Samples::Trials(t) => (Box::new(std::io::Cursor::new(t.lines)), Some(t.places)),
            };
            Ok(Input::File(LineReader::new(lines, max_line_bytes), places))
        } else if samples.cast::<pyo3::types::PyDict>().is_ok() {
            // Iterating a dict would hand its keys over as lines, one error each.
            Err(PyTypeError::new_err(
                "samples: expected a path, or an iterable of task dicts or JSON lines; got one \
                 dict (to score one task, pass [task])",
            ))
        } else {
            Ok(Input::Items(samples.try_iter()?.unbind(), 0))
        }
    }

    /// Lines into `chunk` until it is full (fewer only at the end or before a
    /// failure), and what follows them. A file is read with the GIL released.
    pub(crate) fn read_into(&mut self, py: Python<'_>, max: u64, chunk: &mut Chunk) -> After {
        let read = match self {
            Input::File(reader, _) => py.detach(|| read_lines(reader, chunk)),
            Input::Items(items, number) => read_items(py, items.bind(py), number, max, chunk),
        };
        match read {
            Ok(true) => After::Ended,
            Ok(false) => After::More,
            Err(e) => After::Failed(e),
        }
    }

    /// Where the problems of a results file's lines sit in it (docs/inputs.md,
    /// "Benchmark results files"); None for any other input.
    pub(crate) fn places(&self) -> Option<Places> {
        match self {
            Input::File(_, places) => places.clone(),
            Input::Items(..) => None,
        }
    }

    /// [`Input::read_into`] a new chunk.
    pub(crate) fn read(&mut self, py: Python<'_>, max: u64) -> (Chunk, After) {
        let mut chunk = Chunk::default();
        let after = self.read_into(py, max, &mut chunk);
        (chunk, after)
    }
}

/// Reads lines of a file into `chunk`; true at the end of the file.
fn read_lines(reader: &mut FileLines, chunk: &mut Chunk) -> PyResult<bool> {
    while !chunk.is_full() {
        let next = reader.next_line().map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("failed to read samples: {e}"))
        })?;
        let Some((number, line)) = next else {
            return Ok(true);
        };
        chunk.push(number, line.map_err(Unread::TooLong));
    }
    Ok(false)
}

/// Takes items of a Python iterable into `chunk` as lines: a dict is written as JSON,
/// a `str` or `bytes` is the line itself. True at the end of the iterable.
fn read_items(
    py: Python<'_>,
    items: &Bound<'_, PyIterator>,
    number: &mut usize,
    max: u64,
    chunk: &mut Chunk,
) -> PyResult<bool> {
    while !chunk.is_full() {
        let Some(item) = items.clone().next() else {
            return Ok(true);
        };
        let item = item?;
        *number += 1;
        let start = chunk.data.len();
        let written = if let Ok(s) = item.cast::<PyString>() {
            s.to_str()
                .map(|s| chunk.data.extend_from_slice(s.as_bytes()))
                .map_err(|e| format!("samples item {}: not UTF-8 text: {e}", *number))
        } else if let Ok(b) = item.cast::<PyBytes>() {
            chunk.data.extend_from_slice(b.as_bytes());
            Ok(())
        } else if item.cast::<pyo3::types::PyDict>().is_ok() {
            match dumps::line_into(py, &item, &mut chunk.data) {
                Ok(()) => Ok(()),
                // Whatever json.dumps raises on a task dict (a set, a lone surrogate,
                // RecursionError for a dict nested past Python's limit) is that task's
                // fault, as a line that is not JSON is: its own error record, and the
                // rest goes on. Only what is no `Exception` (KeyboardInterrupt) stops.
                Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
                    Err(format!("samples item {}: not JSON: {e}", *number))
                }
                Err(e) => return Err(e),
            }
        } else {
            return Err(PyTypeError::new_err(format!(
                "samples item {}: expected a task dict, or a JSON line (str or bytes), got {}",
                *number,
                item.get_type().name()?
            )));
        };
        if let Err(why) = written {
            chunk.data.truncate(start);
            chunk.lines.push((*number, Err(Unread::NotJson(why))));
            continue;
        }
        let line = &chunk.data[start..];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let end = start + line.len();
        if is_blank(line) {
            chunk.data.truncate(start);
            continue;
        }
        let at = if (end - start) as u64 > max {
            chunk.data.truncate(start);
            // Counted as the line of a JSONL file it would be, with its `\n`.
            Err(Unread::TooLong((end - start) as u64 + 1))
        } else {
            chunk.data.truncate(end);
            Ok(start..end)
        };
        chunk.lines.push((*number, at));
    }
    Ok(false)
}
