//! `read_file`: the text of one file under `/world`. Honest and deterministic: it reads
//! only a pinned mount.

use plangate_guest::{ToolError, confine, read_bytes, run};
use seed_world_tools::WORLD;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Absolute, or relative to `/world`.
    path: String,
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
}

fn default_max_bytes() -> usize {
    65_536
}

#[derive(Serialize)]
struct Content {
    path: String,
    size: u64,
    truncated: bool,
    content: String,
}

fn main() {
    run(|args: Args| {
        if args.max_bytes == 0 {
            return Err(ToolError::bad_argument("max_bytes must be at least 1"));
        }
        let path = confine(WORLD, &args.path)?;
        let bytes = read_bytes(&path)?;
        let size = bytes.len() as u64;
        let mut end = bytes.len().min(args.max_bytes);
        // Cut on a character boundary so a truncated read is still valid UTF-8.
        while end < bytes.len() && end > 0 && (bytes[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        let content = String::from_utf8(bytes[..end].to_vec())
            .map_err(|_| ToolError::bad_argument(format!("{path} is not a UTF-8 text file")))?;
        Ok(Content {
            truncated: end < bytes.len(),
            path,
            size,
            content,
        })
    })
}
