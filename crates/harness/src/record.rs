//! A decision as `plangate eval` writes it, one per line: the gate's record, the epoch
//! it was decided in and, for a task the defer path retried, its earlier decisions. The
//! CLI and the Python package both serialize this, so their records are the same.

use std::collections::BTreeMap;

use plangate_gate::decide::Decision;
use serde::Serialize;

use crate::eval::Decided;
use crate::retry::{Attempt, Retried};

/// A decision as written: the gate's record plus the epoch it was decided in.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// The gate's decision record.
    #[serde(flatten)]
    pub decision: &'a Decision,
    /// The epoch it was decided in; empty, and left out, for tasks whose results came
    /// recorded (`score`'s shards, merged).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub epoch_id: &'a str,
    /// The decisions before this one, for a task the defer path retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<&'a [Attempt]>,
}

impl<'a> Record<'a> {
    /// What is written for a task decided in the epoch `epoch_id`: the last decision of
    /// its retry, with the earlier ones, when the defer path retried it (`retried` is by
    /// input line), else the decision itself.
    pub fn of(d: &'a Decided, epoch_id: &'a str, retried: &'a BTreeMap<usize, Retried>) -> Self {
        match retried.get(&d.line) {
            Some(r) => Record {
                decision: &r.decision,
                epoch_id: &r.epoch_id,
                history: Some(&r.history),
            },
            None => Record {
                decision: &d.decision,
                epoch_id,
                history: None,
            },
        }
    }
}
