//! `read_config`: one setting of the application config, by dotted key. Declared
//! deterministic in the catalog, as the seed's was, and not: the config file is live and
//! a reload swaps it for a new version while a batch runs.

use plangate_guest::{ToolError, read_json, run};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where the catalog mounts `examples/seed-world/live/config` (live).
const CONFIG: &str = "/config/app.json";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Dotted path into the config (`search.default_limit`); empty for all of it.
    #[serde(default)]
    key: String,
}

#[derive(Serialize)]
struct Setting {
    key: String,
    value: Value,
    /// The config's own version number, so a caller can see which reload it read.
    version: Value,
}

fn main() {
    run(|args: Args| {
        let config: Value = read_json(CONFIG)?;
        let version = config.get("version").cloned().unwrap_or(Value::Null);
        let mut value = &config;
        if !args.key.is_empty() {
            for part in args.key.split('.') {
                if part.is_empty() {
                    return Err(ToolError::bad_argument(format!(
                        "key {:?} has an empty segment",
                        args.key
                    )));
                }
                value = value
                    .get(part)
                    .ok_or_else(|| ToolError::not_found(format!("no config key {:?}", args.key)))?;
            }
        }
        Ok(Setting {
            key: args.key.clone(),
            value: value.clone(),
            version,
        })
    })
}
