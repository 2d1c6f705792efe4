//! Reading a samples file line by line, shared by `score` and `eval`: both number lines
//! alike, pass over blank ones alike, and write and report a line that is not a task
//! in the same shape, so their outputs can be compared line for line.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result};
use plangate_gate::task::TaskError;
use serde_json::json;

use crate::tally::Tally;

/// Opens a samples file, or standard input for `-`.
pub(crate) fn open_samples(path: &Path) -> Result<Box<dyn BufRead>> {
    if path == Path::new("-") {
        return Ok(Box::new(BufReader::new(io::stdin())));
    }
    let f =
        File::open(path).with_context(|| format!("failed to open samples {}", path.display()))?;
    Ok(Box::new(BufReader::with_capacity(1 << 16, f)))
}

/// How reports name a samples file (`<stdin>` for `-`).
pub(crate) fn source_name(path: &Path) -> String {
    if path == Path::new("-") {
        "<stdin>".into()
    } else {
        path.display().to_string()
    }
}

/// Calls `each` for every line of `input` with its 1-based number, counting blank lines.
pub(crate) fn for_each_line(
    mut input: impl BufRead,
    tally: &mut Tally,
    mut each: impl FnMut(usize, &[u8], &mut Tally) -> Result<()>,
) -> Result<()> {
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        if input
            .read_until(b'\n', &mut buf)
            .context("failed to read samples")?
            == 0
        {
            return Ok(());
        }
        number += 1;
        tally.lines += 1;
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            tally.blank += 1;
            continue;
        }
        each(number, line, tally)?;
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
    let record = json!({
        "line": number,
        "task_id": e.task_id,
        "error": {"kind": "input", "field": e.field, "message": e.message},
    });
    writeln!(out, "{record}").context("failed to write decisions")
}
