//! What the rule knows of each tool: its declaration, its verification in this epoch,
//! its quarantine. Known only at the end of a batch, so it is handed to
//! [`classify`](super::classify) apart from the prepared task.

use std::collections::BTreeMap;

use super::prepared::DistinctSample;
use crate::catalog::{Catalog, ToolSpec};

/// What the batch knows of a tool when tasks are classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ToolState {
    /// The author's declaration.
    pub declared_deterministic: bool,
    /// A probe in this epoch confirmed it (or, for `score`, the catalog says so).
    pub verified: bool,
    /// A probe failure or a witness in this batch contradicted it.
    pub quarantined: bool,
}

impl ToolState {
    /// Every state a tool can be in: each combination of the flags once, bit `k` of the
    /// index the `k`th flag.
    pub const ALL: [ToolState; 8] = {
        let mut all = [ToolState {
            declared_deterministic: false,
            verified: false,
            quarantined: false,
        }; 8];
        let mut i = 0;
        while i < all.len() {
            all[i] = ToolState {
                declared_deterministic: i & 1 != 0,
                verified: i & 2 != 0,
                quarantined: i & 4 != 0,
            };
            i += 1;
        }
        all
    };
}

/// Tool health by name; a name with no state is a tool the catalog does not have.
pub trait ToolStates {
    /// The state of `tool`, or `None` when the catalog has no such tool.
    fn state(&self, tool: &str) -> Option<ToolState>;
}

impl ToolStates for BTreeMap<String, ToolState> {
    fn state(&self, tool: &str) -> Option<ToolState> {
        self.get(tool).copied()
    }
}

/// Tool states as the catalog records them (`verified` as given, nothing quarantined):
/// what `plangate score` judges by, since its results may come from other epochs.
pub fn tool_states(catalog: &Catalog) -> BTreeMap<String, ToolState> {
    catalog
        .tools()
        .iter()
        .map(|t| (t.name.clone(), recorded(t)))
        .collect()
}

/// The catalog's recorded states ([`tool_states`]) read in place, with no map to build:
/// a scorer that decides one line and is gone (a server's) pays nothing for them.
impl ToolStates for Catalog {
    fn state(&self, tool: &str) -> Option<ToolState> {
        self.get(tool).map(recorded)
    }
}

fn recorded(t: &ToolSpec) -> ToolState {
    ToolState {
        declared_deterministic: t.deterministic,
        verified: t.verified.unwrap_or(false),
        quarantined: false,
    }
}

/// The states of a task's tools, each looked up once: the rules ask for them step by
/// step, sample by sample, and a lookup by name in the batch's states costs far more
/// than a few comparisons here. Other names go to the batch's states.
pub(super) struct TaskToolStates<'a> {
    states: Vec<(&'a str, Option<ToolState>)>,
    batch: &'a dyn ToolStates,
}

impl<'a> TaskToolStates<'a> {
    pub(super) fn of(samples: &[DistinctSample<'a>], batch: &'a dyn ToolStates) -> Self {
        let mut states: Vec<(&str, Option<ToolState>)> = Vec::new();
        for st in samples.iter().flat_map(|c| c.sample.steps.iter()) {
            // A handful is the rule; a task of thousands of tools is asked of the batch,
            // so a lookup here stays a few comparisons.
            if states.len() < 8 && !states.iter().any(|(t, _)| *t == &*st.tool) {
                states.push((&st.tool, batch.state(&st.tool)));
            }
        }
        TaskToolStates { states, batch }
    }
}

impl ToolStates for TaskToolStates<'_> {
    fn state(&self, tool: &str) -> Option<ToolState> {
        match self.states.iter().find(|(t, _)| *t == tool) {
            Some((_, state)) => *state,
            None => self.batch.state(tool),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ToolState::ALL` holds every combination of the flags, once each.
    #[test]
    fn every_tool_state_once() {
        let all: std::collections::BTreeSet<(bool, bool, bool)> = (ToolState::ALL.iter())
            .map(|s| (s.declared_deterministic, s.verified, s.quarantined))
            .collect();
        assert_eq!(all.len(), ToolState::ALL.len());
        assert_eq!(all.len(), 1 << 3);
    }
}
