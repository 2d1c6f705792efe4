//! `grep_file`: the lines of one file under `/world` that contain a literal string.
//! Honest and deterministic: it reads only a pinned mount.

use plangate_guest::{ToolError, confine, read_text, run};
use seed_world_tools::WORLD;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Absolute, or relative to `/world`.
    path: String,
    /// A literal string, not a regular expression: tools stay at serde + serde_json.
    pattern: String,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default = "default_max_matches")]
    max_matches: usize,
}

fn default_max_matches() -> usize {
    50
}

#[derive(Serialize)]
struct Matches {
    path: String,
    pattern: String,
    matches: Vec<Match>,
    truncated: bool,
}

#[derive(Serialize)]
struct Match {
    /// 1-based, as editors and grep count.
    line: usize,
    text: String,
}

fn main() {
    run(|args: Args| {
        if args.pattern.is_empty() {
            return Err(ToolError::bad_argument("pattern is empty"));
        }
        if args.max_matches == 0 {
            return Err(ToolError::bad_argument("max_matches must be at least 1"));
        }
        let path = confine(WORLD, &args.path)?;
        let text = read_text(&path)?;
        let needle = if args.ignore_case {
            args.pattern.to_lowercase()
        } else {
            args.pattern.clone()
        };
        let mut matches = Vec::new();
        let mut truncated = false;
        for (i, line) in text.lines().enumerate() {
            let hit = if args.ignore_case {
                line.to_lowercase().contains(&needle)
            } else {
                line.contains(&needle)
            };
            if hit {
                if matches.len() == args.max_matches {
                    truncated = true;
                    break;
                }
                matches.push(Match {
                    line: i + 1,
                    text: line.to_owned(),
                });
            }
        }
        Ok(Matches {
            path,
            pattern: args.pattern,
            matches,
            truncated,
        })
    })
}
