//! Fuzzes schema-aware canonicalization with the seed world's real catalog: any argument
//! object canonicalizes, is unreadable or breaks the schema with a reason, never panics, and canonical
//! arguments are a fixed point.
#![no_main]

#[path = "seed_catalog.rs"]
mod seed_catalog;

use libfuzzer_sys::fuzz_target;
use plangate_gate::canon::{Invalid, canonicalize_arguments};
use plangate_gate::{jcs, json};
use seed_catalog::catalog;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let tools = catalog().tools();
    let tool = &tools[pick as usize % tools.len()];
    let Ok(args) = json::parse_with(rest, json::Duplicates::Flag) else {
        return;
    };
    match canonicalize_arguments(tool, &args, 1, None) {
        Ok(c) => {
            let again =
                canonicalize_arguments(tool, &c, 1, None).expect("canonical arguments stay valid");
            assert_eq!(
                jcs::to_string(&again),
                jcs::to_string(&c),
                "canonicalization is idempotent"
            );
        }
        Err(Invalid::Unreadable(problems)) => assert!(!problems.is_empty()),
        Err(Invalid::Violates(violations)) => assert!(!violations.is_empty()),
    }
});
