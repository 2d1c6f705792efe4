//! The formats plangate reports a run in, apart from the commands that run it, so that
//! every command writes JUnit alike and every HTML page (the demo's, and any run's) is
//! built from one shell and one set of plots.
//!
//! - [`junit`]: one JUnit test case per task, for CI suites.
//! - [`html`]: the page shell ([`html::Page`]), escaping, a table of facts.
//! - [`plot`]: the agreement plots (argument agreement by label, result agreement per
//!   tool) from one point per task ([`plot::TaskPoint`]).
//! - [`svg`]: the pieces those plots are drawn with, for plots of other pages.
//!
//! Pages are strings and JUnit is bytes: writing them anywhere is the caller's business.

pub mod html;
pub mod junit;
pub mod plot;
pub mod svg;
