//! Fuzzes the samples-line parser and the decision on whatever it reads: a line is a task
//! or an error naming its field, the same through both readers; a task always gets a
//! decision, and what reading it noted can be said.
#![no_main]

#[path = "seed_catalog.rs"]
mod seed_catalog;

use libfuzzer_sys::fuzz_target;
use plangate_gate::{decide, task};
use seed_catalog::catalog;

fuzz_target!(|data: &[u8]| {
    let line = task::parse_task_line(data);
    // The one-pass reader for native lines must read exactly what the general one does.
    assert_eq!(line, task::parse_task_line_general(data));
    match line {
        Ok(t) => {
            let states = decide::tool_states(catalog());
            let d = decide::classify(
                &decide::prepare(&t, catalog(), None),
                &states,
                &decide::Options::default(),
            );
            assert_eq!(d.n, t.samples.len());
            assert!(!d.reasons.is_empty());
            // What reading noted sums into a run's notes and is said, however odd.
            let mut run = task::RunNotes::default();
            run.add(&t.notes);
            assert_eq!(run.warnings().is_empty(), run == task::RunNotes::default());
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
