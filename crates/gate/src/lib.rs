//! plangate's judgement, kept pure: canonical arguments, agreement, and the
//! accept / reject / defer rules of the seed, with no I/O, no clock and no sandbox.
//!
//! The flow: read a [`catalog::Catalog`] and a [`task::Task`] (both from
//! [`json::Value`]s this crate's strict reader produced), [`decide::prepare`] the task
//! into canonical keys, then [`decide::classify`] it with what the batch knows of each
//! tool's health. [`seed`] reproduces the seed's own code for comparison.
//!
//! ```
//! use std::collections::BTreeMap;
//! use plangate_gate::{catalog::Catalog, decide, json, task};
//!
//! let catalog = Catalog::from_value(&json::parse(r#"{"tools":[{"name":"get_user",
//!     "deterministic":true,"verified":true}]}"#).unwrap()).unwrap();
//! let line = r#"{"task_id":"t","samples":[
//!   {"calls":[{"tool":"get_user","arguments":{"id":"u_1"},"result":{"n":"Ada"}}]},
//!   {"calls":[{"tool":"get_user","arguments":{"id":"u_1"},"result":{"n":"Ada"}}]},
//!   {"calls":[{"tool":"get_user","arguments":{"id":"u_1"},"result":{"n":"Ada"}}]},
//!   {"calls":[{"tool":"get_user","arguments":{"id":"u_1"},"result":{"n":"Ada"}}]},
//!   {"calls":[{"tool":"get_user","arguments":{"id":"u_2"},"result":{"n":"Bo"}}]}]}"#;
//! let t = task::parse_task_line(line.as_bytes()).unwrap();
//! let prepared = decide::prepare(&t, &catalog, None);
//! let states: BTreeMap<_, _> = decide::tool_states(&catalog);
//! let d = decide::classify(&prepared, &states, &decide::Options::default());
//! assert_eq!(d.verdict, decide::Verdict::Accept); // 4 of 5 is 0.80, and 0.80 accepts
//! ```

pub mod baseline;
pub mod calibration;
pub mod canon;
pub mod catalog;
pub mod decide;
pub mod errors;
pub mod hints;
pub mod invented;
pub mod jcs;
pub mod json;
pub mod outcome;
pub mod record;
pub mod score;
pub mod seed;
mod serde_bridge;
pub mod stats;
pub mod task;
