//! A run stopped at any point loses nothing: `score` and `eval` killed with SIGKILL at
//! random moments (and their resumed runs killed again) finish with `--resume` into
//! decisions byte-identical to an uninterrupted run's, an earlier complete output is
//! never left truncated, and SIGINT stops cleanly (exit 130, a journal, no snapshot
//! left behind).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::eval::{Run, plangate, seed_catalog};
use crate::exit;
use crate::page::content;
use crate::tools::{build_tools, world};

/// What an earlier run left in `--out`, to be replaced only by a whole new output.
const EARLIER: &[u8] = b"{\"task_id\":\"from an earlier run\"}\n";

const CATALOG: &str = r#"{"tools":[{"name":"echo","deterministic":true,"verified":true}]}"#;

/// A score batch with every kind of line: agreeing and fabricated tasks, bad lines and
/// blank ones, so the resumed tally has something of each to carry.
fn score_batch(dir: &Path, tasks: usize) -> (PathBuf, PathBuf) {
    let catalog = dir.join("catalog.json");
    std::fs::write(&catalog, CATALOG).expect("write catalog");
    let mut text = String::new();
    for i in 0..tasks {
        if i % 997 == 5 {
            text.push_str("not json\n");
            continue;
        }
        if i % 499 == 3 {
            text.push('\n');
        }
        let samples: Vec<String> = (0..5)
            .map(|k| {
                // Every third task: the samples disagree on q, a located fabrication.
                let q = if i % 3 == 0 { i * 10 + k } else { i };
                format!(r#"{{"calls":[{{"tool":"echo","arguments":{{"q":{q}}},"result":{{"q":{q}}}}}]}}"#)
            })
            .collect();
        text.push_str(&format!(
            "{{\"task_id\":\"t{i}\",\"samples\":[{}]}}\n",
            samples.join(",")
        ));
    }
    let samples = dir.join("samples.jsonl");
    std::fs::write(&samples, text).expect("write samples");
    (catalog, samples)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `plangate ARGS` started, its stderr kept and its stdout dropped.
pub(crate) fn spawn(args: &[&str]) -> Child {
    build_tools();
    Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plangate runs")
}

/// Delays to kill at, spread from a few milliseconds into the run to near its end: a
/// fixed pseudo-random sequence, so a failure reproduces.
fn kill_points(n: usize, max_ms: u64, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            5 + (x >> 33) % max_ms
        })
        .collect()
}

/// Runs `args` killed with SIGKILL after each delay in turn (every later attempt with
/// `--resume`), then once more to the end; returns that last run. `check` runs after
/// every kill.
fn kill_and_resume(args: &[&str], delays: &[u64], check: impl Fn(u64)) -> Run {
    let resumed: Vec<&str> = args.iter().copied().chain(["--resume"]).collect();
    for (i, ms) in delays.iter().enumerate() {
        let mut child = spawn(if i == 0 { args } else { &resumed });
        std::thread::sleep(Duration::from_millis(*ms));
        let _ = child.kill();
        let _ = child.wait();
        check(*ms);
    }
    plangate(&resumed)
}

/// `args` run to the end into `DIR/whole.jsonl`, with the exit code it must give; the
/// run and the decisions it wrote.
fn uninterrupted(dir: &Path, args: &[&str], code: i32) -> (Run, Vec<u8>) {
    let whole = dir.join("whole.jsonl");
    let run = plangate(&[args, &["--out", s(&whole)]].concat());
    assert_eq!(run.code, code, "{}", run.stderr);
    (run, std::fs::read(&whole).expect("decisions"))
}

/// `base` writing `DIR/out.jsonl` over an earlier run's output, SIGKILLed after each
/// of `kills` ms and resumed, then resumed to the end with exit `code`: the output is
/// never anything but the earlier one or the whole new one, and ends as `whole`.
fn killed_to_whole(dir: &Path, base: &[&str], whole: &[u8], kills: &[u64], code: i32) -> Run {
    let out = dir.join("out.jsonl");
    std::fs::write(&out, EARLIER).expect("earlier output");
    let args = [base, &["--out", s(&out), "--jobs", "2"]].concat();
    let last = kill_and_resume(&args, kills, |ms| {
        let now = std::fs::read(&out).expect("output");
        // An attempt may finish before its kill: then the whole new output is there.
        assert!(
            now == EARLIER || now == whole,
            "killed at {ms} ms: the output is neither the earlier one nor the whole new one ({} bytes)",
            now.len()
        );
    });
    assert_eq!(last.code, code, "{}", last.stderr);
    assert_eq!(
        std::fs::read(&out).expect("output"),
        whole,
        "resumed = whole"
    );
    last
}

#[test]
fn score_killed_at_random_points_resumes_to_identical_decisions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 20_000);
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    // Bad lines make exit 2.
    let (whole_run, whole) = uninterrupted(dir.path(), &base, exit::USAGE);

    let last = killed_to_whole(
        dir.path(),
        &base,
        &whole,
        &kill_points(6, 1500, 7),
        exit::USAGE,
    );
    assert_eq!(
        last.stderr.lines().last(),
        whole_run.stderr.lines().last(),
        "the summary line accounts for every line, resumed or not"
    );
    for leftover in ["out.jsonl.journal", "out.jsonl.partial"] {
        assert!(!dir.path().join(leftover).exists(), "{leftover} removed");
    }
}

/// `--html` survives kills: the page of a run killed and resumed again and again draws
/// what the uninterrupted run's does, its lists included (each checkpoint keeps the
/// page's part of its lines).
#[test]
fn a_resumed_score_draws_the_uninterrupted_page() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (catalog, samples) = score_batch(d, 20_000);
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    let (whole_page, out_page) = (d.join("whole.html"), d.join("out.html"));
    let (_, whole) = uninterrupted(
        d,
        &[&base[..], &["--html", s(&whole_page)]].concat(),
        exit::USAGE,
    );
    killed_to_whole(
        d,
        &[&base[..], &["--html", s(&out_page)]].concat(),
        &whole,
        &kill_points(4, 1500, 11),
        exit::USAGE,
    );
    let read = |p: &Path| std::fs::read_to_string(p).expect("page");
    let (whole_page, out_page) = (read(&whole_page), read(&out_page));
    assert_eq!(content(&whole_page), content(&out_page));
    assert!(!out_page.contains("id=\"partial\""));
}

/// A run interrupted without `--html` kept no page data: resumed with it, the page
/// counts every line and says that its reasons, plots and lists cover the lines after
/// the interruption.
#[test]
fn a_page_resumed_from_a_run_without_one_says_what_it_covers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 1_000);
    let text = std::fs::read_to_string(&samples).expect("samples");
    let out = dir.path().join("out.jsonl");
    interrupted_at_512(&catalog, &text, &out);
    let page = dir.path().join("page.html");
    let run = plangate(&[
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
        "--resume",
        "--html",
        s(&page),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    let page = std::fs::read_to_string(&page).expect("page");
    let lines = text.lines().count();
    assert!(
        page.contains(&format!("id=\"count-lines\">{lines}<")),
        "every line counted"
    );
    let note = &page[page.find("id=\"partial\"").expect("the note")..];
    let through: usize = note
        .split("after line ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .expect("the line it resumed after");
    assert!((512..600).contains(&through), "{note}");
    // The histogram counts only the tasks decided after it.
    let hist = &page[page.find("<svg id=\"arg-hist\"").expect("histogram")..];
    let hist = &hist[..hist.find("</svg>").expect("end")];
    let tasks: usize = hist
        .split(" tasks</title>")
        .filter_map(|t| t.rsplit(": ").next()?.parse::<usize>().ok())
        .sum();
    assert!(tasks <= lines - through && tasks > 300, "{tasks}");
}

/// The calibration a summary counts rides in the checkpoints: a labelled batch killed
/// and resumed writes the uninterrupted run's summary, calibration and all.
#[test]
fn score_killed_and_resumed_calibrates_as_an_uninterrupted_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, unlabelled) = score_batch(dir.path(), 8_000);
    let samples = dir.path().join("labelled.jsonl");
    let text = std::fs::read_to_string(&unlabelled).expect("samples");
    let labelled: Vec<String> = (text.lines().enumerate())
        .map(|(i, line)| match line.strip_prefix('{') {
            Some(rest) if line.contains("task_id") => {
                let label = ["correct", "hallucinated"][usize::from(i % 3 == 0 || i % 7 == 0)];
                format!("{{\"label\":\"{label}\",{rest}")
            }
            _ => line.to_string(),
        })
        .collect();
    std::fs::write(&samples, labelled.join("\n") + "\n").expect("samples");
    let (whole_summary, summary) = (dir.path().join("whole.json"), dir.path().join("s.json"));
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    let (_, whole) = uninterrupted(
        dir.path(),
        &[&base[..], &["--summary-json", s(&whole_summary)]].concat(),
        exit::USAGE,
    );
    let resumed = [&base[..], &["--summary-json", s(&summary)]].concat();
    killed_to_whole(
        dir.path(),
        &resumed,
        &whole,
        &kill_points(3, 900, 11),
        exit::USAGE,
    );
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).expect("summary")).expect("JSON")
    };
    let (want, got) = (read(&whole_summary), read(&summary));
    assert!(want["calibration"]["auroc"].is_number(), "{want}");
    assert_eq!(got, want);
    // Without the summary the journal is another run's: not resumed, started over.
    let out = dir.path().join("out.jsonl");
    let mut child = spawn(&[&resumed[..], &["--out", s(&out)]].concat());
    std::thread::sleep(Duration::from_millis(300));
    let _ = child.kill();
    let _ = child.wait();
    if dir.path().join("out.jsonl.journal").exists() {
        let run = plangate(&[&base[..], &["--out", s(&out), "--resume"]].concat());
        assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
        assert!(run.stderr.contains("cannot resume"), "{}", run.stderr);
    }
}

fn demo_batch(dir: &Path, tasks: &str) -> PathBuf {
    let samples = dir.join("batch.jsonl");
    let run = plangate(&[
        "demo",
        "--world",
        s(&world()),
        "--tasks",
        tasks,
        "--no-driver",
        "--write-samples",
        s(&samples),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    samples
}

#[test]
fn eval_killed_at_random_points_resumes_to_identical_decisions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let samples = demo_batch(dir.path(), "300");
    let catalog = seed_catalog();
    let base = ["eval", "--catalog", s(&catalog), "--samples", s(&samples)];
    // Fabrications are rejected: exit 1.
    let (_, whole) = uninterrupted(dir.path(), &base, exit::REJECT);

    killed_to_whole(
        dir.path(),
        &base,
        &whole,
        &kill_points(4, 2500, 11),
        exit::REJECT,
    );
    assert!(!dir.path().join("out.jsonl.journal").exists());
}

/// Snapshot folders of epochs (plangate-epoch-*) in the temp dir.
/// Snapshot directories a process left in the temporary folder: each carries its pid
/// (`plangate-epoch-PID-...`), so other tests' runs in parallel do not count.
fn snapshots_of(pid: u32) -> usize {
    let prefix = format!("plangate-epoch-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .expect("temp dir")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .count()
}

/// Waits until `path` exists (the run has set up and installed its handler).
fn wait_for(path: &Path, child: &mut Child) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended before {} existed: {status}", path.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never appeared", path.display());
}

fn interrupt(child: &Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
}

#[test]
fn sigint_stops_eval_cleanly_and_says_how_to_resume() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Long enough that the interrupt lands while it runs: on a quiet machine a batch of a
    // few hundred tasks can finish within the 300 ms wait below.
    let samples = demo_batch(dir.path(), "2000");
    let catalog = seed_catalog();
    let out = dir.path().join("out.jsonl");
    let journal = dir.path().join("out.jsonl.journal");
    let args = [
        "eval",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
        "--jobs",
        "1",
    ];
    let mut child = spawn(&args);
    let child_pid = child.id();
    wait_for(&journal, &mut child);
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    let done = child.wait_with_output().expect("plangate ends");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(exit::INTERRUPTED), "{stderr}");
    assert!(
        stderr.contains("calls are kept in") && stderr.contains("--resume"),
        "{stderr}"
    );
    assert!(journal.exists(), "{stderr}");
    assert!(!out.exists(), "nothing decided, nothing written");
    assert_eq!(
        snapshots_of(child_pid),
        0,
        "the epoch's snapshot was removed"
    );

    let resumed = plangate(&[&args[..], &["--resume"]].concat());
    assert_eq!(resumed.code, exit::REJECT, "{}", resumed.stderr);
    assert!(
        resumed.stderr.contains("calls replayed from"),
        "{}",
        resumed.stderr
    );
    assert!(!journal.exists());
}

/// `plangate score` reading standard input (kept open) into `out`, with `more` flags.
fn score_on_stdin(catalog: &Path, out: &Path, more: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args([
            "score",
            "--catalog",
            s(catalog),
            "--samples",
            "-",
            "--out",
            s(out),
        ])
        .args(more)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plangate runs")
}

/// Interrupts a run reading standard input, and closes its input only once it has
/// taken the interrupt (an input that ends as the interrupt comes may end first, and
/// the run then simply finishes). Its exit code and stderr.
fn stop_on_stdin(mut child: Child) -> (Option<i32>, String) {
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    interrupt(&child);
    let mut said = String::new();
    while !said.contains("stopping") {
        let before = said.len();
        std::io::BufRead::read_line(&mut stderr, &mut said).expect("stderr");
        assert!(said.len() > before, "stderr ended without the stop: {said}");
    }
    drop(child.stdin.take());
    let status = child.wait().expect("plangate ends");
    std::io::Read::read_to_string(&mut stderr, &mut said).expect("stderr");
    (status.code(), said)
}

#[test]
fn a_journal_is_resumed_only_by_the_command_that_wrote_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 3_000);
    let out = dir.path().join("out.jsonl");
    let journal = dir.path().join("out.jsonl.journal");
    let args = [
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
    ];
    // An interrupted run on standard input that never ends: a genuine journal.
    let mut child = score_on_stdin(&catalog, &out, &[]);
    wait_for(&journal, &mut child);
    let (code, said) = stop_on_stdin(child);
    assert_eq!(code, Some(exit::INTERRUPTED), "{said}");

    let other = plangate(&[&args[..], &["--resume", "--arg-accept", "0.9"]].concat());
    assert_eq!(other.code, exit::USAGE, "{}", other.stderr);
    assert!(
        other.stderr.contains("cannot resume from") && other.stderr.contains("flag"),
        "{}",
        other.stderr
    );
    let eval = plangate(&[
        "eval",
        "--catalog",
        s(&seed_catalog()),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
        "--resume",
    ]);
    assert_eq!(eval.code, exit::USAGE, "{}", eval.stderr);
    assert!(
        eval.stderr.contains("cannot resume from"),
        "{}",
        eval.stderr
    );
    // The interrupted run decided nothing; resumed, it decides everything.
    let resumed = plangate(&[&args[..], &["--resume"]].concat());
    assert_eq!(resumed.code, exit::USAGE, "{}", resumed.stderr);
    assert!(!journal.exists());
    // Without --resume a journal left behind is announced and the run starts over.
    std::fs::write(&journal, "{}\n").expect("a stale journal");
    let fresh = plangate(&args);
    assert_eq!(fresh.code, exit::USAGE, "{}", fresh.stderr);
    assert!(
        fresh.stderr.contains("holds an interrupted run"),
        "{}",
        fresh.stderr
    );
    assert!(!journal.exists());
    // --resume with nothing to resume starts from the beginning, and says so.
    let again = plangate(&[&args[..], &["--resume"]].concat());
    assert_eq!(again.code, exit::USAGE, "{}", again.stderr);
    assert!(again.stderr.contains("no journal at"), "{}", again.stderr);
    // --resume needs a file to keep the journal beside.
    let stdout = plangate(&[
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--resume",
    ]);
    assert_eq!(stdout.code, exit::USAGE);
    assert!(
        stdout.stderr.contains("--resume needs --out"),
        "{}",
        stdout.stderr
    );
}

/// Two runs writing one `--out` would mix their partial decisions: the second is
/// refused while the first holds the journal (saying first that it found the journal),
/// and the first's journal is left whole.
#[test]
fn a_second_run_on_the_same_out_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 100);
    let out = dir.path().join("out.jsonl");
    let journal = dir.path().join("out.jsonl.journal");
    let mut first = score_on_stdin(&catalog, &out, &[]);
    wait_for(&journal, &mut first);
    let before = std::fs::read(&journal).expect("journal");
    let second = plangate(&[
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
    ]);
    assert_eq!(second.code, exit::USAGE, "{}", second.stderr);
    // It says first that it found a journal it would have replaced: the two lines come
    // from two steps, and the refusal must not swallow the first.
    let found = second
        .stderr
        .find("holds an interrupted run; this run starts over");
    let refused = second
        .stderr
        .find("another plangate run is writing the same --out");
    assert!(
        matches!((found, refused), (Some(f), Some(r)) if f < r),
        "{}",
        second.stderr
    );
    assert_eq!(
        std::fs::read(&journal).expect("journal"),
        before,
        "left whole"
    );
    drop(first.stdin.take());
    let done = first.wait().expect("the first run ends");
    assert_eq!(done.code(), Some(exit::OK));
}

/// A journal whose checkpoint is past line 512, made by a run reading standard input:
/// 600 lines fed, then SIGINT once the second chunk is checkpointed.
fn interrupted_at_512(catalog: &Path, text: &str, out: &Path) {
    let journal = out.with_file_name(format!(
        "{}.journal",
        out.file_name().expect("name").to_string_lossy()
    ));
    let mut child = score_on_stdin(catalog, out, &["--jobs", "1"]);
    let first: String = text.lines().take(600).map(|l| format!("{l}\n")).collect();
    let stdin = child.stdin.as_mut().expect("stdin");
    std::io::Write::write_all(stdin, first.as_bytes()).expect("feed");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |j| j.lines().count()) < 3 {
        assert!(started.elapsed().as_secs() < 60, "no second checkpoint");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (code, said) = stop_on_stdin(child);
    assert_eq!(code, Some(exit::INTERRUPTED), "{said}");
}

/// `score --resume` checks every line before its checkpoint, not only the last: an
/// edited or a truncated samples file is refused, the file it was is resumed whole.
#[test]
fn score_resumes_only_the_same_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 1_000);
    let text = std::fs::read_to_string(&samples).expect("samples");
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    let (_, whole) = uninterrupted(dir.path(), &base, exit::USAGE);
    let out = dir.path().join("out.jsonl");
    interrupted_at_512(&catalog, &text, &out);

    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, text.replacen("\"t9\"", "\"t9-edited\"", 1)).expect("edit");
    let short = dir.path().join("short.jsonl");
    let head: String = text.lines().take(300).map(|l| format!("{l}\n")).collect();
    std::fs::write(&short, head).expect("truncate");
    for changed in [&edited, &short] {
        let run = plangate(&[
            "score",
            "--catalog",
            s(&catalog),
            "--samples",
            s(changed),
            "--out",
            s(&out),
            "--resume",
        ]);
        assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("cannot resume: the samples through line"),
            "{}",
            run.stderr
        );
    }
    // A partial file cut short of its checkpoint is refused too.
    let partial = out.with_file_name("out.jsonl.partial");
    let kept = std::fs::read(&partial).expect("partial");
    std::fs::write(&partial, &kept[..kept.len() / 2]).expect("cut");
    let cut = plangate(&[&base[..], &["--out", s(&out), "--resume"]].concat());
    assert_eq!(cut.code, exit::USAGE, "{}", cut.stderr);
    assert!(cut.stderr.contains("fewer than the"), "{}", cut.stderr);
    std::fs::write(&partial, &kept).expect("restore");
    let same = plangate(&[&base[..], &["--out", s(&out), "--resume"]].concat());
    assert_eq!(same.code, exit::USAGE, "{}", same.stderr);
    assert_eq!(std::fs::read(&out).expect("out"), whole, "resumed = whole");
}

/// The kept decisions are resumed only as they were written: a journal edited to count
/// other bytes is refused as damaged (its lines are sealed), and a partial file whose
/// kept bytes changed, or whose count ends inside a line, is refused before any line.
#[test]
fn score_resumes_only_the_bytes_it_wrote() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 1_000);
    let text = std::fs::read_to_string(&samples).expect("samples");
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    let (_, whole) = uninterrupted(dir.path(), &base, exit::USAGE);
    let out = dir.path().join("out.jsonl");
    interrupted_at_512(&catalog, &text, &out);
    let (journal, partial) = (
        out.with_file_name("out.jsonl.journal"),
        out.with_file_name("out.jsonl.partial"),
    );
    let (kept_journal, kept) = (
        std::fs::read_to_string(&journal).expect("journal"),
        std::fs::read(&partial).expect("partial"),
    );
    let resume = || plangate(&[&base[..], &["--out", s(&out), "--resume"]].concat());

    // A hand edit of the last checkpoint's byte count, one byte short of its line end.
    let bytes = |j: &str| -> u64 {
        let last = j.lines().last().expect("a checkpoint");
        let json = &last[..last.len() - 33];
        serde_json::from_str::<serde_json::Value>(json).expect("checkpoint")["bytes"]
            .as_u64()
            .expect("bytes")
    };
    let n = bytes(&kept_journal);
    let edited = kept_journal.replace(&format!("\"bytes\":{n},"), &format!("\"bytes\":{},", n - 1));
    assert_ne!(edited, kept_journal);
    std::fs::write(&journal, edited).expect("edit");
    let run = resume();
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("is damaged"), "{}", run.stderr);
    std::fs::write(&journal, &kept_journal).expect("restore");

    // A kept byte changed in place: the same length, other decisions.
    let mut changed = kept.clone();
    let at = changed.iter().position(|&b| b == b'{').expect("a record") + 1;
    changed[at] = b' ';
    std::fs::write(&partial, &changed).expect("change");
    let run = resume();
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("are not the bytes that run wrote"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("remove the journal to start over"),
        "{}",
        run.stderr
    );

    // Torn: the last kept line cut short and the file grown back past the count.
    let mut torn = kept[..n as usize - 10].to_vec();
    torn.extend_from_slice(&[b'x'; 100]);
    std::fs::write(&partial, &torn).expect("tear");
    let run = resume();
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("does not end a line"), "{}", run.stderr);

    std::fs::write(&partial, &kept).expect("restore");
    let same = resume();
    assert_eq!(same.code, exit::USAGE, "{}", same.stderr);
    assert!(!same.stderr.contains("cannot resume"), "{}", same.stderr);
    assert_eq!(std::fs::read(&out).expect("out"), whole, "resumed = whole");
}

/// A kill between making the journal and making the partial decisions leaves a journal
/// that kept nothing and no partial file: `--resume` starts from the first line.
#[test]
fn a_journal_that_kept_nothing_resumes_without_its_partial_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 1_000);
    let base = ["score", "--catalog", s(&catalog), "--samples", s(&samples)];
    let (_, whole) = uninterrupted(dir.path(), &base, exit::USAGE);
    let out = dir.path().join("out.jsonl");
    let journal = dir.path().join("out.jsonl.journal");
    // Interrupted before any line came: a journal without a checkpoint.
    let mut child = score_on_stdin(&catalog, &out, &[]);
    wait_for(&journal, &mut child);
    let (code, said) = stop_on_stdin(child);
    assert_eq!(code, Some(exit::INTERRUPTED), "{said}");
    std::fs::remove_file(dir.path().join("out.jsonl.partial")).expect("the partial file");
    let resumed = plangate(&[&base[..], &["--out", s(&out), "--resume"]].concat());
    // Exit 2 for the batch's bad lines; a refusal would exit 2 too, and say so.
    assert_eq!(resumed.code, exit::USAGE, "{}", resumed.stderr);
    assert!(
        !resumed.stderr.contains("cannot resume"),
        "{}",
        resumed.stderr
    );
    assert_eq!(std::fs::read(&out).expect("out"), whole, "resumed = whole");
    assert!(!journal.exists());
}

/// The journal and the partial decisions are outputs too: an input or a report that
/// names one is refused before any work.
#[test]
fn the_journal_and_partial_files_are_outputs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (catalog, samples) = score_batch(dir.path(), 10);
    let out = dir.path().join("res.jsonl");
    let partial = dir.path().join("res.jsonl.partial");
    std::fs::copy(&samples, &partial).expect("an input named like the partial file");
    let before = std::fs::read(&partial).expect("input");
    let run = plangate(&[
        "score",
        "--catalog",
        s(&catalog),
        "--samples",
        s(&partial),
        "--out",
        s(&out),
    ]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("would overwrite an input"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read(&partial).expect("input"),
        before,
        "input kept"
    );
    let eval = plangate(&[
        "eval",
        "--catalog",
        s(&seed_catalog()),
        "--samples",
        s(&samples),
        "--out",
        s(&out),
        "--summary-json",
        s(&dir.path().join("res.jsonl.journal")),
    ]);
    assert_eq!(eval.code, exit::USAGE, "{}", eval.stderr);
    assert!(
        eval.stderr.contains("name the same file"),
        "{}",
        eval.stderr
    );
}
