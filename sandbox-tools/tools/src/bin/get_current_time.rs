//! `get_current_time`: the wall clock. Nondeterministic by contract (the catalog says
//! `deterministic: false` and `clock: live`), so result disagreement across samples is
//! expected and carries no signal.

use plangate_guest::{ToolError, now, run};
use seed_world_tools::rfc3339;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    utc_offset_minutes: i32,
}

#[derive(Serialize)]
struct Time {
    unix: u64,
    unix_ms: u64,
    utc_offset_minutes: i32,
    rfc3339: String,
}

fn main() {
    run(|args: Args| {
        // The widest offsets in use: UTC-12:00 and UTC+14:00.
        if !(-720..=840).contains(&args.utc_offset_minutes) {
            return Err(ToolError::bad_argument(
                "utc_offset_minutes must be in -720..=840",
            ));
        }
        let t = now()?;
        let unix = t.as_secs();
        let secs = i64::try_from(unix).map_err(|_| ToolError::internal("clock out of range"))?;
        Ok(Time {
            unix,
            unix_ms: u64::try_from(t.as_millis()).unwrap_or(u64::MAX),
            utc_offset_minutes: args.utc_offset_minutes,
            rfc3339: rfc3339(secs, args.utc_offset_minutes),
        })
    })
}
