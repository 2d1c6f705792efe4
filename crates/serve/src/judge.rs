//! One proxied step judged: the N choices' tool calls as one task's samples, classified
//! at once. With a warm gate, the calls to tools that have modules run in its epoch and
//! are judged with the health known so far; every other tool (one only the request
//! declares, or every tool of a server without a warm gate) is judged on its arguments
//! only, so it is never verified and never the ground for a reject (the seed's rule).
//! A deferral a fresh epoch may settle is executed once more in a fully pinned epoch.
//! [`App::judge_step`] is the one entry every front door (Chat Completions, Messages)
//! calls with its choices.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use plangate_gate::decide::{self, Decision, Reason, ToolState, ToolStates, Verdict};
use plangate_gate::task::{Observed, Task, TaskError, parse_task_line};
use serde_json::{Value, json};

use plangate_gate::record::Record;
use plangate_harness::{Attempt, EvalRecord, WarmGate, retry_gate};

use crate::app::App;
use crate::epochs::Epochs;

/// A step's decision, its record as answered (eval's record, with its epoch and, for a
/// step retried in a fresh epoch, its `history`, when calls were executed), and the
/// choice that makes the modal plan.
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

/// The samples line of a step: each choice's assistant message (OpenAI's `tool_calls`,
/// or Anthropic's `tool_use` content blocks; one turn without results), or an empty
/// plan for a choice that calls no tool.
pub(crate) fn samples_line(task_id: &str, messages: &[&Value]) -> String {
    let samples: Vec<Value> = messages
        .iter()
        .map(|m| match (m.get("tool_calls"), m.get("content")) {
            (Some(Value::Array(calls)), _) if !calls.is_empty() => {
                json!({"role": "assistant", "tool_calls": calls})
            }
            (_, Some(Value::Array(blocks)))
                if blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")) =>
            {
                json!({"role": "assistant", "content": blocks})
            }
            _ => json!({"calls": []}),
        })
        .collect();
    json!({"task_id": task_id, "samples": samples}).to_string()
}

impl App {
    /// Judges a step whose choices' assistant messages are `messages` (OpenAI- or
    /// Anthropic-shaped); `offered` are the tools the request declares, `conversation`
    /// the request's earlier messages as text; `endpoint` labels the metrics. Executes
    /// calls when the server has a warm gate: call it from a blocking thread. The one
    /// judging entry of every front door.
    pub(crate) fn judge_step(
        &self,
        endpoint: &'static str,
        task_id: &str,
        messages: &[&Value],
        offered: &BTreeSet<String>,
        conversation: &str,
    ) -> Result<Judged, TaskError> {
        let task = parse_task_line(samples_line(task_id, messages).as_bytes())?;
        let (d, record, modal) = match &self.epochs {
            Some(epochs) => self.executed_step(epochs, task, offered, conversation),
            None => self.unexecuted_step(task, offered, conversation),
        };
        self.metrics.decision(endpoint, &d);
        Ok(Judged {
            decision: d,
            record,
            modal,
        })
    }

    /// A step judged on its arguments only: no call runs.
    fn unexecuted_step(
        &self,
        mut task: Task,
        offered: &BTreeSet<String>,
        conversation: &str,
    ) -> (Decision, String, usize) {
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
        let record = plangate_gate::record::json(&d);
        (d, record, modal)
    }

    /// A step whose calls to tools with modules run in the warm gate's epoch, judged
    /// with the health known so far; a deferral a fresh epoch may settle is executed
    /// once more in a fully pinned one, and its record carries `history`.
    fn executed_step(
        &self,
        epochs: &Epochs,
        task: Task,
        offered: &BTreeSet<String>,
        conversation: &str,
    ) -> (Decision, String, usize) {
        // Every catalog tool has a module here; a call to a tool only the request
        // declares is not executed, and every sample holds the same outcome for it.
        let gate = epochs.gate();
        let mut d = self.step_in(&gate, &task, offered, conversation);
        let mut epoch_id = gate.epoch_id().to_string();
        let mut history = None;
        if d.retryable() {
            let c = epochs.config();
            match retry_gate(epochs.catalog(), &c.base_dir, &c.world, &c.eval) {
                Ok(fresh) => {
                    history = Some(vec![Attempt::of(&d, &epoch_id)]);
                    d = self.step_in(&fresh, &task, offered, conversation);
                    epoch_id = fresh.epoch_id().to_string();
                }
                Err(e) => tracing::error!("the step's retry epoch could not be pinned: {e}"),
            }
        }
        let states = self.step_states(&gate, offered);
        let modal = self.modal_choice(&task, &d, &states);
        let mut record = String::new();
        EvalRecord {
            decision: &d,
            epoch_id: &epoch_id,
            history: history.as_deref(),
        }
        .emit(&mut plangate_gate::record::Json::new(&mut record));
        (d, record, modal)
    }

    /// The step executed in `gate`'s epoch and classified at once.
    fn step_in(
        &self,
        gate: &WarmGate,
        task: &Task,
        offered: &BTreeSet<String>,
        conversation: &str,
    ) -> Decision {
        let (executed, changed) = gate.execute_at_once(task.clone());
        let states = self.step_states(gate, offered);
        let mut d = gate.classify_with(&executed, &changed, &states);
        seen_in_conversation(&mut d, conversation);
        d
    }

    /// Each tool's state as a step is judged in `gate`: the gate's for the tools it
    /// runs, arguments-only for the rest the request or the catalog names.
    fn step_states(
        &self,
        gate: &WarmGate,
        offered: &BTreeSet<String>,
    ) -> BTreeMap<String, ToolState> {
        let known = gate.states();
        known
            .keys()
            .filter(|t| gate.world().has(t))
            .map(|t| (t.clone(), known[t]))
            .chain(
                offered
                    .iter()
                    .chain(self.catalog.tools().iter().map(|t| &t.name))
                    .filter(|t| !gate.world().has(t))
                    .map(|t| {
                        (
                            t.clone(),
                            ToolState {
                                declared_deterministic: false,
                                verified: false,
                                quarantined: false,
                            },
                        )
                    }),
            )
            .collect()
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
