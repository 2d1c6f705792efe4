//! `get_user`: one account, by any reference the catalog's `id` hint treats as the same
//! user (a `u_NNNN` id, an email or a handle; merges followed, as `resolve_user` answers
//! from its directory). Honest and deterministic: it reads only the pinned
//! `/world/users.json`.

use plangate_guest::run;
use seed_world_tools::{find_user, users};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    user_id: String,
}

fn main() {
    run(|args: Args| find_user(&users()?, &args.user_id))
}
