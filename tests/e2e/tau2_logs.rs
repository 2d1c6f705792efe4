//! Published tau2-bench results nobody here wrote, through `plangate score` as they are:
//! the cuts of two tau2-bench forks in tests/realworld/ (source, license and cut in each
//! NOTICE.md): four domains of students' own with one trial a task (`tau2-gemma`), and
//! grok models on tau2's airline domain with several trials a task (`tau2-grok`), each
//! file naming its agent's model. Every `not found` answer for a value nothing earlier
//! supplied is listed, by that model, and no value the user, an earlier result or the
//! model's earlier text supplied is; an independent reading of the files says the same.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::tools::repo;

/// The four domains, as the cut names their results files and catalogs.
const DOMAINS: [&str; 4] = ["fishtrader", "estaciondeservicio", "restaurante", "hotel"];
const MODEL: &str = "gemini/gemma-3-27b-it";

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/realworld/tau2-gemma").join(name)
}

fn grok(name: &str) -> PathBuf {
    repo().join("tests/realworld/tau2-grok").join(name)
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("file")).expect("JSON")
}

/// `plangate score` on one domain's results with `catalog`: the decision records and
/// the summary.
fn score(domain: &str, catalog: &Path, dir: &Path) -> (Vec<Value>, Value) {
    score_file(&fixture(&format!("{domain}.json")), catalog, dir, &[])
}

/// `plangate score` on a results file with `catalog` and `flags`.
fn score_file(results: &Path, catalog: &Path, dir: &Path, flags: &[&str]) -> (Vec<Value>, Value) {
    let name = results.file_stem().expect("a file").to_string_lossy();
    let (out, summary) = (
        dir.join(format!("{name}.jsonl")),
        dir.join(format!("{name}.summary.json")),
    );
    let run = Command::new(env!("CARGO_BIN_EXE_plangate"))
        .args(["score", "--catalog"])
        .arg(catalog)
        .arg("--samples")
        .arg(results)
        .arg("--out")
        .arg(&out)
        .arg("--summary-json")
        .arg(&summary)
        .args(flags)
        .output()
        .expect("plangate runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(matches!(run.status.code(), Some(0 | 1)), "{name}: {stderr}");
    assert!(stderr.contains("a tau2-bench results object"), "{stderr}");
    let records = std::fs::read_to_string(&out)
        .expect("decisions")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record is JSON"))
        .collect();
    (records, read(&summary))
}

/// Each listed reference: (task, tool, parameter, value).
fn listed(records: &[Value]) -> Vec<(String, String, String, String)> {
    let mut out = Vec::new();
    for r in records {
        for i in r["invented_references"]
            .as_array()
            .expect("every record lists them")
        {
            let s = |v: &Value| v.as_str().expect("a string").to_string();
            out.push((
                s(&r["task_id"]),
                s(&i["tool"]),
                s(&i["parameter"]),
                s(&i["value"]),
            ));
        }
    }
    out.sort();
    out
}

/// Every string in `v` with its path as records write it (`items[1].menu_item_id`) and
/// its key.
fn leaves(v: &Value, path: String, key: &str, out: &mut Vec<(String, String, String)>) {
    match v {
        Value::String(s) => out.push((path, key.to_string(), s.clone())),
        Value::Object(o) => {
            for (k, x) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaves(x, p, k, out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                leaves(x, format!("{path}[{i}]"), key, out);
            }
        }
        _ => {}
    }
}

/// The independent reading: for every tool message flagged an error that says `not
/// found`, the call it answers; its string arguments the error names (by value or key),
/// or else those whose key ends in `id` or `Id` or that `hinted` names (tool,
/// parameter); each looked for as text in every message before the one that made the
/// call. Returns (invented, supplied) as (task, tool, parameter, value).
type Found = Vec<(String, String, String, String)>;
fn read_by_hand(results: &Value, hinted: &[(&str, &str)]) -> (Found, Found) {
    let (mut invented, mut supplied) = (Vec::new(), Vec::new());
    for sim in results["simulations"].as_array().expect("simulations") {
        let msgs = sim["messages"].as_array().expect("messages");
        let task = sim["task_id"].as_str().expect("task id").to_string();
        for (k, m) in msgs.iter().enumerate() {
            let content = m["content"].as_str().unwrap_or_default();
            if m["role"] != "tool" || m["error"] != true || !content.contains("not found") {
                continue;
            }
            let (at, call) = (0..k)
                .rev()
                .find_map(|j| {
                    let calls = msgs[j]["tool_calls"].as_array()?;
                    Some((j, calls.iter().find(|c| c["id"] == m["id"])?.clone()))
                })
                .expect("the call a result answers");
            let tool = call["name"].as_str().expect("name").to_string();
            let before = serde_json::to_string(&msgs[..at]).unwrap()
                + &msgs[..at]
                    .iter()
                    .filter_map(|m| m["content"].as_str())
                    .collect::<String>();
            let mut all = Vec::new();
            leaves(&call["arguments"], String::new(), "", &mut all);
            all.retain(|(_, _, v)| !v.is_empty());
            let named: Vec<_> = (all.iter())
                .filter(|(_, key, v)| {
                    content.contains(v.as_str()) || content.contains(key.as_str())
                })
                .cloned()
                .collect();
            let chosen = if named.is_empty() {
                (all.into_iter())
                    .filter(|(_, key, _)| {
                        key.ends_with("id") || key.ends_with("Id") || hinted.contains(&(&tool, key))
                    })
                    .collect()
            } else {
                named
            };
            for (path, _, value) in chosen {
                let found = (task.clone(), tool.clone(), path, value.clone());
                if before.contains(&value) {
                    supplied.push(found);
                } else {
                    invented.push(found);
                }
            }
        }
    }
    invented.sort();
    (invented, supplied)
}

/// `plangate score` on a results file, held to the independent reading: the list is the
/// invented values it finds, no supplied value is listed, and the summary counts the
/// list. The records, the summary, the list and the supplied values.
fn checked(
    results: &Path,
    catalog: &Path,
    dir: &Path,
    flags: &[&str],
) -> (Vec<Value>, Value, Found, Found) {
    let name = results.display();
    let (records, summary) = score_file(results, catalog, dir, flags);
    let (want, supplied) = read_by_hand(&read(results), &[]);
    let got = listed(&records);
    assert_eq!(got, want, "{name}");
    for s in &supplied {
        assert!(
            !got.contains(s),
            "{name}: a supplied value is listed: {s:?}"
        );
    }
    let counted = &summary["invented_references"];
    assert_eq!(counted["references"], got.len(), "{name}: {counted}");
    (records, summary, got, supplied)
}

fn refs(list: &[(&str, &str, &str, &str)]) -> Found {
    list.iter()
        .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
        .collect()
}

/// The published files with their own catalogs: 3 invented references, all by the one
/// model the files name; 4 supplied values that got `not found` are not listed.
#[test]
fn a_tau2_fork_s_invented_references_are_the_unsupplied_ids_by_model() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut by_model: BTreeMap<String, u64> = BTreeMap::new();
    let mut supplied_all = Vec::new();
    let mut per_domain = BTreeMap::new();
    for domain in DOMAINS {
        let (_, summary, got, supplied) = checked(
            &fixture(&format!("{domain}.json")),
            &fixture(&format!("{domain}-catalog.json")),
            dir.path(),
            &[],
        );
        supplied_all.extend(supplied);
        let counted = &summary["invented_references"];
        for (m, n) in counted["by_model"].as_object().expect("by_model") {
            *by_model.entry(m.clone()).or_default() += n.as_u64().unwrap();
        }
        per_domain.insert(domain, got.len());
    }
    assert_eq!(
        per_domain,
        BTreeMap::from([
            ("estaciondeservicio", 0),
            ("fishtrader", 1),
            ("hotel", 0),
            ("restaurante", 2)
        ])
    );
    assert_eq!(by_model, BTreeMap::from([(MODEL.to_string(), 3)]));
    // The model made up a placeholder id; and named a menu item by its modifier group's
    // id, which the error names, so both parameters holding it are listed.
    let (fish, _) = score(
        "fishtrader",
        &fixture("fishtrader-catalog.json"),
        dir.path(),
    );
    assert_eq!(
        listed(&fish),
        refs(&[(
            "fishtrader_12_make_payment_success",
            "get_invoice_details",
            "invoice_id",
            "your_invoice_id"
        )])
    );
    let (resto, _) = score(
        "restaurante",
        &fixture("restaurante-catalog.json"),
        dir.path(),
    );
    let r = &resto[0]["invented_references"];
    assert_eq!(r[0]["parameter"], "items[1].menu_item_id", "{r}");
    assert_eq!(
        r[0]["error"], "Error: Menu item 'DRINK-001' not found",
        "{r}"
    );
    // The second call of the trial, in its second turn: a profile was made first, and
    // no menu was ever read before the order named its ids.
    assert_eq!(
        [&r[0]["sample"], &r[0]["turn"], &r[0]["call"]],
        [&json!(0), &json!(1), &json!(1)],
        "{r}"
    );
    // What the user typed is supplied, even when it is not an id at all.
    supplied_all.sort();
    assert_eq!(
        supplied_all
            .iter()
            .map(|s| s.3.as_str())
            .collect::<Vec<_>>(),
        [
            "payment_9900",
            "payment_9001",
            "PFIP-2022",
            "PFIP-2023",
            "BlueWave Foods LLC",
            "Matrimonial room from May 15th to May 17th, 2026",
        ]
    );
}

/// `ruc` and `id_item` are references by their meaning, not by their names: marked
/// `must_exist` in the catalog, the made-up values the tools did not find are listed
/// (`unknown` for a tax id, item ids guessed from product names), and the RUC the user
/// gave is not.
#[test]
fn must_exist_marks_the_references_a_name_does_not_tell() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut catalog = read(&fixture("estaciondeservicio-catalog.json"));
    let hinted = [
        ("search_client_by_ruc", "ruc"),
        ("register_order", "id_item"),
    ];
    for tool in catalog.as_array_mut().expect("a tools list") {
        let f = &mut tool["function"];
        for (name, parameter) in hinted {
            if f["name"] == name {
                f["parameters"]["properties"][parameter]["x-plangate"] =
                    json!({"must_exist": true});
            }
        }
    }
    let path = dir.path().join("hinted.json");
    std::fs::write(&path, catalog.to_string()).unwrap();
    let (records, summary) = score("estaciondeservicio", &path, dir.path());
    let (want, supplied) = read_by_hand(&read(&fixture("estaciondeservicio.json")), &hinted);
    assert_eq!(listed(&records), want);
    assert_eq!(
        want.iter().map(|w| w.3.as_str()).collect::<Vec<_>>(),
        ["gasolina_regular", "gasolina_premium", "unknown"]
    );
    assert!(
        supplied.iter().any(|s| s.3 == "20601234567"),
        "{supplied:?}"
    );
    assert_eq!(
        summary["invented_references"]["by_model"],
        json!({MODEL: 3})
    );
}

/// The grok set's files, as the cut names them, with the agent's model each names.
const GROK: [(&str, &str); 3] = [
    ("grok-4-fast-reasoning", "xai/grok-4-fast-reasoning"),
    ("grok-3-oct12", "xai/grok-3"),
    ("grok-3-oct13", "xai/grok-3"),
];

/// Each record's task and verdict with its reasons, as `task verdict reason,reason`.
fn verdicts(records: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = (records.iter())
        .map(|r| {
            let reasons: Vec<&str> = (r["reasons"].as_array().expect("reasons").iter())
                .map(|x| x.as_str().expect("a reason"))
                .collect();
            format!(
                "{} {} {}",
                r["task_id"].as_str().expect("task id"),
                r["decision"].as_str().expect("decision"),
                reasons.join(",")
            )
        })
        .collect();
    out.sort();
    out
}

/// grok models on tau2's airline domain, every trial of the tasks with a `not found`
/// answer: 2 invented references, one per model; the ids the user simulator made up and
/// gave (`BK7892`, `AA-247`, `AA456`) got `not found` and are not listed. With as many
/// samples as the tasks have trials, the two-trial tasks are decided by the rule
/// (`ambiguous_arguments`), not deferred for their number.
#[test]
fn multi_trial_grok_logs_list_the_unsupplied_values_by_model() {
    let dir = tempfile::tempdir().expect("temp dir");
    let catalog = grok("airline-catalog.json");
    let (mut by_model, mut by_tool) = (BTreeMap::new(), BTreeMap::new());
    let (mut all, mut supplied_all, mut decided) = (Vec::new(), Vec::new(), Vec::new());
    for (name, model) in GROK {
        let results = grok(&format!("{name}.json"));
        let (records, summary, _, supplied) =
            checked(&results, &catalog, dir.path(), &["--min-samples", "2"]);
        let counted = &summary["invented_references"];
        for (m, n) in counted["by_model"].as_object().expect("by_model") {
            assert_eq!(m, model, "{name}: the file names its model");
            *by_model.entry(m.clone()).or_insert(0) += n.as_u64().unwrap();
        }
        for (t, n) in counted["by_tool"].as_object().expect("by_tool") {
            *by_tool.entry(t.clone()).or_insert(0) += n.as_u64().unwrap();
        }
        all.extend(records.iter().flat_map(|r| {
            let refs = r["invented_references"].as_array().expect("a list").clone();
            refs.into_iter().map(|i| (r["task_id"].clone(), i))
        }));
        supplied_all.extend(supplied);
        decided.extend(verdicts(&records));
    }
    assert_eq!(
        by_model,
        BTreeMap::from([
            ("xai/grok-3".to_string(), 1),
            ("xai/grok-4-fast-reasoning".to_string(), 1)
        ])
    );
    assert_eq!(
        by_tool,
        BTreeMap::from([
            ("get_flight_status".to_string(), 1),
            ("update_reservation_flights".to_string(), 1)
        ])
    );
    // A card id nothing showed (the user's cards were read, this one is not among them),
    // and a date the user said as "October 5th", which the error names: exact text is
    // the rule, so a value reworded by the model counts as not supplied.
    let at = |(task, i): &(Value, Value)| {
        let task = task.as_str().expect("task id").to_string();
        (
            task,
            i["sample"].clone(),
            i["turn"].clone(),
            i["call"].clone(),
        )
    };
    let values: Vec<(String, &str, &str, &str)> = (all.iter())
        .map(|(task, i)| {
            (
                task.as_str().unwrap().to_string(),
                i["tool"].as_str().unwrap(),
                i["parameter"].as_str().unwrap(),
                i["value"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        values,
        [
            ("5".to_string(), "get_flight_status", "date", "2024-10-05"),
            (
                "30".to_string(),
                "update_reservation_flights",
                "payment_id",
                "credit_card_5634230"
            ),
        ]
    );
    assert_eq!(
        all.iter().map(at).collect::<Vec<_>>(),
        [
            ("5".to_string(), json!(0), json!(1), json!(5)),
            ("30".to_string(), json!(0), json!(3), json!(3)),
        ]
    );
    assert_eq!(all[1].1["error"], "Error: Payment method not found");
    // Ids the user simulator made up and the user gave are supplied, whatever the tool
    // answered.
    let given: Vec<&str> = supplied_all.iter().map(|s| s.3.as_str()).collect();
    for id in ["BK7892", "AA-247", "AA456", "HAT045", "HAT039", "1N99U6"] {
        assert!(given.contains(&id), "{id} not read as supplied: {given:?}");
    }
    assert_eq!(
        decided,
        [
            "4 defer ambiguous_arguments",
            "5 defer ambiguous_arguments",
            "27 defer insufficient_samples",
            "30 defer insufficient_samples",
        ]
    );
}
