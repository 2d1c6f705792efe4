//! Fuzzes the samples-line parser and the decision on whatever it reads: a line is a task
//! or an error naming its field; a task always gets a decision.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use plangate_gate::catalog::Catalog;
use plangate_gate::{decide, json, task};

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| {
        let text = include_str!("../../examples/seed-world/catalog.json");
        Catalog::from_value(&json::parse(text).expect("catalog parses")).expect("catalog loads")
    })
}

fuzz_target!(|data: &[u8]| {
    match task::parse_task_line(data) {
        Ok(t) => {
            let states = decide::tool_states(catalog());
            let d = decide::classify(&decide::prepare(&t, catalog(), None), &states, &decide::Options::default());
            assert_eq!(d.n, t.samples.len());
            assert!(!d.reasons.is_empty());
        }
        Err(e) => assert!(!e.message.is_empty()),
    }
});
