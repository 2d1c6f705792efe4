//! What one task costs the gate, so `plangate score`'s throughput claims have a per-task
//! figure under them: reading a samples line, canonicalizing it (`decide::prepare`) and
//! classifying it (`decide::classify`), on a realistic task over the seed-world catalog;
//! and the strict JSON reader and RFC 8785 writer alone, which everything else sits on.
//!
//! `cargo bench -p plangate-gate --bench gate`. Per-task time is criterion's `time`
//! (throughput is reported in tasks/s).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented function"
)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, ToolState};
use plangate_gate::{jcs, json, task};

/// The seed world's catalog, as `plangate score` would read it: every hint kind the
/// canonicalizer knows (path, casefold, trim, unordered, id, defaults) is in it.
fn catalog() -> Catalog {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seed-world/catalog.json"
    );
    let bytes = std::fs::read(path).expect("examples/seed-world/catalog.json");
    let doc = json::parse_with(&bytes, json::Duplicates::Refuse).expect("catalog parses");
    Catalog::from_value(&doc).expect("catalog is valid")
}

/// Scoring treats a catalog's `verified` as given; the seed-world catalog records none,
/// so mark every declared-deterministic tool verified, which lets every rule fire.
fn states(catalog: &Catalog) -> BTreeMap<String, ToolState> {
    let mut s = decide::tool_states(catalog);
    for st in s.values_mut() {
        st.verified = st.declared_deterministic;
    }
    s
}

/// A three-step plan (read_file -> lookup_product -> convert_currency) sampled `n` times,
/// with the spelling noise a model really produces: equivalent paths, SKU case and
/// padding, field lists in another order, an omitted default. Most samples agree after
/// canonicalization; every fifth names another SKU, so divergent paths are computed too.
fn multi_step_line(n: usize) -> String {
    let paths = [
        "/world/files/docs/refund-policy.md",
        "files/docs/refund-policy.md",
        "/world/files/./docs//refund-policy.md",
        "/world/files/notes/../docs/refund-policy.md/",
    ];
    let skus = [" sku-1010", "SKU-1010", "Sku-1010 ", "sku-1010"];
    let fields = [
        r#"["price_cents","name","currency"]"#,
        r#"["name","currency","price_cents"]"#,
        r#"["currency","price_cents","name"]"#,
    ];
    let content = "Refunds are issued within 30 days of purchase. ".repeat(8);
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let (sku, name, price) = if i % 5 == 4 {
            (
                "SKU-1011",
                "Compilers: Principles, Techniques, and Tools",
                8999,
            )
        } else {
            (skus[i % skus.len()], "The C Programming Language", 4599)
        };
        let read_args = if i % 3 == 0 {
            format!(r#"{{"path":"{}"}}"#, paths[i % paths.len()])
        } else {
            format!(
                r#"{{"max_bytes":65536,"path":"{}"}}"#,
                paths[i % paths.len()]
            )
        };
        samples.push(format!(
            concat!(
                r#"{{"calls":["#,
                r#"{{"tool":"read_file","arguments":{read},"result":{{"path":"/world/files/docs/refund-policy.md","size":{size},"truncated":false,"content":"{content}"}}}},"#,
                r#"{{"tool":"lookup_product","arguments":{{"sku":"{sku}","fields":{fields}}},"result":{{"currency":"USD","name":"{name}","price_cents":{price}}}}},"#,
                r#"{{"tool":"convert_currency","arguments":{{"amount":{amount},"from":"usd","to":" EUR"}},"result":{{"amount":{amount},"as_of":"2026-11-05","converted":{conv},"from":"USD","rate":0.9212,"to":"EUR"}}}}"#,
                r#"]}}"#
            ),
            read = read_args,
            size = content.len(),
            content = content,
            sku = sku,
            fields = fields[i % fields.len()],
            name = name,
            price = price,
            amount = price as f64 / 100.0,
            conv = (price as f64 / 100.0 * 0.9212 * 100.0).round() / 100.0,
        ));
    }
    format!(
        r#"{{"task_id":"bench-multi","label":"correct","samples":[{}]}}"#,
        samples.join(",")
    )
}

/// The shape `scripts/bench` scores by the 100,000: one `get_user` call per sample.
fn single_call_line(n: usize) -> String {
    let samples: Vec<String> = (0..n)
        .map(|i| {
            let id = if i % 7 == 6 { "u_0031" } else { "u_0001" };
            format!(
                r#"{{"calls":[{{"tool":"get_user","arguments":{{"user_id":"{id}"}},"result":{{"id":"{id}","name":"Ada Lovelace","email":"ada.lovelace@example.com","handle":"ada","country":"GB","created":"2020-11-26"}}}}]}}"#
            )
        })
        .collect();
    format!(
        r#"{{"task_id":"bench-single","samples":[{}]}}"#,
        samples.join(",")
    )
}

/// `line` with the fields an agent log carries beside plangate's, at the task, each
/// sample and each call: the one-pass reader passes them over and notes them.
fn with_foreign_fields(line: &str) -> String {
    line.replacen(
        r#"{"task_id""#,
        r#"{"trial":3,"reward":0.5,"info":{"steps":[1,2]},"task_id""#,
        1,
    )
    .replace(r#"{"calls""#, r#"{"id":"s-1","model":"m-1","calls""#)
    .replace(
        r#"{"tool""#,
        r#"{"id":"c-1","timestamp":"2025-01-01T00:00:00Z","tool""#,
    )
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    let states = states(&catalog);
    let opts = Options::default();

    for (name, line) in [
        ("three_step_n10", multi_step_line(10)),
        ("single_call_n10", single_call_line(10)),
    ] {
        let t = task::parse_task_line(line.as_bytes()).expect("bench task parses");
        // A bench of a task that is refused or malformed would time the error path.
        let d = decide::classify(&decide::prepare(&t, &catalog, None), &states, &opts);
        assert!(d.malformed.is_empty(), "{name}: {:?}", d.malformed);
        assert_eq!(d.n, 10);

        let mut g = c.benchmark_group(format!("gate_{name}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("prepare_classify", |b| {
            b.iter(|| {
                let p = decide::prepare(black_box(&t), &catalog, None);
                black_box(decide::classify(&p, &states, &opts))
            })
        });
        g.bench_function("prepare", |b| {
            b.iter(|| black_box(decide::prepare(black_box(&t), &catalog, None)))
        });
        let p = decide::prepare(&t, &catalog, None);
        g.bench_function("classify", |b| {
            b.iter(|| black_box(decide::classify(black_box(&p), &states, &opts)))
        });
        g.bench_function("parse_task_line", |b| {
            b.iter(|| black_box(task::parse_task_line(black_box(line.as_bytes()))))
        });
        // What `plangate score` does per line, output included.
        let mut out = String::with_capacity(1 << 16);
        g.bench_function("line_to_decision_json", |b| {
            b.iter(|| {
                out.clear();
                let t = task::parse_task_line(black_box(line.as_bytes())).expect("parses");
                let p = decide::prepare(&t, &catalog, None);
                let d = decide::classify(&p, &states, &opts);
                plangate_gate::record::write_json(&d, &mut out);
                black_box(out.len())
            })
        });
        g.finish();

        let mut g = c.benchmark_group(format!("json_{name}"));
        g.throughput(Throughput::Bytes(line.len() as u64));
        g.bench_function("reader", |b| {
            b.iter(|| {
                black_box(json::parse_with(
                    black_box(line.as_bytes()),
                    json::Duplicates::Flag,
                ))
            })
        });
        let doc = json::parse_with(line.as_bytes(), json::Duplicates::Flag).expect("parses");
        g.bench_function("jcs", |b| {
            b.iter(|| black_box(jcs::to_string(black_box(&doc))))
        });
        g.bench_function("reader_jcs", |b| {
            b.iter(|| {
                let v = json::parse_with(black_box(line.as_bytes()), json::Duplicates::Flag)
                    .expect("parses");
                black_box(jcs::to_string(&v))
            })
        });
        g.finish();
    }
}

/// Reading a line whose parts carry foreign fields, beside the same line without them,
/// through the one-pass reader and the general one.
fn foreign_fields(c: &mut Criterion) {
    let plain = single_call_line(10);
    let foreign = with_foreign_fields(&plain);
    let t = task::parse_task_line(foreign.as_bytes()).expect("bench task parses");
    assert_eq!(
        t.notes.unknown_fields.len(),
        6,
        "every foreign field is noted"
    );
    let mut g = c.benchmark_group("samples_line_single_call_n10");
    g.throughput(Throughput::Elements(1));
    for (name, line) in [("plain", &plain), ("foreign_fields", &foreign)] {
        g.bench_function(format!("{name}/one_pass"), |b| {
            b.iter(|| black_box(task::parse_task_line(black_box(line.as_bytes()))))
        });
        g.bench_function(format!("{name}/general"), |b| {
            b.iter(|| black_box(task::parse_task_line_general(black_box(line.as_bytes()))))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench, foreign_fields
}
criterion_main!(benches);
