//! Fuzzes schema-aware canonicalization with the seed world's real catalog: any argument
//! object canonicalizes or is malformed with a reason, never panics, and canonical
//! arguments are a fixed point.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use plangate_gate::canon::canonicalize_arguments;
use plangate_gate::catalog::Catalog;
use plangate_gate::{jcs, json};

fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| {
        let text = include_str!("../../examples/seed-world/catalog.json");
        Catalog::from_value(&json::parse(text).expect("catalog parses")).expect("catalog loads")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let tools = catalog().tools();
    let tool = &tools[pick as usize % tools.len()];
    let Ok(args) = json::parse_with(rest, json::Duplicates::Flag) else { return };
    match canonicalize_arguments(tool, &args, 1, None) {
        Ok(c) => {
            let again = canonicalize_arguments(tool, &c, 1, None).expect("canonical arguments stay valid");
            assert_eq!(jcs::to_string(&again), jcs::to_string(&c), "canonicalization is idempotent");
        }
        Err(problems) => assert!(!problems.is_empty()),
    }
});
