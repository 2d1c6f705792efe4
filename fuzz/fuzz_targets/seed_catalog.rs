//! The seed world's real catalog, parsed once, for the fuzz targets that need schemas.

use std::sync::OnceLock;

use plangate_gate::catalog::Catalog;
use plangate_gate::json;

pub(crate) fn catalog() -> &'static Catalog {
    static C: OnceLock<Catalog> = OnceLock::new();
    C.get_or_init(|| {
        let text = include_str!("../../examples/seed-world/catalog.json");
        Catalog::from_value(&json::parse(text).expect("catalog parses")).expect("catalog loads")
    })
}
