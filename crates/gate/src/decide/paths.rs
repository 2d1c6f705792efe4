//! Where samples differ, path by path (docs/design.md, "Located fabrications"): a reject
//! needs one path scattered on its own, not just plans that differ somewhere.

use std::collections::BTreeMap;

use super::decision::{Agreement, DivergentPath};
use super::prepared::DistinctSample;
use super::tally::tally;
use crate::canon::is_prose_form;
use crate::jcs::{self, push_member};
use crate::json::{Object, Value};
use crate::task::BoundedMemo;

/// Paths listed in a decision, most scattered first.
pub(super) const MAX_PATHS: usize = 32;
/// Paths walked per task at most, so one enormous argument cannot stall a run.
const PATH_WALK_LIMIT: usize = 10_000;

/// Every place where the samples' plans differ: the plan's length, each step's tool, and
/// each argument path (objects are walked, arrays of one length too; absence counts as
/// a value; unreadable arguments agree with nothing; prose is never listed), each with
/// its number of distinct values and how many samples share its most common one. Most
/// scattered first.
pub(super) fn path_agreements(
    samples: &[DistinctSample],
    n: usize,
    max_steps: usize,
) -> Vec<DivergentPath> {
    let mut out = Vec::new();
    // The path is spelled only where samples differ: most tasks agree on every step.
    fn push_counted(
        path: impl FnOnce() -> String,
        (distinct, modal): (usize, Option<(usize, usize)>),
        n: usize,
        out: &mut Vec<DivergentPath>,
    ) {
        if distinct > 1 {
            out.push(DivergentPath {
                path: path(),
                distinct,
                agreement: Agreement::new(modal.map_or(0, |(_, count)| count), n),
            });
        }
    }
    let lens = samples
        .iter()
        .map(|c| (c.at, c.sample.steps.len(), c.times));
    push_counted(|| "$.steps".into(), tally(lens), n, &mut out);
    for j in 0..max_steps {
        let tools = samples.iter().map(|c| {
            let t = c.sample.steps.get(j).map_or("\u{0}", |st| &*st.tool);
            (c.at, t, c.times)
        });
        let step = |what: &str| {
            let mut path = String::with_capacity(32);
            path.push_str("$.steps[");
            jcs::write_usize(j, &mut path);
            path.push_str("].");
            path.push_str(what);
            path
        };
        push_counted(|| step("tool"), tally(tools), n, &mut out);
        // Arguments are compared among readable samples; unreadable ones are listed in
        // the decision on their own. When every sample has this step and the readable
        // ones share one (tool, arguments) key, their arguments print the same and
        // there is nothing to walk.
        let mut keys =
            (samples.iter()).map(|c| c.sample.steps.get(j).map(|st| (st.key, st.args.is_some())));
        let mut readable = keys.clone().flatten().filter(|(_, ok)| *ok).map(|(k, _)| k);
        let first = readable.next();
        if keys.all(|k| k.is_some()) && readable.all(|k| Some(k) == first) {
            continue;
        }
        let args: Vec<(Option<&Value>, usize)> = (samples.iter())
            .filter_map(|c| match c.sample.steps.get(j) {
                None => Some((None, c.times)),
                Some(st) => st.args.as_deref().map(|v| (Some(v), c.times)),
            })
            .collect();
        walk(&mut step("arguments"), &args, n, &mut out);
    }
    out.sort_by_key(|p| p.agreement.count);
    out
}

/// Lists where `values` differ below `path` (the buffer is left as it was given); each
/// value comes with how many samples hold it.
fn walk(
    path: &mut String,
    values: &[(Option<&Value>, usize)],
    n: usize,
    out: &mut Vec<DivergentPath>,
) {
    // Prose is compared by presence alone and never decides: where a sample holds a
    // prose value, or a list of them (items marked prose), nothing is listed, whether
    // the others hold one too or none.
    let prose = |v: &Value| match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_prose_form),
        v => is_prose_form(v),
    };
    if out.len() >= PATH_WALK_LIMIT || values.iter().any(|(v, _)| v.is_some_and(prose)) {
        return;
    }
    // Objects, and arrays of one length, are walked without being printed: where they
    // print alike so does every member, and nothing below them is listed. Printing
    // them at each level would make a deep argument cost its depth times its size.
    if values
        .iter()
        .all(|(v, _)| matches!(v, Some(Value::Object(_))))
    {
        let objs: Vec<(&Object, usize)> = values
            .iter()
            .filter_map(|(v, times)| Some((v.and_then(Value::as_object)?, *times)))
            .collect();
        let mut names: Vec<&String> = objs.iter().flat_map(|(o, _)| o.keys()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let sub: Vec<(Option<&Value>, usize)> = objs
                .iter()
                .map(|(o, times)| (o.get(name), *times))
                .collect();
            let len = path.len();
            push_member(path, name);
            walk(path, &sub, n, out);
            path.truncate(len);
        }
        return;
    }
    if let Some((Some(Value::Array(first)), _)) = values.first() {
        let same_len = values
            .iter()
            .all(|(v, _)| matches!(v, Some(Value::Array(a)) if a.len() == first.len()));
        if same_len {
            for i in 0..first.len() {
                let sub: Vec<(Option<&Value>, usize)> = values
                    .iter()
                    .map(|(v, times)| (v.and_then(Value::as_array).and_then(|a| a.get(i)), *times))
                    .collect();
                let len = path.len();
                path.push('[');
                jcs::write_usize(i, path);
                path.push(']');
                walk(path, &sub, n, out);
                path.truncate(len);
            }
            return;
        }
    }
    // Values equal as trees print equal: where every value is the first, nothing is
    // printed; a value met again among the last few is not printed again, and the
    // bound keeps many distinct values linear.
    if values.iter().all(|(v, _)| *v == values[0].0) {
        return;
    }
    // Each distinct print gets the next id, and the count at that index.
    let mut printed: BoundedMemo<Option<&Value>, usize> = BoundedMemo::new();
    let mut ids: BTreeMap<Leaf, usize> = BTreeMap::new();
    let mut counts: Vec<usize> = Vec::new();
    for (v, times) in values {
        let id = printed.get_or(*v, || {
            let next = ids.len();
            let leaf = match v {
                Some(Value::String(text)) => Leaf::Text(text),
                Some(other) => Leaf::Printed(jcs::to_string(other)),
                None => Leaf::Printed("\u{0}".into()),
            };
            *ids.entry(leaf).or_insert(next)
        });
        if id == counts.len() {
            counts.push(0);
        }
        counts[id] += times;
    }
    if counts.len() <= 1 {
        return;
    }
    out.push(DivergentPath {
        path: path.clone(),
        distinct: counts.len(),
        agreement: Agreement::new(counts.iter().copied().max().unwrap_or(0), n),
    });
}

/// A value as [`walk`] tells values apart: a string by its text (it prints like
/// another exactly when the texts are equal, and never like a value of another kind),
/// anything else by its RFC 8785 print; strings are most leaves, and printing them
/// would be most of the walk.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Leaf<'a> {
    Text(&'a str),
    Printed(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    #[test]
    fn walk_lists_only_leaves_that_print_apart() {
        let walked = |texts: &[&str]| {
            let values: Vec<Value> = texts.iter().map(|t| parse(t).unwrap()).collect();
            let refs: Vec<(Option<&Value>, usize)> = values.iter().map(|v| (Some(v), 1)).collect();
            let mut out = Vec::new();
            let mut path = String::from("$");
            walk(&mut path, &refs, refs.len(), &mut out);
            assert_eq!(path, "$", "the path buffer is handed back as it came");
            out.into_iter()
                .map(|p| (p.path, p.distinct, p.agreement.count))
                .collect::<Vec<_>>()
        };
        // Different trees, one print: nothing differs.
        assert_eq!(walked(&[r#"{"a":{"b":1}}"#, r#"{"a":{"b":1.0}}"#]), vec![]);
        assert_eq!(
            walked(&[
                r#"{"a":[1,{"c":"x"}],"odd key":2,"z":1}"#,
                r#"{"a":[1,{"c":"y"}],"odd key":3,"z":1}"#,
                r#"{"a":[1,{"c":"x"}],"odd key":2}"#,
            ]),
            vec![
                ("$.a[1].c".to_string(), 2, 2),
                ("$[\"odd key\"]".to_string(), 2, 2),
                ("$.z".to_string(), 2, 2),
            ]
        );
        // Arrays of different lengths are one value.
        assert_eq!(
            walked(&["[1,2]", "[1]", "[1]"]),
            vec![("$".to_string(), 2, 2)]
        );
    }
}
