//! Parameters that look like prose (docs/design.md, "Prose"): free text is written anew
//! in every sample, so a parameter the catalog does not mark `prose` splits the plans on
//! its words alone. A task says which such parameters it met; a run says so once.

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::hints::Hints;
use crate::jcs::path_member;
use crate::json::Value;
use crate::task::{Arguments, Sample, Task};

/// A string looks like prose when it has at least this many words (runs of characters
/// that are not white space)...
pub const PROSE_WORDS: usize = 4;
/// ...and at least this many characters.
pub const PROSE_CHARS: usize = 30;

/// A parameter of a tool, not marked `prose`, whose values looked like prose and were
/// written differently in most samples of a task.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ProseParameter {
    /// The tool.
    pub tool: String,
    /// Where in its arguments: `$.summary`, `$.message.body`, `$.notes[*]` (any item).
    pub path: String,
    /// The member of the schema that describes it, where the hint goes: the property's
    /// name (`summary`, `body`), or `items`.
    pub key: String,
}

/// Whether `text` looks like prose: [`PROSE_WORDS`] words and [`PROSE_CHARS`]
/// characters at least. Most strings are shorter, and their length alone says so.
pub fn looks_like_prose(text: &str) -> bool {
    text.len() >= PROSE_CHARS
        && text.split_whitespace().nth(PROSE_WORDS - 1).is_some()
        && text.chars().nth(PROSE_CHARS - 1).is_some()
}

/// One step of the way from a call's arguments down to a string.
#[derive(Clone, Copy)]
enum Step<'a> {
    Member(&'a str),
    Item,
}

/// The steps down to a string, each holding the one above it, so walking builds no
/// path until a string looks like prose.
struct At<'s, 'a> {
    step: Step<'a>,
    up: Option<&'s At<'s, 'a>>,
}

/// A string that looked like prose: its sample, its tool, where (the path and the
/// schema's key), and the text.
struct Hit<'a> {
    sample: usize,
    tool: &'a str,
    path: String,
    key: &'a str,
    text: &'a str,
}

/// The parameters of `task` whose values look like prose, are not marked `prose` in
/// `catalog`, and were written differently in more than half of the samples: counting
/// each sample's texts there (in call order) as one value, samples that hold such a text
/// at that place have at least two distinct values, and more than `n / 2` of them. A
/// tool the catalog does not have is left out: there is no schema to mark. Pure, and
/// it builds nothing for a task whose strings are all short.
pub fn prose_like(task: &Task, catalog: &Catalog) -> Vec<ProseParameter> {
    let n = task.samples.len();
    let mut hits: Vec<Hit> = Vec::new();
    // A copy of an earlier sample (the reader shares them) holds the same texts: no new
    // value. The first few distinct samples are the ones copies share.
    let mut firsts: [*const Sample; 8] = [std::ptr::null(); 8];
    let mut kept = 0;
    for (i, sample) in task.samples.iter().enumerate() {
        let at = Arc::as_ptr(sample);
        if firsts[..kept].contains(&at) {
            continue;
        }
        if kept < firsts.len() {
            firsts[kept] = at;
            kept += 1;
        }
        for call in &sample.calls {
            let Arguments::Json(args) = &call.arguments else {
                continue;
            };
            walk(args, None, &mut |at, text| {
                let Some(spec) = catalog.get(&call.tool) else {
                    return;
                };
                if let Some(path) = unmarked_path(&spec.hints, at) {
                    hits.push(Hit {
                        sample: i,
                        tool: &call.tool,
                        path,
                        key: match at.step {
                            Step::Member(k) => k,
                            Step::Item => "items",
                        },
                        text,
                    });
                }
            });
        }
    }
    if hits.is_empty() {
        return Vec::new();
    }
    // By place, then sample, each sample's texts in call order (a stable sort).
    hits.sort_by(|a, b| (a.tool, &a.path, a.sample).cmp(&(b.tool, &b.path, b.sample)));
    let mut found = Vec::new();
    for place in hits.chunk_by(|a, b| (a.tool, &a.path) == (b.tool, &b.path)) {
        let mut values: Vec<Vec<&str>> = place
            .chunk_by(|a, b| a.sample == b.sample)
            .map(|texts| texts.iter().map(|h| h.text).collect())
            .collect();
        values.sort_unstable();
        values.dedup();
        if values.len() >= 2 && 2 * values.len() > n {
            found.push(ProseParameter {
                tool: place[0].tool.to_string(),
                path: place[0].path.clone(),
                key: place[0].key.to_string(),
            });
        }
    }
    found
}

/// Calls `hit` with every string below `v` that looks like prose, and the way to it.
fn walk<'a>(v: &'a Value, at: Option<&At<'_, 'a>>, hit: &mut dyn FnMut(&At<'_, 'a>, &'a str)) {
    match v {
        Value::String(text) if looks_like_prose(text) => {
            if let Some(at) = at {
                hit(at, text);
            }
        }
        Value::Object(o) => {
            for (k, sub) in o.iter() {
                let here = At {
                    step: Step::Member(k),
                    up: at,
                };
                walk(sub, Some(&here), hit);
            }
        }
        Value::Array(items) => {
            for sub in items {
                let here = At {
                    step: Step::Item,
                    up: at,
                };
                walk(sub, Some(&here), hit);
            }
        }
        _ => {}
    }
}

/// The path of `at` as a [`ProseParameter`] spells it, or None when the schema already
/// marks it (or a place above it) `prose`.
fn unmarked_path(hints: &Hints, at: &At) -> Option<String> {
    let mut steps = Vec::new();
    let mut up = Some(at);
    while let Some(a) = up {
        steps.push(a.step);
        up = a.up;
    }
    let mut node = hints;
    let mut path = String::from("$");
    for step in steps.iter().rev() {
        if node.prose() {
            return None;
        }
        match step {
            Step::Member(k) => {
                node = node.property(k);
                path.push_str(&path_member(k));
            }
            Step::Item => {
                node = node.items();
                path.push_str("[*]");
            }
        }
    }
    (!node.prose()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;
    use crate::task::parse_task_line;

    fn catalog(summary_hint: &str) -> Catalog {
        catalog_with(summary_hint, "")
    }

    /// `send`, with these hints after the `type` of its summary and of its notes' items.
    fn catalog_with(summary_hint: &str, notes_hint: &str) -> Catalog {
        Catalog::from_value(
            &parse(&format!(
                r#"{{"tools":[{{"name":"send","deterministic":true,"parameters":{{"type":"object",
                "properties":{{"to":{{"type":"string"}},"summary":{{"type":"string"{summary_hint}}},
                "notes":{{"type":"array","items":{{"type":"string"{notes_hint}}}}}}}}}}}]}}"#
            ))
            .unwrap(),
        )
        .unwrap()
    }

    /// A task of `samples`, each one `send` call with these arguments.
    fn task(samples: &[&str]) -> Task {
        let samples: Vec<String> = samples
            .iter()
            .map(|a| format!(r#"{{"calls":[{{"tool":"send","arguments":{a},"result":1}}]}}"#))
            .collect();
        parse_task_line(
            format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(",")).as_bytes(),
        )
        .unwrap()
    }

    fn summary(words: &str) -> String {
        format!(r#"{{"to":"ada","summary":"{words}"}}"#)
    }

    #[test]
    fn prose_is_four_words_and_thirty_characters() {
        assert!(looks_like_prose("The quarterly report is attached here."));
        assert!(
            looks_like_prose("The quarterly report attached."),
            "30 characters"
        );
        assert!(
            !looks_like_prose("The quarterly report attached"),
            "29 characters"
        );
        assert!(
            !looks_like_prose("Quarterly-report-is-attached-here please"),
            "2 words"
        );
        assert!(!looks_like_prose(
            "/world/docs/a/very/long/path/to/a/file.txt"
        ));
        assert!(
            looks_like_prose("é é é éééééééééééééééééééééééé"),
            "30 characters"
        );
        assert!(
            !looks_like_prose("é é é ééééééééééééé"),
            "35 bytes, 19 characters"
        );
    }

    #[test]
    fn a_parameter_written_anew_in_most_samples_is_found() {
        let texts = [
            "Sent Ada the quarterly numbers as asked.",
            "I have emailed Ada the report for the quarter.",
            "Ada now has the quarterly report in her inbox.",
            "Forwarded the Q3 report to Ada just now.",
            "Sent Ada the quarterly numbers as asked.",
        ];
        let args: Vec<String> = texts.iter().map(|t| summary(t)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let want = vec![ProseParameter {
            tool: "send".into(),
            path: "$.summary".into(),
            key: "summary".into(),
        }];
        assert_eq!(prose_like(&task(&args), &catalog("")), want);
        // Marked prose, it is not found.
        let marked = r#","x-plangate":{"canon":["prose"]}"#;
        assert_eq!(prose_like(&task(&args), &catalog(marked)), vec![]);
        // Two distinct texts of five samples are not most samples.
        let few = [&args[0], &args[1], &args[0], &args[0], &args[0]];
        assert_eq!(prose_like(&task(&few.map(|s| *s)), &catalog("")), vec![]);
        // Three of five are, even when the other two say nothing long.
        let short = summary("ok");
        let most = [args[0], args[1], args[2], &short, &short];
        assert_eq!(prose_like(&task(&most), &catalog("")), want);
        // A tool the catalog does not have is left out.
        let other = Catalog::from_value(&parse(r#"{"tools":[]}"#).unwrap()).unwrap();
        assert_eq!(prose_like(&task(&args), &other), vec![]);
    }

    #[test]
    fn items_and_unnamed_members_are_found_by_their_place() {
        let args: Vec<String> = (0..4)
            .map(|i| {
                format!(
                    r#"{{"to":"ada","notes":["a short one","Note number {i} says something long enough."],
                       "extra":{{"odd key":"Free text number {i} that nobody declared here."}}}}"#
                )
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got: Vec<(String, String)> = (prose_like(&task(&args), &catalog("")).into_iter())
            .map(|p| (p.path, p.key))
            .collect();
        let want = [("$.extra[\"odd key\"]", "odd key"), ("$.notes[*]", "items")];
        assert_eq!(got, want.map(|(p, k)| (p.to_string(), k.to_string())));
    }

    /// Classified: prose that differs agrees, presence that differs lowers agreement
    /// without a path, and no explanation names a prose path; unmarked, the same words
    /// reject the task.
    #[test]
    fn prose_never_decides_nor_is_listed() {
        use crate::decide::{Options, Reason, Verdict, classify, prepare, tool_states};
        let texts: Vec<String> = (0..6)
            .map(|i| format!("Sample {i} tells Ada, in its own words, that it is done."))
            .collect();
        let decide_with = |c: Catalog, args: &[String]| {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut states = tool_states(&c);
            states.get_mut("send").unwrap().verified = true;
            classify(
                &prepare(&task(&args), &c, None),
                &states,
                &Options::default(),
            )
        };
        let decide = |hint: &str, args: &[String]| decide_with(catalog(hint), args);
        let marked = r#","x-plangate":{"canon":["prose"]}"#;
        let words: Vec<String> = texts.iter().map(|t| summary(t)).collect();
        let d = decide(marked, &words);
        assert_eq!(d.verdict, Verdict::Accept, "{:?}", d.explanation);
        assert!(d.divergent_paths.is_empty(), "{:?}", d.divergent_paths);
        let d = decide("", &words);
        assert_eq!(d.verdict, Verdict::Reject, "{:?}", d.explanation);
        assert_eq!(d.divergent_paths[0].path, "$.steps[0].arguments.summary");
        // Half the samples say something, half nothing: presence is compared, but the
        // place is never listed, so the task cannot be rejected for it.
        let half: Vec<String> = (0..6)
            .map(|i| match i % 2 {
                0 => summary(&texts[i]),
                _ => r#"{"to":"ada"}"#.to_string(),
            })
            .collect();
        let d = decide(marked, &half);
        assert_eq!(d.verdict, Verdict::Defer, "{:?}", d.explanation);
        assert_eq!(d.reasons, [Reason::AmbiguousArguments]);
        assert!(d.divergent_paths.is_empty(), "{:?}", d.divergent_paths);
        // Another parameter scattered is listed, and decides, alone.
        let to: Vec<String> = (0..6)
            .map(|i| format!(r#"{{"to":"u_{i}","summary":"{}"}}"#, texts[i]))
            .collect();
        let d = decide(marked, &to);
        assert_eq!(d.verdict, Verdict::Reject, "{:?}", d.explanation);
        let listed: Vec<&str> = d.divergent_paths.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(listed, ["$.steps[0].arguments.to"]);
        assert!(
            d.explanation.iter().all(|e| !e.contains("summary")),
            "{:?}",
            d.explanation
        );
        // A list of notes marked item by item: how many there are is compared, but the
        // list is never a path either.
        let notes: Vec<String> = (0..6)
            .map(|i| {
                let notes: Vec<String> = (0..=i).map(|k| format!("\"Note {k}.\"")).collect();
                format!(r#"{{"to":"ada","notes":[{}]}}"#, notes.join(","))
            })
            .collect();
        let d = decide_with(catalog_with("", marked), &notes);
        assert_eq!(d.verdict, Verdict::Defer, "{:?}", d.explanation);
        assert_eq!(d.reasons, [Reason::DiffuseArguments], "{:?}", d.explanation);
        assert!(d.divergent_paths.is_empty(), "{:?}", d.divergent_paths);
        // Arguments that break the schema (a note that is not a string) still agree
        // on their prose, and defer for the schema, not for the words.
        let broken: Vec<String> = (0..6)
            .map(|i| format!(r#"{{"to":"ada","summary":"{}","notes":[1]}}"#, texts[i]))
            .collect();
        let d = decide(marked, &broken);
        assert_eq!(d.reasons, [Reason::SchemaMismatch], "{:?}", d.explanation);
        assert_eq!(d.arg_agreement.count, 6);
    }
}
