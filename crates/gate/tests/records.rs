//! `plangate score` writes its records by hand (`plangate_gate::record`); these hold
//! them byte-equal to what serde_json writes for the same record, over generated tasks
//! on the seed world's catalog: every rule's shape of decision (malformed samples,
//! schema violations, unknown tools, floats of every size, strings that need escapes).
//! `tests/cases.rs` does the same over every case file.

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options};
use plangate_gate::json;
use plangate_gate::record;
use plangate_gate::seed::{self, EntryPoint, SeedOptions, SeedOutcome};
use plangate_gate::task::parse_task_line;
use proptest::prelude::*;
use serde_json::json;

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
fn seed_by_serde(task_id: &str, outcome: &SeedOutcome) -> String {
    match outcome {
        SeedOutcome::Decided { decision, samples } => json!({
            "task_id": task_id,
            "mode": "seed_compat",
            "decision": decision.decision,
            "arg_agreement": decision.arg_agreement,
            "result_agreement": decision.res_agreement,
            "n": samples,
        }),
        SeedOutcome::Refused { kind, message } => json!({
            "task_id": task_id,
            "mode": "seed_compat",
            "error": {"kind": kind.as_str(), "message": message},
        }),
    }
    .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn hand_written_records_are_serdes(line in line()) {
        let catalog = catalog();
        let task = parse_task_line(line.as_bytes()).unwrap();
        let d = decide::classify(
            &decide::prepare(&task, &catalog, None),
            &decide::tool_states(&catalog),
            &Options::default(),
        );
        prop_assert_eq!(record::decision(&d), serde_json::to_string(&d).unwrap());
        for entry in [EntryPoint::GateOrRaise, EntryPoint::ClassifyPlan] {
            let outcome = seed::judge(&task, &catalog, entry, &SeedOptions::default());
            prop_assert_eq!(
                record::seed(&task.task_id, &outcome),
                seed_by_serde(&task.task_id, &outcome)
            );
        }
    }

    /// Floats far from the agreements' usual few: exponents, tiny and huge values.
    #[test]
    fn floats_print_as_serde_prints_them(a in any::<f64>(), b in any::<f64>(), n in 0usize..1000) {
        let outcome = SeedOutcome::Decided {
            decision: seed::SeedDecision { decision: decide::Verdict::Defer, arg_agreement: a, res_agreement: b },
            samples: n,
        };
        prop_assert_eq!(record::seed("t", &outcome), seed_by_serde("t", &outcome));
    }
}
