//! `search_index`: full-text search over the segment files of a live index. Declared
//! deterministic in the catalog, as the seed's was, and not: another process appends
//! segments while a batch runs, and the merge below follows the directory's listing
//! order, so an append changes which documents win and how ties are ordered.

use plangate_guest::{ToolError, run};
use serde::{Deserialize, Serialize};

/// Where the catalog mounts `examples/seed-world/live/index` (live).
const INDEX: &str = "/index";
/// Title words count double, as the world's config says (`search.title_boost`).
const TITLE_BOOST: u64 = 2;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    5
}

/// One line of a segment: a document version, or a tombstone.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    doc: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    body: String,
    #[serde(default)]
    deleted: bool,
}

struct Doc {
    id: String,
    title: String,
    body: String,
    segment: String,
}

#[derive(Serialize)]
struct Results {
    query: String,
    segments: usize,
    total_hits: usize,
    hits: Vec<Hit>,
}

#[derive(Serialize)]
struct Hit {
    doc: String,
    title: String,
    score: u64,
    segment: String,
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

fn main() {
    run(|args: Args| {
        let mut terms: Vec<String> = words(&args.query).collect();
        terms.sort();
        terms.dedup();
        if terms.is_empty() {
            return Err(ToolError::bad_argument("query has no words"));
        }
        if !(1..=50).contains(&args.limit) {
            return Err(ToolError::bad_argument("limit must be between 1 and 50"));
        }

        // Listing order, not sorted: this is the production merge the seed observed.
        // A later segment's version of a document replaces the earlier one and moves it
        // to the end, which is where tie order comes from.
        let mut docs: Vec<Doc> = Vec::new();
        let mut segments = 0;
        for entry in std::fs::read_dir(INDEX).map_err(|e| ToolError::from_io(INDEX, e))? {
            let entry = entry.map_err(|e| ToolError::from_io(INDEX, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".jsonl") {
                continue;
            }
            segments += 1;
            let path = format!("{INDEX}/{name}");
            let text = std::fs::read_to_string(&path).map_err(|e| ToolError::from_io(&path, e))?;
            // A segment being appended to may end in a partial line: skip it, as a
            // reader racing the writer must.
            let complete = match text.rfind('\n') {
                Some(end) => &text[..=end],
                None => "",
            };
            for (n, line) in complete.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let rec: Record = serde_json::from_str(line)
                    .map_err(|e| ToolError::invalid_data(format!("{path}:{}: {e}", n + 1)))?;
                docs.retain(|d| d.id != rec.doc);
                if !rec.deleted {
                    docs.push(Doc {
                        id: rec.doc,
                        title: rec.title,
                        body: rec.body,
                        segment: name.clone(),
                    });
                }
            }
        }

        let mut hits: Vec<Hit> = docs
            .into_iter()
            .filter_map(|d| {
                let count = |text: &str| -> u64 {
                    words(text)
                        .filter(|w| terms.binary_search(w).is_ok())
                        .count() as u64
                };
                let score = TITLE_BOOST * count(&d.title) + count(&d.body);
                (score > 0).then_some(Hit {
                    doc: d.id,
                    title: d.title,
                    score,
                    segment: d.segment,
                })
            })
            .collect();
        // Stable: equal scores keep merge order.
        hits.sort_by_key(|h| std::cmp::Reverse(h.score));
        let total_hits = hits.len();
        hits.truncate(args.limit);
        Ok(Results {
            query: args.query,
            segments,
            total_hits,
            hits,
        })
    })
}
