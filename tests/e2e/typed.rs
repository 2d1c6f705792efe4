//! Typed component exports end to end, built from sandbox-tools/components: an error
//! that says "not found" in each way a WIT function can (an error variant's case, an
//! enum's case, the JSON error envelope as its payload) is the call's `not_found`, so a
//! consistent fabrication is a referential miss; and two interfaces of one short name
//! (`api` from two packages) become two tools, each with its own name, export and doc.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::eval::{Run, plangate};
use crate::exit;
use crate::tools::{build_tools, repo};

fn component(name: &str) -> PathBuf {
    build_tools();
    repo().join(format!(
        "sandbox-tools/target/wasm32-wasip2/release/{name}.wasm"
    ))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `plangate call` of one typed export, its report as JSON.
fn call(module: &Path, export: &str, args: Value) -> Value {
    let args = args.to_string();
    let run = plangate(&["call", s(module), "--export", export, "--args", &args]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    serde_json::from_str(run.stdout.trim()).expect("a JSON report")
}

/// `catalog --component` of `module` with its WIT, and what it wrote.
fn catalogue(dir: &Path, module: &Path, wit: &Path) -> (Run, Value) {
    let out = dir.join("raw.json");
    let run = plangate(&[
        "catalog",
        "--component",
        s(module),
        "--wit",
        s(wit),
        "--out",
        s(&out),
    ]);
    assert_eq!(run.code, exit::OK, "{}", run.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (run, doc)
}

const LOOKUPS: [&str; 3] = ["values.get-user", "values.find-user", "values.lookup-user"];

#[test]
fn a_typed_error_says_not_found_in_each_wit_shape() {
    let kinds = component("kinds_component");
    for tool in LOOKUPS {
        let missing = call(&kinds, tool, json!({"user-id": "u_999"}));
        assert_eq!(missing["exit_code"], 1, "{missing}");
        assert_eq!(
            missing["result"]["error"]["kind"], "not_found",
            "{tool}: {missing}"
        );
        let found = call(&kinds, tool, json!({"user-id": "u_1"}));
        assert_eq!(found["result"], "Ada", "{tool}: {found}");
        // Another error case is the tool's error, or the kind the envelope names.
        let denied = call(&kinds, tool, json!({"user-id": "u_0"}));
        let want = if tool == "values.lookup-user" {
            "denied"
        } else {
            "tool_error"
        };
        assert_eq!(denied["result"]["error"]["kind"], want, "{tool}: {denied}");
    }
    let missing = call(&kinds, "values.get-user", json!({"user-id": "u_999"}));
    assert_eq!(
        missing["result"]["error"]["message"], "no user u_999",
        "{missing}"
    );
}

/// Ten samples that invent the same id for a verified, deterministic, `must_exist`
/// parameter: each lookup answers `not_found`, so the plan is a referential miss; ten
/// that name a real user are accepted.
#[test]
fn a_consistent_fabrication_through_a_typed_export_is_not_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = component("kinds_component");
    let wit = repo().join("sandbox-tools/components/kinds/wit");
    let (_, mut doc) = catalogue(dir.path(), &kinds, &wit);
    let tools: Vec<Value> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| LOOKUPS.contains(&t["name"].as_str().unwrap()))
        .cloned()
        .map(|mut t| {
            t["deterministic"] = json!(true);
            t["probe"] = json!([{"user-id": "u_1"}]);
            t["parameters"]["properties"]["user-id"]["x-plangate"] = json!({"must_exist": true});
            t
        })
        .collect();
    assert_eq!(tools.len(), LOOKUPS.len(), "{doc}");
    doc["tools"] = Value::Array(tools);
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, doc.to_string()).unwrap();

    let task = |id: String, tool: &str, user: &str| {
        let sample = json!({"calls": [{"tool": tool, "arguments": {"user-id": user}}]});
        json!({"task_id": id, "samples": vec![sample; 10]}).to_string()
    };
    let mut lines = Vec::new();
    for tool in LOOKUPS {
        lines.push(task(format!("invents {tool}"), tool, "u_999"));
        lines.push(task(format!("reads {tool}"), tool, "u_2"));
    }
    let samples = dir.path().join("samples.jsonl");
    std::fs::write(&samples, lines.join("\n") + "\n").unwrap();
    let run = plangate(&["eval", "--catalog", s(&catalog), "--samples", s(&samples)]);
    assert_eq!(run.code, exit::REJECT, "{}", run.stderr);
    let d = run.lines();
    assert_eq!(d.len(), 2 * LOOKUPS.len(), "{}", run.stdout);
    for pair in d.chunks(2) {
        assert_eq!(pair[0]["decision"], "reject", "{}", pair[0]);
        assert_eq!(
            pair[0]["reasons"],
            json!(["referential_miss"]),
            "{}",
            pair[0]
        );
        assert_eq!(pair[1]["decision"], "accept", "{}", pair[1]);
    }
}

/// `api` from `plangate:alpha` and `api` from `plangate:beta`, each exporting `f`: two
/// tools, named by their whole names, each with its own doc, each calling its own `f`;
/// the short name alone is refused as ambiguous.
#[test]
fn interfaces_of_one_short_name_become_distinct_tools() {
    let dir = tempfile::tempdir().unwrap();
    let twins = component("twins_component");
    let wit = repo().join("sandbox-tools/components/twins/wit");
    let (run, mut doc) = catalogue(dir.path(), &twins, &wit);
    let alpha = "plangate:alpha/api@0.1.0.f";
    let beta = "plangate:beta/api@0.1.0.f";
    let entries: Vec<(&str, &str, &str)> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["export"].as_str().unwrap(),
                t["description"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            (alpha, alpha, "Reads a note."),
            (beta, beta, "Deletes everything.")
        ],
        "{doc}"
    );
    assert!(
        run.stderr.contains(alpha) && run.stderr.contains("same short name"),
        "{}",
        run.stderr
    );
    for t in doc["tools"].as_array_mut().unwrap() {
        t["deterministic"] = json!(true);
    }
    let catalog = dir.path().join("catalog.json");
    std::fs::write(&catalog, doc.to_string()).unwrap();
    let said = |tool: &str| {
        let run = plangate(&[
            "call",
            "--catalog",
            s(&catalog),
            "--tool",
            tool,
            "--args",
            "{}",
        ]);
        assert_eq!(run.code, exit::OK, "{}", run.stderr);
        let report: Value = serde_json::from_str(run.stdout.trim()).unwrap();
        report["result"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(said(alpha), "alpha: a note");
    assert_eq!(said(beta), "beta: everything deleted");
    // The short name names neither: refused, with both whole names.
    let run = plangate(&["call", s(&twins), "--export", "api.f", "--args", "{}"]);
    assert_ne!(run.code, exit::OK, "{}", run.stdout);
    assert!(
        run.stderr.contains("ambiguous") && run.stderr.contains(alpha) && run.stderr.contains(beta),
        "{}",
        run.stderr
    );
}
