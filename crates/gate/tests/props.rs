//! Properties the gate must hold for every input, checked with proptest: canonical form
//! is a fixed point blind to key order and white space, printing a result straight from
//! its text gives what printing its built value gives, and the decision rules never
//! reject where the seed forbids it.

use std::collections::BTreeMap;

use plangate_gate::baseline::{
    naive, naive_argument_ids, naive_prepared, naive_result_ids, naive_verdict,
};
use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, Reason, ToolState, Verdict};
use plangate_gate::jcs;
use plangate_gate::json::{self, Value};
use plangate_gate::record;
use plangate_gate::seed::{dumps_key, dumps_payload, dumps_result_ids};
use plangate_gate::task::{
    Arguments, Call, Observed, Payload, Sample, Task, parse_task_line, result_ids,
};
use proptest::prelude::*;

/// Lexemes chosen to hit every branch of number canonicalization.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "1.0",
    "1e0",
    "10E-1",
    "-1",
    "0.5",
    "1e21",
    "1e20",
    "1.5e300",
    "1e-7",
    "123.456",
    "9007199254740993",
    "9007199254740992",
    "9007199254740993.0",
    "1e400",
    "-1e-400",
    "333333333.33333329",
    "18446744073709551616",
    "4.50",
];

fn leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        proptest::sample::select(NUMBERS).prop_map(str::to_string),
        any::<i64>().prop_map(|i| i.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        "\\PC{0,8}".prop_map(|s| {
            let mut out = String::new();
            jcs::write_string(&s, &mut out);
            out
        }),
    ]
}

/// A JSON text as a tree of (member name, text) so a test can re-emit it in any order.
#[derive(Debug, Clone)]
enum Doc {
    Leaf(String),
    Array(Vec<Doc>),
    Object(Vec<(String, Doc)>),
}

fn doc() -> impl Strategy<Value = Doc> {
    leaf()
        .prop_map(Doc::Leaf)
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Doc::Array),
                proptest::collection::btree_map("[a-z\u{e9}\u{1F600}\u{E000}]{0,4}", inner, 0..6)
                    .prop_map(|m| Doc::Object(m.into_iter().collect())),
            ]
        })
}

/// Emits `d` with members rotated by `rot` and `ws` as white space between tokens.
fn emit(d: &Doc, rot: usize, ws: &str, out: &mut String) {
    match d {
        Doc::Leaf(s) => out.push_str(s),
        Doc::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(ws);
                    out.push(',');
                }
                out.push_str(ws);
                emit(x, rot, ws, out);
            }
            out.push_str(ws);
            out.push(']');
        }
        Doc::Object(members) => {
            out.push('{');
            let n = members.len().max(1);
            for i in 0..members.len() {
                let (k, v) = &members[(i + rot) % n];
                if i > 0 {
                    out.push(',');
                }
                out.push_str(ws);
                jcs::write_string(k, out);
                out.push_str(ws);
                out.push(':');
                out.push_str(ws);
                emit(v, rot + 1, ws, out);
            }
            out.push_str(ws);
            out.push('}');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn canonical_form_is_a_fixed_point(d in doc()) {
        let mut text = String::new();
        emit(&d, 0, "", &mut text);
        let v = json::parse(&text).unwrap();
        let c = jcs::to_string(&v);
        let again = json::parse(&c).unwrap();
        prop_assert_eq!(jcs::to_string(&again), c.clone());
        // Parsing the output gives back the same value, member for member.
        prop_assert_eq!(jcs::to_string(&json::parse(&again.to_string()).unwrap()), c);
    }

    #[test]
    fn canonical_form_ignores_key_order_and_white_space(d in doc(), rot in 0usize..7, ws in "[ \t\r\n]{0,3}") {
        let (mut a, mut b) = (String::new(), String::new());
        emit(&d, 0, "", &mut a);
        emit(&d, rot, &ws, &mut b);
        prop_assert_eq!(jcs::to_string(&json::parse(&a).unwrap()), jcs::to_string(&json::parse(&b).unwrap()));
    }
}

/// The payloads of the results `texts`, as the line reader keeps them (checked text).
fn results_read(texts: &[String]) -> Vec<Payload> {
    let calls: Vec<String> = texts
        .iter()
        .map(|t| format!(r#"{{"calls":[{{"tool":"x","arguments":{{}},"result":{t}}}]}}"#))
        .collect();
    let line = format!(r#"{{"task_id":"t","samples":[{}]}}"#, calls.join(","));
    let task = parse_task_line(line.as_bytes()).unwrap();
    task.samples
        .iter()
        .map(|s| match &s.calls[0].observed {
            Observed::Result(p) => p.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Numbers whose `json.dumps` and RFC 8785 equalities part ways, and strings that look
/// like them.
const SCALARS: &[&str] = &[
    "1",
    "1.0",
    "1e0",
    "10E-1",
    "0",
    "-0",
    "0.0",
    "-0.0",
    "1e400",
    "2e400",
    "9007199254740993",
    "9007199254740992",
    "9007199254740992.0",
    "\"1\"",
    "null",
];

/// A result shaped like `{"a": [x, y], "b": {"c": x, "c": z}}` (a repeated key
/// included) from scalars.
fn shaped(x: &[&str]) -> String {
    format!(
        r#"{{"b":{{"c":{},"c":{}}}, "a":[{}]}}"#,
        x[0],
        x[x.len() - 1],
        x.join(", ")
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Results are printed from their text (RFC 8785 for agreement, `json.dumps` for
    /// the seed); the copies of a text in one line share one payload.
    #[test]
    fn results_print_from_text_as_from_value(d in doc(), rot in 0usize..7, ws in "[ \t]{0,2}", dup in any::<bool>()) {
        let mut text = String::new();
        emit(&d, rot, &ws, &mut text);
        if dup && text.starts_with('{') && text.len() > 2 {
            // A repeated key, the last one kept as the general reader keeps it.
            text = format!(r#"{{"k":1,{},"k":[2]}}"#, &text[1..text.len() - 1]).replace("{\"k\":1,}", "{\"k\":1}");
            if json::parse_with(text.as_bytes(), json::Duplicates::Flag).is_err() {
                return Ok(());
            }
        }
        let read = results_read(&[text.clone(), text.clone()]);
        for p in &read {
            let built = json::parse_with(text.as_bytes(), json::Duplicates::Flag).unwrap();
            let observed = Observed::Result(p.clone());
            prop_assert_eq!(observed.key().unwrap(), jcs::to_string(&built));
            prop_assert_eq!(dumps_payload(p), dumps_key(&built));
        }
    }

    /// The naive scorer keys results by their RFC 8785 form, printing `json.dumps` only
    /// where two texts with a float share one; its equality must still be
    /// `json.dumps`'s, for results built or read as text, in any order.
    #[test]
    fn naive_result_ids_have_json_dumps_equality(
        xs in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(SCALARS), 1..4), 2..5),
    ) {
        let texts: Vec<String> = xs.iter().map(|x| shaped(x)).collect();
        let read = results_read(&texts);
        let built: Vec<Payload> = read.iter().map(|p| Payload::from(p.value().clone())).collect();
        let dumps: Vec<String> = read.iter().map(|p| dumps_key(p.value())).collect();
        let same = |ids: &[u32], a: usize, b: usize| ids[a] == ids[b];
        let from_text = naive_result_ids(&read.iter().collect::<Vec<_>>());
        let from_value = naive_result_ids(&built.iter().collect::<Vec<_>>());
        // Text and built values mixed in one task, as a task with both would be keyed.
        let mixed: Vec<&Payload> = read.iter().zip(&built).enumerate().map(|(i, (r, b))| if i % 2 == 0 { r } else { b }).collect();
        let mixed = naive_result_ids(&mixed);
        for a in 0..texts.len() {
            for b in 0..texts.len() {
                let want = dumps[a] == dumps[b];
                prop_assert_eq!(same(&from_text, a, b), want, "{} {}", &texts[a], &texts[b]);
                prop_assert_eq!(same(&from_value, a, b), want);
                prop_assert_eq!(same(&mixed, a, b), want);
            }
        }
    }
}

/// Values written in ways that print alike or not, in either style: equal numbers
/// spelled apart, numbers both styles part or merge differently, strings with escapes.
const SPELLED: &[&str] = &[
    "1",
    "1.0",
    "1e0",
    "10e-1",
    "2",
    "-0",
    "0.0",
    "1e400",
    "2e400",
    "\"1\"",
    "\"\\u0031\"",
    "\"k\"",
    "\"\\u006b\"",
    "null",
    "[]",
    "{}",
];

/// One result as written: an object of four members from [`SPELLED`] in a rotated
/// order, its keys perhaps escaped, perhaps one written twice; or an error, or a text
/// shaped like an error's form.
#[derive(Debug, Clone)]
enum Written {
    Result {
        values: [usize; 4],
        rot: usize,
        escaped: bool,
        twice: bool,
    },
    Error(usize, usize),
    ErrorText(usize, usize, bool),
}

fn written() -> impl Strategy<Value = Written> {
    let pick = 0..SPELLED.len();
    prop_oneof![
        4 => (
            [pick.clone(), pick.clone(), pick.clone(), pick.clone()],
            0usize..4,
            any::<bool>(),
            proptest::bool::weighted(0.15),
        )
            .prop_map(|(values, rot, escaped, twice)| Written::Result { values, rot, escaped, twice }),
        1 => (0usize..2, 0usize..2).prop_map(|(k, m)| Written::Error(k, m)),
        1 => (0usize..2, 0usize..2, any::<bool>()).prop_map(|(k, m, e)| Written::ErrorText(k, m, e)),
    ]
}

/// Pools small enough that equal results come often.
const KINDS: [&str; 2] = ["k", "timeout"];

fn result_text(w: &Written) -> Option<String> {
    match w {
        Written::Result {
            values,
            rot,
            escaped,
            twice,
        } => {
            let keys = if *escaped {
                ["\\u0061", "b", "\\u0063", "d"]
            } else {
                ["a", "b", "c", "d"]
            };
            let mut members: Vec<String> = (0..4)
                .map(|i| {
                    let j = (i + rot) % 4;
                    format!("\"{}\":{}", keys[j], SPELLED[values[j]])
                })
                .collect();
            if *twice {
                members.insert(
                    0,
                    format!("\"{}\":{}", keys[*rot], SPELLED[values[(rot + 1) % 4]]),
                );
            }
            // Nest half of them one level down, in an array.
            Some(format!(
                "{{{},\"e\":[{}]}}",
                members[..2].join(","),
                members[2..].join(",").replace("\":", "\",")
            ))
        }
        Written::Error(..) => None,
        Written::ErrorText(k, m, reversed) => {
            let (kind, message) = (
                format!("\"{}\"", KINDS[*k]),
                SPELLED[9 + m * 2 + usize::from(*reversed)],
            );
            Some(if *reversed {
                format!(r#"{{"error":{{"message":{message},"kind":{kind}}}}}"#)
            } else {
                format!(r#"{{"error": {{"kind":{kind}, "message":{message}}}}}"#)
            })
        }
    }
}

/// Ids numbered by first appearance of equal forms: what keying by printed forms gives.
fn ids_of_forms(forms: &[String]) -> Vec<u32> {
    let mut seen: Vec<&String> = Vec::new();
    forms
        .iter()
        .map(|f| match seen.iter().position(|s| *s == f) {
            Some(i) => i as u32,
            None => {
                seen.push(f);
                (seen.len() - 1) as u32
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Results keyed by fingerprint, printed only where fingerprints meet, get exactly
    /// the ids that keying every printed form gives (RFC 8785 for agreement,
    /// `json.dumps` for the seed and the naive scorer), errors among them.
    #[test]
    fn ids_by_fingerprint_are_ids_by_printed_form(ws in proptest::collection::vec(written(), 1..9)) {
        let texts: Vec<String> = ws.iter().filter_map(result_text).collect();
        let mut read = results_read(&texts).into_iter();
        let observed: Vec<Observed> = ws
            .iter()
            .map(|w| match w {
                Written::Error(k, m) => Observed::Error {
                    kind: KINDS[*k].to_string(),
                    message: ["1", "k"][*m].to_string(),
                },
                _ => Observed::Result(read.next().unwrap()),
            })
            .collect();
        let value = |o: &Observed| match o {
            Observed::Result(p) => p.value().clone(),
            other => other.as_value(),
        };
        let jcs_forms: Vec<String> = observed.iter().map(|o| jcs::to_string(&value(o))).collect();
        let dumps_forms: Vec<String> = observed.iter().map(|o| dumps_key(&value(o))).collect();
        let want = ids_of_forms(&jcs_forms);
        prop_assert_eq!(result_ids(&observed), want.iter().map(|&i| Some(i)).collect::<Vec<_>>(), "{:?}", &jcs_forms);
        prop_assert_eq!(dumps_result_ids(&observed), ids_of_forms(&dumps_forms), "{:?}", &dumps_forms);
        // The naive scorer, on the results alone.
        let payloads: Vec<&Payload> = observed.iter().filter_map(|o| match o {
            Observed::Result(p) => Some(p),
            _ => None,
        }).collect();
        let dumps: Vec<String> = payloads.iter().map(|p| dumps_key(p.value())).collect();
        prop_assert_eq!(naive_result_ids(&payloads), ids_of_forms(&dumps));
        // The same values written as arguments, which the naive scorer keys by
        // fingerprint too (`json.dumps` equality, floats apart from ints).
        let values: Vec<Value> = observed.iter().map(value).collect();
        prop_assert_eq!(naive_argument_ids(&values), ids_of_forms(&dumps_forms), "{:?}", &dumps_forms);
    }
}

fn catalog() -> Catalog {
    let doc = r#"{"tools":[
      {"name":"a","deterministic":true,"verified":true},
      {"name":"b","deterministic":true,"verified":true},
      {"name":"c","deterministic":false}]}"#;
    Catalog::from_value(&json::parse(doc).unwrap()).unwrap()
}

fn num(i: u64) -> Value {
    json::parse(&i.to_string()).unwrap()
}

/// A task of `n` single- or two-step samples drawn from small pools, so agreements land
/// in every region.
fn task() -> impl Strategy<Value = Task> {
    let call = (0usize..3, 0u64..4, 0u64..3).prop_map(|(t, arg, res)| Call {
        origin: None,
        tool: ["a", "b", "c"][t].to_string(),
        arguments: Arguments::Json(std::sync::Arc::new(Value::Object(
            [("x".to_string(), num(arg))].into_iter().collect(),
        ))),
        observed: Observed::Result(num(res).into()),
    });
    let sample = proptest::collection::vec(call, 1..3).prop_map(|calls| {
        std::sync::Arc::new(Sample {
            calls,
            ..Sample::default()
        })
    });
    let samples = shared_samples(sample, 12);
    (samples, any::<bool>()).prop_map(|(samples, fixed)| Task {
        task_id: "t".into(),
        samples,
        label: None,
        epoch_fixed: Some(fixed),
        warnings: Vec::new(),
        notes: Default::default(),
    })
}

/// Fewer than `max` samples drawn by `sample`, some of them the one before them again,
/// shared as the reader shares samples written alike.
fn shared_samples(
    sample: impl Strategy<Value = std::sync::Arc<Sample>>,
    max: usize,
) -> impl Strategy<Value = Vec<std::sync::Arc<Sample>>> {
    (
        proptest::collection::vec(sample, 0..max),
        proptest::collection::vec(any::<bool>(), max),
    )
        .prop_map(|(mut samples, again)| {
            for i in 1..samples.len() {
                if again[i] {
                    samples[i] = std::sync::Arc::clone(&samples[i - 1]);
                }
            }
            samples
        })
}

fn states() -> impl Strategy<Value = BTreeMap<String, ToolState>> {
    let st = prop::sample::select(&ToolState::ALL[..]);
    (st.clone(), st.clone(), st).prop_map(|(a, b, c)| {
        [
            ("a".to_string(), a),
            ("b".to_string(), b),
            ("c".to_string(), c),
        ]
        .into_iter()
        .collect()
    })
}

fn classify(t: &Task, s: &BTreeMap<String, ToolState>) -> decide::Decision {
    decide::classify(
        &decide::prepare(t, &catalog(), None),
        s,
        &Options::default(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_reject_an_unverified_or_nondeterministic_tool(t in task(), s in states()) {
        let d = classify(&t, &s);
        if d.verdict == Verdict::Reject {
            prop_assert_eq!(&d.reasons, &vec![Reason::FabricatedArguments]);
            for tool in &d.tools {
                let st = s[tool];
                prop_assert!(st.declared_deterministic && st.verified && !st.quarantined, "{tool}: {st:?}");
            }
            prop_assert!(t.epoch_fixed == Some(true) && t.samples.len() >= 5);
        }
    }

    #[test]
    fn never_reject_on_result_disagreement_alone(t in task(), s in states()) {
        // Every sample makes the first sample's calls; only results differ.
        let mut t = t;
        if let Some(first) = t.samples.first().cloned() {
            for (i, smp) in t.samples.iter_mut().enumerate() {
                let mut calls = first.calls.clone();
                for c in &mut calls {
                    c.observed = Observed::Result(num(i as u64).into());
                }
                std::sync::Arc::make_mut(smp).calls = calls;
            }
        }
        let d = classify(&t, &s);
        prop_assert_ne!(d.verdict, Verdict::Reject);
    }

    #[test]
    fn more_agreement_never_makes_a_task_rejected(t in task(), s in states(), pick in any::<prop::sample::Index>()) {
        let before = classify(&t, &s);
        // Copy the modal sample over one sample that differs from it.
        let Some(plan) = &before.modal_plan else { return Ok(()); };
        let modal_tools: Vec<&str> = plan.iter().map(|p| p.tool.as_str()).collect();
        let modal = t.samples.iter().find(|smp| {
            smp.calls.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>() == modal_tools
                && plan.iter().zip(&smp.calls).all(|(p, c)| match &c.arguments {
                    Arguments::Json(v) => p.arguments == jcs::to_string(v),
                    Arguments::Malformed(_) => false,
                })
        }).cloned();
        let Some(modal) = modal else { return Ok(()); };
        let differing: Vec<usize> = t.samples.iter().enumerate()
            .filter(|(_, smp)| smp.calls.len() != modal.calls.len()
                || smp.calls.iter().zip(&modal.calls).any(|(x, y)| x.tool != y.tool || format!("{:?}", x.arguments) != format!("{:?}", y.arguments)))
            .map(|(i, _)| i).collect();
        if differing.is_empty() { return Ok(()); }
        let mut raised = t.clone();
        raised.samples[differing[pick.index(differing.len())]] = modal;
        let after = classify(&raised, &s);
        prop_assert!(after.arg_agreement.count > before.arg_agreement.count);
        if after.verdict == Verdict::Reject {
            prop_assert_eq!(before.verdict, Verdict::Reject, "before {:?} after {:?}", before.reasons, after.reasons);
        }
    }

    /// `classify` counts a shared sample once, with the number of samples sharing it:
    /// the same task with every sample read apart decides alike, record for record.
    #[test]
    fn shared_samples_classify_as_samples_read_apart(t in task(), s in states()) {
        let apart = Task {
            samples: t.samples.iter().map(|smp| std::sync::Arc::new((**smp).clone())).collect(),
            ..t.clone()
        };
        prop_assert_eq!(record::json(&classify(&t, &s)), record::json(&classify(&apart, &s)));
    }
}

/// A catalog whose tool `a` takes a `must_exist` reference, so a referential miss can
/// decide; `b` and `c` take anything.
fn referential_catalog() -> Catalog {
    let doc = r#"{"tools":[
      {"name":"a","deterministic":true,"parameters":{"type":"object",
        "properties":{"x":{"type":"integer","x-plangate":{"must_exist":true}}}}},
      {"name":"b","deterministic":true},
      {"name":"c","deterministic":false}]}"#;
    Catalog::from_value(&json::parse(doc).unwrap()).unwrap()
}

/// A task like [`task`]'s whose calls may fail with `not_found`, mostly agreeing, so
/// accepts, referential misses and rejects all occur.
fn referential_task() -> impl Strategy<Value = Task> {
    let observed = prop_oneof![
        (0u64..2).prop_map(|r| Observed::Result(num(r).into())),
        Just(Observed::Error {
            kind: "not_found".into(),
            message: "no such thing".into(),
        }),
    ];
    let call = (0usize..3, 0u64..2, observed).prop_map(|(t, arg, observed)| Call {
        origin: None,
        tool: ["a", "b", "c"][t].to_string(),
        arguments: Arguments::Json(std::sync::Arc::new(Value::Object(
            [("x".to_string(), num(arg))].into_iter().collect(),
        ))),
        observed,
    });
    let sample = proptest::collection::vec(call, 1..3).prop_map(|calls| {
        std::sync::Arc::new(Sample {
            calls,
            ..Sample::default()
        })
    });
    // Mostly fixed epochs: an unfixed one only defers.
    (shared_samples(sample, 12), 0u8..4).prop_map(|(samples, fixed)| Task {
        task_id: "t".into(),
        samples,
        label: None,
        epoch_fixed: Some(fixed > 0),
        warnings: Vec::new(),
        notes: Default::default(),
    })
}

/// States trusted less than `s`: some tools quarantined, some no longer verified.
fn distrusted(
    s: &BTreeMap<String, ToolState>,
    quarantine: &[bool],
    unverify: &[bool],
) -> BTreeMap<String, ToolState> {
    (s.iter().zip(quarantine.iter().zip(unverify)))
        .map(|((name, st), (&q, &u))| {
            let st = ToolState {
                quarantined: st.quarantined || q,
                verified: st.verified && !u,
                ..*st
            };
            (name.clone(), st)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    /// A quarantine (or a declaration no longer verified) only ever moves a verdict
    /// toward defer: never a reject or a defer to an accept, never anything to a reject.
    #[test]
    fn distrusting_a_tool_only_moves_a_verdict_toward_defer(
        t in referential_task(),
        s in states(),
        quarantine in proptest::collection::vec(any::<bool>(), 3),
        unverify in proptest::collection::vec(any::<bool>(), 3),
    ) {
        let prepared = decide::prepare(&t, &referential_catalog(), None);
        let opts = Options::default();
        let before = decide::classify(&prepared, &s, &opts);
        let less = distrusted(&s, &quarantine, &unverify);
        let after = decide::classify(&prepared, &less, &opts);
        prop_assert!(
            after.verdict == before.verdict || after.verdict == Verdict::Defer,
            "{:?} {:?} became {:?} {:?} with {:?} -> {:?}",
            before.verdict, before.reasons, after.verdict, after.reasons, s, less
        );
    }

    /// An accept rests only on results of tools declared deterministic, verified and not
    /// quarantined: every modal step's tool is one, or is declared nondeterministic.
    #[test]
    fn an_accept_never_rests_on_an_untrusted_tools_results(t in referential_task(), s in states()) {
        let d = decide::classify(&decide::prepare(&t, &referential_catalog(), None), &s, &Options::default());
        if d.verdict == Verdict::Accept {
            for step in d.modal_plan.iter().flatten() {
                let st = s[&step.tool];
                prop_assert!(
                    !st.declared_deterministic || (st.verified && !st.quarantined),
                    "{}: {:?} {:?}", step.tool, st, d.reasons
                );
            }
        }
    }
}

/// A catalog whose hints and defaults change some arguments as written: `a` casefolds
/// `s` and fills in `d`; `b` has no schema; `c` is not in it.
fn hinted_catalog() -> Catalog {
    let doc = r#"{"tools":[
      {"name":"a","deterministic":true,"verified":true,"parameters":{"type":"object",
        "properties":{"s":{"type":"string","x-plangate":{"canon":["casefold"]}},
                      "n":{"type":"number"},"d":{"type":"integer","default":0}}}},
      {"name":"b","deterministic":true,"verified":true}]}"#;
    Catalog::from_value(&json::parse(doc).unwrap()).unwrap()
}

/// A call drawn so that every reason the naive scorer's verdict cannot be read from the
/// gate's keys comes up: arguments a hint or default changes, floats in arguments and
/// results, missing results, raw bytes, unreadable arguments, arguments that are not an
/// object, an unknown tool.
fn naive_call() -> impl Strategy<Value = Call> {
    let args = prop_oneof![
        8 => (
            proptest::option::of(prop::sample::select(vec!["x", "X", "y"])),
            proptest::option::of(prop::sample::select(vec!["1", "2", "1.0", "1e0", "10"])),
            proptest::option::of(prop::sample::select(vec!["0", "1"])),
        )
            .prop_map(|(s, n, d)| {
                let mut members = Vec::new();
                if let Some(s) = s {
                    members.push(format!("\"s\":\"{s}\""));
                }
                if let Some(n) = n {
                    members.push(format!("\"n\":{n}"));
                }
                if let Some(d) = d {
                    members.push(format!("\"d\":{d}"));
                }
                let v = json::parse(&format!("{{{}}}", members.join(","))).unwrap();
                Arguments::Json(std::sync::Arc::new(v))
            }),
        1 => Just(Arguments::Json(std::sync::Arc::new(json::parse("[1]").unwrap()))),
        1 => Just(Arguments::Malformed("unreadable".into())),
    ];
    let observed = prop_oneof![
        8 => prop::sample::select(vec!["1", "2", "1.0", "{\"k\":1}", "{\"k\":1.0}", "null", "\"s\""])
            .prop_map(|t| Observed::Result(json::parse(t).unwrap().into())),
        2 => prop::sample::select(vec!["not_found", "timeout"]).prop_map(|k| Observed::Error {
            kind: k.into(),
            message: "m".into(),
        }),
        1 => Just(Observed::Missing),
        1 => Just(Observed::Bytes(b"\xff".to_vec())),
    ];
    (
        prop::sample::select(vec!["a", "a", "b", "c"]),
        args,
        observed,
    )
        .prop_map(|(tool, arguments, observed)| Call {
            origin: None,
            tool: tool.into(),
            arguments,
            observed,
        })
}

/// Tasks of such calls, one to three a sample, some samples one turn of several calls,
/// some shared with the sample before them.
fn naive_task() -> impl Strategy<Value = Task> {
    let sample = (proptest::collection::vec(naive_call(), 1..4), any::<bool>()).prop_map(
        |(calls, together)| {
            let turns = if together && calls.len() > 1 {
                vec![calls.len()]
            } else {
                Vec::new()
            };
            std::sync::Arc::new(Sample {
                calls,
                turns,
                ..Sample::default()
            })
        },
    );
    shared_samples(sample, 9).prop_map(|samples| Task {
        task_id: "t".into(),
        samples,
        label: None,
        epoch_fixed: Some(true),
        warnings: Vec::new(),
        notes: Default::default(),
    })
}

/// `t` with every call made plain: arguments no hint changes and results without a
/// float, each call its own turn. The naive verdict must then be read from the gate's
/// keys.
fn plain(t: &Task) -> Task {
    let mut t = t.clone();
    for s in &mut t.samples {
        let s = std::sync::Arc::make_mut(s);
        s.turns.clear();
        for c in &mut s.calls {
            let (n, r) = match &c.observed {
                Observed::Result(p) => (p.value().to_string().len() % 3, 0),
                Observed::Error { .. } => (1, 1),
                _ => (2, 2),
            };
            c.tool = if c.tool == "c" {
                "c".into()
            } else {
                "a".into()
            };
            c.arguments = Arguments::Json(std::sync::Arc::new(
                json::parse(&format!("{{\"s\":\"x\",\"n\":1,\"d\":{n}}}")).unwrap(),
            ));
            c.observed = if r == 1 {
                c.observed.clone()
            } else {
                Observed::Result(num(r + n as u64).into())
            };
        }
    }
    t
}

/// `plain(t)` with the calls of every other sample written otherwise, so that the gate's
/// keys and the naive scorer's equality part: `how` 0 upper-cases `s` (which `a`
/// casefolds), 1 leaves out `d` where it is the default, 2 writes results as floats
/// (`2.0` is `2` to RFC 8785, not to `json.dumps`), 3 writes `n` as one, 4 and 5 leave
/// results missing or raw bytes, which the naive scorer takes for the `null` and the
/// string the other samples return, and 6 makes each sample one turn, written in
/// reverse order in every other one (a turn's calls have no order for the gate).
fn twisted(t: &Task, how: usize) -> Task {
    let mut t = plain(t);
    if how == 6 {
        for (i, s) in t.samples.iter_mut().enumerate() {
            let s = std::sync::Arc::make_mut(s);
            s.turns = vec![s.calls.len()];
            if i % 2 == 1 {
                s.calls.reverse();
            }
        }
        return t;
    }
    if how >= 4 {
        for (i, s) in t.samples.iter_mut().enumerate() {
            for c in &mut std::sync::Arc::make_mut(s).calls {
                c.observed = match (how, i % 2) {
                    (4, 0) => Observed::Result(Value::Null.into()),
                    (4, _) => Observed::Missing,
                    (_, 0) => Observed::Result(Value::String("\u{fffd}".into()).into()),
                    _ => Observed::Bytes(b"\xff".to_vec()),
                };
            }
        }
        return t;
    }
    for s in t.samples.iter_mut().skip(1).step_by(2) {
        let s = std::sync::Arc::make_mut(s);
        for c in &mut s.calls {
            if how == 2 {
                if let Observed::Result(p) = &c.observed {
                    let float = format!("{}.0", p.value());
                    c.observed = Observed::Result(json::parse(&float).unwrap().into());
                }
                continue;
            }
            let Arguments::Json(args) = &c.arguments else {
                continue;
            };
            let mut args = (**args).clone();
            let Value::Object(o) = &mut args else {
                continue;
            };
            match how {
                0 => o.insert("s", Value::String("X".into())),
                1 if o.get("d") == Some(&num(0)) => drop(o.remove("d")),
                3 => o.insert("n", json::parse("1.0").unwrap()),
                _ => {}
            }
            c.arguments = Arguments::Json(std::sync::Arc::new(args));
        }
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Where the naive scorer's verdict is read from the gate's preparation of a task,
    /// it is the verdict scoring the task the naive way gives; and it is read so for
    /// every task of plain calls.
    #[test]
    fn the_naive_verdict_read_from_the_gates_keys_is_the_naive_scorers(t in naive_task()) {
        let catalog = hinted_catalog();
        let threshold = "0.80".parse().unwrap();
        let read = naive_prepared(&t, &decide::prepare(&t, &catalog, None), threshold);
        if let Some(read) = read {
            prop_assert_eq!(read, naive(&t, threshold));
        }
        let p = plain(&t);
        let read = naive_prepared(&p, &decide::prepare(&p, &catalog, None), threshold);
        prop_assert_eq!(read, Some(naive(&p, threshold)));
        for how in 0..7 {
            let tw = twisted(&t, how);
            if let Some(read) = naive_prepared(&tw, &decide::prepare(&tw, &catalog, None), threshold) {
                prop_assert_eq!(read, naive(&tw, threshold), "twisted {}", how);
            }
        }
    }

    /// The verdict `score` compares, whichever way it is found (the samples the reader
    /// shared, the gate's keys, or keying every call), is the naive scorer's, at any
    /// threshold; the shared samples alone decide some of these tasks.
    #[test]
    fn the_naive_verdict_score_compares_is_the_naive_scorers(
        t in naive_task(),
        threshold in prop::sample::select(vec!["0", "0.5", "0.6", "0.75", "0.8", "0.9", "1"]),
        how in 0usize..9,
    ) {
        let catalog = hinted_catalog();
        let threshold = threshold.parse().unwrap();
        let t = match how {
            7 => plain(&t),
            8 => t,
            _ => twisted(&t, how),
        };
        let verdict = naive_verdict(&t, &decide::prepare(&t, &catalog, None), threshold);
        prop_assert_eq!(verdict, naive(&t, threshold).decision);
    }
}
