//! Shards and `plangate merge`: a batch run whole and as shards decides alike (and
//! draws the same page), a tool quarantined in one shard defers the other shards'
//! rejects on it, and shards that are not parts of one batch are refused.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::eval::{Run, catalog_copy, plangate, read_json, seed_catalog};
use crate::exit;
use crate::page::{content, content_but_naive};

/// `plangate eval` with `args` after the catalog and samples.
fn eval(catalog: &Path, samples: &Path, args: &[&OsStr]) -> Run {
    let mut all: Vec<&OsStr> = vec![
        "eval".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
    ];
    all.extend_from_slice(args);
    plangate(&all)
}

fn pin(dir: &Path, catalog: &Path) -> PathBuf {
    let epoch = dir.join("epoch.json");
    let run = plangate(&[
        "epoch".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--out".as_ref(),
        epoch.as_os_str(),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    epoch
}

/// Runs shard k/m of the batch; returns its --out.
fn shard(dir: &Path, catalog: &Path, samples: &Path, epoch: &Path, k: usize, m: usize) -> PathBuf {
    let out = dir.join(format!("shard-{k}.jsonl"));
    let spec = format!("{k}/{m}");
    let run = eval(
        catalog,
        samples,
        &[
            "--epoch".as_ref(),
            epoch.as_os_str(),
            "--shard".as_ref(),
            spec.as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ],
    );
    assert!(
        matches!(run.code, exit::OK | exit::REJECT | exit::USAGE),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("in other shards"), "{}", run.stderr);
    out
}

/// The demo's generated batch of `tasks` tasks (live state still), in `dir`.
pub(crate) fn demo_batch(dir: &Path, tasks: usize) -> PathBuf {
    let samples = dir.join("batch.jsonl");
    let world = crate::tools::repo().join("examples/seed-world");
    let tasks = tasks.to_string();
    let run = plangate(&[
        "demo".as_ref(),
        "--world".as_ref(),
        world.as_os_str(),
        "--tasks".as_ref(),
        tasks.as_ref(),
        "--no-driver".as_ref(),
        "--retry-deferred".as_ref(),
        "0".as_ref(),
        "--write-samples".as_ref(),
        samples.as_os_str(),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    samples
}

/// The whole batch in `epoch`, decisions to `out`.
pub(crate) fn whole_run(
    catalog: &Path,
    samples: &Path,
    epoch: &Path,
    out: &Path,
    extra: &[&OsStr],
) -> Run {
    let mut args: Vec<&OsStr> = vec![
        "--epoch".as_ref(),
        epoch.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ];
    args.extend_from_slice(extra);
    eval(catalog, samples, &args)
}

/// `json` sealed as a first journal or evidence line is (plangate_harness::Chain):
/// its JSON, a space, and the first 16 bytes of SHA-256 over 16 zero bytes and it.
fn sealed(json: &str) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update([0u8; 16]);
    h.update(json.as_bytes());
    let hex: String = h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{json} {hex}")
}

fn merge(shards: &[PathBuf], extra: &[&OsStr]) -> Run {
    let mut args: Vec<&OsStr> = vec!["merge".as_ref()];
    args.extend_from_slice(extra);
    args.extend(shards.iter().map(|p| p.as_os_str()));
    plangate(&args)
}

#[test]
fn three_shards_merged_decide_byte_for_byte_as_the_whole_run() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let samples = demo_batch(d, 300);
    // A bad line with an id, one without, and a blank line: each reported once.
    let mut text = std::fs::read_to_string(&samples).expect("batch");
    text.push_str("{\"task_id\": \"broken\", \"samples\": 3}\nnot json\n\n");
    std::fs::write(&samples, text).expect("write batch");
    let catalog = seed_catalog();
    let epoch = pin(d, &catalog);
    let outputs = |name: &str| {
        ["jsonl", "health.json", "xml", "html"].map(|ext| d.join(format!("{name}.{ext}")))
    };
    let [whole, whole_health, whole_junit, whole_page] = outputs("whole");
    let run = whole_run(
        &catalog,
        &samples,
        &epoch,
        &whole,
        &[
            "--tool-health".as_ref(),
            whole_health.as_os_str(),
            "--junit".as_ref(),
            whole_junit.as_os_str(),
            "--html".as_ref(),
            whole_page.as_os_str(),
        ],
    );
    assert_eq!(run.code, exit::USAGE, "bad lines: {}", run.stderr);
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| shard(d, &catalog, &samples, &epoch, k, 3))
        .collect();
    let [merged, merged_health, merged_junit, merged_page] = outputs("merged");
    let run = merge(
        &[shards[2].clone(), shards[0].clone(), shards[1].clone()],
        &[
            "--out".as_ref(),
            merged.as_os_str(),
            "--tool-health".as_ref(),
            merged_health.as_os_str(),
            "--junit".as_ref(),
            merged_junit.as_os_str(),
            "--html".as_ref(),
            merged_page.as_os_str(),
        ],
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("cannot be seen"), "{}", run.stderr);
    for (a, b) in [
        (&whole, &merged),
        (&whole_health, &merged_health),
        (&whole_junit, &merged_junit),
    ] {
        let (a_bytes, b_bytes) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
        assert!(
            a_bytes == b_bytes,
            "{} and {} differ",
            a.display(),
            b.display()
        );
    }
    // The merged page is the whole run's, but for the command and its timings.
    let (whole_page, merged_page) = (
        std::fs::read_to_string(&whole_page).unwrap(),
        std::fs::read_to_string(&merged_page).unwrap(),
    );
    assert_eq!(
        content_but_naive(&whole_page),
        content_but_naive(&merged_page)
    );
    assert!(merged_page.contains("<section id=\"health\">"));
    let lines = std::fs::read_to_string(&merged).unwrap();
    assert_eq!(lines.lines().count(), 302, "300 decisions and 2 bad lines");
    // Each shard decided only its own part.
    let counts: Vec<usize> = shards
        .iter()
        .map(|s| std::fs::read_to_string(s).unwrap().lines().count())
        .collect();
    assert_eq!(counts.iter().sum::<usize>(), 302, "{counts:?}");
    assert!(counts.iter().all(|&c| c > 50), "{counts:?}");
}

/// A task id of shard `k` of `m`, by the documented hash (SHA-256's first 8 bytes).
fn id_in_shard(prefix: &str, k: u64, m: u64) -> String {
    (0..)
        .map(|i| format!("{prefix}-{i}"))
        .find(|id| {
            let d = Sha256::digest(id.as_bytes());
            u64::from_be_bytes(d[..8].try_into().unwrap()) % m + 1 == k
        })
        .expect("an id")
}

fn random_sample_task(id: &str, ks: &[u64]) -> Value {
    let samples: Vec<Value> = ks
        .iter()
        .map(|k| {
            json!({"calls": [{"tool": "random_sample",
                              "arguments": {"collection": "users", "k": k}}]})
        })
        .collect();
    json!({"task_id": id, "samples": samples})
}

#[test]
fn a_tool_quarantined_in_one_shard_turns_another_shards_reject_into_a_defer() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    // random_sample reads live randomness but is declared deterministic, with no probe
    // arguments: each shard probes it with its own first call.
    let catalog = catalog_copy(d, |tools| {
        let t = tools.get_mut("random_sample").expect("random_sample");
        t["deterministic"] = Value::Bool(true);
        t["probe"] = json!([]);
    });
    // Shard 1: five samples draw 5 users: the answers differ (probe drift, witnesses).
    let drawn = id_in_shard("drawn", 1, 2);
    // Shard 2: k past the population is a deterministic error, so its probe passes and
    // every call is distinct: no witness. Ten samples, ten values of k: fabricated.
    let fabricated = id_in_shard("fabricated", 2, 2);
    let ks: Vec<u64> = (100_000..100_010).collect();
    let samples = d.join("batch.jsonl");
    std::fs::write(
        &samples,
        format!(
            "{}\n{}\n",
            random_sample_task(&fabricated, &ks),
            random_sample_task(&drawn, &[5; 5])
        ),
    )
    .unwrap();
    let epoch = pin(d, &catalog);
    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| shard(d, &catalog, &samples, &epoch, k, 2))
        .collect();
    let decision = |file: &Path, id: &str| -> Value {
        std::fs::read_to_string(file)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["task_id"] == id)
            .unwrap_or_else(|| panic!("no decision for {id} in {}", file.display()))
    };
    // Alone, shard 2 sees a verified tool and a located fabrication.
    let alone = decision(&shards[1], &fabricated);
    assert_eq!(alone["decision"], "reject", "{alone}");
    let merged = d.join("merged.jsonl");
    let health = d.join("health.json");
    let run = merge(
        &shards,
        &[
            "--out".as_ref(),
            merged.as_os_str(),
            "--tool-health".as_ref(),
            health.as_os_str(),
        ],
    );
    assert_eq!(
        run.code,
        exit::OK,
        "nothing rejected once merged: {}",
        run.stderr
    );
    let after = decision(&merged, &fabricated);
    assert_eq!(after["decision"], "defer", "{after}");
    assert_eq!(after["reasons"], json!(["tool_quarantined"]), "{after}");
    let h: Value = serde_json::from_slice(&std::fs::read(&health).unwrap()).unwrap();
    let tool = h["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "random_sample")
        .unwrap();
    assert_eq!(tool["quarantined"], true, "{tool}");
    // The whole batch run at once decides the same.
    let whole = d.join("whole.jsonl");
    let run = whole_run(&catalog, &samples, &epoch, &whole, &[]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert_eq!(
        std::fs::read(&whole).unwrap(),
        std::fs::read(&merged).unwrap()
    );
}

#[test]
fn shards_that_are_not_one_batch_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let catalog = seed_catalog();
    let samples = crate::eval::cases().join("plans.jsonl");
    let epoch = pin(d, &catalog);
    let one = shard(d, &catalog, &samples, &epoch, 1, 2);
    let two = shard(d, &catalog, &samples, &epoch, 2, 2);
    let refused = |shards: &[PathBuf], words: &[&str]| {
        let run = merge(shards, &[]);
        assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
        for w in words {
            assert!(run.stderr.contains(w), "{w:?} not in: {}", run.stderr);
        }
    };
    refused(std::slice::from_ref(&one), &["2/2", "missing"]);
    refused(&[one.clone(), one.clone()], &["both shard 1/2"]);
    // Another epoch: shard 2 run again under a second seed.
    let other_dir = d.join("other");
    std::fs::create_dir(&other_dir).unwrap();
    let other_epoch = other_dir.join("epoch.json");
    let run = plangate(&[
        "epoch".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--seed".as_ref(),
        "7".as_ref(),
        "--out".as_ref(),
        other_epoch.as_os_str(),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let two_elsewhere = shard(&other_dir, &catalog, &samples, &other_epoch, 2, 2);
    refused(&[one.clone(), two_elsewhere], &["epochs differ"]);
    // Other limits per call, and thresholds spelled otherwise but equal.
    let run_two = |dir: &Path, extra: &[&str]| {
        std::fs::create_dir_all(dir).unwrap();
        let out = dir.join("shard-2.jsonl");
        let mut args: Vec<&OsStr> = vec![
            "--epoch".as_ref(),
            epoch.as_os_str(),
            "--shard".as_ref(),
            "2/2".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ];
        args.extend(extra.iter().map(OsStr::new));
        let run = eval(&catalog, &samples, &args);
        assert!(
            matches!(run.code, exit::OK | exit::REJECT | exit::USAGE),
            "{}",
            run.stderr
        );
        out
    };
    let two_fuel = run_two(&d.join("fuel"), &["--fuel", "1000000"]);
    refused(&[one.clone(), two_fuel], &["limits per call differ"]);
    let two_spelled = run_two(&d.join("spelled"), &["--arg-accept", "0.8"]);
    let run = merge(&[one.clone(), two_spelled], &[]);
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "0.8 is 0.80: {}",
        run.stderr
    );
    // Entries out of input order are refused, naming the file and the entry, and a
    // failed merge leaves an earlier --out as it was.
    let kept = d.join("kept.jsonl");
    std::fs::write(&kept, "earlier\n").unwrap();
    let evidence_one = PathBuf::from(format!("{}.evidence", one.display()));
    let text = std::fs::read_to_string(&evidence_one).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "a header and two entries");
    lines.swap(1, 2);
    std::fs::write(&evidence_one, lines.join("\n") + "\n").unwrap();
    let run = merge(
        &[one.clone(), two.clone()],
        &["--out".as_ref(), kept.as_os_str()],
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("shard-1.jsonl.evidence: its entries are damaged"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "earlier\n");
    // Cut short: refused before merge prints a single record to stdout.
    std::fs::write(&evidence_one, &text[..text.len() - text.len() / 3]).unwrap();
    let run = merge(&[one.clone(), two.clone()], &[]);
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(
        run.stderr.contains("the file was cut or grown"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "nothing printed: {}", run.stdout);
    // A header edited (a tool's book, a threshold): its seal no longer holds.
    std::fs::write(
        &evidence_one,
        text.replacen("\"arg_accept\":\"0.8\"", "\"arg_accept\":\"0.5\"", 1),
    )
    .unwrap();
    refused(&[one.clone(), two.clone()], &["line 1 is damaged"]);
    std::fs::write(&evidence_one, text).unwrap();
    // A shard probed more often can quarantine what a shorter probe verifies.
    let two_probed = run_two(&d.join("probed"), &["--probe-runs", "3"]);
    refused(
        &[one.clone(), two_probed],
        &["--probe-runs differ (2 vs 3)"],
    );
    // A file that is no shard's --out, and evidence of another format version.
    refused(&[one.clone(), samples.clone()], &["no shard evidence"]);
    // Evidence of another format version: named as such, sealed or not (the first
    // format wrote its header without a seal).
    let evidence = PathBuf::from(format!("{}.evidence", two.display()));
    let text = std::fs::read_to_string(&evidence).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let unsealed = header[..header.len() - 33].replacen("\"version\":3", "\"version\":1", 1);
    std::fs::write(&evidence, format!("{unsealed}\n{rest}")).unwrap();
    refused(&[one.clone(), two.clone()], &["version", "format 1"]);
    let newer = header[..header.len() - 33].replacen("\"version\":3", "\"version\":99", 1);
    std::fs::write(&evidence, format!("{}\n{rest}", sealed(&newer))).unwrap();
    refused(&[one.clone(), two.clone()], &["version", "format 99"]);
    // And a shard run without one epoch to replay is refused before any work.
    let run = eval(
        &catalog,
        &samples,
        &[
            "--shard".as_ref(),
            "1/2".as_ref(),
            "--out".as_ref(),
            d.join("x.jsonl").as_os_str(),
        ],
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert!(run.stderr.contains("--epoch"), "{}", run.stderr);
}

#[test]
fn score_shards_merged_write_the_whole_scores_decisions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let (catalog, samples) = (d.join("catalog.json"), d.join("tasks.jsonl"));
    let generated = std::process::Command::new("python3")
        .arg(crate::tools::repo().join("scripts/bench.d/gen_tasks.py"))
        .args(["--format", "plangate", "--count", "600", "--catalog-out"])
        .arg(&catalog)
        .output()
        .expect("python3 runs the generator");
    assert!(generated.status.success());
    let mut text = generated.stdout;
    text.extend_from_slice(b"not json\n\n");
    std::fs::write(&samples, text).unwrap();
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
    let (whole, whole_page) = (d.join("whole.jsonl"), d.join("whole.html"));
    assert_eq!(
        score(&[
            "--out".as_ref(),
            whole.as_os_str(),
            "--html".as_ref(),
            whole_page.as_os_str()
        ])
        .code,
        exit::USAGE
    );
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| {
            let out = d.join(format!("s{k}.jsonl"));
            let spec = format!("{k}/3");
            let run = score(&[
                "--shard".as_ref(),
                spec.as_ref(),
                "--out".as_ref(),
                out.as_os_str(),
            ]);
            assert!(run.stderr.contains("in other shards"), "{}", run.stderr);
            out
        })
        .collect();
    let (merged, merged_page) = (d.join("merged.jsonl"), d.join("merged.html"));
    let run = merge(
        &shards,
        &[
            "--out".as_ref(),
            merged.as_os_str(),
            "--html".as_ref(),
            merged_page.as_os_str(),
        ],
    );
    assert_eq!(run.code, exit::USAGE, "{}", run.stderr);
    assert_eq!(
        std::fs::read(&whole).unwrap(),
        std::fs::read(&merged).unwrap()
    );
    // Recorded results: the merged page has no tool health either, and is the whole's.
    let (whole_page, merged_page) = (
        std::fs::read_to_string(&whole_page).unwrap(),
        std::fs::read_to_string(&merged_page).unwrap(),
    );
    assert_eq!(content(&whole_page), content(&merged_page));
    assert!(!merged_page.contains("<section id=\"health\">"));
    assert!(merged_page.contains("<table id=\"notable-scattered\""));
    // The seed's rule is no rule merge decides by.
    let x = d.join("x.jsonl");
    let run = score(&[
        "--shard".as_ref(),
        "1/2".as_ref(),
        "--seed-compat".as_ref(),
        "--out".as_ref(),
        x.as_os_str(),
    ]);
    assert_eq!(run.code, exit::USAGE);
    assert!(run.stderr.contains("--seed-compat"), "{}", run.stderr);
}

/// A tau2-bench results file names its agent's model: `score`, `eval` and `merge` count
/// its invented references alike, by tool and by that model. Two of its five trials ask
/// `get_user` for an id nobody gave (`u_48213`, `u_0999`); a third asks for one the user
/// typed (`u_77777`), which is never listed. The two inventing tasks fall in different
/// shards of two (`lookup-a` in 2/2, `lookup-b` in 1/2), so merge adds up both shards.
#[test]
fn score_eval_and_merge_count_invented_references_by_model_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let samples = crate::eval::cases().join("tau2-by-model.json");
    let catalog = seed_catalog();
    let invented = |summary: &Path| read_json(summary)["invented_references"].clone();
    let want = json!({
        "references": 2, "tasks": 2, "samples": 2,
        "by_tool": {"get_user": 2}, "by_model": {"example/agent-7b": 2},
    });

    let scored = d.join("score-summary.json");
    let run = plangate(&[
        "score".as_ref(),
        "--catalog".as_ref(),
        catalog.as_os_str(),
        "--samples".as_ref(),
        samples.as_os_str(),
        "--summary-json".as_ref(),
        scored.as_os_str(),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    assert_eq!(invented(&scored), want);

    let epoch = pin(d, &catalog);
    let evaluated = d.join("eval-summary.json");
    let run = eval(
        &catalog,
        &samples,
        &[
            "--epoch".as_ref(),
            epoch.as_os_str(),
            "--summary-json".as_ref(),
            evaluated.as_os_str(),
        ],
    );
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{}",
        run.stderr
    );
    assert_eq!(invented(&evaluated), want, "{}", run.stderr);
    assert!(
        run.stderr.contains("by model: example/agent-7b 2"),
        "{}",
        run.stderr
    );

    let shards: Vec<PathBuf> = (1..=2)
        .map(|k| shard(d, &catalog, &samples, &epoch, k, 2))
        .collect();
    let merged = d.join("merge-summary.json");
    let run = merge(&shards, &["--summary-json".as_ref(), merged.as_os_str()]);
    assert!(
        matches!(run.code, exit::OK | exit::REJECT),
        "{}",
        run.stderr
    );
    assert_eq!(invented(&merged), want, "{}", run.stderr);
}
