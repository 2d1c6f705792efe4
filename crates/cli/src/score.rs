//! `plangate score`: decide tasks whose calls already carry their observed results,
//! without executing anything. Streams the samples file line by line, so memory does not
//! grow with the number of tasks, and accounts for every line in the summary.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use plangate_gate::baseline::naive;
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, Verdict};
use plangate_gate::json::{self, Value};
use plangate_gate::seed::{self, SeedOptions, SeedTool};
use plangate_gate::stats::Ratio;
use plangate_gate::task::{Arguments, Label, Task, parse_task_line};
use serde_json::json;

use crate::exit;

/// A scorer to compare the gate against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Baseline {
    /// One agreement over raw arguments and results together, reject below 0.80.
    Naive,
}

/// Whether a task is also scored the naive way: when asked for, and always for a
/// labelled task, whose false-positive share is the comparison's point.
pub(crate) fn compares_baseline(asked: Option<Baseline>, task: &Task) -> bool {
    asked.is_some() || task.label.is_some()
}

/// Which of the seed's two entry points `--seed-compat` reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SeedEntry {
    /// `gate_or_raise`: refuses a declared-deterministic tool that was not verified.
    Gate,
    /// `classify_plan`: classifies whatever the tool's state.
    Classify,
}

/// Thresholds shared by every deciding command.
#[derive(Debug, Clone, Args)]
pub(crate) struct ThresholdArgs {
    /// Argument agreement at or above which a plan can be accepted.
    #[arg(long, default_value = "0.80", value_name = "RATIO")]
    pub(crate) arg_accept: Ratio,
    /// Argument agreement below which a plan can be rejected.
    #[arg(long, default_value = "0.20", value_name = "RATIO")]
    pub(crate) arg_reject: Ratio,
    /// Result agreement at or above which an agreeing plan is accepted.
    #[arg(long, default_value = "0.80", value_name = "RATIO")]
    pub(crate) result_accept: Ratio,
    /// Result agreement below which the tool is suspect.
    #[arg(long, default_value = "0.50", value_name = "RATIO")]
    pub(crate) result_suspect: Ratio,
    /// Fewest samples a task needs to be accepted or rejected.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub(crate) min_samples: usize,
}

impl ThresholdArgs {
    pub(crate) fn options(&self) -> Options {
        Options {
            arg_accept: self.arg_accept,
            arg_reject: self.arg_reject,
            result_accept: self.result_accept,
            result_suspect: self.result_suspect,
            min_samples: self.min_samples,
            rule: plangate_gate::decide::Rule::Gate,
        }
    }
}

/// The files every deciding command reads and writes.
#[derive(Debug, Clone, Args)]
pub(crate) struct IoArgs {
    /// Tool catalog (JSON: native, MCP tools/list, or OpenAI tools array); module and
    /// mount paths are relative to it.
    #[arg(long, value_name = "FILE")]
    pub(crate) catalog: PathBuf,
    /// Samples, one task per line (JSONL); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub(crate) samples: PathBuf,
    /// Write decisions here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    #[command(flatten)]
    io: IoArgs,
    /// Also score every task the naive way (one raw agreement over arguments and results,
    /// reject below --arg-accept) and compare in the summary; on by itself for labelled
    /// tasks.
    #[arg(long, value_enum, value_name = "SCORER")]
    baseline: Option<Baseline>,
    /// Reproduce the seed's code exactly, errors included (default entry point: gate).
    #[arg(long, value_name = "ENTRY", num_args = 0..=1, default_missing_value = "gate")]
    seed_compat: Option<SeedEntry>,
    /// Threads deciding lines (default: one per core); output keeps input order.
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// Reads and parses a catalog file, naming the file in every error, and says on stderr
/// what reading it mapped or assumed (a BFCL type, a tool that declares nothing).
pub(crate) fn load_catalog(path: &Path) -> Result<Catalog> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("failed to read catalog {}", path.display()))?;
    let doc = json::parse_with(&bytes, json::Duplicates::Refuse)
        .with_context(|| format!("failed to parse catalog {}", path.display()))?;
    let catalog =
        Catalog::from_value(&doc).with_context(|| format!("invalid catalog {}", path.display()))?;
    const SHOWN: usize = 20;
    let warnings = catalog.warnings();
    for w in warnings.iter().take(SHOWN) {
        eprintln!("plangate: warning: catalog {}: {w}", path.display());
    }
    if warnings.len() > SHOWN {
        eprintln!(
            "plangate: warning: catalog {}: and {} more like these",
            path.display(),
            warnings.len() - SHOWN
        );
    }
    Ok(catalog)
}

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

/// Opens the decisions output, or standard output.
/// Sendable, so `score` can write from its own thread.
pub(crate) fn open_out(path: Option<&Path>) -> Result<Box<dyn Write + Send>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::with_capacity(
            1 << 16,
            File::create(p).with_context(|| format!("failed to create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::with_capacity(1 << 16, io::stdout())),
    })
}

/// What happened to every input line, for the summary and the exit code.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub(crate) lines: usize,
    pub(crate) blank: usize,
    pub(crate) accept: usize,
    pub(crate) reject: usize,
    pub(crate) defer: usize,
    /// Tasks seed-compat mode refused (HallucinationGateError).
    pub(crate) refused: usize,
    /// Lines that could not be read as a task.
    pub(crate) skipped: usize,
    /// The naive scorer beside the gate, when asked for or when tasks carry labels.
    pub(crate) baseline: BaselineTally,
}

/// Rejections by the gate and by the naive scorer (design.md section 8), and how many
/// of them were labelled correct: the false-positive share of each.
#[derive(Debug, Default, serde::Serialize)]
pub(crate) struct BaselineTally {
    tasks: usize,
    labelled: usize,
    gate_rejected: usize,
    gate_rejected_correct: usize,
    naive_rejected: usize,
    naive_rejected_correct: usize,
}

impl BaselineTally {
    pub(crate) fn count(&mut self, gate: Verdict, naive: Verdict, label: Option<Label>) {
        self.tasks += 1;
        self.labelled += usize::from(label.is_some());
        let correct = label == Some(Label::Correct);
        if gate == Verdict::Reject {
            self.gate_rejected += 1;
            self.gate_rejected_correct += usize::from(correct);
        }
        if naive == Verdict::Reject {
            self.naive_rejected += 1;
            self.naive_rejected_correct += usize::from(correct);
        }
    }

    /// One line for the summary, or None when no task was compared.
    pub(crate) fn line(&self) -> Option<String> {
        if self.tasks == 0 {
            return None;
        }
        let side = |rejected: usize, correct: usize| {
            if self.labelled == 0 {
                format!("rejected {rejected}")
            } else {
                let share = if rejected == 0 {
                    0.0
                } else {
                    100.0 * correct as f64 / rejected as f64
                };
                format!(
                    "rejected {rejected}, {correct} of them labelled correct ({share:.1}% false positives)"
                )
            }
        };
        Some(format!(
            "{} tasks ({} labelled): gate {}; naive scorer {}",
            self.tasks,
            self.labelled,
            side(self.gate_rejected, self.gate_rejected_correct),
            side(self.naive_rejected, self.naive_rejected_correct)
        ))
    }
}

impl Tally {
    pub(crate) fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Accept => self.accept += 1,
            Verdict::Reject => self.reject += 1,
            Verdict::Defer => self.defer += 1,
        }
    }

    pub(crate) fn exit_code(&self) -> u8 {
        if self.skipped > 0 {
            exit::USAGE
        } else if self.reject > 0 {
            exit::REJECT
        } else {
            exit::OK
        }
    }

    pub(crate) fn summary(&self, source: &str) -> String {
        let mut s = format!(
            "{source}: {} lines: {} accepted, {} rejected, {} deferred",
            self.lines, self.accept, self.reject, self.defer
        );
        if self.refused > 0 {
            s.push_str(&format!(", {} refused by the seed's gate", self.refused));
        }
        s.push_str(&format!(", {} skipped (bad input)", self.skipped));
        if self.blank > 0 {
            s.push_str(&format!(", {} blank", self.blank));
        }
        s
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
    e: &plangate_gate::task::TaskError,
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

/// Lines handed to a worker at a time: enough to make the hand-over cheap, few enough
/// that the lines in flight stay a few megabytes however long the file is.
const CHUNK: usize = 256;

/// Consecutive lines of the input, in one buffer: (line number, byte range) each.
#[derive(Default)]
struct Chunk {
    data: Vec<u8>,
    lines: Vec<(usize, std::ops::Range<usize>)>,
}

/// What deciding one line produced, before it is written (in input order).
enum Scored {
    /// A record to write, the verdict it carries (None: the seed's gate refused), and
    /// the naive scorer's verdict with the task's label when they are compared.
    Record(String, Option<Verdict>, Option<(Verdict, Option<Label>)>),
    /// The line is not a task.
    Bad(plangate_gate::task::TaskError),
}

/// Everything a line is decided against; shared read-only by the workers.
struct Scorer<'a> {
    catalog: &'a Catalog,
    states: std::collections::BTreeMap<String, decide::ToolState>,
    opts: Options,
    args: &'a ScoreArgs,
}

impl Scorer<'_> {
    fn score(&self, line: &[u8]) -> Scored {
        let task = match parse_task_line(line) {
            Ok(t) => t,
            Err(e) => return Scored::Bad(e),
        };
        if let Some(entry) = self.args.seed_compat {
            let record = seed_record(&task, self.catalog, entry, &self.args.thresholds);
            let verdict = match record.get("decision").and_then(serde_json::Value::as_str) {
                Some("accept") => Some(Verdict::Accept),
                Some("reject") => Some(Verdict::Reject),
                Some(_) => Some(Verdict::Defer),
                None => None,
            };
            return Scored::Record(record.to_string(), verdict, None);
        }
        if let Some(bad) = missing_result(&task) {
            return Scored::Bad(plangate_gate::task::TaskError {
                field: bad,
                message: "no result or error: plangate score decides observed results; \
                          use plangate eval to execute calls"
                    .into(),
                task_id: Some(task.task_id.clone()),
            });
        }
        let prepared = decide::prepare(&task, self.catalog, None);
        let d = decide::classify(&prepared, &self.states, &self.opts);
        let compared = compares_baseline(self.args.baseline, &task)
            .then(|| (naive(&task, self.opts.arg_accept).decision, task.label));
        match serde_json::to_string(&d) {
            Ok(json) => Scored::Record(json, Some(d.decision), compared),
            // A decision always serializes; if it ever did not, say so for that line.
            Err(e) => Scored::Bad(plangate_gate::task::TaskError {
                field: String::new(),
                message: format!("failed to write the decision: {e}"),
                task_id: Some(task.task_id),
            }),
        }
    }

    fn score_chunk(&self, chunk: &Chunk) -> Vec<(usize, Scored)> {
        chunk
            .lines
            .iter()
            .map(|(number, range)| (*number, self.score_guarded(&chunk.data[range.clone()])))
            .collect()
    }

    /// [`Scorer::score`], with a panic (a bug in plangate) reported as that line's
    /// failure: the rest of the run is still decided, and the summary counts the line.
    fn score_guarded(&self, line: &[u8]) -> Scored {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.score(line))).unwrap_or_else(
            |panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Scored::Bad(plangate_gate::task::TaskError {
                    field: String::new(),
                    message: format!(
                        "internal error while deciding this line ({what}); please report it"
                    ),
                    task_id: None,
                })
            },
        )
    }
}

/// Writes decided chunks in input order as they come back from the workers, and
/// counts what they hold.
struct Writer<'a> {
    out: Box<dyn Write + Send>,
    source: &'a str,
    tally: Tally,
}

impl Writer<'_> {
    fn write(&mut self, scored: Vec<(usize, Scored)>) -> Result<()> {
        let tally = &mut self.tally;
        for (number, scored) in scored {
            match scored {
                Scored::Record(json, verdict, compared) => {
                    match verdict {
                        Some(v) => tally.count(v),
                        None => tally.refused += 1,
                    }
                    if let (Some(gate), Some((naive, label))) = (verdict, compared) {
                        tally.baseline.count(gate, naive, label);
                    }
                    writeln!(self.out, "{json}").context("failed to write decisions")?;
                }
                Scored::Bad(e) => skip_line(&mut self.out, self.source, number, &e, tally)?,
            }
        }
        Ok(())
    }
}

/// Reads, decides and writes as a pipeline: this thread reads lines into chunks,
/// `jobs` workers decide them, a writer puts them back in input order. At most
/// `4 * jobs` chunks are in flight, so memory stays flat, and their buffers go round
/// (a fresh half-megabyte buffer per chunk cost page faults the profile showed).
fn pipeline(
    scorer: &Scorer<'_>,
    input: Box<dyn BufRead>,
    writer: &mut Writer<'_>,
    jobs: usize,
) -> Result<Tally> {
    use std::sync::{Mutex, mpsc};
    let in_flight = 4 * jobs;
    let (work_tx, work_rx) = mpsc::sync_channel::<(usize, Chunk)>(in_flight);
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::sync_channel::<(usize, Chunk, Vec<(usize, Scored)>)>(in_flight);
    // A credit per chunk in flight, carrying an emptied buffer: reading waits for
    // writing, not only for deciding.
    let (credit_tx, credit_rx) = mpsc::sync_channel::<Chunk>(in_flight);
    for _ in 0..in_flight {
        credit_tx.send(Chunk::default()).ok();
    }
    std::thread::scope(|s| {
        for _ in 0..jobs {
            let (work_rx, done_tx) = (&work_rx, done_tx.clone());
            s.spawn(move || {
                loop {
                    // The lock is held only to take the next chunk, not to decide it.
                    let next = work_rx
                        .lock()
                        .map_err(drop)
                        .and_then(|rx| rx.recv().map_err(drop));
                    let Ok((seq, chunk)) = next else { return };
                    let scored = scorer.score_chunk(&chunk);
                    if done_tx.send((seq, chunk, scored)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done_tx);
        let written = s.spawn(move || -> Result<()> {
            let mut waiting = std::collections::BTreeMap::new();
            let mut next = 0;
            for (seq, chunk, scored) in done_rx {
                waiting.insert(seq, (chunk, scored));
                while let Some((mut chunk, scored)) = waiting.remove(&next) {
                    writer.write(scored)?;
                    next += 1;
                    chunk.data.clear();
                    chunk.lines.clear();
                    credit_tx.send(chunk).ok();
                }
            }
            // Every worker has stopped; a chunk still waiting means one before it never
            // came back, and its lines would be missing from the output.
            if !waiting.is_empty() {
                bail!("chunk {next} of the input was never decided");
            }
            Ok(())
        });
        let mut read_tally = Tally::default();
        let mut seq = 0;
        let mut chunk = Chunk::default();
        let send = |chunk: &mut Chunk, seq: &mut usize| -> Result<()> {
            if chunk.lines.is_empty() {
                return Ok(());
            }
            // No credit or no worker: the writer stopped (it failed); its error is
            // the one reported below.
            if let Ok(empty) = credit_rx.recv()
                && work_tx
                    .send((*seq, std::mem::replace(chunk, empty)))
                    .is_ok()
            {
                *seq += 1;
                return Ok(());
            }
            bail!("decisions could not be written")
        };
        let read = for_each_line(input, &mut read_tally, |number, line, _| {
            let start = chunk.data.len();
            chunk.data.extend_from_slice(line);
            chunk.lines.push((number, start..chunk.data.len()));
            if chunk.lines.len() == CHUNK {
                send(&mut chunk, &mut seq)?;
            }
            Ok(())
        })
        .and_then(|()| send(&mut chunk, &mut seq));
        drop(work_tx);
        let written = written
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        written?;
        read?;
        Ok(read_tally)
    })
}

pub(crate) fn run(args: ScoreArgs) -> Result<u8> {
    check_distinct(
        args.io.out.as_deref(),
        &[&args.io.catalog, &args.io.samples],
    )?;
    let catalog = load_catalog(&args.io.catalog)?;
    let input = open_samples(&args.io.samples)?;
    let source = source_name(&args.io.samples);
    let mut writer = Writer {
        out: open_out(args.io.out.as_deref())?,
        source: &source,
        tally: Tally::default(),
    };
    let scorer = Scorer {
        catalog: &catalog,
        states: decide::tool_states(&catalog),
        opts: args.thresholds.options(),
        args: &args,
    };
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let read = pipeline(&scorer, input, &mut writer, jobs)?;
    writer.out.flush().context("failed to write decisions")?;
    let mut tally = writer.tally;
    tally.lines = read.lines;
    tally.blank = read.blank;
    eprintln!("plangate: {}", tally.summary(&source));
    if let Some(line) = tally.baseline.line() {
        eprintln!("plangate: {line}");
    }
    Ok(tally.exit_code())
}

fn missing_result(task: &Task) -> Option<String> {
    for (i, s) in task.samples.iter().enumerate() {
        for (j, c) in s.calls.iter().enumerate() {
            if matches!(c.observed, plangate_gate::task::Observed::Missing) {
                return Some(c.place(i, j));
            }
        }
    }
    None
}

/// One task through the seed's own code. A task the seed cannot express (not one call
/// per sample, or several tools) is refused like the seed refuses, with its reason.
fn seed_record(
    task: &Task,
    catalog: &Catalog,
    entry: SeedEntry,
    t: &ThresholdArgs,
) -> serde_json::Value {
    let refuse = |kind: &str, message: String| json!({"task_id": task.task_id, "mode": "seed_compat", "error": {"kind": kind, "message": message}});
    let mut tool_name: Option<&str> = None;
    let mut pairs = Vec::with_capacity(task.samples.len());
    for (i, s) in task.samples.iter().enumerate() {
        let [call] = s.calls.as_slice() else {
            return refuse(
                "unsupported",
                format!(
                    "samples[{i}] has {} calls; the seed's gate takes exactly one call per sample",
                    s.calls.len()
                ),
            );
        };
        match tool_name {
            None => tool_name = Some(&call.tool),
            Some(t) if t != call.tool => {
                return refuse(
                    "unsupported",
                    format!(
                        "samples[{i}] calls {:?}, not {t:?}; the seed's gate takes one tool per task",
                        call.tool
                    ),
                );
            }
            Some(_) => {}
        }
        let args = match &call.arguments {
            Arguments::Json(v) => v.clone(),
            Arguments::Malformed(raw) => Value::String(raw.clone()),
        };
        pairs.push((args, call.observed.as_value()));
    }
    let tool = match tool_name {
        None => SeedTool {
            name: String::new(),
            deterministic: false,
            verified: false,
        },
        Some(name) => match catalog.get(name) {
            Some(spec) => SeedTool {
                name: spec.name.clone(),
                deterministic: spec.deterministic,
                verified: spec.verified.unwrap_or(false),
            },
            None => {
                return refuse(
                    "unsupported",
                    format!("tool {name:?} is not in the catalog"),
                );
            }
        },
    };
    let opts = SeedOptions {
        arg_accept: t.arg_accept.as_f64(),
        arg_reject: t.arg_reject.as_f64(),
        result_accept: t.result_accept.as_f64(),
        min_samples: t.min_samples,
        fixed_epoch: task.epoch_fixed.unwrap_or(true),
    };
    let r = match entry {
        SeedEntry::Gate => seed::gate_or_raise(&tool, &pairs, &opts),
        SeedEntry::Classify => seed::classify_plan(&tool, &pairs, &opts),
    };
    match r {
        Ok(d) => json!({
            "task_id": task.task_id,
            "mode": "seed_compat",
            "decision": d.decision,
            "arg_agreement": d.arg_agreement,
            "result_agreement": d.res_agreement,
            "n": pairs.len(),
        }),
        Err(e) => refuse("HallucinationGateError", e.0),
    }
}

/// Refuses an output path that is also an input, which would truncate the input.
pub(crate) fn check_distinct(out: Option<&Path>, inputs: &[&Path]) -> Result<()> {
    if let Some(o) = out {
        for i in inputs {
            if o == *i {
                bail!("--out {} would overwrite an input", o.display());
            }
        }
    }
    Ok(())
}
