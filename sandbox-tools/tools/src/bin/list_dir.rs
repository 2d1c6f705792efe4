//! `list_dir`: the entries of one directory under `/world`, sorted by name. Honest and
//! deterministic: it sorts instead of trusting the host's listing order.

use plangate_guest::{ToolError, confine, run};
use seed_world_tools::WORLD;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Absolute, or relative to `/world`.
    #[serde(default = "default_path")]
    path: String,
    #[serde(default)]
    recursive: bool,
}

fn default_path() -> String {
    WORLD.to_owned()
}

#[derive(Serialize)]
struct Listing {
    path: String,
    entries: Vec<Entry>,
}

#[derive(Serialize)]
struct Entry {
    /// Relative to the listed directory, `/`-separated.
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    /// Files only: a directory's size is host metadata, not content.
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

fn walk(dir: &str, prefix: &str, recursive: bool, out: &mut Vec<Entry>) -> Result<(), ToolError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| ToolError::from_io(dir, e))? {
        let entry = entry.map_err(|e| ToolError::from_io(dir, e))?;
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| ToolError::invalid_data(format!("non-UTF-8 name {n:?} in {dir}")))?;
        let meta = entry.metadata().map_err(|e| ToolError::from_io(dir, e))?;
        names.push((name, meta));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, meta) in names {
        let rel = format!("{prefix}{name}");
        if meta.is_dir() {
            out.push(Entry {
                name: rel.clone(),
                kind: "dir",
                size: None,
            });
            if recursive {
                walk(&format!("{dir}/{name}"), &format!("{rel}/"), true, out)?;
            }
        } else {
            out.push(Entry {
                name: rel,
                kind: "file",
                size: Some(meta.len()),
            });
        }
    }
    Ok(())
}

fn main() {
    run(|args: Args| {
        let path = confine(WORLD, &args.path)?;
        let mut entries = Vec::new();
        walk(&path, "", args.recursive, &mut entries)?;
        Ok(Listing { path, entries })
    })
}
