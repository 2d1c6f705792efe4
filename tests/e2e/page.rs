//! `--html FILE` on `score` and `eval` end to end: the page a real run writes renders in
//! headless Chromium with no script error, its plots as SVG and every section it should
//! have (found by id), with the run's own counts; a page of 100,000 tasks stays under
//! 2 MB. Shards merged and resumed runs draw the whole run's page (tests in `shard` and
//! `resume`, through [`content`]).

use std::ffi::OsStr;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::eval::{Run, catalog_copy, plangate};
use crate::exit;
use crate::report::rendered_dom;
use crate::tools::repo;

/// A page's content without its title and its `run` section (the command, timings):
/// what a merged or a resumed run must draw as the whole run did.
pub(crate) fn content(page: &str) -> &str {
    let start = page
        .find("<section id=\"lines\">")
        .expect("a lines section");
    let end = page.find("<section id=\"run\">").expect("a run section");
    &page[start..end]
}

/// [`content`] without the naive scorer's part of the calibration (its AUROC and its
/// ROC curve): the naive scorer reads results, and the seed world's misdeclared tools
/// answer differently in each eval run, so shards executed apart rank their tasks a
/// little otherwise than the whole run (the gate's side, which reads arguments, and
/// every decision are equal).
pub(crate) fn content_but_naive(page: &str) -> String {
    let mut s = content(page).to_string();
    for (from, to) in [
        ("<span id=\"naive-auroc\">", "</span>"),
        ("<polyline class=\"roc-1\"", "</svg>"),
    ] {
        if let Some(a) = s.find(from) {
            let b = a + s[a..].find(to).expect("closed");
            s.replace_range(a..b, "");
        }
    }
    s
}

/// The ids of the page's sections, in order.
fn section_ids(dom: &str) -> Vec<&str> {
    dom.split("<section id=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').expect("closed id")])
        .collect()
}

/// The rows of the table `id` in `dom`.
fn rows<'a>(dom: &'a str, id: &str) -> Vec<&'a str> {
    let table = &dom[dom
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id}"))..];
    let body = &table[table.find("<tbody>").expect("tbody")..table.find("</tbody>").expect("end")];
    body.split("<tr>").skip(1).collect()
}

/// The cell `id="count-KEY"` as a number.
fn count(dom: &str, key: &str) -> u64 {
    let at = format!("id=\"count-{key}\">");
    let rest = &dom[dom.find(&at).unwrap_or_else(|| panic!("no {at}")) + at.len()..];
    rest[..rest.find('<').expect("cell ends")]
        .parse()
        .expect("a count")
}

/// Checks what every run page has: a self-contained document, both plots as SVG, and
/// the line counts the summary has.
fn check_common(page: &str, dom: &str, summary: &Value) {
    for external in ["<script", "src=", "href=", "@import", "url("] {
        assert!(!page.contains(external), "the page references {external}");
    }
    assert!(dom.contains("<svg id=\"arg-hist\""), "{dom}");
    assert!(dom.contains("<svg id=\"tool-results\""), "{dom}");
    for key in ["total", "accept", "reject", "defer", "skipped", "blank"] {
        let cell = if key == "total" { "lines" } else { key };
        assert_eq!(
            Some(count(dom, cell)),
            summary["lines"][key].as_u64(),
            "{key}"
        );
    }
}

#[test]
fn the_eval_page_renders_every_section() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    // random_sample reads live randomness: declared deterministic, it is quarantined.
    let catalog = catalog_copy(d, |tools| {
        tools.get_mut("random_sample").expect("random_sample")["deterministic"] = Value::Bool(true);
    });
    let mut text = String::new();
    for case in ["misdeclared", "chains", "consistent", "plans"] {
        let file = repo().join(format!("tests/e2e/cases/eval/{case}.jsonl"));
        text.push_str(&std::fs::read_to_string(file).expect("case"));
    }
    // Every sample names the order id with a key the schema does not have: a schema
    // mismatch.
    let sample = r#"{"calls":[{"tool":"get_order","arguments":{"id":7}}]}"#;
    text.push_str(&format!(
        "{{\"task_id\":\"schema <mismatch>\",\"samples\":[{}]}}\nnot json\n\n",
        [sample; 6].join(",")
    ));
    let samples = d.join("samples.jsonl");
    std::fs::write(&samples, text).expect("samples");
    let (html, summary) = (d.join("page.html"), d.join("summary.json"));
    let run = plangate(&[
        "eval".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
        "--out".as_ref(),
        d.join("decisions.jsonl").as_os_str(),
        "--retry-deferred".as_ref(),
        "--summary-json".as_ref(),
        summary.as_os_str(),
        "--html".as_ref(),
        html.as_os_str(),
    ] as &[&OsStr]);
    assert_eq!(run.code, exit::USAGE, "a bad line: {}", run.stderr);
    let page = std::fs::read_to_string(&html).expect("the page was written");
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    let dom = rendered_dom(&html);
    assert_eq!(
        section_ids(&dom),
        [
            "lines",
            "reasons",
            "agreement",
            "calibration",
            "results",
            "health",
            "retry",
            "notable",
            // consistent.jsonl's u_48213 is looked up in every sample, and nothing
            // supplied it.
            "invented",
            "run"
        ]
    );
    assert!(dom.contains("<svg id=\"roc\""), "the ROC plot");
    check_common(&page, &dom, &summary);
    assert_eq!(count(&dom, "skipped"), 1);
    // Tool health: the quarantined tool first, with its probe's drift.
    let health = rows(&dom, "health-table");
    assert_eq!(health.len(), summary["tools"].as_array().unwrap().len());
    assert!(health[0].contains("random_sample"), "{}", health[0]);
    assert!(health[0].contains("quarantined") && health[0].contains("probe drift"));
    // The defer path ran a round for the quarantined tool's deferrals.
    let rounds = rows(&dom, "retry-rounds");
    assert_eq!(
        rounds.len(),
        summary["retry"]["rounds"].as_array().unwrap().len()
    );
    assert!(!rounds.is_empty());
    // The tasks worth a look, each with its explanation: the order nobody has, the
    // schema the plan breaks.
    let misses = rows(&dom, "notable-referential");
    assert!(
        misses
            .iter()
            .any(|r| r.contains("o_9999") && r.contains("reject")),
        "{misses:?}"
    );
    let schema = rows(&dom, "notable-schema");
    assert_eq!(schema.len(), 1, "{schema:?}");
    assert!(
        schema[0].contains("schema &lt;mismatch&gt;")
            && schema[0].contains("get_order at the arguments: additionalProperties"),
        "{}",
        schema[0]
    );
    assert!(schema[0].contains("schema_mismatch"), "{}", schema[0]);
    assert!(!rows(&dom, "notable-scattered").is_empty());
    assert!(dom.contains(summary["epoch_id"].as_str().unwrap()));
}

#[test]
fn a_score_page_of_100000_tasks_renders_and_stays_under_2_mb() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let catalog = d.join("catalog.json");
    let generator = repo().join("scripts/bench.d/gen_tasks.py");
    let written = Command::new("python3")
        .arg(&generator)
        .args(["--format", "plangate", "--count", "0", "--catalog-out"])
        .arg(&catalog)
        .status()
        .expect("python3 runs the generator");
    assert!(written.success());
    // The tasks (some 200 MB) go through a pipe and the decisions to /dev/null: only
    // the page is kept.
    let mut tasks = Command::new("python3")
        .arg(&generator)
        .args(["--format", "plangate", "--count", "100000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the generator");
    let html = d.join("page.html");
    let out = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .arg("score")
        .arg("--catalog")
        .arg(&catalog)
        .args(["--samples", "-", "--out", "/dev/null", "--html"])
        .arg(&html)
        .stdin(tasks.stdout.take().expect("the generator's output"))
        .output()
        .expect("plangate runs");
    assert!(tasks.wait().expect("the generator ends").success());
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let size = std::fs::metadata(&html)
        .expect("the page was written")
        .len();
    assert!(size < 2_000_000, "the page is {size} bytes");
    let page = std::fs::read_to_string(&html).unwrap();
    let dom = rendered_dom(&html);
    // Recorded results: no tool health, no defer path; labelled tasks: a calibration.
    assert_eq!(
        section_ids(&dom),
        [
            "lines",
            "reasons",
            "agreement",
            "calibration",
            "results",
            "notable",
            // The generator's fabricated ids get not_found, and nothing supplied them.
            "invented",
            "run"
        ]
    );
    // The ROC curves are drawn, the AUROC said, and the sweep has a row per grid point.
    assert!(dom.contains("<svg id=\"roc\""), "the ROC plot");
    assert!(
        dom.contains("<polyline class=\"roc-0\""),
        "the gate's curve"
    );
    let at = "id=\"auroc\">";
    let auroc: f64 = dom[dom.find(at).expect("the AUROC") + at.len()..]
        .split('<')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("a number");
    assert!((0.5..=1.0).contains(&auroc), "{auroc}");
    let sweep = rows(&dom, "sweep");
    assert!(sweep.len() >= 30, "{}", sweep.len());
    assert_eq!(
        sweep.iter().filter(|r| r.contains("class=\"run\"")).count(),
        2
    );
    // The counts are the summary line's.
    let said = run
        .stderr
        .lines()
        .find(|l| l.contains(" lines: "))
        .expect("summary");
    let n = |what: &str| -> u64 {
        let before = &said[..said
            .find(what)
            .unwrap_or_else(|| panic!("{what} in {said}"))];
        before
            .trim_end()
            .rsplit([' ', ','])
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let summary = serde_json::json!({"lines": {
        "total": n(" lines:"), "accept": n(" accepted"), "reject": n(" rejected"),
        "defer": n(" deferred"), "skipped": n(" skipped"), "blank": 0,
    }});
    check_common(&page, &dom, &summary);
    assert_eq!(count(&dom, "lines"), 100_000);
    // The generated tasks carry labels: verdicts by label, a bar per label.
    assert_eq!(rows(&dom, "by-label").len(), 2);
    assert!(dom.contains("Argument agreement by label"));
    let listed = rows(&dom, "notable-scattered");
    assert_eq!(listed.len(), 25, "a bounded list");
    assert!(listed.iter().all(|r| r.contains("fabricated_arguments")));
}

/// `--html` is an output like the others: checked against the inputs before any work,
/// and refused where it cannot mean anything.
#[test]
fn the_page_is_an_output_checked_before_the_work() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = repo().join("examples/score/catalog.json");
    let samples = repo().join("examples/score/samples.jsonl");
    let score = |extra: &[&OsStr]| {
        let mut args: Vec<&OsStr> = vec![
            "score".as_ref(),
            "--catalog".as_ref(),
            catalog.as_os_str(),
            "--samples".as_ref(),
            samples.as_os_str(),
        ];
        args.extend_from_slice(extra);
        plangate(&args)
    };
    let run = score(&["--html".as_ref(), samples.as_os_str()]);
    assert_eq!(run.code, exit::USAGE);
    assert!(run.stderr.contains("--html") && run.stderr.contains("would overwrite an input"));
    let out = dir.path().join("x.jsonl");
    let run = score(&[
        "--html".as_ref(),
        out.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(run.code, exit::USAGE);
    assert!(run.stderr.contains("name the same file"), "{}", run.stderr);
    let page = dir.path().join("p.html");
    let run = score(&[
        "--html".as_ref(),
        page.as_os_str(),
        "--seed-compat".as_ref(),
    ]);
    assert_eq!(run.code, exit::USAGE);
    assert!(run.stderr.contains("--seed-compat"), "{}", run.stderr);
    assert!(!page.exists());
    // Without --out, the decisions go to stdout and the page to its file.
    let run = score(&["--html".as_ref(), page.as_os_str()]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let written = std::fs::read_to_string(&page).expect("page");
    assert!(written.contains("<h1>plangate score: "), "{written}");
    assert!(run.stdout.lines().count() > 3);
}
