//! The formats plangate reports a run in, apart from the commands that run it, so that
//! every command writes JUnit alike and every HTML page (the demo's, and any run's) is
//! built from one shell and one set of plots.
//!
//! - [`junit`]: one JUnit test case per task, for CI suites.
//! - [`html`]: the page shell ([`html::Page`]), escaping, a table of facts.
//! - [`agreement`]: the counts the agreement plots are drawn from, which add up across
//!   chunks, shards and resumed runs ([`agreement::Plots`]).
//! - [`plot`]: the agreement plots (argument agreement by label, result agreement per
//!   tool).
//! - [`svg`]: the pieces those plots are drawn with, for plots of other pages.
//! - [`digest`]: a run's decisions digested for its page ([`digest::RunDigest`]), with
//!   the bounded lists of tasks worth a look ([`notable`]).
//! - [`run`]: the page of a run (`score`, `eval`, `merge` with `--html`), section by
//!   section ([`run::SECTIONS`]).
//! - [`plan`]: a run's outputs as one plan ([`plan::OutputPlan`]), which `score`, `eval`
//!   and `merge` make from their flags and carry out in one order.
//! - [`files`]: each output written whole or not at all.
//! - [`resume`]: where a run's journal lives, whether a run continues it, and how
//!   `eval`'s is opened and closed; [`checkpoints`]: `score`'s journal.

pub mod agreement;
pub mod checkpoints;
pub mod digest;
pub mod files;
pub mod html;
pub mod junit;
pub mod notable;
pub mod plan;
pub mod plot;
pub mod resume;
pub mod run;
pub mod svg;
