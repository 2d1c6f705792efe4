//! Data-driven decision cases: each file in tests/cases/ is one rule or one
//! canonicalization hint, with the task and the tool states; `expect/NAME.json` beside it
//! holds the whole expected decision record (explanations included). Adding a case is
//! adding a file; `PLANGATE_UPDATE_CASES=1 cargo test -p plangate-gate --test cases`
//! writes every expectation as the decision now is (for a new case, or an intended
//! change, to review in the diff).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plangate_gate::canon::Resolver;
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, ToolState};
use plangate_gate::json::{self, Duplicates, Value};
use plangate_gate::record;
use plangate_gate::task;

struct Table(BTreeMap<String, BTreeMap<String, String>>);

impl Resolver for Table {
    fn resolve(&mut self, tool: &str, value: &Value) -> Option<Value> {
        let v = value.as_str()?;
        self.0.get(tool)?.get(v).map(|s| Value::String(s.clone()))
    }
}

fn load(path: &Path) -> Value {
    json::parse_with(&std::fs::read(path).unwrap(), Duplicates::Flag)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run_case(path: &Path) -> Result<(), String> {
    let case = load(path);
    let case = case.as_object().unwrap();
    let dir = path.parent().unwrap();
    let catalog_file = case.get("catalog").and_then(Value::as_str).unwrap();
    let catalog = Catalog::from_value(&load(&dir.join(catalog_file))).map_err(|e| e.to_string())?;
    let mut states = decide::tool_states(&catalog);
    if let Some(Value::Object(over)) = case.get("tool_states") {
        for (name, s) in over.iter() {
            let st: &mut ToolState = states.get_mut(name).ok_or(format!("no tool {name}"))?;
            let s = s.as_object().unwrap();
            if let Some(q) = s.get("quarantined").and_then(Value::as_bool) {
                st.quarantined = q;
            }
            if let Some(v) = s.get("verified").and_then(Value::as_bool) {
                st.verified = v;
            }
        }
    }
    let mut resolver = case.get("resolver").map(|r| {
        Table(
            r.as_object()
                .unwrap()
                .iter()
                .map(|(tool, m)| {
                    let m = m
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()));
                    (tool.clone(), m.collect())
                })
                .collect(),
        )
    });
    let t = task::task_from_value(case.get("task").unwrap()).map_err(|e| e.to_string())?;
    let prepared = decide::prepare(
        &t,
        &catalog,
        resolver.as_mut().map(|r| r as &mut dyn Resolver),
    );
    let d = decide::classify(&prepared, &states, &Options::default());
    // Phase two may classify a task read back from its spilled line (eval, merge): every
    // case decides the same from it.
    let back = decide::Prepared::from_line(&prepared.to_line()).map_err(|e| e.to_string())?;
    let again = decide::classify(&back, &states, &Options::default());
    if record::json(&again) != record::json(&d) {
        return Err(format!(
            "{}: the prepared line read back decides otherwise",
            path.display()
        ));
    }
    let got: serde_json::Value = serde_json::from_str(&record::json(&d)).unwrap();
    let expect_file = dir.join("expect").join(path.file_name().unwrap());
    // A case named for its verdict is held to it, before and beside its expectation: an
    // update of every expectation cannot flip `reject_...` to an accept unseen.
    if let Some(named) = verdict_in_name(path) {
        if got["decision"] != named {
            return Err(format!(
                "{}: named for {named}, decided {}",
                path.display(),
                got["decision"]
            ));
        }
        let want: Option<serde_json::Value> = std::fs::read(&expect_file)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(want) = want.filter(|w| w["decision"] != named) {
            return Err(format!(
                "{}: named for {named}, but its expectation {} says {}",
                path.display(),
                expect_file.display(),
                want["decision"]
            ));
        }
    }
    if std::env::var_os("PLANGATE_UPDATE_CASES").is_some() {
        // An intended change: the expectation takes the decision as it now is (review
        // the diff before committing it). The case itself is never rewritten.
        let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
        std::fs::write(&expect_file, text).map_err(|e| e.to_string())?;
        return Ok(());
    }
    // Read with serde_json, as written: the decision's numbers are doubles (`1.0`).
    let want: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&expect_file).map_err(|e| {
            format!(
                "{}: {e} (PLANGATE_UPDATE_CASES=1 writes it)",
                expect_file.display()
            )
        })?)
        .map_err(|e| e.to_string())?;
    if want == got {
        return Ok(());
    }
    // Name the fields that differ, so a failure reads at a glance.
    let (Some(w), Some(g)) = (want.as_object(), got.as_object()) else {
        return Err(format!("expected {want}, got {got}"));
    };
    let keys: std::collections::BTreeSet<&String> = w.keys().chain(g.keys()).collect();
    let diffs: Vec<String> = keys
        .into_iter()
        .filter(|k| w.get(*k) != g.get(*k))
        .map(|k| {
            format!(
                "{k}: expected {}, got {}",
                w.get(k).unwrap_or(&serde_json::Value::Null),
                g.get(k).unwrap_or(&serde_json::Value::Null)
            )
        })
        .collect();
    Err(diffs.join("\n  "))
}

/// The verdict a case's file name promises (`reject_...`, `accept_...`, `defer_...`).
fn verdict_in_name(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    ["accept", "reject", "defer"]
        .into_iter()
        .find(|v| name.starts_with(&format!("{v}_")))
}

#[test]
fn a_case_name_names_its_verdict() {
    assert_eq!(
        verdict_in_name(Path::new("cases/reject_x.json")),
        Some("reject")
    );
    assert_eq!(verdict_in_name(Path::new("cases/deferred.json")), None);
    assert_eq!(verdict_in_name(Path::new("cases/hint_x.json")), None);
}

#[test]
fn decision_cases() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && !p.file_name().unwrap().to_string_lossy().starts_with('_')
        })
        .collect();
    files.sort();
    assert!(
        files.len() >= 20,
        "expected the case files, found {}",
        files.len()
    );
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            run_case(f)
                .err()
                .map(|e| format!("{}: {e}", f.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The verdicts docs/design.md's table of reason codes gives each code (`defer or
/// reject`: both), by code, read from the table's rows.
fn design_reason_rows() -> BTreeMap<String, Vec<String>> {
    let design = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/design.md");
    let text = std::fs::read_to_string(&design).unwrap();
    let table = text
        .split("\n### Reason codes\n")
        .nth(1)
        .and_then(|rest| rest.split("\n#").next())
        .expect("docs/design.md has a section \"Reason codes\"");
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            let verdicts = cells.get(2)?.split(" or ").map(String::from).collect();
            Some((code.to_string(), verdicts))
        })
        .collect()
}

/// Whether a case file's stem is named after `verdict` and `code`: it starts with the
/// verdict, and the code's words follow in order (`accept_arguments_and_results_agree`
/// is named after both `arguments_agree` and `results_agree`).
fn named_after(stem: &str, verdict: &str, code: &str) -> bool {
    let Some(rest) = stem.strip_prefix(verdict).and_then(|r| r.strip_prefix('_')) else {
        return false;
    };
    let mut words = rest.split('_');
    code.split('_').all(|w| words.any(|x| x == w))
}

#[test]
fn a_case_is_named_after_its_verdict_and_code() {
    assert!(named_after(
        "reject_referential_miss_must_exist",
        "reject",
        "referential_miss"
    ));
    assert!(named_after(
        "accept_arguments_and_results_agree",
        "accept",
        "results_agree"
    ));
    assert!(!named_after(
        "accept_results_agree",
        "accept",
        "agree_results"
    ));
    assert!(!named_after("defer_tool_suspect", "reject", "tool_suspect"));
    assert!(!named_after(
        "defer_tool_suspected",
        "defer",
        "tool_suspect"
    ));
}

/// Every reason code has a row in docs/design.md's table and, for each verdict the row
/// gives it, a case file named after the verdict and the code whose expected record
/// decides so for that reason; the table has no code the enum lacks.
#[test]
fn every_reason_has_a_case_and_a_row() {
    let rows = design_reason_rows();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let stems: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let stem = p.file_stem()?.to_str()?.to_string();
            (p.extension()? == "json").then_some(stem)
        })
        .collect();
    let mut missing = Vec::new();
    for reason in decide::Reason::ALL {
        let code = reason.as_str();
        let Some(verdicts) = rows.get(code) else {
            missing.push(format!(
                "{code}: no row in docs/design.md, \"Reason codes\""
            ));
            continue;
        };
        for verdict in verdicts {
            let held = stems.iter().any(|stem| {
                named_after(stem, verdict, code) && {
                    let expect = dir.join("expect").join(format!("{stem}.json"));
                    let record: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(expect).unwrap()).unwrap();
                    record["decision"] == verdict.as_str()
                        && (record["reasons"].as_array().unwrap()).contains(&code.into())
                }
            });
            if !held {
                missing.push(format!(
                    "{code}: no case {verdict}_{code}*.json that {verdict}s for it"
                ));
            }
        }
    }
    let codes: Vec<&str> = decide::Reason::ALL.iter().map(|r| r.as_str()).collect();
    for code in rows.keys().filter(|c| !codes.contains(&c.as_str())) {
        missing.push(format!(
            "{code}: a row in docs/design.md, but no such Reason"
        ));
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
