//! One proxied step judged: the N choices' tool calls as one task's samples, classified
//! at once. No call is executed: every tool is judged on its arguments (through the
//! catalog's schema and hints for the tools it has, as canonical JSON for a tool only
//! the request declares), so it is never verified and never the ground for a reject
//! (the seed's rule). `StepStates` is where a tool the server executes would take its
//! health instead.

use std::collections::BTreeSet;
use std::sync::Arc;

use plangate_gate::decide::{self, Decision, Reason, ToolState, ToolStates, Verdict};
use plangate_gate::task::{Observed, Task, TaskError, parse_task_line};
use serde_json::{Value, json};

use crate::app::App;

/// A step's decision, its record as answered, and the choice that makes the modal plan.
#[derive(Debug)]
pub(crate) struct Judged {
    pub(crate) decision: Decision,
    pub(crate) record: String,
    pub(crate) modal: usize,
}

/// What the rule knows of each tool a proxied step may call: the gate's own states for
/// the tools it executed, and for every other tool the request or the catalog names,
/// a tool judged on its arguments only (not declared deterministic). A name neither
/// has is a tool nobody offered: `unknown_tool`.
struct StepStates<'a> {
    executed: &'a dyn ToolStates,
    executable: &'a dyn Fn(&str) -> bool,
    offered: &'a BTreeSet<String>,
    catalog: &'a plangate_gate::catalog::Catalog,
}

impl ToolStates for StepStates<'_> {
    fn state(&self, tool: &str) -> Option<ToolState> {
        if (self.executable)(tool) {
            return self.executed.state(tool);
        }
        (self.catalog.get(tool).is_some() || self.offered.contains(tool)).then_some(ToolState {
            declared_deterministic: false,
            verified: false,
            quarantined: false,
        })
    }
}

/// The samples line of a step: each choice's assistant message (its `tool_calls`, one
/// turn without results), or an empty plan for a choice without tool calls.
pub(crate) fn samples_line(task_id: &str, messages: &[&Value]) -> String {
    let samples: Vec<Value> = messages
        .iter()
        .map(|m| match m.get("tool_calls") {
            Some(Value::Array(calls)) if !calls.is_empty() => {
                json!({"role": "assistant", "tool_calls": calls})
            }
            _ => json!({"calls": []}),
        })
        .collect();
    json!({"task_id": task_id, "samples": samples}).to_string()
}

impl App {
    /// Judges a step whose choices' messages are `messages`; `offered` are the tools the
    /// request declares, `conversation` the request's earlier messages as text; `endpoint`
    /// labels the metrics.
    pub(crate) fn judge_step(
        &self,
        endpoint: &'static str,
        task_id: &str,
        messages: &[&Value],
        offered: &BTreeSet<String>,
        conversation: &str,
    ) -> Result<Judged, TaskError> {
        let mut task = parse_task_line(samples_line(task_id, messages).as_bytes())?;
        let executable = |_: &str| false;
        mark_unexecuted(&mut task, &executable);
        let recorded = decide::tool_states(&self.catalog);
        let states = StepStates {
            executed: &recorded,
            executable: &executable,
            offered,
            catalog: &self.catalog,
        };
        let prepared = decide::prepare(&task, &self.catalog, None);
        let mut d = decide::classify(&prepared, &states, &self.decide);
        seen_in_conversation(&mut d, conversation);
        let modal = self.modal_choice(&task, &d, &states);
        self.metrics.decision(endpoint, &d);
        let record = plangate_gate::record::json(&d);
        Ok(Judged {
            decision: d,
            record,
            modal,
        })
    }

    /// The first choice whose plan is the decision's modal plan: each sample prepared
    /// alone is its own modal plan.
    fn modal_choice(&self, task: &Task, d: &Decision, states: &dyn ToolStates) -> usize {
        let Some(modal) = &d.modal_plan else {
            return 0;
        };
        (0..task.samples.len())
            .find(|&i| {
                let one = Task {
                    samples: vec![Arc::clone(&task.samples[i])],
                    ..task.clone()
                };
                let prepared = decide::prepare(&one, &self.catalog, None);
                let alone = decide::classify(&prepared, states, &self.decide);
                alone.modal_plan.as_ref().is_some_and(|plan| {
                    plan.len() == modal.len()
                        && plan
                            .iter()
                            .zip(modal)
                            .all(|(a, b)| a.tool == b.tool && a.arguments == b.arguments)
                })
            })
            .unwrap_or(0)
    }
}

/// Gives every call the sandbox does not run an outcome of its own, the same in every
/// sample: its tool is judged on its arguments, and its results are never compared.
fn mark_unexecuted(task: &mut Task, executable: &dyn Fn(&str) -> bool) {
    for sample in &mut task.samples {
        let sample = Arc::make_mut(sample);
        for call in &mut sample.calls {
            if !executable(&call.tool) && matches!(call.observed, Observed::Missing) {
                call.observed = Observed::Error {
                    kind: "not_executed".into(),
                    message: "judged on its arguments only".into(),
                };
            }
        }
    }
}

/// A referential miss over a value the conversation already holds only defers: the
/// sandbox's snapshot does not know what the earlier, real steps created.
fn seen_in_conversation(d: &mut Decision, conversation: &str) {
    if d.verdict != Verdict::Reject || !d.reasons.contains(&Reason::ReferentialMiss) {
        return;
    }
    let seen = d.modal_plan.iter().flatten().find_map(|step| {
        let args: Value = serde_json::from_str(&step.arguments).ok()?;
        let mut texts = Vec::new();
        strings(&args, &mut texts);
        texts
            .into_iter()
            .find(|t| t.len() >= 2 && conversation.contains(t.as_str()))
    });
    if let Some(value) = seen {
        d.verdict = Verdict::Defer;
        d.explanation.push(format!(
            "{value:?} appears earlier in the conversation: the sandbox's snapshot does not know what earlier real steps created, so a referential miss on it defers"
        ));
    }
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(o) => o.values().for_each(|i| strings(i, out)),
        _ => {}
    }
}
