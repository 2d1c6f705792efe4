//! The summary's calibration block against the runs it stands for: its AUROCs are the
//! pairwise ones computed here from the decisions and the samples, each checked sweep
//! row is what the gate decides when run again at that row's thresholds, and shards
//! merged calibrate as the whole batch does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::eval::{Run, plangate};
use crate::exit;
use crate::tools::{repo, world};

/// A small deterministic generator (64-bit LCG), so the batch is the same every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// One deterministic, verified tool with two arguments, and a nondeterministic one.
fn catalog(dir: &Path) -> PathBuf {
    let path = dir.join("catalog.json");
    let doc = json!({"tools": [
        {"name": "lookup", "deterministic": true, "verified": true,
         "input_schema": {"type": "object", "required": ["id"],
            "properties": {"id": {"type": "string"}, "page": {"type": "integer"}}}},
        {"name": "search", "deterministic": false,
         "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}
    ]});
    std::fs::write(&path, doc.to_string()).unwrap();
    path
}

/// A labelled batch with recorded results: each task's samples agree to a drawn degree
/// (on the id, on the page, or both), results now and then flaky, a few tasks without
/// samples or without a label, and a label drawn more often `hallucinated` the less
/// the samples agree, so the AUROC lies strictly between one half and one.
fn batch(dir: &Path, tasks: usize) -> PathBuf {
    let mut rng = Lcg(7);
    let mut lines = Vec::new();
    for t in 0..tasks {
        let n = 3 + rng.below(8) as usize;
        let agree = 1 + rng.below(n as u64) as usize;
        let tool = if rng.below(8) == 0 {
            "search"
        } else {
            "lookup"
        };
        let varies_page = rng.below(3) == 0;
        let samples: Vec<Value> = (0..n)
            .map(|i| {
                let odd = i >= agree;
                let id = if odd && !varies_page {
                    format!("u_{}", rng.below(40))
                } else {
                    format!("u_{t}")
                };
                let page = if odd && varies_page { rng.below(5) } else { 1 };
                let flaky = rng.below(10) == 0;
                let result = json!({"id": id, "page": page, "flaky": flaky && i % 2 == 0});
                let arguments = match tool {
                    "lookup" => json!({"id": id, "page": page}),
                    _ => json!({"q": id}),
                };
                json!({"calls": [{"tool": tool, "arguments": arguments, "result": result}]})
            })
            .collect();
        let share = agree as u64 * 100 / n as u64;
        let label = if rng.below(100) + 10 > share {
            "hallucinated"
        } else {
            "correct"
        };
        let mut task = json!({"task_id": format!("t{t}"), "samples": samples, "label": label});
        match t % 97 {
            5 => task["samples"] = json!([]),
            11 => {
                task.as_object_mut().unwrap().remove("label");
            }
            _ => {}
        }
        lines.push(task.to_string());
    }
    let path = dir.join("samples.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn read_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run(args: &[&str]) -> Run {
    let run = plangate(args);
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{args:?}: {}",
        run.stderr
    );
    run
}

/// The AUROC by brute force over (hallucinated, correct) pairs, each task given as
/// (hallucinated, count, n): the hallucinated one agreeing less scores 1, a tie 1/2.
fn pairwise_auroc(tasks: &[(bool, u64, u64)]) -> f64 {
    let (mut score, mut pairs) = (0.0, 0.0);
    for &(_, hc, hn) in tasks.iter().filter(|t| t.0) {
        for &(_, cc, cn) in tasks.iter().filter(|t| !t.0) {
            pairs += 1.0;
            // hc/hn against cc/cn, exactly.
            score += match (hc * cn).cmp(&(cc * hn)) {
                std::cmp::Ordering::Less => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Greater => 0.0,
            };
        }
    }
    score / pairs
}

/// Each labelled decision with samples as (hallucinated, count, n) of its argument
/// agreement.
fn gate_agreements(decisions: &[Value]) -> Vec<(bool, u64, u64)> {
    decisions
        .iter()
        .filter(|d| d["label"].is_string() && d["n"].as_u64() > Some(0))
        .map(|d| {
            let a = &d["arg_agreement"];
            (
                d["label"] == "hallucinated",
                a["count"].as_u64().unwrap(),
                a["n"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Verdicts by label among the labelled decisions: label -> [accept, defer, reject].
fn verdicts_by_label(decisions: &[Value]) -> BTreeMap<String, [u64; 3]> {
    let mut out: BTreeMap<String, [u64; 3]> = BTreeMap::new();
    for d in decisions.iter().filter(|d| d["label"].is_string()) {
        let at = match d["decision"].as_str().unwrap() {
            "accept" => 0,
            "defer" => 1,
            _ => 2,
        };
        out.entry(d["label"].as_str().unwrap().to_string())
            .or_default()[at] += 1;
    }
    out
}

/// A sweep row's verdicts by label, as [`verdicts_by_label`] counts them.
fn row_by_label(row: &Value) -> BTreeMap<String, [u64; 3]> {
    ["correct", "hallucinated"]
        .iter()
        .map(|label| {
            let v = &row[label];
            let n = |k: &str| v[k].as_u64().unwrap();
            (label.to_string(), [n("accept"), n("defer"), n("reject")])
        })
        .filter(|(_, v)| v.iter().sum::<u64>() > 0)
        .collect()
}

/// The sweep row that moves `varies` to `value`.
fn row<'a>(calibration: &'a Value, varies: &str, value: f64) -> &'a Value {
    calibration["sweep"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["varies"] == varies && r[varies].as_f64() == Some(value))
        .unwrap_or_else(|| panic!("no row {varies} = {value}"))
}

/// The rows a test runs again: each checked against a run at its thresholds.
const AGAIN: [(&str, &str, f64); 3] = [
    ("arg_reject", "0.45", 0.45),
    ("arg_accept", "0.55", 0.55),
    ("arg_accept", "1", 1.0),
];

/// Runs the gate again at each row of [`AGAIN`] (`decide` runs it with the flag
/// and value) and holds the row to what it decided: rejects, rejected correct, and
/// every verdict by label. At least one row must differ from the run's own.
fn rows_are_reruns(calibration: &Value, decide: impl Fn(&str, &str) -> Vec<Value>) {
    let own = calibration["sweep"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == true)
        .unwrap();
    let mut moved = 0;
    for (varies, text, value) in AGAIN {
        let r = row(calibration, varies, value);
        let decisions = decide(&format!("--{}", varies.replace('_', "-")), text);
        let by_label = verdicts_by_label(&decisions);
        assert_eq!(row_by_label(r), by_label, "{varies} {text}: {r}");
        let rejected: Vec<&Value> = decisions
            .iter()
            .filter(|d| d["label"].is_string() && d["decision"] == "reject")
            .collect();
        let correct = rejected.iter().filter(|d| d["label"] == "correct").count();
        assert_eq!(r["rejected"].as_u64(), Some(rejected.len() as u64), "{r}");
        assert_eq!(r["rejected_correct"].as_u64(), Some(correct as u64), "{r}");
        moved += usize::from(row_by_label(r) != row_by_label(own));
    }
    assert!(moved > 0, "no checked row differs from the run's own");
}

#[test]
fn score_calibrates_as_the_gate_decides_and_merges_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (catalog, samples) = (catalog(dir.path()), batch(dir.path(), 600));
    let (cat, smp) = (catalog.to_str().unwrap(), samples.to_str().unwrap());
    let out = dir.path().join("decisions.jsonl");
    let summary = dir.path().join("summary.json");
    let score = |extra: &[&str], out: &Path| {
        let mut args = vec!["score", "--catalog", cat, "--samples", smp, "--out"];
        args.push(out.to_str().unwrap());
        args.extend_from_slice(extra);
        run(&args)
    };
    score(&["--summary-json", summary.to_str().unwrap()], &out);
    let s = read_json(&summary);
    let c = &s["calibration"];
    let decisions = read_lines(&out);

    // The counts: every labelled task, those without samples apart.
    let labelled = decisions.iter().filter(|d| d["label"].is_string()).count() as u64;
    let tasks =
        c["tasks"]["correct"].as_u64().unwrap() + c["tasks"]["hallucinated"].as_u64().unwrap();
    assert_eq!(tasks, labelled, "{c}");
    assert!(c["without_samples"].as_u64() > Some(0), "{c}");
    assert_eq!(
        s["by_label"]["correct"],
        row(c, "arg_reject", 0.2)["correct"]
    );

    // The gate's AUROC is the pairwise one over the decisions' own agreements.
    let gate = gate_agreements(&decisions);
    let auroc = c["auroc"].as_f64().unwrap();
    assert!((auroc - pairwise_auroc(&gate)).abs() < 1e-12, "{auroc}");
    assert!(0.5 < auroc && auroc < 1.0, "{auroc}");

    // The naive scorer's: its agreement counted here from the samples as written (one
    // text per sample: arguments and results together, as the naive scorer keys them).
    let mut naive = Vec::new();
    for line in std::fs::read_to_string(&samples).unwrap().lines() {
        let task: Value = serde_json::from_str(line).unwrap();
        let Some(label) = task["label"].as_str() else {
            continue;
        };
        let samples = task["samples"].as_array().unwrap();
        if samples.is_empty() {
            continue;
        }
        let mut plans: BTreeMap<String, u64> = BTreeMap::new();
        for s in samples {
            *plans.entry(s.to_string()).or_default() += 1;
        }
        let modal = plans.values().max().copied().unwrap();
        naive.push((label == "hallucinated", modal, samples.len() as u64));
    }
    let naive_auroc = c["naive_auroc"].as_f64().unwrap();
    assert!(
        (naive_auroc - pairwise_auroc(&naive)).abs() < 1e-12,
        "{naive_auroc}"
    );
    assert!(naive_auroc < auroc, "{naive_auroc} {auroc}");

    // The ROC curve runs from (0, 0) to (1, 1), one point per distinct agreement.
    let roc = c["roc"].as_array().unwrap();
    assert_eq!(roc.len(), c["agreements"].as_array().unwrap().len() + 1);
    assert_eq!(
        (roc[0]["fpr"].as_f64(), roc[0]["tpr"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    let last = roc.last().unwrap();
    assert_eq!(
        (last["fpr"].as_f64(), last["tpr"].as_f64()),
        (Some(1.0), Some(1.0))
    );

    // Each checked row is the gate run again at its thresholds.
    let again = dir.path().join("again.jsonl");
    rows_are_reruns(c, |flag, value| {
        score(&[flag, value], &again);
        read_lines(&again)
    });

    // Shards merged calibrate as the whole batch: the same block, count for count.
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| {
            let out = dir.path().join(format!("shard-{k}.jsonl"));
            score(&["--shard", &format!("{k}/2")], &out);
            out
        })
        .collect();
    let merged = dir.path().join("merged.json");
    let mut args = vec!["merge", "--out", "/dev/null", "--summary-json"];
    args.push(merged.to_str().unwrap());
    args.extend(shards.iter().map(|p| p.to_str().unwrap()));
    run(&args);
    assert_eq!(read_json(&merged)["calibration"], *c);
}

#[test]
fn eval_calibrates_the_demo_batch_as_the_gate_decides() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("demo.jsonl");
    let written = run(&[
        "demo",
        "--world",
        world().to_str().unwrap(),
        "--no-driver",
        "--tasks",
        "160",
        "--write-samples",
        samples.to_str().unwrap(),
    ]);
    assert!(samples.exists(), "{}", written.stderr);
    let catalog = repo().join("examples/seed-world/catalog.json");
    let epoch = dir.path().join("epoch.json");
    let (cat, smp, ep) = (
        catalog.to_str().unwrap(),
        samples.to_str().unwrap(),
        epoch.to_str().unwrap(),
    );
    run(&["epoch", "--catalog", cat, "--out", ep]);
    let out = dir.path().join("decisions.jsonl");
    let eval = |extra: &[&str], summary: Option<&Path>| {
        let mut args = vec!["eval", "--catalog", cat, "--samples", smp, "--epoch", ep];
        args.extend(["--out", out.to_str().unwrap()]);
        if let Some(s) = summary {
            args.extend(["--summary-json", s.to_str().unwrap()]);
        }
        args.extend_from_slice(extra);
        run(&args);
        read_lines(&out)
    };
    let summary = dir.path().join("summary.json");
    let decisions = eval(&[], Some(&summary));
    let s = read_json(&summary);
    let c = &s["calibration"];
    assert_eq!(
        c["tasks"]["correct"].as_u64().unwrap() + c["tasks"]["hallucinated"].as_u64().unwrap(),
        160,
        "{c}"
    );
    let auroc = c["auroc"].as_f64().unwrap();
    assert!(
        (auroc - pairwise_auroc(&gate_agreements(&decisions))).abs() < 1e-12,
        "{auroc}"
    );
    assert!(c["naive_auroc"].as_f64().is_some(), "{c}");
    // The run's own row is the run's decisions, by label.
    let own = c["sweep"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == true)
        .unwrap();
    assert_eq!(row_by_label(own), verdicts_by_label(&decisions));
    rows_are_reruns(c, |flag, value| eval(&[flag, value], None));
}
