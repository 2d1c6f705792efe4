//! Phase one's per-line results kept on disk, in input order, instead of in memory:
//! a batch of a million tasks would otherwise hold every prepared task until its tools'
//! health is known (about 4 KB a task). Phase two reads them back in one streaming
//! pass, as often as it needs. The same lines are a shard's evidence for
//! `plangate merge`, which classifies them again under every shard's tool health.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use plangate_gate::decide::{Prepared, Verdict};
use plangate_gate::task::TaskError;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::HarnessError;

/// One input line's outcome of phase one.
#[derive(Debug)]
pub enum PreparedEntry {
    /// A task, executed and prepared.
    Task {
        /// The input line.
        line: usize,
        /// Its canonical keys.
        prepared: Prepared,
        /// Guest paths of the live mounts its calls read: a change to any of them
        /// during the batch means its epoch was not fixed.
        live: Vec<String>,
        /// The naive scorer's verdict, when it compared this task.
        naive: Option<Verdict>,
        /// The naive scorer's agreement, (count, n), when it was counted: a
        /// calibration ranks labelled tasks by it.
        naive_agreement: Option<(usize, usize)>,
    },
    /// A line that is not a task, reported in its place.
    Bad {
        /// The input line.
        line: usize,
        /// Why.
        error: TaskError,
    },
}

impl PreparedEntry {
    /// The input line.
    pub fn line(&self) -> usize {
        match self {
            PreparedEntry::Task { line, .. } | PreparedEntry::Bad { line, .. } => *line,
        }
    }

    /// As one line of JSON (no newline), for [`PreparedEntry::from_line`].
    pub fn to_line(&self) -> String {
        let wire = match self {
            PreparedEntry::Task {
                line,
                prepared,
                live,
                naive,
                naive_agreement,
            } => PreparedEntryJson {
                line: *line,
                live: live.clone(),
                naive: *naive,
                naive_agreement: *naive_agreement,
                task: RawValue::from_string(prepared.to_line()).ok(),
                error: None,
            },
            PreparedEntry::Bad { line, error } => PreparedEntryJson {
                line: *line,
                live: Vec::new(),
                naive: None,
                naive_agreement: None,
                task: None,
                error: Some(WireError {
                    field: error.field.clone(),
                    message: error.message.clone(),
                    task_id: error.task_id.clone(),
                }),
            },
        };
        serde_json::to_string(&wire).expect("an entry serializes")
    }

    /// Reads back a line [`PreparedEntry::to_line`] wrote.
    pub fn from_line(text: &str) -> Result<PreparedEntry, String> {
        let w: PreparedEntryJson = serde_json::from_str(text).map_err(|e| e.to_string())?;
        match (w.task, w.error) {
            (Some(task), None) => Ok(PreparedEntry::Task {
                line: w.line,
                prepared: Prepared::from_line(task.get()).map_err(|e| e.to_string())?,
                live: w.live,
                naive: w.naive,
                naive_agreement: w.naive_agreement,
            }),
            (None, Some(e)) => Ok(PreparedEntry::Bad {
                line: w.line,
                error: TaskError {
                    field: e.field,
                    message: e.message,
                    task_id: e.task_id,
                },
            }),
            _ => Err("an entry holds either a task or an error".into()),
        }
    }
}

/// The input line an entry's text starts with.
fn line_of(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("{\"line\":")?;
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

#[derive(Serialize, Deserialize)]
struct PreparedEntryJson {
    line: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    live: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    naive: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    naive_agreement: Option<(usize, usize)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<WireError>,
}

#[derive(Serialize, Deserialize)]
struct WireError {
    field: String,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    task_id: Option<String>,
}

/// Writes entries in input order as they come, out of order, from the workers: an
/// entry waits only for those pushed before it, so what waits is bounded by the work
/// in flight, not by the batch.
pub(crate) struct Spill {
    /// None when no temporary file could be made: [`Spill::finish`] says so.
    out: Option<BufWriter<File>>,
    next: usize,
    waiting: BTreeMap<usize, String>,
    failed: Option<std::io::Error>,
}

impl Spill {
    /// A spill in an anonymous temporary file (gone when the run ends, however it
    /// ends). A file that cannot be made fails the run at [`Spill::finish`], once the
    /// calls made so far are journalled.
    pub(crate) fn new() -> Spill {
        let (out, failed) = match tempfile::tempfile() {
            Ok(file) => (Some(BufWriter::with_capacity(1 << 16, file)), None),
            Err(e) => (None, Some(e)),
        };
        Spill {
            out,
            next: 0,
            waiting: BTreeMap::new(),
            failed,
        }
    }

    /// Puts the entry pushed `index`-th (counting from 0), written as a line
    /// ([`PreparedEntry::to_line`], done by the caller before it takes the spill's lock, so
    /// workers serialize their tasks in parallel), in its place.
    pub(crate) fn put(&mut self, index: usize, text: String) {
        self.waiting.insert(index, text);
        while let Some(text) = self.waiting.remove(&self.next) {
            if let Some(out) = self.out.as_mut()
                && let Err(e) = writeln!(out, "{text}")
            {
                self.failed = Some(e);
                self.out = None;
            }
            self.next += 1;
        }
    }

    /// Every entry written, ready for reading.
    pub(crate) fn finish(self) -> Result<Spilled, HarnessError> {
        let fail = |e: std::io::Error| HarnessError::Spill {
            path: std::env::temp_dir(),
            message: format!("a temporary file of the run: {e}"),
        };
        if let Some(e) = self.failed {
            return Err(fail(e));
        }
        if !self.waiting.is_empty() {
            return Err(fail(std::io::Error::other(format!(
                "{} entries never came back",
                self.waiting.len()
            ))));
        }
        let out = self
            .out
            .ok_or_else(|| fail(std::io::Error::other("no file")))?;
        let file = out.into_inner().map_err(|e| fail(e.into_error()))?;
        Ok(Spilled {
            parts: vec![Part {
                file,
                path: None,
                start: 0,
            }],
        })
    }
}

/// Entries on disk, in input order: a run's spill, the body of a shard's evidence, or
/// several shards' bodies read as one (merged by input line as they are read).
#[derive(Debug)]
pub struct Spilled {
    parts: Vec<Part>,
}

/// One file of entries.
#[derive(Debug)]
struct Part {
    file: File,
    /// The file's name, for messages (None: the run's own temporary file).
    path: Option<PathBuf>,
    /// Where the entries start in the file.
    start: u64,
}

/// An entry's number in its file (from 1), its input line, and its text.
type Raw = (usize, usize, String);

impl Spilled {
    /// Entries that start at byte `start` of the file at `path`: a regular file only,
    /// since a FIFO or a device cannot be read twice (or may never end).
    pub fn open(path: &Path, start: u64) -> Result<Spilled, HarnessError> {
        let bad = |message: String| HarnessError::Spill {
            path: path.to_path_buf(),
            message,
        };
        let file = File::open(path).map_err(|e| bad(e.to_string()))?;
        if !file.metadata().map_err(|e| bad(e.to_string()))?.is_file() {
            return Err(bad("not a regular file".into()));
        }
        Ok(Spilled {
            parts: vec![Part {
                file,
                path: Some(path.to_path_buf()),
                start,
            }],
        })
    }

    /// Several files of entries (one per shard) read as one, in input order: each is
    /// in input order, so reading is one streaming k-way merge. An input line that two
    /// of them hold is an error when it is read: the shards overlap.
    pub fn merged(parts: Vec<Spilled>) -> Spilled {
        Spilled {
            parts: parts.into_iter().flat_map(|p| p.parts).collect(),
        }
    }

    /// Copies the entries, as lines, to `out`, file after file.
    pub fn copy_to(&self, out: &mut dyn Write) -> std::io::Result<u64> {
        let mut n = 0;
        for p in &self.parts {
            let mut r = At {
                file: &p.file,
                pos: p.start,
            };
            n += std::io::copy(&mut r, out)?;
        }
        Ok(n)
    }

    /// Reads the entries from the first, in input order; each call reads afresh, and
    /// several readers may go at once.
    pub fn entries(&self) -> impl Iterator<Item = Result<PreparedEntry, HarnessError>> + '_ {
        let mut readers: Vec<_> = self
            .parts
            .iter()
            .map(|p| (p, p.raw_lines().peekable()))
            .collect();
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed {
                return None;
            }
            let next = next_in_order(&mut readers);
            failed = matches!(next, Some(Err(_)));
            next
        })
    }
}

/// The entry with the lowest input line among the parts' next ones, read.
fn next_in_order<I: Iterator<Item = Result<Raw, HarnessError>>>(
    readers: &mut [(&Part, std::iter::Peekable<I>)],
) -> Option<Result<PreparedEntry, HarnessError>> {
    let mut best: Option<(usize, usize)> = None;
    for i in 0..readers.len() {
        let line = match readers[i].1.peek() {
            None => continue,
            Some(Err(_)) => return readers[i].1.next().map(|r| r.map(|_| unreachable!())),
            Some(Ok((_, line, _))) => *line,
        };
        match best {
            Some((_, b)) if b < line => {}
            Some((j, b)) if b == line => {
                return Some(Err(HarnessError::Spill {
                    path: readers[i].0.name(),
                    message: format!(
                        "input line {line} is also in {}: the shards overlap",
                        readers[j].0.name().display()
                    ),
                }));
            }
            _ => best = Some((i, line)),
        }
    }
    let (i, _) = best?;
    let (part, reader) = &mut readers[i];
    let (entry, _, text) = reader.next()?.ok()?;
    Some(
        PreparedEntry::from_line(&text).map_err(|message| HarnessError::Evidence {
            path: part.name(),
            entry,
            message,
        }),
    )
}

impl Part {
    /// The file's name for messages.
    fn name(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(std::env::temp_dir)
    }

    /// Each entry's number, input line and text, without reading the task (every
    /// entry line starts `{"line":N,`); input lines must rise from entry to entry.
    fn raw_lines(&self) -> impl Iterator<Item = Result<Raw, HarnessError>> + '_ {
        let mut lines = BufReader::with_capacity(
            1 << 16,
            At {
                file: &self.file,
                pos: self.start,
            },
        );
        let mut number = 0usize;
        let mut last = 0usize;
        std::iter::from_fn(move || {
            let mut buf = String::new();
            number += 1;
            let bad = |message: String| HarnessError::Evidence {
                path: self.name(),
                entry: number,
                message,
            };
            match lines.read_line(&mut buf) {
                Ok(0) => None,
                Ok(_) => {
                    buf.truncate(buf.trim_end_matches('\n').len());
                    Some(match line_of(&buf) {
                        Some(line) if line > last => {
                            last = line;
                            Ok((number, line, buf))
                        }
                        Some(line) => Err(bad(format!(
                            "input line {line} comes after line {last}: the entries are out of order (was the file edited?)"
                        ))),
                        None => Err(bad("not an entry (it must start {\"line\":N,)".into())),
                    })
                }
                Err(e) => Some(Err(bad(e.to_string()))),
            }
        })
    }
}

/// A reader over a file at its own offset, so readers of one file do not share one.
struct At<'f> {
    file: &'f File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(line: usize) -> PreparedEntry {
        PreparedEntry::Bad {
            line,
            error: TaskError {
                field: "samples".into(),
                message: format!("line {line}"),
                task_id: None,
            },
        }
    }

    #[test]
    fn entries_come_back_in_input_order_and_read_twice() {
        let mut spill = Spill::new();
        for i in [2, 0, 3, 1] {
            spill.put(i, bad(i + 10).to_line());
        }
        let spilled = spill.finish().unwrap();
        let lines =
            |s: &Spilled| -> Vec<usize> { s.entries().map(|e| e.unwrap().line()).collect() };
        let mut both = spilled.entries().zip(spilled.entries());
        let (a, b) = both.next().unwrap();
        assert_eq!((a.unwrap().line(), b.unwrap().line()), (10, 10));
        assert_eq!(lines(&spilled), vec![10, 11, 12, 13]);
    }

    #[test]
    fn parts_merge_in_input_order_and_may_not_overlap() {
        let part = |lines: &[usize]| {
            let mut spill = Spill::new();
            for (i, l) in lines.iter().enumerate() {
                spill.put(i, bad(*l).to_line());
            }
            spill.finish().unwrap()
        };
        let (a, b, c) = (part(&[1, 4, 5]), part(&[2, 3, 9]), part(&[]));
        let merged = Spilled::merged(vec![a, b, c]);
        let lines: Vec<usize> = merged.entries().map(|e| e.unwrap().line()).collect();
        assert_eq!(lines, vec![1, 2, 3, 4, 5, 9]);
        let overlap = Spilled::merged(vec![part(&[1, 2]), part(&[2])]);
        let e = overlap.entries().find_map(Result::err).unwrap().to_string();
        assert!(e.contains("input line 2") && e.contains("overlap"), "{e}");
    }

    #[test]
    fn an_entry_that_never_came_back_is_an_error() {
        let mut spill = Spill::new();
        spill.put(1, bad(1).to_line());
        assert!(spill.finish().is_err());
    }

    #[test]
    fn a_damaged_line_names_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        std::fs::write(&path, format!("{}\nnot json\n", bad(1).to_line())).unwrap();
        let s = Spilled::open(&path, 0).unwrap();
        let got: Vec<_> = s.entries().collect();
        assert!(got[0].is_ok());
        let e = got[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("e.jsonl") && e.contains("entry 2"), "{e}");
        // Entries out of input order are refused where they are.
        std::fs::write(
            &path,
            format!("{}\n{}\n", bad(5).to_line(), bad(3).to_line()),
        )
        .unwrap();
        let s = Spilled::open(&path, 0).unwrap();
        let e = s.entries().find_map(Result::err).unwrap().to_string();
        assert!(e.contains("entry 2") && e.contains("out of order"), "{e}");
    }
}
