//! The decision (docs/design.md, "Decision"), in two phases so a whole batch can run before any
//! task is judged: [`prepare`](fn@prepare) turns a task into canonical keys once, and [`classify`]
//! applies the rules with the tool health known at the end of the batch.
//!
//! Two signals stay apart: argument agreement (over canonical plans) decides reject,
//! result agreement (over deterministic steps) only ever defers.
//!
//! A task goes through the files in this order: `prepare` keys it (with `turns` ordering
//! the calls of each turn) into a `prepared` task, `measure` and `paths` say how far its
//! samples agree (counting with `tally`), and `rule` decides, step by step, each step
//! ruling on the measured task with the grounds `explain` says in sentences. `options`,
//! `health` and `decision` hold what goes in and what comes out; `prepared_line` keeps a
//! prepared task as one line between the phases. `prose` finds parameters that look like
//! free text and split the plans on their words, for a run to warn about once.

mod decision;
mod explain;
mod health;
mod measure;
mod options;
mod paths;
mod prepare;
mod prepared;
mod prepared_line;
mod prose;
mod rule;
mod tally;
mod turns;

pub use crate::jcs::path_member;
pub use decision::{
    Agreement, Decision, DivergentPath, MalformedSample, PlanStep, Reason, SchemaViolation,
    StepAgreement, Verdict,
};
pub use health::{ToolState, ToolStates, tool_states};
pub use options::{InvertedThresholds, Options, Rule};
pub use prepare::prepare;
pub use prepared::Prepared;
pub use prepared_line::PreparedLineError;
pub use prose::{PROSE_CHARS, PROSE_WORDS, ProseParameter, looks_like_prose, prose_like};
pub use rule::{classify, classify_and_sweep};
pub(crate) use tally::modal;

/// The catalog the unit tests of this module decide against: one deterministic,
/// verified tool `w`, whose `unit` has a default.
#[cfg(test)]
fn test_catalog() -> crate::catalog::Catalog {
    crate::catalog::Catalog::from_value(
        &crate::json::parse(
            r#"[{"name":"w","input_schema":{"type":"object","properties":{
                  "city":{"type":"string"},"unit":{"type":"string","default":"c"}},"required":["city"]},
                  "x-plangate":{"deterministic":true,"verified":true}}]"#,
        )
        .unwrap(),
    )
    .unwrap()
}
