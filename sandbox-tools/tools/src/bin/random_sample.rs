//! `random_sample`: k distinct ids drawn uniformly from one collection of the world.
//! Nondeterministic by contract (the catalog says `deterministic: false` and
//! `random: live`); the draw comes from WASI `random_get`, never a fixed seed.

use plangate_guest::{ToolError, random_below, run};
use seed_world_tools::{orders, products, users};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// `users`, `orders` or `products`.
    collection: String,
    #[serde(default = "default_k")]
    k: usize,
}

fn default_k() -> usize {
    3
}

#[derive(Serialize)]
struct Sample {
    collection: String,
    population: usize,
    ids: Vec<String>,
}

fn main() {
    run(|args: Args| {
        let mut ids: Vec<String> = match args.collection.as_str() {
            "users" => users()?.into_iter().map(|u| u.id).collect(),
            "orders" => orders()?.into_iter().map(|o| o.id).collect(),
            "products" => products()?.into_iter().map(|p| p.sku).collect(),
            other => {
                return Err(ToolError::bad_argument(format!(
                    "unknown collection {other:?}; use users, orders or products"
                )));
            }
        };
        let population = ids.len();
        if args.k == 0 || args.k > population {
            return Err(ToolError::bad_argument(format!(
                "k must be between 1 and {population} for {}",
                args.collection
            )));
        }
        // Partial Fisher-Yates: the first k slots end up a uniform k-sample, in draw order.
        for i in 0..args.k {
            let j = i + random_below((population - i) as u64)? as usize;
            ids.swap(i, j);
        }
        ids.truncate(args.k);
        Ok(Sample {
            collection: args.collection,
            population,
            ids,
        })
    })
}
