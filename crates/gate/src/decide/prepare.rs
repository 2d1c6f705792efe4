//! Phase one (docs/design.md, "Two phases"): a task reduced to canonical keys, once,
//! while tool health is still unknown. Phase two reads only these keys, so a batch can
//! spill them and classify later.

use std::sync::Arc;

use super::decision::MalformedSample;
use super::prepared::{Miss, PlanKey, Prepared, PreparedSample, PreparedStep};
use super::tally::modal;
use super::turns::{Turns, line_up_turns, renumbered, sort_turn};
use crate::canon::{Invalid, Resolver, Violation, canonicalize_shared, prose_masked};
use crate::catalog::{Catalog, ToolSpec};
use crate::jcs::{self, call_key};
use crate::json::Value;
use crate::task::{Arguments, BoundedMemo, Call, KeyInterner, Rfc8785Form, Task, per_sample};

/// Canonicalizes every call of every sample. `resolver` answers `id` hints (None: IDs
/// are compared as written).
pub fn prepare(
    task: &Task,
    catalog: &Catalog,
    mut resolver: Option<&mut (dyn Resolver + '_)>,
) -> Prepared {
    let mut malformed = Vec::new();
    let mut results = KeyInterner::new(Rfc8785Form);
    let mut calls = CallIds {
        keys: KeyInterner::new(Rfc8785Form),
        written: BoundedMemo::new(),
    };
    // Each tool's name once per task, shared by the steps that call it (the catalog's
    // copy, for a tool it has).
    let mut names: BoundedMemo<&str, Arc<str>> = BoundedMemo::new();
    // A sample the reader shared with an earlier one prepares as that one did, unless
    // that one was unreadable: its malformed entries name their own sample.
    let reusable = |s: &PreparedSample| !matches!(s.plan, PlanKey::Malformed(_));
    // Whether a call was answered not found: only then can a sample have invented a
    // reference (a shared sample's calls are its first's).
    let mut missed = false;
    let mut samples = per_sample(&task.samples, reusable, |i, sample| {
        let mut steps: Vec<PreparedStep> = Vec::with_capacity(sample.calls.len());
        let mut bad = sample.malformed.is_some();
        malformed.extend(sample.malformed.iter().map(|why| MalformedSample {
            sample: i,
            step: None,
            place: None,
            problems: vec![why.clone()],
        }));
        let (ranges, turns) = Turns::of(sample);
        // Where each call as written landed in canonical order, for `$from` steps; only
        // kept once a turn was reordered.
        let mut moved: Option<Vec<usize>> = None;
        for range in ranges {
            let start = range.start;
            for j in range.clone() {
                let call = &sample.calls[j];
                missed |= crate::invented::is_miss(call);
                let spec = catalog.get(&call.tool);
                let step = (start, moved.as_deref(), sample.calls.len() > 1);
                let canon = calls.of(call, step, spec, resolver.as_deref_mut());
                let (args, key, violations) = match canon {
                    Canonical::Valid(v, key) => (Some(v), key, None),
                    Canonical::Violates(v, key, why) => (Some(v), key, Some(why)),
                    Canonical::Unreadable(problems) => {
                        bad = true;
                        malformed.push(MalformedSample {
                            sample: i,
                            step: Some(j),
                            place: Some(call.place(i, j)),
                            problems,
                        });
                        (None, calls.keys.id(format!("\u{0}malformed:{i}:{j}")), None)
                    }
                };
                steps.push(PreparedStep {
                    miss: reference_miss(spec, args.as_deref(), &call.observed),
                    tool: match spec {
                        Some(spec) => Arc::clone(&spec.shared_name),
                        None => names.get_or(&call.tool, || Arc::from(call.tool.as_str())),
                    },
                    args,
                    key,
                    result: call.observed.key_id(&mut results),
                    violations,
                });
            }
            sort_turn(&mut steps, range.clone(), &mut moved, sample.calls.len());
        }
        let plan = if bad {
            PlanKey::Malformed(i)
        } else {
            PlanKey::Steps(steps.iter().map(|s| s.key).collect(), turns.clone())
        };
        PreparedSample::of(i, plan, steps, turns)
    });
    // Plan keys are final here, and lining up turns leaves them as they are: the modal
    // plan is found once, for the pairing and for every rule that names it.
    let modal_plan = modal(samples.iter().map(|s| &s.plan));
    line_up_turns(&mut samples, modal_plan);
    Prepared {
        task_id: task.task_id.clone(),
        label: task.label,
        epoch_fixed: task.epoch_fixed.unwrap_or(true),
        modal_plan,
        samples,
        malformed,
        warnings: task.warnings.clone(),
        outcomes: outcomes_of(task),
        invented_references: match missed {
            true => crate::invented::shared_references(task, catalog),
            false => crate::invented::none(),
        },
    }
}

/// The samples' outcomes in input order, or none when no sample has one.
fn outcomes_of(task: &Task) -> Vec<Option<f64>> {
    if task.samples.iter().all(|s| s.outcome.is_none()) {
        return Vec::new();
    }
    task.samples.iter().map(|s| s.outcome).collect()
}

/// What a step's call says of its references, when it found nothing.
fn reference_miss(
    spec: Option<&ToolSpec>,
    args: Option<&Value>,
    observed: &crate::task::Observed,
) -> Option<Arc<Miss>> {
    let spec = spec?;
    let args = args?.as_object()?;
    let not_found =
        matches!(observed, crate::task::Observed::Error { kind, .. } if kind == "not_found");
    let unresolved: Vec<(String, String)> = spec
        .references
        .iter()
        .filter_map(|r| {
            let resolver = r.resolver.as_ref()?;
            let v = args.get(&r.param)?.as_object()?;
            v.contains_key("$unresolved")
                .then(|| (r.param.clone(), resolver.clone()))
        })
        .collect();
    if !not_found && unresolved.is_empty() {
        return None;
    }
    let given: Vec<&crate::catalog::Reference> = spec
        .references
        .iter()
        .filter(|r| args.contains_key(&r.param))
        .collect();
    let params = if given.is_empty() {
        args.iter()
            .map(|(k, v)| (k.clone(), jcs::to_string(v)))
            .collect()
    } else {
        given
            .iter()
            .filter_map(|r| Some((r.param.clone(), jcs::to_string(args.get(&r.param)?))))
            .collect()
    };
    Some(Arc::new(Miss {
        not_found,
        params,
        must_exist: given.iter().any(|r| r.must_exist),
        unresolved,
    }))
}

/// One call's key: canonical arguments and the id of their (tool, arguments) key;
/// arguments that break the schema, keyed as written; or why they cannot be read.
#[derive(Debug, Clone)]
enum Canonical {
    Valid(Arc<Value>, u32),
    Violates(Arc<Value>, u32, Arc<Vec<Violation>>),
    Unreadable(Vec<String>),
}

/// The ids of a task's calls by key ([`canonical_call`]'s). Samples mostly repeat each
/// other's calls: each distinct (tool, step, arguments as written) of a sample of several
/// calls is canonicalized and keyed once (the step matters because `$from` may only name
/// earlier steps). A sample of one call that repeats an earlier one was shared by the
/// reader when it repeated it whole, so what is left to find is a call that returned
/// something else, too rare to pay for comparing every such call with the earlier ones:
/// the memo would cost more than it saves.
struct CallIds<'a> {
    keys: KeyInterner<'a, Rfc8785Form>,
    written: BoundedMemo<(&'a str, usize, &'a Value), Canonical>,
}

impl<'a> CallIds<'a> {
    /// `call`'s canonical form and key, at `step`: the index of its turn's first call,
    /// where each call as written landed in canonical order once a turn was reordered
    /// (its `$from` references are renumbered by it), and whether its sample has several
    /// calls (only then is it looked for among the earlier ones).
    fn of(
        &mut self,
        call: &'a Call,
        (start, moved, several): (usize, Option<&[usize]>, bool),
        spec: Option<&ToolSpec>,
        resolver: Option<&mut (dyn Resolver + '_)>,
    ) -> Canonical {
        let v = match &call.arguments {
            Arguments::Malformed(why) => return Canonical::Unreadable(vec![why.clone()]),
            Arguments::Json(v) => v,
        };
        let keys = &mut self.keys;
        if let Some(v) = moved.and_then(|m| renumbered(v, m)) {
            return canonical_call(&call.tool, &Arc::new(v), start, spec, resolver, keys);
        }
        if !several {
            return canonical_call(&call.tool, v, start, spec, resolver, keys);
        }
        self.written.get_or((call.tool.as_str(), start, &**v), || {
            canonical_call(&call.tool, v, start, spec, resolver, keys)
        })
    }
}

/// One call's key; `spec` is its tool's, when the catalog has it.
fn canonical_call<'a>(
    tool: &'a str,
    v: &Arc<Value>,
    step: usize,
    spec: Option<&ToolSpec>,
    resolver: Option<&mut (dyn Resolver + '_)>,
    keys: &mut KeyInterner<'a, Rfc8785Form>,
) -> Canonical {
    let v = match spec {
        Some(spec) => match canonicalize_shared(spec, v, step, resolver) {
            Ok(c) => c,
            Err(Invalid::Unreadable(problems)) => return Canonical::Unreadable(problems),
            Err(Invalid::Violates(why)) => {
                let v = prose_masked(spec, v).map_or_else(|| Arc::clone(v), Arc::new);
                let id = keys.id(call_key(tool, &v, true));
                return Canonical::Violates(v, id, Arc::new(why));
            }
        },
        // No schema for an unknown tool: compare as written (the gate rejects such a
        // plan anyway when it is the modal one).
        None => match &**v {
            Value::Object(o) if o.duplicate_key().is_none() => Arc::clone(v),
            Value::Object(o) => {
                return Canonical::Unreadable(vec![format!(
                    "arguments: duplicate key {:?}",
                    o.duplicate_key().unwrap_or_default()
                )]);
            }
            other => {
                return Canonical::Unreadable(vec![format!(
                    "arguments: expected an object, found {}",
                    other.kind()
                )]);
            }
        },
    };
    let id = keys.call(tool, &v);
    Canonical::Valid(v, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::{Options, classify, test_catalog, tool_states};
    use crate::task::parse_task_line;

    #[test]
    fn plan_keys_are_equal_as_they_order() {
        let keys = [
            PlanKey::Steps(Arc::from([1, 2]), vec![]),
            PlanKey::Steps(Arc::from([1, 2]), vec![]),
            PlanKey::Steps(Arc::from([1, 2]), vec![1, 1]),
            PlanKey::Steps(Arc::from([1, 2]), vec![2]),
            PlanKey::Steps(Arc::from([1, 2]), vec![1]),
            PlanKey::Steps(Arc::from([1, 3]), vec![]),
            PlanKey::Steps(Arc::from([]), vec![]),
            PlanKey::Malformed(0),
            PlanKey::Malformed(1),
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(a == b, a.cmp(b).is_eq(), "{a:?} and {b:?}");
            }
        }
    }

    /// Calls keyed by fingerprint, unprinted while no two meet, get the ids their printed
    /// keys would: valid calls (spellings the hints merge among them), calls that break
    /// the schema, and unreadable ones, numbered by first appearance.
    #[test]
    fn call_ids_are_the_ids_of_their_printed_keys() {
        let c = test_catalog();
        let call =
            |args: &str| format!(r#"{{"calls":[{{"tool":"w","arguments":{args},"result":1}}]}}"#);
        let samples = [
            call(r#"{"city":"Oslo"}"#),
            call(r#"{"city":7}"#),
            call(r#"{"city":"Rome","unit":"c"}"#),
            call(r#"{"city":"Oslo","unit":"c"}"#),
            call(r#"{"city":"Oslo","city":"Rome"}"#),
            call(r#"{"city":"Rome"}"#),
            call(r#"{"city":7}"#),
            call(r#"{"city":1.0}"#),
        ];
        let line = format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(","));
        let p = prepare(&parse_task_line(line.as_bytes()).unwrap(), &c, None);
        let mut forms: Vec<String> = Vec::new();
        let mut want = Vec::new();
        for (i, s) in p.samples.iter().enumerate() {
            let step = &s.steps[0];
            let form = match &step.args {
                Some(v) => call_key("w", v, step.violations.is_some()),
                None => format!("\u{0}malformed:{i}:0"),
            };
            let id = forms.iter().position(|f| *f == form).unwrap_or_else(|| {
                forms.push(form);
                forms.len() - 1
            });
            want.push(id as u32);
        }
        let keys: Vec<u32> = p.samples.iter().map(|s| s.steps[0].key).collect();
        assert_eq!(keys, want);
        assert_eq!(keys, [0, 1, 2, 0, 3, 2, 1, 4]);
    }

    /// A call of a sample of several calls is canonicalized once for the samples that
    /// repeat it (they share its canonical tree); a sample's only call is canonicalized
    /// anew, to the same key.
    #[test]
    fn calls_of_several_call_samples_are_looked_up_again() {
        let c = test_catalog();
        let line = r#"{"task_id":"t","samples":[{"calls":[
          {"tool":"w","arguments":{"city":"Oslo"},"result":1},
          {"tool":"w","arguments":{"city":"Rome"},"result":2}]}]}"#;
        let t = parse_task_line(line.as_bytes()).unwrap();
        let mut ids = CallIds {
            keys: KeyInterner::new(Rfc8785Form),
            written: BoundedMemo::new(),
        };
        let mut of = |j: usize, several: bool| match ids.of(
            &t.samples[0].calls[j],
            (j, None, several),
            c.get("w"),
            None,
        ) {
            Canonical::Valid(v, key) => (v, key),
            other => panic!("{other:?}"),
        };
        let (first, key) = of(0, true);
        let (again, key_again) = of(0, true);
        assert!(Arc::ptr_eq(&first, &again) && key == key_again);
        let (single, key_single) = of(1, false);
        let (single_again, key_single_again) = of(1, false);
        assert!(!Arc::ptr_eq(&single, &single_again));
        assert_eq!((key_single, key_single_again), (1, 1));
    }

    /// A step names its tool with the catalog's copy of the name; a tool the catalog
    /// lacks is named once per task.
    #[test]
    fn steps_share_their_tool_names() {
        let c = test_catalog();
        let line = r#"{"task_id":"t","samples":[
          {"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":1},
                    {"tool":"v","arguments":{},"result":1}]},
          {"calls":[{"tool":"v","arguments":{"a":1},"result":1}]}]}"#;
        let p = prepare(&parse_task_line(line.as_bytes()).unwrap(), &c, None);
        let tool = |i: usize, j: usize| &p.samples[i].steps[j].tool;
        assert!(Arc::ptr_eq(tool(0, 0), &c.get("w").unwrap().shared_name));
        assert!(Arc::ptr_eq(tool(0, 1), tool(1, 0)) && &**tool(1, 0) == "v");
    }

    /// The copies of a sample the reader shared hold its steps, not copies of them; a
    /// copy lined up with the modal plan gets steps of its own, and the others keep theirs.
    #[test]
    fn shared_samples_share_their_steps() {
        let c = test_catalog();
        let call = |city: &str, r: u32| {
            format!(r#"{{"tool":"w","arguments":{{"city":"{city}"}},"result":{r}}}"#)
        };
        let turn = |a: &str, b: &str| format!(r#"{{"turns":[[{},{}]]}}"#, call(a, 1), call(b, 2));
        let (modal, off) = (turn("Oslo", "Rome"), turn("Rome", "Pisa"));
        let line = format!(r#"{{"task_id":"t","samples":[{modal},{modal},{off},{off},{modal}]}}"#);
        let mut t = parse_task_line(line.as_bytes()).unwrap();
        // As the reader shares copies of a sample (it does so for native `calls` lines).
        for (copy, of) in [(1, 0), (3, 2), (4, 0)] {
            t.samples[copy] = Arc::clone(&t.samples[of]);
        }
        let p = prepare(&t, &c, None);
        let steps = |i: usize| &p.samples[i].steps;
        assert!(Arc::ptr_eq(steps(0), steps(1)) && Arc::ptr_eq(steps(0), steps(4)));
        let keys = |i: usize| -> Vec<u32> { steps(i).iter().map(|st| st.key).collect() };
        assert_eq!(
            (keys(0), keys(2), keys(3)),
            (vec![0, 1], vec![2, 1], vec![2, 1])
        );
    }

    /// Samples the reader shared (written byte for byte alike) decide as the same
    /// samples read apart, a sample spoiled by a repeated key included: its malformed
    /// entries name each sample, not the first.
    #[test]
    fn shared_samples_decide_as_samples_read_apart() {
        let c = test_catalog();
        let good = r#"{"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":3}]}"#;
        let other = r#"{"calls":[{"tool":"w","arguments":{"city":"Rome"},"result":19}]}"#;
        let spoiled =
            r#"{"calls":[{"tool":"w","arguments":{"city":"Oslo","city":"Rome"},"result":3}]}"#;
        let line = format!(
            r#"{{"task_id":"t","samples":[{good},{spoiled},{good},{other},{spoiled},{good}]}}"#
        );
        let shared = parse_task_line(line.as_bytes()).unwrap();
        assert!(Arc::ptr_eq(&shared.samples[1], &shared.samples[4]));
        let apart = Task {
            samples: shared
                .samples
                .iter()
                .map(|s| Arc::new((**s).clone()))
                .collect(),
            ..shared.clone()
        };
        let decided = |t: &Task| {
            let d = classify(&prepare(t, &c, None), &tool_states(&c), &Options::default());
            serde_json::from_str::<serde_json::Value>(&crate::record::json(&d)).unwrap()
        };
        let d = decided(&shared);
        assert_eq!(d, decided(&apart));
        let spoiled_at: Vec<&serde_json::Value> = d["malformed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["sample"])
            .collect();
        assert_eq!(spoiled_at, [1, 4], "{d}");
    }
}
