//! Fuzzes the strict JSON reader: any bytes either parse or give a positioned error, and
//! whatever parses has a canonical form that is a fixed point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plangate_gate::{jcs, json};

fuzz_target!(|data: &[u8]| {
    for mode in [
        json::Duplicates::Refuse,
        json::Duplicates::LastWins,
        json::Duplicates::Flag,
    ] {
        match json::parse_with(data, mode) {
            Ok(v) => {
                let c = jcs::to_string(&v);
                let again = json::parse(&c).expect("canonical output parses");
                assert_eq!(jcs::to_string(&again), c, "canonical form is a fixed point");
            }
            Err(e) => assert!(e.line >= 1 && e.column >= 1),
        }
    }
});
