//! Data-driven decision cases: each file in tests/cases/ is one rule or one
//! canonicalization hint, with the task, the tool states and the expected verdict.
//! Adding a case is adding a file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plangate_gate::canon::Resolver;
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, ToolState};
use plangate_gate::json::{self, Duplicates, Value};
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
    let got = serde_json::to_value(&d).unwrap();
    let expect = case.get("expect").unwrap().as_object().unwrap();
    let check = |key: &str, got: &serde_json::Value| -> Result<(), String> {
        if let Some(want) = expect.get(key) {
            let want: serde_json::Value = serde_json::from_str(&want.to_string()).unwrap();
            if &want != got {
                return Err(format!("{key}: expected {want}, got {got}"));
            }
        }
        Ok(())
    };
    check("decision", &got["decision"])?;
    check("reasons", &got["reasons"])?;
    check("arg_count", &got["arg_agreement"]["count"])?;
    check(
        "result_count",
        &got["result_agreement"]
            .get("count")
            .cloned()
            .unwrap_or(serde_json::Value::Null),
    )?;
    // Intervals are Wilson's arithmetic on the counts, checked in `stats`; a case names
    // the counts.
    let mut paths = got["divergent_paths"].clone();
    for p in paths.as_array_mut().into_iter().flatten() {
        p["agreement"]["interval"] = serde_json::Value::Null;
    }
    check("divergent_paths", &paths)?;
    check("schema_violations", &got["schema_violations"])?;
    check(
        "schema_violation_count",
        &serde_json::json!(d.schema_violations.len()),
    )?;
    check("first_divergent_step", &got["first_divergent_step"])?;
    check("suspect_tools", &got["suspect_tools"])?;
    check("malformed_count", &serde_json::json!(d.malformed.len()))?;
    if let Some(w) = expect.get("explanation_contains").and_then(Value::as_str)
        && !d.explanation.iter().any(|x| x.contains(w))
    {
        return Err(format!("explanation {:?} lacks {w:?}", d.explanation));
    }
    if let Some(w) = expect.get("warnings_contain").and_then(Value::as_str)
        && !d.warnings.iter().any(|x| x.contains(w))
    {
        return Err(format!("warnings {:?} lack {w:?}", d.warnings));
    }
    Ok(())
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
