//! The naive scorer the seed warns against, kept as a baseline to measure the gate by:
//! one agreement over arguments and results together, on raw JSON (the seed's
//! `json.dumps` equality), reject below 0.80. It conflates a fabricated argument with a
//! flaky tool, which is the whole point of comparing against it.

use std::sync::Arc;

use crate::decide::{Agreement, Prepared, Verdict, modal};
use crate::jcs::{Fingerprint, fingerprint};
use crate::json::Value;
use crate::seed::{Dumps, dumps_key};
use crate::stats::Ratio;
use crate::task::{
    Arguments, BoundedMemo, Form, IdsByForm, KeyInterner, Observed, Payload, Rfc8785Form, Sample,
    SmallMap, Task, has_float, per_sample,
};

/// What the naive scorer decides: accept or reject, never defer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NaiveDecision {
    /// Accept at or above the threshold, reject below.
    pub decision: Verdict,
    /// Agreement over (arguments, result) pairs of whole plans.
    pub agreement: Agreement,
}

/// The seed's `json.dumps` equality, keyed mostly by the RFC 8785 form agreement has
/// already printed. Without a number written as a float the two forms have the same
/// equality: strings escape alike, keys are sorted (in different but fixed orders) and
/// deduplicated alike, and both print integers exactly. A float is where they part
/// (`1.0` and `1` are one number to RFC 8785, two to Python), so a value with one is
/// keyed by `json.dumps` itself; and no value with a float dumps equal to one without.
/// The tag keeps the two kinds of key apart. A fingerprint, valid for both forms (see
/// [`crate::jcs::Fingerprint`]), is valid for either key, and a printed key's is that of
/// its text after the tag.
struct NaiveForm;

impl Form for NaiveForm {
    const FINGERPRINTS: bool = true;
    fn fingerprint_key(&self, key: &str) -> Option<Fingerprint> {
        key.strip_prefix(['j', 'd']).and_then(fingerprint)
    }
    fn of_value(&self, v: &Value) -> String {
        let mut key = String::with_capacity(64);
        if has_float(v) {
            key.push('d');
            key.push_str(&dumps_key(v));
        } else {
            key.push('j');
            crate::jcs::write(v, &mut key);
        }
        key
    }
    // `naive` keys results through `NaiveResults`, with this equality; this is the
    // same key for a `KeyInterner<NaiveForm>` asked for a payload.
    fn of_payload(&self, p: &Payload) -> String {
        match p.canonical() {
            (_, true) => format!("d{}", Dumps.of_payload(p)),
            (jcs, false) => format!("j{jcs}"),
        }
    }
}

/// Ids of results under the seed's `json.dumps` equality. A float-free result is keyed
/// by its RFC 8785 form (see [`NaiveForm`]), one with a float by its `json.dumps` form
/// (RFC 8785 keeps `1e400` and `2e400` apart, Python reads both as infinity): two
/// tables numbered from one counter, since no result of one dumps equal to one of the
/// other. Each tells results apart by fingerprint and prints only where two meet (see
/// `task::IdsByForm`), so a float-free result agreement printed is reused, and `json.dumps`
/// is printed only for two texts with a float whose fingerprints are one.
struct NaiveResults<'a> {
    /// The first result keyed, unsorted while it is the only one: most tasks return one
    /// text, and whether it holds a float is asked only once another comes.
    waiting: Option<&'a Payload>,
    plain: IdsByForm<'a, Rfc8785Form>,
    floats: IdsByForm<'a, Dumps>,
    texts: BoundedMemo<&'a str, u32>,
    next: u32,
}

impl<'a> NaiveResults<'a> {
    fn new() -> Self {
        NaiveResults {
            waiting: None,
            plain: IdsByForm::new(Rfc8785Form),
            floats: IdsByForm::new(Dumps),
            texts: BoundedMemo::new(),
            next: 0,
        }
    }

    /// The id of a result payload, from an earlier copy of its text when there is one.
    fn payload(&mut self, p: &'a Payload) -> u32 {
        let Some(text) = p.text() else {
            return self.keyed(p);
        };
        let mut texts = std::mem::replace(&mut self.texts, BoundedMemo::new());
        let id = texts.get_or(text, || self.keyed(p));
        self.texts = texts;
        id
    }

    fn keyed(&mut self, p: &'a Payload) -> u32 {
        if self.next == 0 {
            self.waiting = Some(p);
            self.next = 1;
            return 0;
        }
        self.settle();
        let mut next = self.next;
        let id = self.sorted(p, &mut next);
        self.next = next;
        id
    }

    /// `p` keyed in the table of its kind, numbered from `next`.
    fn sorted(&mut self, p: &'a Payload, next: &mut u32) -> u32 {
        if p.has_float() {
            self.floats.payload(p, next)
        } else {
            self.plain.payload(p, next)
        }
    }

    /// Keys the waiting first result (id 0) before another is compared with it.
    fn settle(&mut self) {
        if let Some(first) = self.waiting.take() {
            // Both tables are empty: the first key of one is numbered 0 from 0.
            self.sorted(first, &mut 0);
        }
    }

    fn observed(&mut self, o: &'a Observed) -> u32 {
        match o {
            Observed::Result(p) => self.payload(p),
            // An error holds no float: its `json.dumps` is its RFC 8785 form.
            other => {
                let form = other
                    .error_form()
                    // A missing result is null and raw bytes a string: no float in either.
                    .unwrap_or_else(|| crate::jcs::to_string(&other.as_value()));
                self.settle();
                self.plain.id(form, &mut self.next)
            }
        }
    }
}

/// Task-local numbers for tool names, so that whole plans sort as numbers, not as
/// strings.
#[derive(Default)]
struct Names<'a>(SmallMap<&'a str, u32>);

impl<'a> Names<'a> {
    /// `name`'s number: the count of distinct names before its first appearance.
    fn id(&mut self, name: &'a str) -> u32 {
        let next = self.0.len() as u32;
        *self.0.get_or_insert_with(name, || next)
    }
}

/// Ids the naive scorer gives `results`, in order; public only so `tests/props.rs`
/// can hold their equality to [`dumps_key`]'s.
#[doc(hidden)]
pub fn naive_result_ids(results: &[&Payload]) -> Vec<u32> {
    let mut ids = NaiveResults::new();
    results.iter().map(|p| ids.payload(p)).collect()
}

/// Ids the naive scorer gives arguments written as `values`, in order; public only so
/// `tests/props.rs` can hold their equality to [`dumps_key`]'s.
#[doc(hidden)]
pub fn naive_argument_ids(values: &[Value]) -> Vec<u32> {
    let mut ids = KeyInterner::new(NaiveForm);
    values.iter().map(|v| ids.value(v)).collect()
}

/// Scores `task` the naive way. Calls without an observed result count as `null`.
pub fn naive(task: &Task, threshold: Ratio) -> NaiveDecision {
    // Arguments by the id of their `json.dumps`, results by [`NaiveResults`]: equal
    // ids, equal dumps.
    let mut dumps = KeyInterner::new(NaiveForm);
    let mut results = NaiveResults::new();
    let mut tools = Names::default();
    // Every sample's (tool, arguments, result) ids in one vector, each sample a range
    // of it: a copy of a sample takes its range, not a vector of its own.
    let mut ids: Vec<(u32, u32, u32)> = Vec::new();
    let plans: Vec<std::ops::Range<usize>> = per_sample(
        &task.samples,
        |_| true,
        |_, s| {
            let start = ids.len();
            ids.extend(s.calls.iter().map(|c| {
                let args = match &c.arguments {
                    Arguments::Json(v) => dumps.value(v),
                    // No key of NaiveForm starts with `r`.
                    Arguments::Malformed(raw) => dumps.id(format!("raw:{raw}")),
                };
                (tools.id(&c.tool), args, results.observed(&c.observed))
            }));
            start..ids.len()
        },
    );
    verdict(
        plans.iter().map(|r| &ids[r.clone()]),
        plans.len(),
        threshold,
    )
}

/// [`naive`]'s verdict, read from the gate's preparation of the same task instead of
/// keying every call again, where the preparation's ids have the naive scorer's
/// equality: each call's arguments as written could be read and are its canonical
/// arguments (no hint or default changed them), steps are in the order written, and
/// every call returned a result or an error. Then two calls get one key id exactly when
/// they name one tool with arguments RFC 8785 prints alike, and two results one id
/// exactly when RFC 8785 prints them alike; without a float in either, that is
/// `json.dumps` equality (see [`NaiveForm`]). None otherwise (a float, a changed
/// argument, a missing result or raw bytes, which agreement keys otherwise), and the
/// task is scored the naive way. Labelled tasks are scored both ways, and keying a task
/// a second time is a large share of `score`'s work. Public only so that `tests/props.rs`
/// can hold it to [`naive`].
#[doc(hidden)]
pub fn naive_prepared(task: &Task, prepared: &Prepared, threshold: Ratio) -> Option<NaiveDecision> {
    if !prepared.in_written_order() {
        return None;
    }
    let calls = task.samples.iter().map(|s| s.calls.len()).sum();
    let mut ids: Vec<(u32, Option<u32>)> = Vec::with_capacity(calls);
    let mut plans: Vec<std::ops::Range<usize>> = Vec::with_capacity(task.samples.len());
    for (i, s) in task.samples.iter().enumerate() {
        // A sample the reader shared with the one before it is that one's plan again.
        if i > 0 && Arc::ptr_eq(s, &task.samples[i - 1]) {
            plans.push(plans[i - 1].clone());
            continue;
        }
        let start = ids.len();
        let mut steps = prepared.steps_as_written(i);
        for call in &s.calls {
            let (key, result, canonical) = steps.next()?;
            let Arguments::Json(written) = &call.arguments else {
                return None;
            };
            // Copy-on-write shares arguments no hint changed; a call of a sample of
            // several may be given the canonical form of an earlier call written
            // alike, a tree equal to its own.
            let plain = canonical.is_some_and(|c| Arc::ptr_eq(c, written) || c == written)
                && !has_float(written)
                && match &call.observed {
                    Observed::Result(p) => !p.has_float(),
                    Observed::Error { .. } => true,
                    Observed::Missing | Observed::Bytes(_) => false,
                };
            if !plain {
                return None;
            }
            ids.push((key, result));
        }
        if steps.next().is_some() {
            return None;
        }
        plans.push(start..ids.len());
    }
    Some(verdict(
        plans.iter().map(|r| &ids[r.clone()]),
        plans.len(),
        threshold,
    ))
}

/// The naive scorer's verdict on `task`, [`naive`]'s, found the cheapest way that gives
/// it: from the samples the reader shared when most repeat one text ([`repeats_meet`]),
/// else from the gate's keys ([`naive_prepared`]), else by keying every call again.
/// Labelled tasks are scored both ways, and only the verdict is compared.
pub fn naive_verdict(task: &Task, prepared: &Prepared, threshold: Ratio) -> Verdict {
    if repeats_meet(&task.samples, threshold) {
        return Verdict::Accept;
    }
    naive_prepared(task, prepared, threshold)
        .unwrap_or_else(|| naive(task, threshold))
        .decision
}

/// [`naive`]'s decision with its agreement, the cheapest way that gives the agreement:
/// from the gate's keys ([`naive_prepared`]), else by keying every call again. A
/// calibration ranks tasks by the agreement, which [`naive_verdict`]'s shortcut through
/// repeated samples does not count.
pub fn naive_decided(task: &Task, prepared: &Prepared, threshold: Ratio) -> NaiveDecision {
    naive_prepared(task, prepared, threshold).unwrap_or_else(|| naive(task, threshold))
}

/// Whether one sample stands for enough of `samples` to meet `threshold` by itself. The
/// reader gives a sample written byte for byte like an earlier one that one's reading
/// (one `Arc`), and copies of a sample are one plan to [`naive`], whatever they hold: its
/// modal plan stands for at least as many samples, and it accepts. Agreeing models
/// repeat themselves, so this decides many tasks without keying a call.
fn repeats_meet(samples: &[Arc<Sample>], threshold: Ratio) -> bool {
    let n = samples.len();
    let meets = |count| threshold.met_by(count, n);
    // A handful of samples are counted in place: sorting them cost more than the
    // naive scorer this saves. Past that, counting each would take time quadratic in n.
    if n > 64 {
        return modal(samples.iter().map(Arc::as_ptr)).is_some_and(|(_, count)| meets(count));
    }
    // Each sample's copies from it on: a sample that cannot meet the threshold with every
    // later one ends the search.
    (0..n).take_while(|&i| meets(n - i)).any(|i| {
        let copies = samples[i..].iter().filter(|s| Arc::ptr_eq(s, &samples[i]));
        meets(copies.count())
    })
}

/// The naive verdict on `n` plans: the modal plan's share against `threshold`.
fn verdict<K: Ord>(plans: impl Iterator<Item = K>, n: usize, threshold: Ratio) -> NaiveDecision {
    let best = modal(plans).map_or(0, |(_, count)| count);
    let agreement = Agreement::new(best, n);
    let decision = if n > 0 && threshold.met_by(best, n) {
        Verdict::Accept
    } else {
        Verdict::Reject
    };
    NaiveDecision {
        decision,
        agreement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task_line;

    fn line(results: &[&str], args: &[&str]) -> Task {
        let samples: Vec<String> = args
            .iter()
            .zip(results)
            .map(|(a, r)| format!(r#"{{"calls":[{{"tool":"t","arguments":{a},"result":{r}}}]}}"#))
            .collect();
        parse_task_line(
            format!(r#"{{"task_id":"x","samples":[{}]}}"#, samples.join(",")).as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn flaky_results_fool_the_naive_scorer() {
        let t = line(&["1", "2", "3", "1", "1"], &["{\"a\":1}"; 5]);
        let d = naive(&t, "0.80".parse().unwrap());
        assert_eq!(d.decision, Verdict::Reject);
        assert_eq!(d.agreement.count, 3);
    }

    #[test]
    fn results_with_floats_agree_by_their_dumps() {
        // One RFC 8785 form, two `json.dumps` forms: `a` and `c` dump alike, `b` not.
        let (a, b, c) = (
            r#"{"a":1.0,"b":1}"#,
            r#"{"a":1,"b":1.0}"#,
            r#"{"b":1, "a":1.0}"#,
        );
        let t = line(&[a, c, a, c, b], &["{}"; 5]);
        let d = naive(&t, "0.80".parse().unwrap());
        assert_eq!((d.decision, d.agreement.count), (Verdict::Accept, 4));
        let t = line(&[b, a, c, a, b], &["{}"; 5]);
        assert_eq!(naive(&t, "0.80".parse().unwrap()).agreement.count, 3);
        // Two RFC 8785 forms, one `json.dumps` form: Python reads both as infinity.
        let t = line(
            &["[1e400]", "[2e400]", "[1e400]", "[2e400]", "[3e400]"],
            &["{}"; 5],
        );
        assert_eq!(naive(&t, "0.80".parse().unwrap()).agreement.count, 5);
    }

    /// Arguments are told apart by fingerprint, and where two fingerprints meet
    /// (`1` and `1.0` hash alike) by their `json.dumps` forms, which differ.
    #[test]
    fn arguments_key_by_json_dumps_equality() {
        let values: Vec<Value> = [
            r#"{"a":1}"#,
            r#"{"a":2}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1}"#,
            r#"{"a":10e-1}"#,
            r#"{"b":[1e400]}"#,
            r#"{"b":[2e400]}"#,
        ]
        .iter()
        .map(|t| crate::json::parse(t).unwrap())
        .collect();
        assert_eq!(naive_argument_ids(&values), [0, 1, 2, 0, 2, 3, 3]);
    }

    #[test]
    fn samples_repeated_byte_for_byte_decide_alone() {
        // Floats, a missing result: nothing the gate's keys can say for the naive scorer.
        let sample = r#"{"calls":[{"tool":"t","arguments":{"a":1.5},"result":[2.0]},{"tool":"t","arguments":{}}]}"#;
        let other = r#"{"calls":[{"tool":"t","arguments":{"a":2.5},"result":[2.0]}]}"#;
        let task = |samples: &[&str]| {
            parse_task_line(
                format!(r#"{{"task_id":"x","samples":[{}]}}"#, samples.join(",")).as_bytes(),
            )
            .unwrap()
        };
        let at = |t: &str| t.parse().unwrap();
        let t = task(&[sample, sample, other, sample, sample]);
        assert!(repeats_meet(&t.samples, at("0.80")));
        assert!(!repeats_meet(&t.samples, at("0.81")));
        assert_eq!(naive(&t, at("0.80")).decision, Verdict::Accept);
        // Alike but not shared (each read on its own): left to the other ways.
        let apart = Task {
            samples: (t.samples.iter())
                .map(|s| Arc::new(Sample::clone(s)))
                .collect(),
            ..t.clone()
        };
        assert!(!repeats_meet(&apart.samples, at("0.80")));
        assert!(!repeats_meet(&[], at("0")));
        // Past 64 samples they are counted by sorting: 57 of 70 is 0.814.
        for (copies, meets) in [(57, true), (55, false)] {
            let mut samples = vec![sample; copies];
            samples.extend(std::iter::repeat_n(other, 70 - copies));
            let t = task(&samples);
            assert_eq!(
                repeats_meet(&t.samples, at("0.80")),
                meets,
                "{copies} of 70"
            );
            assert_eq!(naive(&t, at("0.80")).decision == Verdict::Accept, meets);
        }
    }

    #[test]
    fn names_number_in_order_of_first_appearance() {
        let names: Vec<String> = (0..40).map(|i| format!("tool_{}", i % 37)).collect();
        let mut ids = Names::default();
        let got: Vec<u32> = names.iter().map(|n| ids.id(n)).collect();
        let want: Vec<u32> = (0..40).map(|i| i % 37).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn surface_forms_fool_it_too() {
        let t = line(
            &["1"; 5],
            &[
                "{\"a\":1}",
                "{\"a\":1.0}",
                "{\"a\":1}",
                "{\"a\":1}",
                "{\"a\":1}",
            ],
        );
        assert_eq!(naive(&t, "0.80".parse().unwrap()).decision, Verdict::Accept);
        let t = line(
            &["1"; 5],
            &[
                "{\"a\":1}",
                "{\"a\":1.0}",
                "{\"a\":1.0}",
                "{\"a\":1}",
                "{\"a\":1}",
            ],
        );
        assert_eq!(naive(&t, "0.80".parse().unwrap()).decision, Verdict::Reject);
    }
}
