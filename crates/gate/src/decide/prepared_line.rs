//! A [`Prepared`] task as one line of text and back, so phase two need not keep every
//! prepared task in memory (`eval` spills them to a file and classifies in a second,
//! streaming pass) and a shard can hand its evidence to `plangate merge`, which
//! classifies it again under the union of every shard's tool health.
//!
//! The line holds what `classify` reads and nothing more: key ids, not result texts.
//! Canonical arguments are written once per (tool, arguments) key as their RFC 8785
//! text; everything `classify` does with them goes through that printing, so reading
//! them back classifies byte-identically (held by the tests below and by
//! `crates/gate/tests/cases.rs` over every case file).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::decision::MalformedSample;
use super::prepared::{Miss, PlanKey, Prepared, PreparedSample, PreparedStep};
use crate::canon::Violation;
use crate::jcs;
use crate::json::{self, Value};
use crate::task::Label;

/// A line that is not a prepared task this version wrote.
#[derive(Debug, thiserror::Error)]
#[error("not a prepared task: {0}")]
pub struct PreparedLineError(String);

impl Prepared {
    /// This task as one line of JSON (no newline), for [`Prepared::from_line`].
    pub fn to_line(&self) -> String {
        let mut args = BTreeMap::new();
        let samples = self
            .samples
            .iter()
            .map(|s| LineSample {
                plan: match &s.plan {
                    PlanKey::Steps(keys, turns) => Some((keys.to_vec(), turns.clone())),
                    PlanKey::Malformed(_) => None,
                },
                malformed: match s.plan {
                    PlanKey::Malformed(i) => Some(i),
                    PlanKey::Steps(..) => None,
                },
                turns: s.turns.clone(),
                steps: s
                    .steps
                    .iter()
                    .map(|st| {
                        if let Some(v) = &st.args {
                            args.entry(st.key).or_insert_with(|| jcs::to_string(v));
                        }
                        LineStep {
                            tool: st.tool.to_string(),
                            key: st.key,
                            a: st.args.is_some(),
                            result: st.result,
                            violations: st.violations.as_deref().cloned(),
                            miss: st.miss.as_deref().map(|m| LineMiss {
                                not_found: m.not_found,
                                params: m.params.clone(),
                                must_exist: m.must_exist,
                                unresolved: m.unresolved.clone(),
                            }),
                        }
                    })
                    .collect(),
            })
            .collect();
        let line = Line {
            id: self.task_id.clone(),
            label: self.label,
            fixed: self.epoch_fixed,
            modal: self.modal_plan,
            warnings: self.warnings.clone(),
            malformed: self.malformed.clone(),
            outcomes: self.outcomes.clone(),
            invented: self.invented_references.to_vec(),
            args,
            samples,
        };
        // Plain data with string keys and finite numbers: serializing cannot fail.
        serde_json::to_string(&line).expect("a prepared task serializes")
    }

    /// Reads back a line [`Prepared::to_line`] wrote.
    pub fn from_line(text: &str) -> Result<Prepared, PreparedLineError> {
        let line: Line =
            serde_json::from_str(text).map_err(|e| PreparedLineError(e.to_string()))?;
        let mut args: BTreeMap<u32, Arc<Value>> = BTreeMap::new();
        for (key, text) in line.args {
            let v =
                json::parse(&text).map_err(|e| PreparedLineError(format!("args[{key}]: {e}")))?;
            args.insert(key, Arc::new(v));
        }
        let mut samples = Vec::with_capacity(line.samples.len());
        for s in line.samples {
            let plan = match (s.plan, s.malformed) {
                (Some((keys, turns)), None) => PlanKey::Steps(keys.into(), turns),
                (None, Some(i)) => PlanKey::Malformed(i),
                _ => {
                    return Err(PreparedLineError(
                        "a sample needs one of plan, malformed".into(),
                    ));
                }
            };
            let mut steps = Vec::with_capacity(s.steps.len());
            for st in s.steps {
                let a = match st.a {
                    true => Some(args.get(&st.key).cloned().ok_or_else(|| {
                        PreparedLineError(format!("no args for key {} of tool {}", st.key, st.tool))
                    })?),
                    false => None,
                };
                steps.push(PreparedStep {
                    tool: Arc::from(st.tool),
                    args: a,
                    key: st.key,
                    result: st.result,
                    violations: st.violations.map(Arc::new),
                    miss: st.miss.map(|m| {
                        Arc::new(Miss {
                            not_found: m.not_found,
                            params: m.params,
                            must_exist: m.must_exist,
                            unresolved: m.unresolved,
                        })
                    }),
                });
            }
            // Read back, every sample stands for itself (the line does not say which
            // were copies): classified alike, each counted on its own.
            samples.push(PreparedSample::of(samples.len(), plan, steps, s.turns));
        }
        Ok(Prepared {
            task_id: line.id,
            label: line.label,
            epoch_fixed: line.fixed,
            samples,
            modal_plan: line.modal,
            malformed: line.malformed,
            warnings: line.warnings,
            outcomes: line.outcomes,
            invented_references: line.invented.into(),
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Line {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<Label>,
    fixed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    modal: Option<(usize, usize)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    malformed: Vec<MalformedSample>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    outcomes: Vec<Option<f64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    invented: Vec<crate::invented::InventedReference>,
    /// Canonical arguments by key id, as RFC 8785 text: equal key ids print equal.
    args: BTreeMap<u32, String>,
    samples: Vec<LineSample>,
}

#[derive(Serialize, Deserialize)]
struct LineSample {
    /// The sample's plan key: `[steps, turns]`, or the index of a malformed sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plan: Option<(Vec<u32>, Vec<usize>)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    malformed: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    turns: Vec<usize>,
    steps: Vec<LineStep>,
}

#[derive(Serialize, Deserialize)]
struct LineStep {
    tool: String,
    key: u32,
    /// Whether the step has arguments (under `args[key]`): false when unreadable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    a: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    violations: Option<Vec<Violation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    miss: Option<LineMiss>,
}

#[derive(Serialize, Deserialize)]
struct LineMiss {
    not_found: bool,
    params: Vec<(String, String)>,
    must_exist: bool,
    unresolved: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::decide::{Options, classify, prepare, tool_states};
    use crate::task::parse_task_line;

    use super::*;

    fn catalog() -> Catalog {
        let doc = crate::json::parse(
            r#"[{"name": "get_user", "deterministic": true, "input_schema": {"type": "object",
                 "properties": {"id": {"type": "integer"}, "tags": {"type": "array",
                 "x-plangate": {"canon": ["unordered"]}}}, "required": ["id"]}}]"#,
        )
        .expect("json");
        Catalog::from_value(&doc).expect("catalog")
    }

    #[test]
    fn a_prepared_task_read_back_classifies_the_same() {
        let line = br#"{"task_id": "t", "label": "correct", "samples": [
            {"turns": [[{"tool": "get_user", "arguments": {"id": 1.0, "tags": ["b", "a"]}, "result": {"n": 1}},
                        {"tool": "nope", "arguments": {"x": 1}, "error": {"kind": "not_found", "message": "no"}}]]},
            {"calls": [{"tool": "get_user", "arguments": {"id": 1, "tags": ["a", "b"]}, "result": {"n": 1}}]},
            {"calls": [{"tool": "get_user", "arguments": {"id": "x"}, "result": {"n": 2}}]},
            {"calls": [{"tool": "get_user", "arguments": "{not json", "result": {"n": 2}}]}]}"#;
        let task = parse_task_line(line).expect("task");
        let cat = catalog();
        let p = prepare(&task, &cat, None);
        let text = p.to_line();
        let back = Prepared::from_line(&text).expect("reads back");
        assert_eq!(back.to_line(), text, "the line is stable");
        let states = tool_states(&cat);
        let a = crate::record::json(&classify(&p, &states, &Options::default()));
        let b = crate::record::json(&classify(&back, &states, &Options::default()));
        assert_eq!(a, b);
        assert!(a.contains("schema"), "the case exercises a violation: {a}");
    }

    #[test]
    fn a_line_that_is_not_a_prepared_task_is_an_error() {
        for bad in [
            "",
            "{}",
            r#"{"id":"t","fixed":true,"args":{},"samples":[{"steps":[]}]}"#,
            r#"{"id":"t","fixed":true,"args":{},"samples":[{"plan":[[1],[]],"steps":[{"tool":"x","key":1,"a":true}]}]}"#,
        ] {
            assert!(Prepared::from_line(bad).is_err(), "{bad}");
        }
    }
}
