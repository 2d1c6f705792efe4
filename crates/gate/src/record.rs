//! The records `plangate score` writes (a [`Decision`], a `--seed-compat` outcome),
//! written by hand, which costs measurably fewer instructions than serde's generic
//! serializer. The output is byte-equal to `serde_json::to_string` of the same record:
//! strings escaped as serde_json escapes them, floats through the formatter serde_json
//! uses, fields in declaration order (`tests/records.rs` holds them equal over every
//! gate case file and generated tasks).

use crate::decide::{
    Agreement, Decision, DivergentPath, MalformedSample, PlanStep, SchemaViolation, StepAgreement,
};
use crate::jcs::write_string;
use crate::seed::SeedOutcome;
use std::sync::OnceLock;

/// `serde_json::to_string(d)`, written without serde.
pub fn decision(d: &Decision) -> String {
    let mut out = String::with_capacity(1024);
    write_decision(d, &mut out);
    out
}

/// [`decision`], appended to `o`.
pub fn write_decision(d: &Decision, o: &mut String) {
    o.push_str("{\"task_id\":");
    write_string(&d.task_id, o);
    o.push_str(",\"decision\":\"");
    o.push_str(d.verdict.as_str());
    o.push_str("\",\"reasons\":");
    list(o, &d.reasons, |o, r| {
        o.push('"');
        o.push_str(r.as_str());
        o.push('"');
    });
    o.push_str(",\"explanation\":");
    strings(o, &d.explanation);
    o.push_str(",\"n\":");
    usize_(o, d.n);
    o.push_str(",\"arg_agreement\":");
    agreement(o, &d.arg_agreement);
    o.push_str(",\"result_agreement\":");
    opt(o, d.result_agreement.as_ref(), agreement);
    o.push_str(",\"modal_plan\":");
    opt(o, d.modal_plan.as_deref(), |o, plan| {
        list(o, plan, plan_step)
    });
    o.push_str(",\"divergent_paths\":");
    list(o, &d.divergent_paths, divergent_path);
    o.push_str(",\"steps\":");
    list(o, &d.steps, step_agreement);
    o.push_str(",\"first_divergent_step\":");
    opt(o, d.first_divergent_step, usize_);
    o.push_str(",\"tools\":");
    strings(o, &d.tools);
    o.push_str(",\"suspect_tools\":");
    strings(o, &d.suspect_tools);
    o.push_str(",\"malformed\":");
    list(o, &d.malformed, malformed);
    o.push_str(",\"schema_violations\":");
    list(o, &d.schema_violations, violation);
    o.push_str(",\"warnings\":");
    strings(o, &d.warnings);
    o.push_str(",\"label\":");
    opt(o, d.label, |o, l| {
        o.push('"');
        o.push_str(l.as_str());
        o.push('"');
    });
    if !d.outcomes.is_empty() {
        o.push_str(",\"outcomes\":");
        list(o, &d.outcomes, |o, x| opt(o, *x, f64_));
    }
    o.push('}');
}

/// The `--seed-compat` record of task `task_id`: the seed's verdict and agreements, or
/// its refusal, with serde_json's key order (sorted: its maps are ordered by key).
pub fn seed(task_id: &str, outcome: &SeedOutcome) -> String {
    let mut out = String::with_capacity(160);
    write_seed(task_id, outcome, &mut out);
    out
}

/// [`seed`], appended to `o`.
pub fn write_seed(task_id: &str, outcome: &SeedOutcome, o: &mut String) {
    match outcome {
        SeedOutcome::Decided { decision, samples } => {
            o.push_str("{\"arg_agreement\":");
            f64_(o, decision.arg_agreement);
            o.push_str(",\"decision\":\"");
            o.push_str(decision.decision.as_str());
            o.push_str("\",\"mode\":\"seed_compat\",\"n\":");
            usize_(o, *samples);
            o.push_str(",\"result_agreement\":");
            f64_(o, decision.res_agreement);
        }
        SeedOutcome::Refused { kind, message } => {
            o.push_str("{\"error\":{\"kind\":");
            write_string(kind.as_str(), o);
            o.push_str(",\"message\":");
            write_string(message, o);
            o.push_str("},\"mode\":\"seed_compat\"");
        }
    }
    o.push_str(",\"task_id\":");
    write_string(task_id, o);
    o.push('}');
}

fn list<T>(o: &mut String, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    o.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        item(o, x);
    }
    o.push(']');
}

fn strings(o: &mut String, items: &[String]) {
    list(o, items, |o, s| write_string(s, o));
}

fn usize_(o: &mut String, n: usize) {
    crate::jcs::write_usize(n, o);
}

/// An optional field: its value, or `null` (serde_json writes `None` so).
fn opt<T>(o: &mut String, v: Option<T>, write: impl FnOnce(&mut String, T)) {
    match v {
        Some(v) => write(o, v),
        None => o.push_str("null"),
    }
}

/// A float as serde_json writes one: its shortest form by the same formatter, `null`
/// when it is not finite.
fn f64_(o: &mut String, f: f64) {
    if f.is_finite() {
        o.push_str(zmij::Buffer::new().format_finite(f));
    } else {
        o.push_str("null");
    }
}

/// The agreements of one `n`, each with its printed text, by count.
type PrintedRow = Box<[(Agreement, Box<str>)]>;

/// Agreements of up to this many samples print from [`PRINTED`].
const PRINTED_N: usize = 64;

/// Each `Agreement::new(count, n)` for `n <= PRINTED_N`, printed once per run and
/// process: a record holds several agreements, nearly all of few samples, and printing
/// their three floats for every record would be a measurable share of writing it. A row
/// is printed when an agreement of its `n` is first written.
static PRINTED: [OnceLock<PrintedRow>; PRINTED_N + 1] = [const { OnceLock::new() }; PRINTED_N + 1];

fn agreement(o: &mut String, a: &Agreement) {
    if let Some(row) = PRINTED.get(a.n) {
        let row = row.get_or_init(|| {
            (0..=a.n)
                .map(|count| {
                    let a = Agreement::new(count, a.n);
                    let mut text = String::new();
                    agreement_printed(&mut text, &a);
                    (a, text.into_boxed_str())
                })
                .collect()
        });
        // The row's text stands for `a` only when every float is the same double, bit
        // for bit (an `Agreement` built by hand may hold others).
        if let Some((known, text)) = row.get(a.count) {
            let bits = |a: &Agreement| [a.value, a.interval.0, a.interval.1].map(f64::to_bits);
            if bits(known) == bits(a) {
                o.push_str(text);
                return;
            }
        }
    }
    agreement_printed(o, a);
}

fn agreement_printed(o: &mut String, a: &Agreement) {
    o.push_str("{\"count\":");
    usize_(o, a.count);
    o.push_str(",\"n\":");
    usize_(o, a.n);
    o.push_str(",\"value\":");
    f64_(o, a.value);
    o.push_str(",\"interval\":[");
    f64_(o, a.interval.0);
    o.push(',');
    f64_(o, a.interval.1);
    o.push_str("]}");
}

fn plan_step(o: &mut String, s: &PlanStep) {
    o.push_str("{\"tool\":");
    write_string(&s.tool, o);
    o.push_str(",\"arguments\":");
    o.push_str(&s.arguments);
    o.push('}');
}

fn divergent_path(o: &mut String, p: &DivergentPath) {
    o.push_str("{\"path\":");
    write_string(&p.path, o);
    o.push_str(",\"distinct\":");
    usize_(o, p.distinct);
    o.push_str(",\"agreement\":");
    agreement(o, &p.agreement);
    o.push('}');
}

fn step_agreement(o: &mut String, s: &StepAgreement) {
    o.push_str("{\"step\":");
    usize_(o, s.step);
    o.push_str(",\"tool\":");
    opt(o, s.tool.as_deref(), |o, t| write_string(t, o));
    o.push_str(",\"agreement\":");
    agreement(o, &s.agreement);
    o.push('}');
}

fn malformed(o: &mut String, m: &MalformedSample) {
    o.push_str("{\"sample\":");
    usize_(o, m.sample);
    o.push_str(",\"step\":");
    opt(o, m.step, usize_);
    o.push_str(",\"place\":");
    opt(o, m.place.as_deref(), |o, p| write_string(p, o));
    o.push_str(",\"problems\":");
    strings(o, &m.problems);
    o.push('}');
}

fn violation(o: &mut String, v: &SchemaViolation) {
    o.push_str("{\"step\":");
    usize_(o, v.step);
    o.push_str(",\"tool\":");
    write_string(&v.tool, o);
    o.push_str(",\"path\":");
    write_string(&v.path, o);
    o.push_str(",\"keyword\":");
    write_string(&v.keyword, o);
    o.push_str(",\"message\":");
    write_string(&v.message, o);
    o.push_str(",\"samples\":");
    list(o, &v.samples, |o, s| usize_(o, *s));
    o.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_serde(a: &Agreement) -> String {
        serde_json::to_string(a).unwrap()
    }

    fn printed(a: &Agreement) -> String {
        let mut o = String::new();
        agreement(&mut o, a);
        o
    }

    #[test]
    fn every_small_agreement_prints_as_serde_json_prints_it() {
        for n in 0..=PRINTED_N + 3 {
            for count in 0..=n + 1 {
                let a = Agreement::new(count, n);
                assert_eq!(printed(&a), by_serde(&a), "{count}/{n}");
            }
        }
        for (count, n) in [(1, 1000), (999, 1000), (7, 1 << 40)] {
            let a = Agreement::new(count, n);
            assert_eq!(printed(&a), by_serde(&a), "{count}/{n}");
        }
    }

    #[test]
    fn an_agreement_holding_other_floats_prints_its_own() {
        let table = Agreement::new(1, 5);
        let others = [
            Agreement {
                value: 0.25,
                ..table
            },
            Agreement {
                value: -0.0,
                ..Agreement::new(0, 5)
            },
            Agreement {
                interval: (table.interval.0, 1.0),
                ..table
            },
            Agreement {
                interval: (f64::NAN, table.interval.1),
                ..table
            },
        ];
        for a in others {
            assert_eq!(printed(&a), by_serde(&a), "{a:?}");
            assert_ne!(printed(&a), printed(&Agreement::new(a.count, a.n)));
        }
    }
}
