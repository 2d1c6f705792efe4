//! A decision as `plangate eval` writes it, one per line: the gate's record, the epoch
//! it was decided in and, for a task the defer path retried, its earlier decisions;
//! and a warm gate's one-line eval, which answers that record.
//! Declared once as a [`Record`], so the CLI's line and the Python package's dict are
//! the same by construction.

use std::collections::BTreeMap;

use plangate_gate::decide::Decision;
use plangate_gate::record::{Record, Sink, list};

use crate::eval::ClassifiedTask;
use crate::retry::{Attempt, Retried};
use crate::warm::WarmGate;

/// A decision as written: the gate's record plus the epoch it was decided in.
#[derive(Debug, Clone, Copy)]
pub struct EvalRecord<'a> {
    /// The gate's decision record.
    pub decision: &'a Decision,
    /// The epoch it was decided in; empty, and left out, for tasks whose results came
    /// recorded (`score`'s shards, merged).
    pub epoch_id: &'a str,
    /// The decisions before this one, for a task the defer path retried.
    pub history: Option<&'a [Attempt]>,
}

impl<'a> EvalRecord<'a> {
    /// What is written for a task decided in the epoch `epoch_id`: the last decision of
    /// its retry, with the earlier ones, when the defer path retried it (`retried` is by
    /// input line), else the decision itself.
    pub fn of(
        d: &'a ClassifiedTask,
        epoch_id: &'a str,
        retried: &'a BTreeMap<usize, Retried>,
    ) -> Self {
        match retried.get(&d.line) {
            Some(r) => EvalRecord {
                decision: &r.decision,
                epoch_id: &r.epoch_id,
                history: Some(&r.history),
            },
            None => EvalRecord {
                decision: &d.decision,
                epoch_id,
                history: None,
            },
        }
    }
}

impl Record for EvalRecord<'_> {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        self.decision.emit_fields(s);
        if !self.epoch_id.is_empty() {
            s.key("epoch_id");
            s.str(self.epoch_id);
        }
        if let Some(history) = self.history {
            s.key("history");
            list(s, history, |s, a| a.emit(s));
        }
        s.end_object();
    }
}

impl WarmGate {
    /// One samples line executed and decided at once (a server's `/v1/eval`, the
    /// Python package's `Gate.eval`): the record `plangate eval` writes for it, with
    /// this epoch's id; or, for a line that is not a task, its bad-line record (`Err`).
    /// Blocks.
    pub fn eval_line(&self, line: &[u8]) -> Result<(Decision, String), String> {
        let task = plangate_gate::task::parse_task_line(line)
            .map_err(|e| plangate_gate::score::bad_line_record(1, &e))?;
        let decision = self.decide_at_once(task);
        let mut text = String::new();
        plangate_gate::record::Record::emit(
            &EvalRecord {
                decision: &decision,
                epoch_id: self.epoch_id(),
                history: None,
            },
            &mut plangate_gate::record::Json::new(&mut text),
        );
        Ok((decision, text))
    }
}

impl Record for Attempt {
    fn emit<S: Sink + ?Sized>(&self, s: &mut S) {
        s.object();
        s.key("epoch_id");
        s.str(&self.epoch_id);
        s.key("decision");
        s.str(self.decision.as_str());
        s.key("reasons");
        list(s, &self.reasons, |s, r| s.str(r.as_str()));
        s.end_object();
    }
}
