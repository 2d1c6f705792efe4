//! The naive scorer the seed warns against, kept as a baseline to measure the gate by:
//! one agreement over arguments and results together, on raw JSON (the seed's
//! `json.dumps` equality), reject below 0.80. It conflates a fabricated argument with a
//! flaky tool, which is the whole point of comparing against it.

use crate::decide::{Agreement, Verdict, modal};
use crate::json::Value;
use crate::seed::{Dumps, dumps_key};
use crate::stats::Ratio;
use crate::task::{Arguments, Form, Keys, Observed, Payload, Task, has_float};

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
/// The tag keeps the two kinds of key apart.
struct NaiveForm;

impl Form for NaiveForm {
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
    fn of_payload(&self, p: &Payload) -> String {
        match p.canonical() {
            (_, true) => format!("d{}", Dumps.of_payload(p)),
            (jcs, false) => format!("j{jcs}"),
        }
    }
}

/// The naive scorer's key of a result payload; public only so `tests/props.rs` can
/// hold its equality to [`dumps_key`]'s.
#[doc(hidden)]
pub fn naive_result_key(p: &Payload) -> String {
    NaiveForm.of_payload(p)
}

/// Scores `task` the naive way. Calls without an observed result count as `null`.
pub fn naive(task: &Task, threshold: Ratio) -> NaiveDecision {
    // Arguments and results by the id of their `json.dumps`: equal ids, equal dumps.
    let mut dumps = Keys::new(NaiveForm);
    let keys: Vec<Vec<(&str, u32, u32)>> = task
        .samples
        .iter()
        .map(|s| {
            s.calls
                .iter()
                .map(|c| {
                    let args = match &c.arguments {
                        Arguments::Json(v) => dumps.value(v),
                        // No key of NaiveForm starts with `r`.
                        Arguments::Malformed(raw) => dumps.id(format!("raw:{raw}")),
                    };
                    let result = match &c.observed {
                        Observed::Result(p) => dumps.payload(p),
                        // An error holds no float: its `json.dumps` is its RFC 8785
                        // form, tagged as `of_value` would tag it.
                        other => dumps.id(match other.error_form() {
                            Some(form) => format!("j{form}"),
                            None => NaiveForm.of_value(&other.as_value()),
                        }),
                    };
                    (c.tool.as_str(), args, result)
                })
                .collect()
        })
        .collect();
    let n = keys.len();
    let best = modal(keys.iter()).map_or(0, |(_, count)| count);
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
