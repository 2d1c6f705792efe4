//! Records are written through `plangate_gate::record`'s JSON sink, by hand. These hold
//! what it writes to what serde_json reads back and writes, over generated tasks on the
//! seed world's catalog: every rule's shape of decision (malformed samples, schema
//! violations, unknown tools, floats of every size, strings that need escapes) is valid
//! JSON that serde_json prints back byte for byte (keys in the record's order), each
//! string and float read back exactly.

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options};
use plangate_gate::json;
use plangate_gate::record;
use plangate_gate::seed::{self, EntryPoint, SeedOptions, SeedOutcome};
use plangate_gate::task::parse_task_line;
use proptest::prelude::*;

fn catalog() -> Catalog {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seed-world/catalog.json"
    );
    // Verified, so the rules past "unverified" fire too.
    let text = std::fs::read_to_string(path).unwrap().replace(
        "\"deterministic\": true",
        "\"deterministic\": true, \"verified\": true",
    );
    assert!(text.contains("\"verified\": true"));
    Catalog::from_value(&json::parse(&text).unwrap()).unwrap()
}

/// Strings that need every escape serde_json writes, and some that need none.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_0-9]{0,6}",
        "\\PC{0,6}",
        "[\u{0}-\u{1f}\"\\\\/\u{7f}\u{e9}\u{2028}\u{1F600}]{0,6}",
    ]
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A JSON value as text: numbers of every kind, strings, small objects and arrays.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        any::<i64>().prop_map(|i| i.to_string()),
        proptest::sample::select(vec!["0.5", "1.0", "-0.0", "1e21", "1e-7", "12.345", "5"])
            .prop_map(str::to_string),
        text().prop_map(|s| quoted(&s)),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3)
                .prop_map(|v| format!("[{}]", v.join(","))),
            proptest::collection::vec((text(), inner), 0..3).prop_map(|m| {
                let members: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", quoted(k)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

const TOOLS: &[&str] = &[
    "get_user",
    "get_order",
    "lookup_product",
    "read_file",
    "search_index",
    "get_current_time",
    "random_sample",
    "nope",
];

const PARAMS: &[&str] = &[
    "user_id",
    "order_id",
    "sku",
    "fields",
    "path",
    "query",
    "limit",
    "collection",
    "k",
];

/// One call: a tool of the pool, arguments mostly drawn from a few values (so samples
/// agree), sometimes odd (wrong types, unknown keys, a duplicate key, not an object, a
/// `$from`), and a result, an error or nothing.
fn call() -> impl Strategy<Value = String> {
    let few = proptest::sample::select(vec!["\"u_0001\"", "\"SKU-1001\"", "3", "\"a/./b\""]);
    let arg = (
        proptest::sample::select(PARAMS),
        prop_oneof![4 => few.prop_map(str::to_string), 1 => value()],
    );
    let args = prop_oneof![
        6 => proptest::collection::vec(arg, 0..3).prop_map(|m| {
            let members: Vec<String> = m.iter().map(|(k, v)| format!("{}:{v}", quoted(k))).collect();
            format!("{{{}}}", members.join(","))
        }),
        1 => value(),
        1 => Just(r#"{"k":1,"k":2}"#.to_string()),
        1 => Just(r#"{"user_id":{"$from":{"step":0,"pointer":"/id"}}}"#.to_string()),
    ];
    let outcome = prop_oneof![
        4 => proptest::sample::select(vec!["{\"n\":1}", "{\"n\":2}", "[1.5]"])
            .prop_map(|r| format!(",\"result\":{r}")),
        1 => value().prop_map(|r| format!(",\"result\":{r}")),
        1 => text().prop_map(|m| format!(r#","error":{{"kind":"not_found","message":{}}}"#, quoted(&m))),
        1 => Just(String::new()),
    ];
    (proptest::sample::select(TOOLS), args, outcome).prop_map(|(tool, args, outcome)| {
        format!(r#"{{"tool":"{tool}","arguments":{args}{outcome}}}"#)
    })
}

fn line() -> impl Strategy<Value = String> {
    let sample = proptest::collection::vec(call(), 0..3)
        .prop_map(|calls| format!("{{\"calls\":[{}]}}", calls.join(",")));
    let label = proptest::sample::select(vec![
        "",
        ",\"label\":\"correct\"",
        ",\"label\":\"hallucinated\"",
    ]);
    let epoch = proptest::sample::select(vec!["", ",\"epoch_fixed\":false"]);
    (
        text(),
        proptest::collection::vec(sample, 0..11),
        label,
        epoch,
    )
        .prop_map(|(id, samples, label, epoch)| {
            format!(
                "{{\"task_id\":{},\"samples\":[{}]{label}{epoch}}}",
                quoted(&format!("t{id}")),
                samples.join(",")
            )
        })
}

/// The `--seed-compat` record as `plangate score` wrote it through serde_json.
/// `text` read by serde_json and printed again: equal to `text` when the sink wrote
/// JSON as serde_json writes it (serde_json keeps sorted keys, so an object's keys must
/// come sorted or be compared in order by the caller).
fn reprinted(text: &str) -> Result<serde_json::Value, TestCaseError> {
    serde_json::from_str(text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn records_read_back_as_written(line in line()) {
        let catalog = catalog();
        let task = parse_task_line(line.as_bytes()).unwrap();
        let d = decide::classify(
            &decide::prepare(&task, &catalog, None),
            &decide::tool_states(&catalog),
            &Options::default(),
        );
        let text = record::json(&d);
        let v = reprinted(&text)?;
        prop_assert_eq!(v["task_id"].as_str(), Some(d.task_id.as_str()));
        prop_assert_eq!(v["decision"].as_str(), Some(d.verdict.as_str()));
        let explanation: Vec<&str> = v["explanation"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        prop_assert_eq!(explanation, d.explanation.iter().map(String::as_str).collect::<Vec<_>>());
        prop_assert_eq!(v["arg_agreement"]["value"].as_f64().map(f64::to_bits), Some(d.arg_agreement.value.to_bits()));
        let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        prop_assert_eq!(warnings, d.warnings.iter().map(String::as_str).collect::<Vec<_>>());
        for (m, back) in d.malformed.iter().zip(v["malformed"].as_array().unwrap()) {
            let problems: Vec<&str> = back["problems"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
            prop_assert_eq!(problems, m.problems.iter().map(String::as_str).collect::<Vec<_>>());
        }
        // The canonical arguments are written as their text, and read back as it.
        for (p, back) in d.modal_plan.iter().flatten().zip(v["modal_plan"].as_array().into_iter().flatten()) {
            let arguments: serde_json::Value = serde_json::from_str(&p.arguments).unwrap();
            prop_assert_eq!(&back["arguments"], &arguments);
        }
        for entry in [EntryPoint::GateOrRaise, EntryPoint::ClassifyPlan] {
            let outcome = seed::judge(&task, &catalog, entry, &SeedOptions::default());
            let text = record::json(&record::SeedRecord { task_id: &task.task_id, outcome: &outcome });
            // The seed's record has its keys sorted: serde_json prints it back as it is.
            prop_assert_eq!(reprinted(&text)?.to_string(), text);
        }
    }

    /// Floats far from the agreements' usual few: exponents, tiny and huge values.
    #[test]
    fn floats_read_back_exactly(a in any::<f64>(), b in any::<f64>(), n in 0usize..1000) {
        let outcome = SeedOutcome::Decided {
            decision: seed::SeedDecision { decision: decide::Verdict::Defer, arg_agreement: a, res_agreement: b },
            samples: n,
        };
        let text = record::json(&record::SeedRecord { task_id: "t", outcome: &outcome });
        let v = reprinted(&text)?;
        prop_assert_eq!(v.to_string(), text.clone());
        let back = |x: &serde_json::Value| x.as_f64().map(f64::to_bits);
        prop_assert_eq!(back(&v["arg_agreement"]), a.is_finite().then_some(a.to_bits()));
        prop_assert_eq!(back(&v["result_agreement"]), b.is_finite().then_some(b.to_bits()));

    }
}
