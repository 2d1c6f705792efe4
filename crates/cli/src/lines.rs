//! Reading a samples file line by line, shared by `score` and `eval`: both number lines
//! alike, pass over blank ones alike, and write and report a line that is not a task
//! in the same shape, so their outputs can be compared line for line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result};
use plangate_gate::errors::ErrorConvention;
use plangate_gate::task::TaskError;
use plangate_harness::trials::{self, Places, Samples};

use crate::tally::Tally;

/// Opens a samples file, or standard input for `-`, as samples lines: a benchmark's
/// results file (a tau-bench or tau2-bench one) is made into one line per task, and
/// said so. `max` bounds a line, as it bounds every samples line. Standard input is
/// read as samples lines only: telling the shapes apart reads a first line, which a
/// pipe may be slow to give, before the run has set up.
pub(crate) fn open_samples(path: &Path, max: u64) -> Result<(Box<dyn BufRead>, Source)> {
    let name = source_name(path);
    if path == Path::new("-") {
        let stdin = Box::new(BufReader::new(io::stdin()));
        return Ok((stdin, Source { name, places: None }));
    }
    let f =
        File::open(path).with_context(|| format!("failed to open samples {}", path.display()))?;
    let input = BufReader::with_capacity(1 << 16, f);
    let opened = trials::open(input, max).with_context(|| format!("{name}: cannot be read"))?;
    Ok(match opened {
        Samples::Lines(lines) => (Box::new(lines), Source { name, places: None }),
        Samples::Trials(t) => {
            let p = &t.places;
            eprintln!(
                "plangate: {name}: {}: {} trials of {} tasks, each task's trials its samples",
                p.shape().name(),
                p.trials(),
                p.tasks()
            );
            let source = Source {
                name,
                places: Some(t.places),
            };
            (Box::new(io::Cursor::new(t.lines)), source)
        }
    })
}

/// A samples input as reports name it, and where a problem with one of its lines sits.
pub(crate) struct Source {
    /// How reports name the file ([`source_name`]).
    pub(crate) name: String,
    /// Where a benchmark results file's tasks came from in it.
    places: Option<Places>,
}

impl Source {
    /// `e`, the problem with line `number`, placed where it sits in the file as its
    /// author wrote it (a results file's lines are made from it).
    pub(crate) fn place(&self, number: usize, e: TaskError) -> TaskError {
        trials::place(self.places.as_ref(), number, e)
    }

    /// The model whose samples the file holds, when the file names it.
    pub(crate) fn model(&self) -> Option<&str> {
        self.places.as_ref().and_then(Places::model)
    }

    /// How the benchmark that wrote a results file writes its tools' errors; None for
    /// samples lines, whose tools say so in the catalog.
    pub(crate) fn errors(&self) -> Option<ErrorConvention> {
        self.places.as_ref().map(Places::errors)
    }
}

/// How reports name a samples file (`<stdin>` for `-`).
pub(crate) fn source_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

pub(crate) use plangate_harness::{Line, too_long};

/// Calls `each` for every line of `input` with its 1-based number, counting blank lines
/// (harness's [`plangate_harness::LineReader`] reads them). A line over `max` bytes is
/// handed over as its length.
pub(crate) fn for_each_line(
    input: impl BufRead,
    max: u64,
    tally: &mut Tally,
    mut each: impl FnMut(usize, Line<'_>, &mut Tally) -> Result<()>,
) -> Result<()> {
    let mut reader = plangate_harness::LineReader::new(input, max);
    let (lines, blank) = (tally.lines, tally.blank);
    loop {
        let (read, skipped) = (reader.lines(), reader.blank());
        match reader.next_line() {
            Ok(Some((number, line))) => {
                // The lines between the last one and this one were blank.
                tally.lines = lines + number;
                tally.blank = blank + skipped + (number - read - 1);
                each(number, line, tally)?;
            }
            end => {
                let end = end.map(|_| ());
                tally.lines = lines + reader.lines();
                tally.blank = blank + reader.blank();
                return end.context("failed to read samples");
            }
        }
    }
}

/// The record written for a line that could not be read as a task, and its report.
pub(crate) fn skip_line(
    out: &mut dyn Write,
    source: &str,
    number: usize,
    e: &TaskError,
    tally: &mut Tally,
) -> Result<()> {
    tally.skipped += 1;
    let place = if e.field.is_empty() {
        String::new()
    } else {
        format!(" {}:", e.field)
    };
    eprintln!("plangate: {source}:{number}:{place} {}", e.message);
    let record = plangate_gate::score::bad_line_record(number, e);
    writeln!(out, "{record}").context("failed to write decisions")
}

/// Repeats shown one by one; the rest are counted at the end.
const REPEATS_SHOWN: usize = 20;

/// The task IDs seen so far, to warn when one comes again: both lines are decided, but
/// anything that joins decisions on `task_id` downstream would mix them up. IDs are
/// kept as 64-bit hashes with their first line, so memory stays small.
#[derive(Default)]
pub(crate) struct TaskIds {
    first: std::collections::HashMap<u64, usize, std::hash::BuildHasherDefault<Hashed>>,
    repeats: usize,
}

/// The map's hasher for keys that are hashes already: the key is its own hash, where
/// the default hasher would run SipHash over it a second time for every task.
#[derive(Default)]
struct Hashed(u64);

impl std::hash::Hasher for Hashed {
    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is called for a u64 key; anything else still hashes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl TaskIds {
    /// Notes `id` on line `number`, warning if an earlier line had it.
    pub(crate) fn check(&mut self, source: &str, number: usize, id: &str) {
        match self.first.entry(line_hash(id.as_bytes())) {
            std::collections::hash_map::Entry::Occupied(e) => {
                self.repeats += 1;
                if self.repeats <= REPEATS_SHOWN {
                    eprintln!(
                        "plangate: warning: {source}:{number}: task_id {id:?} was already used on line {}; both lines are decided",
                        e.get()
                    );
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(number);
            }
        }
    }

    /// Counts the repeats not shown one by one.
    pub(crate) fn report(&self, source: &str) {
        if self.repeats > REPEATS_SHOWN {
            eprintln!(
                "plangate: warning: {source}: {} lines repeat an earlier task_id ({REPEATS_SHOWN} shown above)",
                self.repeats
            );
        }
    }
}

/// A line's hash (or a task ID's), to tell later whether the one seen again is the
/// same: XXH3, a specified algorithm, so the same in every run and every build (std's
/// default hasher promises neither across Rust releases), and fast enough to run over
/// every input line.
pub(crate) fn line_hash(line: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(line)
}

/// The tasks on the given lines of a samples file, read again (the defer path retries
/// them). `hashes` are the lines' hashes from the first read, by line number in
/// order: a line that is not the same any more is an error, the file changed.
pub(crate) fn tasks_at(
    path: &Path,
    lines: &std::collections::BTreeSet<usize>,
    hashes: &[(usize, u64)],
    max: u64,
) -> Result<Vec<(usize, plangate_gate::task::Task)>> {
    let mut tasks = Vec::with_capacity(lines.len());
    let mut tally = Tally::default();
    for_each_line(
        open_samples(path, max)?.0,
        max,
        &mut tally,
        |number, line, _| {
            if !lines.contains(&number) {
                return Ok(());
            }
            let first = hashes
                .binary_search_by_key(&number, |(n, _)| *n)
                .ok()
                .map(|i| hashes[i].1);
            let read = line
                .map_err(|_| anyhow::anyhow!("it is now over --max-line-bytes"))
                .and_then(|l| match first {
                    Some(h) if h == line_hash(l) => Ok(l),
                    _ => Err(anyhow::anyhow!("it is not the line read at first")),
                })
                .and_then(|l| plangate_gate::task::parse_task_line(l).map_err(anyhow::Error::new));
            match read {
                Ok(task) => tasks.push((number, task)),
                Err(e) => anyhow::bail!(
                    "{}:{number} no longer reads as the task decided there ({e}); the file changed during the run",
                    path.display()
                ),
            }
            Ok(())
        },
    )?;
    if tasks.len() != lines.len() {
        anyhow::bail!(
            "{} has fewer lines than when it was read; the file changed during the run",
            path.display()
        );
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = r#"{"task_id":"a","samples":[]}"#;
    const B: &str = r#"{"task_id":"b","samples":[]}"#;

    /// The defer path reads lines again: the same ones come back; an edited one (even
    /// with the same task_id) or a missing one is an error, not a different task.
    #[test]
    fn lines_read_again_must_be_the_same() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, format!("{A}\n\n{B}\n")).expect("write");
        let hashes = vec![(1, line_hash(A.as_bytes())), (3, line_hash(B.as_bytes()))];
        let want: std::collections::BTreeSet<usize> = [1, 3].into();
        let got = tasks_at(&path, &want, &hashes, 1 << 20).expect("the same lines");
        let ids: Vec<(usize, &str)> = got.iter().map(|(n, t)| (*n, t.task_id.as_str())).collect();
        assert_eq!(ids, [(1, "a"), (3, "b")]);

        let edited = B.replace("[]", "[{\"calls\":[]}]");
        std::fs::write(&path, format!("{A}\n\n{edited}\n")).expect("edit");
        let e = tasks_at(&path, &want, &hashes, 1 << 20).expect_err("an edited line");
        assert!(e.to_string().contains(":3 no longer reads"), "{e}");
        std::fs::write(&path, format!("{A}\n")).expect("truncate");
        let e = tasks_at(&path, &want, &hashes, 1 << 20).expect_err("a missing line");
        assert!(e.to_string().contains("fewer lines"), "{e}");
    }
}
