//! `resolve_user`: an email, a handle or a user id to the canonical user id. Declared
//! deterministic in the catalog, as the seed's was, and not: it answers from an identity
//! cache whose entries expire 60 s after `cached_at` by the clock, and an expired entry
//! falls back to the directory, which gives a different answer (`source`, and for a
//! merged account a different `user_id`: the cache was filled before the merge).

use std::collections::BTreeMap;

use plangate_guest::{ToolError, now, read_json, run};
use seed_world_tools::{classify_reference, follow_merges, lookup, users};
use serde::{Deserialize, Serialize};

/// Where the catalog mounts `examples/seed-world/live/cache` (live).
const CACHE: &str = "/cache/identity.json";
/// The seed's TTL; a cache file may state its own.
const DEFAULT_TTL_S: u64 = 60;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Case-insensitive and trimmed (the catalog's `casefold`+`trim`): `ada@example.com`,
    /// `@ada`, `ada` or `u_0001`.
    user: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Cache {
    #[serde(default)]
    ttl_s: Option<u64>,
    entries: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    user_id: String,
    /// Seconds since the Unix epoch.
    cached_at: u64,
}

#[derive(Serialize)]
struct Resolved {
    user_id: String,
    matched: &'static str,
    source: &'static str,
}

fn main() {
    run(|args: Args| {
        let input = args.user.trim().to_lowercase();
        let (matched, key) = classify_reference(&input)?;

        let cache = match read_json::<Cache>(CACHE) {
            Ok(cache) => Some(cache),
            // A cold cache is an empty cache, not a failure.
            Err(e) if e.kind() == plangate_guest::kind::NOT_FOUND => None,
            Err(e) => return Err(e),
        };
        if let Some(cache) = cache
            && let Some(entry) = cache.entries.get(&key)
        {
            let ttl = cache.ttl_s.unwrap_or(DEFAULT_TTL_S);
            if now()?.as_secs() < entry.cached_at.saturating_add(ttl) {
                return Ok(Resolved {
                    user_id: entry.user_id.clone(),
                    matched,
                    source: "cache",
                });
            }
        }

        let directory = users()?;
        let found = lookup(&directory, matched, &key);
        let user = found
            .ok_or_else(|| ToolError::not_found(format!("no user matches {:?}", args.user)))?;
        Ok(Resolved {
            user_id: follow_merges(&directory, user)?,
            matched,
            source: "directory",
        })
    })
}
