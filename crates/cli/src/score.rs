//! `plangate score`: decide tasks whose calls already carry their observed results,
//! without executing anything. Streams the samples file line by line, so memory does not
//! grow with the number of tasks, and accounts for every line in the summary.

use std::io::{BufRead, Write};

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use plangate_gate::calibration::Grid;
use plangate_gate::catalog::Catalog;
use plangate_gate::errors::ErrorConvention;
use plangate_gate::record;
use plangate_gate::score::{self, Compared, Scored, ScoredTask};
use plangate_gate::seed;
use plangate_harness::PreparedEntry;
use plangate_harness::pipeline::{self, InOrder, WorkQueue};
use plangate_report::digest::RunDigest;
use plangate_report::plan::{Evidence, Made, OutputPlan};

use crate::args::{Baseline, IoArgs, PageArgs, ThresholdArgs};
use crate::files::{Output, Reads, check_outputs, load_catalog, open_out};
use crate::interrupt::{Interrupted, stopping};
use crate::lines::{
    Source, TaskIds, for_each_line, open_samples, skip_line, source_name, too_long,
};
use plangate_report::checkpoints::{Opened, Prefix};
use plangate_report::resume::{
    header, journal_path, journal_to_resume, partial_path, resumable_out,
};

/// Where `score` got to, with what it counted.
type Checkpoint = plangate_report::checkpoints::Checkpoint<Tally>;
/// `score`'s journal of checkpoints.
type ScoreJournal = plangate_report::checkpoints::ScoreJournal<Tally>;
use crate::tally::Tally;
use plangate_harness::shard::{
    EvidenceHeader, Inputs, Learned, SamplesDigest, Shard, evidence_path,
};

/// Which of the seed's two entry points `--seed-compat` reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SeedEntry {
    /// `gate_or_raise`: refuses a declared-deterministic tool that was not verified.
    Gate,
    /// `classify_plan`: classifies whatever the tool's state.
    Classify,
}

impl From<SeedEntry> for seed::EntryPoint {
    fn from(entry: SeedEntry) -> Self {
        match entry {
            SeedEntry::Gate => seed::EntryPoint::GateOrRaise,
            SeedEntry::Classify => seed::EntryPoint::ClassifyPlan,
        }
    }
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
    #[arg(long, value_name = "N", value_parser = crate::args::jobs)]
    jobs: Option<usize>,
    /// Continue an interrupted run of this same command: the lines it decided are kept
    /// (from `OUT.partial`, per `OUT.journal`) and the rest are decided.
    #[arg(long)]
    resume: bool,
    /// Decide only shard K of M of the tasks (split by a stable hash of `task_id`), and
    /// leave the evidence `plangate merge` needs beside --out (`OUT.evidence`).
    #[arg(long, value_name = "K/M")]
    shard: Option<Shard>,
    /// Write the run summary here: line counts, counts by label, the naive comparison
    /// and, for labelled tasks, the calibration (AUROC, ROC curve, threshold sweep).
    #[arg(long, value_name = "FILE")]
    summary_json: Option<std::path::PathBuf>,
    #[command(flatten)]
    page: PageArgs,
    #[command(flatten)]
    thresholds: ThresholdArgs,
}

/// Consecutive lines of the input in one buffer ([`pipeline::Chunk`]: a line over
/// `--max-line-bytes` is its length), and the records a worker appends for them, each
/// with its line ending: a chunk's records cross to the writer as one buffer, written
/// with one call, where a string per record would cost an allocation in the worker
/// and a free in the writer.
#[derive(Default)]
struct ScoreChunk {
    lines: pipeline::Chunk<u64>,
    records: String,
    /// The input through the chunk's last line, hashed for the journal when the run
    /// keeps one: by the reader, which has just copied each line, where hashing them
    /// again in the writer read them back from the other core's cache.
    prefix: Prefix,
    /// The page's digest of the chunk's decisions (`--html`), gathered by the worker
    /// that decided them.
    digest: Option<RunDigest>,
}

/// What each line of a chunk produced, with where the chunk's records ended after it.
type ChunkScores = Vec<(usize, Scored, usize)>;

/// Everything a line is decided against (the gate's [`score::LineScorer`]) and the flags
/// the pipeline reads; shared read-only by the workers.
struct ChunkScorer<'a> {
    gate: score::LineScorer<'a>,
    args: &'a ScoreArgs,
}

impl ChunkScorer<'_> {
    /// Decides every line of `chunk`, appending the records to its buffer.
    fn score_chunk(&self, chunk: &mut ScoreChunk) -> ChunkScores {
        let ScoreChunk {
            lines,
            records,
            digest,
            ..
        } = chunk;
        *digest = self.args.page.html.is_some().then(RunDigest::default);
        let pipeline::Chunk { data, lines } = lines;
        lines
            .iter()
            .map(|(number, at)| {
                let scored = match at {
                    Ok(range) => self.gate.score(&data[range.clone()]),
                    Err(bytes) => Scored::Bad(too_long(*bytes, self.args.io.max_line_bytes)),
                };
                let scored = match (scored, self.args.shard) {
                    (Scored::Bad(e), Some(s)) if !s.owns_bad_line(*number, &e) => Scored::Other,
                    (scored, _) => scored,
                };
                if let (Scored::Decided(d), Some(digest)) = (&scored, digest.as_mut()) {
                    digest.add(*number, &d.decision);
                }
                if scored.emit(&mut record::Json::new(records)) {
                    records.push('\n');
                }
                (*number, scored, records.len())
            })
            .collect()
    }
}

/// Writes decided chunks in input order as they come back from the workers, and
/// counts what they hold.
struct RecordWriter<'a> {
    out: Output,
    source: &'a Source,
    tally: Tally,
    /// Where each written chunk is checkpointed, when the run can be resumed.
    journal: Option<ScoreJournal>,
    /// The last input line written, for the message when the run is interrupted.
    through: usize,
    ids: TaskIds,
    /// A shard's entries for `merge`, in input order, until the evidence is written.
    evidence: Option<std::io::BufWriter<std::fs::File>>,
    /// The page's digest of every decision written (`--html`).
    page: Option<RunDigest>,
    /// The calibration grid, when the run writes a summary or a page.
    grid: Option<&'a Grid>,
}

impl RecordWriter<'_> {
    /// Records that every line of `chunk` is written: its decisions are flushed first,
    /// so a checkpoint never counts bytes a kill could lose. The chunk's digest (`part`)
    /// joins the page's, and the checkpoint keeps what a resumed run needs of it.
    fn checkpoint(&mut self, chunk: &ScoreChunk, part: Option<RunDigest>) -> Result<()> {
        let page = match (self.page.as_mut(), part) {
            (Some(page), Some(part)) => Some(page.absorb(part)),
            _ => None,
        };
        let Some((number, _)) = chunk.lines.lines.last() else {
            return Ok(());
        };
        self.through = *number;
        let Some(journal) = self.journal.as_mut() else {
            return Ok(());
        };
        self.out.flush().context("failed to write decisions")?;
        journal.checkpoint(&Checkpoint {
            through: *number,
            bytes: self.out.written(),
            bytes_hash: self.out.hash(),
            prefix: chunk.prefix,
            tally: self.tally.clone(),
            page,
        })?;
        Ok(())
    }

    /// Writes a decided chunk's records in order, each line not a task's in its place
    /// among them.
    fn write(&mut self, chunk: &ScoreChunk, scored: ChunkScores) -> Result<()> {
        let tally = &mut self.tally;
        // The chunk's records not written yet start at `from`.
        let mut from = 0;
        for (number, scored, end) in scored {
            match scored {
                Scored::Seed(j) => {
                    self.ids.check(&self.source.name, number, &j.task_id);
                    tally.notes.add(&j.notes);
                    match j.outcome.verdict() {
                        Some(v) => {
                            tally.count(v);
                            tally.by_outcome.count_group(j.outcomes, v);
                        }
                        None => tally.refused += 1,
                    }
                }
                Scored::Decided(d) => {
                    let ScoredTask {
                        decision: d,
                        compared,
                        notes,
                        prose,
                        prepared,
                    } = *d;
                    self.ids.check(&self.source.name, number, &d.task_id);
                    tally.notes.add(&notes);
                    tally.prose.add(&prose);
                    tally.decided(&d, self.source.model());
                    if let Some(c) = &compared {
                        tally.baseline.count(d.verdict, c.naive, c.label);
                        count_calibration(tally, self.grid, c);
                    }
                    if let Some(prepared) = prepared {
                        let entry = PreparedEntry::Task {
                            line: number,
                            prepared,
                            live: Vec::new(),
                            naive: compared.map(|c| c.naive),
                            naive_agreement: compared.and_then(|c| c.naive_agreement),
                        };
                        let ev = self.evidence.as_mut().context("a shard keeps evidence")?;
                        writeln!(ev, "{}", entry.to_line()).context("failed to keep evidence")?;
                    }
                }
                Scored::Bad(e) => {
                    let e = self.source.place(number, e);
                    // The records before this line first.
                    write_records(&mut self.out, &chunk.records[from..end])?;
                    from = end;
                    if let Some(ev) = self.evidence.as_mut() {
                        let entry = PreparedEntry::Bad {
                            line: number,
                            error: e.clone(),
                        };
                        writeln!(ev, "{}", entry.to_line()).context("failed to keep evidence")?;
                    }
                    skip_line(&mut self.out, &self.source.name, number, &e, tally)?
                }
                Scored::Other => tally.other_shards += 1,
            }
        }
        write_records(&mut self.out, &chunk.records[from..])
    }
}

/// How the gate scores each line, from the flags: a shard's scorer decides the tasks
/// `owns` says are its own.
fn score_config<'a>(
    args: &ScoreArgs,
    owns: &'a (dyn Fn(&str) -> bool + Sync),
    calibrate: bool,
    errors: Option<&'a ErrorConvention>,
) -> score::ScoreConfig<'a> {
    score::ScoreConfig {
        opts: args.thresholds.options(),
        seed_compat: args
            .seed_compat
            .map(|entry| (entry.into(), args.thresholds.seed_options())),
        compare: true,
        baseline: args.baseline.is_some(),
        shard: args.shard.map(|_| owns),
        calibrate,
        errors,
    }
}

/// Whether the run calibrates its labelled tasks: for a summary or a page, which show
/// the calibration.
fn calibrates(args: &ScoreArgs) -> bool {
    args.summary_json.is_some() || args.page.html.is_some()
}

/// Counts a labelled task's observation in the run's calibration, when it has one.
fn count_calibration(tally: &mut Tally, grid: Option<&Grid>, c: &Compared) {
    if let (Some(grid), Some(o)) = (grid, &c.calibration) {
        tally.calibration.add(grid, o);
    }
}

/// Records, each with its line ending, written as bytes.
fn write_records(out: &mut Output, records: &str) -> Result<()> {
    out.write_all(records.as_bytes())
        .context("failed to write decisions")
}

/// Reads, decides and writes as a pipeline ([`pipeline`]): this thread reads lines
/// into chunks, `jobs` workers decide them, a writer puts them back in input order, and
/// the chunks' buffers go round (a fresh half-megabyte buffer per chunk would cost
/// page faults).
fn run_pipeline(
    scorer: &ChunkScorer<'_>,
    input: Box<dyn BufRead>,
    writer: &mut RecordWriter<'_>,
    jobs: usize,
    done: &Checkpoint,
    digest: Option<&mut SamplesDigest>,
) -> Result<Tally> {
    let hash_lines = writer.journal.is_some();
    let worker = || |chunk: &mut ScoreChunk| scorer.score_chunk(chunk);
    std::thread::scope(|s| {
        let (feed, in_order) = pipeline::start_scoped(s, jobs, &worker);
        let written = s.spawn(move || write_in_order(writer, in_order));
        // Reading ends by dropping the feed, which lets the workers and then the
        // writer finish.
        let read = read_chunks(
            input,
            feed,
            done,
            scorer.args.io.max_line_bytes,
            digest,
            hash_lines,
        );
        let written = written
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        written?;
        read
    })
}

/// The writer: puts decided chunks back in input order and writes them, handing each
/// emptied buffer back as a spare for the reader.
fn write_in_order(
    writer: &mut RecordWriter<'_>,
    mut in_order: InOrder<ScoreChunk, ChunkScores>,
) -> Result<()> {
    loop {
        match in_order.wait_next() {
            Ok(Some((mut chunk, scored))) => {
                let part = chunk.digest.take();
                writer.write(&chunk, scored)?;
                writer.checkpoint(&chunk, part)?;
                chunk.lines.clear();
                chunk.records.clear();
                in_order.recycle(chunk);
            }
            Ok(None) => return Ok(()),
            // Every worker has stopped; a chunk still waiting means one before it never
            // came back, and its lines would be missing from the output.
            Err(next) => bail!("chunk {next} of the input was never decided"),
        }
    }
}

/// The reader: cuts the input into chunks ([`pipeline::Chunk::is_full`]), each sent on a spare,
/// and counts the lines (blank ones included) as it goes. Lines an interrupted run
/// decided (through `done.through`) are only counted; an interrupt stops it with
/// [`Interrupted`], once the lines already sent are decided. With `hash_lines`, each
/// chunk carries the journal's hash of the input through its last line.
fn read_chunks(
    input: Box<dyn BufRead>,
    mut feed: WorkQueue<ScoreChunk>,
    done: &Checkpoint,
    max: u64,
    mut digest: Option<&mut SamplesDigest>,
    hash_lines: bool,
) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut chunk = ScoreChunk::default();
    let mut send = |chunk: &mut ScoreChunk| -> Result<()> {
        if chunk.lines.lines.is_empty() {
            return Ok(());
        }
        // No spare or no worker: the writer stopped (it failed); its error is
        // the one reported.
        if let Ok(empty) = feed.spare()
            && feed.send(std::mem::replace(chunk, empty)).is_ok()
        {
            return Ok(());
        }
        bail!("decisions could not be written")
    };
    let mut prefix = Prefix::default();
    for_each_line(input, max, &mut tally, |number, line, _| {
        if let Some(d) = digest.as_deref_mut() {
            d.add(line);
        }
        if number <= done.through {
            prefix.add(number, line);
            if number == done.through {
                done.same_samples(&prefix)?;
            }
            return Ok(());
        }
        if stopping() {
            return Err(Interrupted.into());
        }
        // Hashing every line is for resuming: a run without a journal skips it.
        if hash_lines {
            prefix.add(number, line);
            chunk.prefix = prefix;
        }
        chunk.lines.push(number, line);
        if chunk.lines.is_full() {
            send(&mut chunk)?;
        }
        Ok(())
    })?;
    // The input may have ended because the same Ctrl-C stopped whatever wrote it: its
    // last lines are not trusted, and the run is resumed, not finished.
    if stopping() {
        return Err(Interrupted.into());
    }
    if tally.lines < done.through {
        let through = done.through;
        return Err(plangate_report::resume::ResumeError::SamplesChanged { through }.into());
    }
    send(&mut chunk)?;
    Ok(tally)
}

/// Thresholds out of order are a usage error, but for `--seed-compat`: the seed's own
/// code takes any thresholds (and has no suspect level), and is reproduced as it is,
/// with a word about what it was given.
fn check_thresholds(args: &ScoreArgs) -> Result<()> {
    let t = &args.thresholds;
    match args.seed_compat {
        None => t.check(),
        Some(_) => {
            if t.arg_reject.exceeds(t.arg_accept) {
                eprintln!(
                    "plangate: warning: --arg-reject {} is above --arg-accept {}: the seed's code takes them as given",
                    t.arg_reject, t.arg_accept
                );
            }
            Ok(())
        }
    }
}

pub(crate) fn run(args: ScoreArgs) -> Result<u8> {
    let started = std::time::Instant::now();
    // First: an interrupt during setup then stops the run at its first line, cleanly.
    crate::interrupt::install();
    check_thresholds(&args)?;
    check_shard(&args)?;
    if args.seed_compat.is_some() && args.page.html.is_some() {
        bail!(
            "--html cannot be used with --seed-compat: the seed's records carry no agreements or reasons to show"
        );
    }
    let catalog = load_catalog(&args.io.catalog)?;
    let plan = output_plan(&args);
    check_outputs(
        &plan.files(),
        &Reads::default()
            .catalog("--catalog", &args.io.catalog, &catalog)
            .file("--samples", &args.io.samples),
    )?;
    let (input, source) = open_samples(&args.io.samples, args.io.max_line_bytes)?;
    let (out, journal, mut done) = open_resumable(&args)?;
    let (page, partial) = resumed_page(&args, &mut done);
    // Labelled tasks are calibrated only for a summary or a page: the sweep decides each
    // again.
    let grid = calibrates(&args).then(|| Grid::around(&args.thresholds.options()));
    let mut writer = RecordWriter {
        out,
        source: &source,
        tally: done.tally,
        journal,
        through: done.through,
        ids: TaskIds::default(),
        evidence: match args.shard {
            Some(_) => Some(std::io::BufWriter::with_capacity(
                1 << 16,
                tempfile::tempfile().context("cannot make a temporary file for the evidence")?,
            )),
            None => None,
        },
        page,
        grid: grid.as_ref(),
    };
    let mut digest = args.shard.map(|_| SamplesDigest::default());
    let done = Checkpoint {
        tally: Tally::default(),
        ..done
    };
    let owns = |id: &str| args.shard.is_some_and(|s| s.owns_task(id));
    let errors = source.errors();
    let config = score_config(&args, &owns, grid.is_some(), errors.as_ref());
    let scorer = ChunkScorer {
        gate: score::LineScorer::new(&catalog, config),
        args: &args,
    };
    let jobs = args.jobs.unwrap_or_else(plangate_harness::default_jobs);
    let read = match run_pipeline(&scorer, input, &mut writer, jobs, &done, digest.as_mut()) {
        Err(e) if e.is::<Interrupted>() => return interrupted(writer),
        read => read?,
    };
    let mut tally = std::mem::take(&mut writer.tally);
    tally.lines = read.lines;
    tally.blank = read.blank;
    let evidence = match (writer.evidence.take(), digest) {
        (Some(kept), Some(digest)) => {
            evidence(&args, &catalog, kept, (digest, source.model()), &tally)?
        }
        _ => None,
    };
    let calibration = tally.calibration.report();
    let digested = writer.page.take();
    let page = (digested.as_ref())
        .filter(|_| plan.page.is_some())
        .map(|digest| {
            let mut page = crate::page::page("score", &source.name, &tally, digest);
            page.partial = partial;
            page.calibration = calibration.as_ref();
            page.facts.extend([
                crate::page::fact("jobs", "threads deciding", &jobs.to_string()),
                crate::page::fact("resumed", "resumed after line", &done.through.to_string()),
                crate::page::elapsed_fact(started.elapsed()),
            ]);
            page
        });
    let made = Made {
        evidence,
        summary: (plan.summary.is_some()).then(|| crate::outputs::score_summary(&tally)),
        page,
        ..Made::default()
    };
    // The reports are written while the journal still holds every checkpoint: one that
    // cannot be written is written by `--resume`, which then decides nothing again.
    plan.carry_out(made, || writer.put_in_place())?;
    writer.ids.report(&source.name);
    tally.report(&source.name);
    Ok(tally.exit_code())
}

impl RecordWriter<'_> {
    /// Puts the decisions in place, and the journal goes ([`ScoreJournal::close`]).
    fn put_in_place(&mut self) -> Result<()> {
        match self.journal.take() {
            Some(journal) => journal.close(|| self.out.finish()),
            None => self.out.finish(),
        }
    }
}

/// The run's outputs, from its flags: `--out` with what is kept beside it (the journal
/// and partial decisions for `--resume`, a shard's evidence), `--summary-json` and
/// `--html`.
fn output_plan(args: &ScoreArgs) -> OutputPlan {
    let out = args.io.out.as_deref();
    OutputPlan {
        decisions: out.map(std::path::Path::to_path_buf),
        summary: args.summary_json.clone(),
        page: args.page.html.clone(),
        journal: out.map(journal_path),
        partial: out.map(partial_path),
        evidence: out.filter(|_| args.shard.is_some()).map(evidence_path),
        ..OutputPlan::default()
    }
}

/// The page's digest to start from (`--html`): empty, or the lines an interrupted run
/// decided, summed from its checkpoints. When those kept none (that run had no
/// `--html`), it starts empty and the page says which lines it covers.
fn resumed_page(args: &ScoreArgs, done: &mut Checkpoint) -> (Option<RunDigest>, Option<String>) {
    let kept = done.page.take();
    if args.page.html.is_none() {
        return (None, None);
    }
    match (done.through, kept) {
        (0, _) => (Some(RunDigest::default()), None),
        (_, Some(kept)) => (Some(kept), None),
        (through, None) => (
            Some(RunDigest::default()),
            Some(format!(
                "This run resumed one that was interrupted after line {through} and kept no page data (it ran without --html): the counts above cover every line; the reasons, plots and lists below cover the lines after line {through}."
            )),
        ),
    }
}

/// Refuses a shard run that `merge` could not use, before any work.
fn check_shard(args: &ScoreArgs) -> Result<()> {
    let Some(shard) = args.shard else {
        return Ok(());
    };
    crate::shard::check_out(shard, args.io.out.as_deref())?;
    if args.seed_compat.is_some() {
        bail!(
            "--shard cannot be used with --seed-compat: merge decides with plangate's rule, not the seed's"
        );
    }
    if args.resume {
        bail!("--shard cannot be used with --resume: run the shard again from the start");
    }
    Ok(())
}

/// A shard's evidence for `plangate merge`, beside its `--out`: the catalog's tool
/// states and every entry kept while deciding.
fn evidence(
    args: &ScoreArgs,
    catalog: &Catalog,
    evidence: std::io::BufWriter<std::fs::File>,
    (digest, model): (SamplesDigest, Option<&str>),
    tally: &Tally,
) -> Result<Option<Evidence<'static>>> {
    use std::io::Seek as _;
    let Some(shard) = args.shard else {
        return Ok(None);
    };
    let mut body = evidence
        .into_inner()
        .map_err(|e| e.into_error())
        .and_then(|mut f| f.rewind().map(|()| f))
        .context("failed to keep evidence")?;
    let header = EvidenceHeader::new(
        "score",
        shard,
        Learned::of_catalog(catalog),
        Inputs {
            catalog_sha256: plangate_harness::shard::file_digest(&args.io.catalog)?,
            samples_sha256: digest.hex(),
            source: source_name(&args.io.samples),
            model: model.map(Into::into),
            limits: "none: score executes nothing".into(),
            probe_runs: None,
        },
        &args.thresholds.options(),
        tally.lines,
        tally.blank,
    );
    Ok(Some(Evidence {
        header,
        body: Box::new(move |w| std::io::copy(&mut body, w)),
    }))
}

/// The decisions output and, when `--out` is a file, the journal that lets an
/// interrupted run resume: a new one, or (`--resume`) the interrupted run's, with the
/// checkpoint it reached.
fn open_resumable(args: &ScoreArgs) -> Result<(Output, Option<ScoreJournal>, Checkpoint)> {
    let out = args.io.out.as_deref();
    // A shard is run again, not resumed: its evidence is written whole at the end.
    if args.shard.is_some() {
        return Ok((open_out(out)?, None, Checkpoint::default()));
    }
    let Some(target) = resumable_out(args.resume, out)? else {
        return Ok((open_out(out)?, None, Checkpoint::default()));
    };
    // A summary's calibration counts every labelled task, so a run that writes one
    // resumes only a run that counted them too. A page resumed from a run without one
    // says which lines it covers, its calibration with the rest (`resumed_page`).
    let flags = format!(
        "{:?} {:?} {:?} {} calibrated: {}",
        args.thresholds,
        args.baseline,
        args.seed_compat,
        args.io.max_line_bytes,
        args.summary_json.is_some()
    );
    let header = header("score", &args.io.catalog, &flags, None)?;
    let (earlier, notice) = journal_to_resume(args.resume, Some(target))?;
    crate::say(notice);
    let opened: Opened<Tally> = ScoreJournal::open(earlier, target, &header)?;
    crate::say(opened.notice);
    let (journal, done, resumed) = (opened.journal, opened.done, opened.resumed);
    let Some(journal) = journal else {
        return Ok((open_out(out)?, None, Checkpoint::default()));
    };
    let keep = resumed.then_some((done.bytes, done.bytes_hash));
    let out = Output::resumable(target, &partial_path(target), keep)?;
    Ok((out, Some(journal), done))
}

/// An interrupt stopped the run: what is decided is written (and journalled), and the
/// message says where it is and how to go on.
fn interrupted(mut writer: RecordWriter<'_>) -> Result<u8> {
    if writer.evidence.is_some() {
        eprintln!("plangate: interrupted: nothing was written; run the shard again");
        return Ok(crate::exit::INTERRUPTED);
    }
    writer.out.flush().context("failed to write decisions")?;
    match (&writer.journal, writer.out.kept()) {
        (Some(journal), Some(kept)) => eprintln!(
            "plangate: interrupted: lines 1 to {} are decided and kept in {} (journal {}); run the same command with --resume to decide the rest",
            writer.through,
            kept.display(),
            journal.path().display()
        ),
        _ => eprintln!(
            "plangate: interrupted: lines 1 to {} are decided and written",
            writer.through
        ),
    }
    Ok(crate::exit::INTERRUPTED)
}
