//! The calls of one turn were made together and have no order (docs/design.md,
//! "Turns"): each turn is cut where a call needs another's result, sorted so it compares
//! as a multiset, and lined up with the modal plan's turn so per-step measures compare
//! like with like.

use std::sync::Arc;

use super::prepared::{PreparedSample, PreparedStep};
use crate::canon::as_from_ref;
use crate::json::{Object, Value};
use crate::task::{Arguments, turn_ranges};

/// A sample's turns as [`split_turns`] cuts them, in order. A native sample (every call
/// its own turn) has no turn to split or sort, and its one-call turns are not collected.
pub(super) enum Turns {
    Split(std::vec::IntoIter<std::ops::Range<usize>>),
    Singles(std::ops::Range<usize>),
}

impl Turns {
    /// The turns of `sample`, and their lengths as [`turn_lengths`] keeps them.
    pub(super) fn of(sample: &crate::task::Sample) -> (Self, Vec<usize>) {
        if sample.turns.is_empty() {
            return (Turns::Singles(0..sample.calls.len()), Vec::new());
        }
        let split = split_turns(sample);
        let lengths = turn_lengths(&split);
        (Turns::Split(split.into_iter()), lengths)
    }
}

impl Iterator for Turns {
    type Item = std::ops::Range<usize>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Turns::Split(turns) => turns.next(),
            Turns::Singles(calls) => calls.next().map(|j| j..j + 1),
        }
    }
}

/// Sorts the calls of one turn by key (calls made together have no order), and
/// remembers where each went in `moved` so later `$from` steps name the same call.
pub(super) fn sort_turn(
    steps: &mut Vec<PreparedStep>,
    range: std::ops::Range<usize>,
    moved: &mut Option<Vec<usize>>,
    calls: usize,
) {
    if range.len() < 2 {
        return;
    }
    let mut order: Vec<usize> = range.clone().collect();
    order.sort_by_key(|&j| steps[j].key);
    if order.iter().zip(range.clone()).all(|(a, b)| *a == b) {
        return;
    }
    let m = moved.get_or_insert_with(|| (0..calls).collect());
    let sorted: Vec<PreparedStep> = order.iter().map(|&j| steps[j].clone()).collect();
    for (k, &j) in order.iter().enumerate() {
        m[j] = range.start + k;
    }
    steps.splice(range, sorted);
}

/// `v` with every `$from` step renumbered to where that call landed in canonical order,
/// or None when nothing changes (so the shared memo can be used).
pub(super) fn renumbered(v: &Value, moved: &[usize]) -> Option<Value> {
    fn walk(v: &Value, moved: &[usize], changed: &mut bool) -> Value {
        if let Some(r) = as_from_ref(v)
            && let Some(o) = r.as_object()
            && let Some(s) = o.get("step").and_then(Value::as_u64)
            && let Some(&to) = usize::try_from(s).ok().and_then(|s| moved.get(s))
            && to as u64 != s
        {
            *changed = true;
            let mut o = o.clone();
            o.insert(
                "step",
                Value::Number(crate::json::Number::from_u64(to as u64)),
            );
            return Value::Object(Object::from_iter([("$from".to_string(), Value::Object(o))]));
        }
        match v {
            Value::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, sub)| (k.clone(), walk(sub, moved, changed)))
                    .collect(),
            ),
            Value::Array(items) => {
                Value::Array(items.iter().map(|sub| walk(sub, moved, changed)).collect())
            }
            other => other.clone(),
        }
    }
    if refs_of(v).is_empty() {
        return None;
    }
    let mut changed = false;
    let out = walk(v, moved, &mut changed);
    changed.then_some(out)
}

/// Lines up the calls of each turn of every sample that differs from the modal plan
/// with the modal plan's calls of that turn (same tool first, then most arguments in
/// common), so per-step agreement and argument paths compare like with like. The plan
/// keys are untouched: within a turn order never counted.
pub(super) fn line_up_turns(samples: &mut [PreparedSample], modal_plan: Option<(usize, usize)>) {
    if samples.iter().all(|s| s.turns.is_empty()) {
        return;
    }
    let Some((m, _)) = modal_plan else {
        return;
    };
    let reference = samples[m].clone();
    let ref_ranges: Vec<_> = turn_ranges(&reference.turns, reference.steps.len()).collect();
    for s in samples.iter_mut() {
        if s.plan == reference.plan || s.turns.is_empty() {
            continue;
        }
        for (t, range) in turn_ranges(&s.turns, s.steps.len()).enumerate() {
            let Some(want) = ref_ranges.get(t) else { break };
            if range.len() < 2 {
                continue;
            }
            let targets = &reference.steps[want.clone()];
            let calls = &s.steps[range.clone()];
            let order = best_pairing(calls, targets);
            let lined: Vec<PreparedStep> = order.iter().map(|&k| calls[k].clone()).collect();
            Arc::make_mut(&mut s.steps).splice(range, lined);
        }
    }
}

/// Turn lengths as a prepared sample keeps them: empty when every call is its own turn,
/// as in [`crate::task::Sample::turns`].
fn turn_lengths(ranges: &[std::ops::Range<usize>]) -> Vec<usize> {
    if ranges.iter().all(|r| r.len() == 1) {
        return Vec::new();
    }
    ranges.iter().map(|r| r.len()).collect()
}

/// A sample's turns as index ranges, a turn cut before any call that refers (`$from`) to
/// a call of its own turn: that call needs the other's result first, so the two were not
/// made together, and it must never be sorted before it.
fn split_turns(sample: &crate::task::Sample) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for range in sample.turn_ranges() {
        let mut start = range.start;
        for j in range.clone().skip(1) {
            let refers_within = match &sample.calls[j].arguments {
                Arguments::Json(v) => refs_of(v).into_iter().any(|s| s >= start && s < j),
                Arguments::Malformed(_) => false,
            };
            if refers_within {
                out.push(start..j);
                start = j;
            }
        }
        out.push(start..range.end);
    }
    out
}

/// The steps every `$from` in `v` names.
fn refs_of(v: &Value) -> Vec<usize> {
    let mut out = Vec::new();
    fn walk(v: &Value, out: &mut Vec<usize>) {
        if let Some(r) = as_from_ref(v) {
            if let Some(s) = r
                .as_object()
                .and_then(|o| o.get("step"))
                .and_then(Value::as_u64)
            {
                out.push(usize::try_from(s).unwrap_or(usize::MAX));
            }
            return;
        }
        match v {
            Value::Object(o) => o.iter().for_each(|(_, sub)| walk(sub, out)),
            Value::Array(items) => items.iter().for_each(|sub| walk(sub, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// The order of `calls` that lines them up best with `targets`: the same call first,
/// then the same tool, then the arguments that tell the target apart from the others of
/// its turn (a value every call of the turn shares says nothing about which is which),
/// then any argument in common. Exhaustive for turns of up to six calls, greedy past
/// that; calls left over keep their order at the end.
fn best_pairing(calls: &[PreparedStep], targets: &[PreparedStep]) -> Vec<usize> {
    type Score = (usize, usize, usize, usize, usize);
    let score = |c: &PreparedStep, t: &PreparedStep| -> Score {
        let (mut telling, mut shared, mut like) = (0, 0, 0);
        if let (Some(Value::Object(x)), Some(Value::Object(y))) =
            (c.args.as_deref(), t.args.as_deref())
        {
            for (k, v) in y.iter() {
                if let (Some(Value::String(a)), Value::String(b)) = (x.get(k), v) {
                    like += resemblance(a, b);
                }
                if x.get(k) != Some(v) {
                    continue;
                }
                shared += 1;
                // Only a plain value names the call: a list written in either order, or a
                // value every call of the turn has, says nothing about which is which.
                let plain = !matches!(v, Value::Array(_) | Value::Object(_));
                let common = targets.iter().filter(|o| o.tool == t.tool).all(|o| {
                    o.args
                        .as_deref()
                        .and_then(Value::as_object)
                        .and_then(|o| o.get(k))
                        == Some(v)
                });
                if plain && !common {
                    telling += 1;
                }
            }
        }
        (
            usize::from(c.key == t.key),
            usize::from(c.tool == t.tool),
            telling,
            // A harmless variant (`GOOGL` for `GOOG`) is closer to its own call than to
            // a made-up value.
            like,
            shared,
        )
    };
    let scores: Vec<Vec<Score>> = calls
        .iter()
        .map(|c| targets.iter().map(|t| score(c, t)).collect())
        .collect();
    let total = |perm: &[usize]| -> Score {
        perm.iter()
            .zip(0..targets.len())
            .fold((0, 0, 0, 0, 0), |acc, (&c, t)| {
                let s = scores[c][t];
                (
                    acc.0 + s.0,
                    acc.1 + s.1,
                    acc.2 + s.2,
                    acc.3 + s.3,
                    acc.4 + s.4,
                )
            })
    };
    best_order(calls.len(), targets.len(), |c, t| scores[c][t], total)
}

/// The order of `n` calls over `places` that maximizes `total`: exhaustive (Heap's
/// algorithm) for up to six calls, where the first best order wins so the pairing is
/// reproducible; greedy by `score` past that, calls left over at the end in their order.
fn best_order<S: Ord + Copy>(
    n: usize,
    places: usize,
    score: impl Fn(usize, usize) -> S,
    total: impl Fn(&[usize]) -> S,
) -> Vec<usize> {
    let mut best: Vec<usize> = (0..n).collect();
    if n <= 6 {
        let mut perm: Vec<usize> = (0..n).collect();
        let mut best_score = total(&perm);
        let mut c = vec![0; n];
        let mut i = 1;
        while i < n {
            if c[i] < i {
                if i % 2 == 0 {
                    perm.swap(0, i);
                } else {
                    perm.swap(c[i], i);
                }
                let sc = total(&perm);
                if sc > best_score {
                    best_score = sc;
                    best.clone_from(&perm);
                }
                c[i] += 1;
                i = 1;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        return best;
    }
    let mut left: Vec<usize> = (0..n).collect();
    best.clear();
    for t in (0..places).take(n) {
        let pick = left
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (score(**c, t), std::cmp::Reverse(*i)))
            .map(|(i, _)| i);
        match pick {
            Some(i) => best.push(left.remove(i)),
            None => break,
        }
    }
    best.extend(left);
    best
}

/// How alike two strings read: Dice's coefficient over character pairs, 0 to 1000.
fn resemblance(a: &str, b: &str) -> usize {
    let pairs = |s: &str| -> Vec<(char, char)> {
        let cs: Vec<char> = s.to_lowercase().chars().collect();
        let mut p: Vec<(char, char)> = cs.windows(2).map(|w| (w[0], w[1])).collect();
        p.sort_unstable();
        p
    };
    let (x, y) = (pairs(a), pairs(b));
    if x.is_empty() && y.is_empty() {
        return usize::from(a.eq_ignore_ascii_case(b)) * 1000;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2000 * common / (x.len() + y.len())
}

#[cfg(test)]
mod tests {
    use crate::decide::{Options, classify, prepare, test_catalog, tool_states};
    use crate::task::parse_task_line;

    fn decide_line(line: &str) -> serde_json::Value {
        let c = test_catalog();
        let t = parse_task_line(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        let d = classify(
            &prepare(&t, &c, None),
            &tool_states(&c),
            &Options::default(),
        );
        serde_json::from_str::<serde_json::Value>(&crate::record::json(&d)).unwrap()
    }

    /// One task, its parallel calls shuffled per sample, written natively, as OpenAI
    /// transcripts and as Anthropic transcripts: the same decision, field for field.
    #[test]
    fn a_task_decides_alike_in_every_sample_shape() {
        // (calls in the order this sample made them: city, unit or none, result)
        let samples: Vec<Vec<(&str, Option<&str>, u32)>> = vec![
            vec![("Oslo", None, 3), ("Rome", Some("c"), 19)],
            vec![("Rome", None, 19), ("Oslo", None, 3)],
            vec![("Oslo", Some("c"), 3), ("Rome", None, 19)],
            vec![("Rome", None, 19), ("Oslo", None, 3)],
            vec![("Rome", None, 19), ("Oslo", Some("c"), 3)],
            vec![("Oslo", None, 3), ("Bergen", None, 7)],
        ];
        let args = |city: &str, unit: Option<&str>| match unit {
            Some(u) => serde_json::json!({"city": city, "unit": u}),
            None => serde_json::json!({"city": city}),
        };
        let native: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let turn: Vec<_> = s
                    .iter()
                    .map(|(c, u, r)| serde_json::json!({"tool": "w", "arguments": args(c, *u), "result": {"t": r}}))
                    .collect();
                serde_json::json!({"turns": [turn]})
            })
            .collect();
        let openai: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let calls: Vec<_> = s.iter().enumerate().map(|(k, (c, u, _))| serde_json::json!({"id": format!("c{k}"), "type": "function", "function": {"name": "w", "arguments": args(c, *u).to_string()}})).collect();
                let mut messages = vec![
                    serde_json::json!({"role": "user", "content": "weather?"}),
                    serde_json::json!({"role": "assistant", "content": null, "tool_calls": calls}),
                ];
                for (k, (_, _, r)) in s.iter().enumerate().rev() {
                    messages.push(serde_json::json!({"role": "tool", "tool_call_id": format!("c{k}"), "content": format!("{{\"t\": {r}}}")}));
                }
                serde_json::json!({"messages": messages})
            })
            .collect();
        let anthropic: Vec<serde_json::Value> = samples
            .iter()
            .map(|s| {
                let uses: Vec<_> = s.iter().enumerate().map(|(k, (c, u, _))| serde_json::json!({"type": "tool_use", "id": format!("t{k}"), "name": "w", "input": args(c, *u)})).collect();
                let results: Vec<_> = s.iter().enumerate().map(|(k, (_, _, r))| serde_json::json!({"type": "tool_result", "tool_use_id": format!("t{k}"), "content": [{"type": "text", "text": format!("{{\"t\":{r}}}")}]})).collect();
                serde_json::json!({"messages": [
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "content": uses},
                    {"role": "user", "content": results}]})
            })
            .collect();
        let line = |samples: Vec<serde_json::Value>| {
            serde_json::json!({"task_id": "t", "samples": samples}).to_string()
        };
        let want = decide_line(&line(native));
        assert_eq!(want["decision"], "accept", "{want:#}");
        assert_eq!(want["arg_agreement"]["count"], 5, "{want:#}");
        for other in [openai, anthropic] {
            assert_eq!(decide_line(&line(other)), want);
        }
    }
}
