//! `get_user`: one account by canonical user id. Honest and deterministic: it reads only
//! the pinned `/world/users.json`.

use plangate_guest::{ToolError, run};
use seed_world_tools::{check_id, users};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    user_id: String,
}

fn main() {
    run(|args: Args| {
        check_id("user_id", &args.user_id, "u_")?;
        users()?
            .into_iter()
            .find(|u| u.id == args.user_id)
            .ok_or_else(|| ToolError::not_found(format!("no user with id {:?}", args.user_id)))
    })
}
