//! `lookup_product`: one product by SKU, optionally only some of its fields. Honest and
//! deterministic: it reads only the pinned `/world/products.json`.

use std::collections::BTreeMap;

use plangate_guest::{ToolError, run};
use seed_world_tools::{check_id, products};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Case-insensitive and trimmed, matching the catalog's `casefold`+`trim` hint: the
    /// canonicalizer may only merge spellings that the tool treats as one.
    sku: String,
    /// A set: order and repeats do not matter (the catalog's `unordered` hint). Omitted
    /// means every field.
    #[serde(default)]
    fields: Option<Vec<String>>,
}

fn main() {
    run(|args: Args| {
        let sku = args.sku.trim().to_ascii_uppercase();
        check_id("sku", &sku, "SKU-")?;
        let product = products()?
            .into_iter()
            .find(|p| p.sku == sku)
            .ok_or_else(|| ToolError::not_found(format!("no product with sku {sku:?}")))?;
        let Value::Object(all) =
            serde_json::to_value(product).map_err(|e| ToolError::internal(e.to_string()))?
        else {
            return Err(ToolError::internal("a product is not a JSON object"));
        };
        let Some(fields) = args.fields else {
            return Ok(all.into_iter().collect::<BTreeMap<_, _>>());
        };
        let mut picked = BTreeMap::new();
        for field in fields {
            let value = all.get(&field).ok_or_else(|| {
                let known: Vec<&str> = all.keys().map(String::as_str).collect();
                ToolError::bad_argument(format!(
                    "unknown field {field:?}; products have {}",
                    known.join(", ")
                ))
            })?;
            picked.insert(field, value.clone());
        }
        Ok(picked)
    })
}
