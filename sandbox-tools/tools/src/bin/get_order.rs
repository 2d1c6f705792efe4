//! `get_order`: one order by id. Honest and deterministic: it reads only the pinned
//! `/world/orders.json`.

use plangate_guest::{ToolError, run};
use seed_world_tools::{check_id, orders};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    order_id: String,
}

fn main() {
    run(|args: Args| {
        check_id("order_id", &args.order_id, "o_")?;
        orders()?
            .into_iter()
            .find(|o| o.id == args.order_id)
            .ok_or_else(|| ToolError::not_found(format!("no order with id {:?}", args.order_id)))
    })
}
