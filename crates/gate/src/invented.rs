//! Invented references (docs/design.md, "Invented references"): a call answered *not
//! found* whose reference value appears nowhere in the conversation before it. Agreement
//! decides a trajectory as a whole and cannot say that one trial made up an id; this
//! lists each such call, so a run can say how often a model invents, whatever the
//! verdict. The list never changes a verdict: the rule decides.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::catalog::Catalog;
use crate::errors::NOT_FOUND;
use crate::hints::Hints;
use crate::jcs::{plain_member as plain, push_member};
use crate::json::Value;
use crate::task::{Arguments, Observed, Sample, Task, per_sample};

mod text;
pub use text::Text;

/// One call that looked up a value nobody supplied and got *not found*. Its texts are
/// the task's own, shared ([`Text`]): listing a reference allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InventedReference {
    /// The sample (trial), from 0.
    pub sample: usize,
    /// The turn within the sample, from 0.
    pub turn: usize,
    /// The call within the sample, counted across its turns as written, from 0.
    pub call: usize,
    /// The tool called.
    pub tool: Text,
    /// The argument's path in the call's arguments (`user_id`, `payment[0].id`).
    pub parameter: Text,
    /// The value the model gave it.
    pub value: Text,
    /// The error's message.
    pub error: Text,
}

/// Every invented reference of `task`, sample by sample, in call order.
pub fn invented_references(task: &Task, catalog: &Catalog) -> Vec<InventedReference> {
    shared_references(task, catalog).to_vec()
}

/// The list of a task with no invented reference (most): one, shared.
pub(crate) fn none() -> Arc<[InventedReference]> {
    static NONE: std::sync::OnceLock<Arc<[InventedReference]>> = std::sync::OnceLock::new();
    Arc::clone(NONE.get_or_init(|| Arc::new([])))
}

/// [`invented_references`] as a decision holds them. A task with none (most) shares one
/// empty list; a task with some makes the list and one text that all their texts are
/// parts of, whatever their number.
pub(crate) fn shared_references(task: &Task, catalog: &Catalog) -> Arc<[InventedReference]> {
    let mut found: Vec<Found> = Vec::new();
    let mut finder = Finder {
        catalog,
        all: String::new(),
        path: String::new(),
        hints: None,
    };
    // Each sample's references, as a range of `found`: a sample the reader shared with
    // an earlier one invents what that one did, and takes its range.
    let ranges = per_sample(
        &task.samples,
        |_| true,
        |i, sample| {
            // Most samples have no miss at all: one look at each call's outcome.
            if !sample.calls.iter().any(is_miss) {
                return 0..0;
            }
            if found.capacity() == 0 {
                // A miss in each sample left, as trials that invent tend to: room for a
                // reference each, and for a tool, a message and an id or so.
                let left = task.samples.len() - i;
                found.reserve(left);
                finder.all.reserve(left * 32);
            }
            let from = found.len();
            finder.of_sample(sample, &mut found);
            from..found.len()
        },
    );
    if found.is_empty() {
        return none();
    }
    let all = Arc::new(finder.all);
    (ranges.into_iter().enumerate())
        .flat_map(|(sample, range)| found[range].iter().map(move |f| (sample, f)))
        .map(|(sample, f)| {
            let [tool, parameter, value, error] = f.spans.clone().map(|s| Text::part(&all, s));
            InventedReference {
                sample,
                turn: f.turn,
                call: f.call,
                tool,
                parameter,
                value,
                error,
            }
        })
        .collect()
}

/// A reference as the search finds it, its texts already in the task's one text.
struct Found {
    turn: usize,
    call: usize,
    /// Where its tool, parameter, value and error are in [`Finder::all`].
    spans: [Range<usize>; 4],
}

/// Puts `text` in `all`, unless `last` (the reference before's text in the same place:
/// one tool, one parameter, a message every trial got alike) holds it already.
fn put(all: &mut String, last: Option<&Range<usize>>, text: &str) -> Range<usize> {
    match last {
        Some(span) if all.as_bytes()[span.clone()] == *text.as_bytes() => span.clone(),
        _ => {
            all.push_str(text);
            all.len() - text.len()..all.len()
        }
    }
}

/// A run's invented references counted: in all, by the tasks and samples that have
/// them, by tool, and by model when the input names its model. Kept in a resumable
/// run's checkpoints, and added up across shards.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InventedCount {
    /// Invented references in all.
    pub references: u64,
    /// Tasks with at least one.
    pub tasks: u64,
    /// Samples with at least one.
    pub samples: u64,
    /// References by tool; past [`COUNTED_NAMES`] tools, under `"(others)"`.
    pub by_tool: BTreeMap<String, u64>,
    /// References by the model that wrote the samples, when the input names it.
    pub by_model: BTreeMap<String, u64>,
}

/// Distinct names a count keeps apart, so a run over many tools stays small.
pub const COUNTED_NAMES: usize = 64;

impl InventedCount {
    /// Counts one task's references; `model` wrote its samples, when known.
    pub fn add(&mut self, refs: &[InventedReference], model: Option<&str>) {
        if refs.is_empty() {
            return;
        }
        self.references += refs.len() as u64;
        self.tasks += 1;
        // References come sample by sample, and a task's are mostly calls to one tool:
        // a sample is counted where it starts, and a tool once for each run of its calls.
        let mut run = (&*refs[0].tool, 0);
        for (k, r) in refs.iter().enumerate() {
            if k == 0 || r.sample != refs[k - 1].sample {
                self.samples += 1;
            }
            if *r.tool != *run.0 {
                bump(&mut self.by_tool, run.0, run.1);
                run = (&*r.tool, 0);
            }
            run.1 += 1;
        }
        bump(&mut self.by_tool, run.0, run.1);
        if let Some(m) = model {
            bump(&mut self.by_model, m, refs.len() as u64);
        }
    }

    /// Adds another part's count (a shard's, a checkpoint's).
    pub fn merge(&mut self, other: &InventedCount) {
        self.references += other.references;
        self.tasks += other.tasks;
        self.samples += other.samples;
        for (k, v) in &other.by_tool {
            bump(&mut self.by_tool, k, *v);
        }
        for (k, v) in &other.by_model {
            bump(&mut self.by_model, k, *v);
        }
    }

    /// One sentence for a run's summary, or None when there were none.
    pub fn line(&self) -> Option<String> {
        if self.references == 0 {
            return None;
        }
        let mut tools: Vec<(&String, &u64)> = self.by_tool.iter().collect();
        tools.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let named: Vec<String> = (tools.iter().take(3))
            .map(|(t, n)| format!("{t:?} {n}"))
            .collect();
        let models = match self.by_model.len() {
            0 => String::new(),
            _ => format!(
                "; by model: {}",
                (self.by_model.iter())
                    .map(|(m, n)| format!("{m} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        Some(format!(
            "{} invented reference(s) in {} sample(s) of {} task(s): a call answered not found \
             for a value nothing before it supplied (by tool: {}{}){models}; they do not change \
             a verdict",
            self.references,
            self.samples,
            self.tasks,
            named.join(", "),
            if tools.len() > 3 { ", ..." } else { "" },
        ))
    }
}

fn bump(map: &mut BTreeMap<String, u64>, name: &str, by: u64) {
    // A name already counted (nearly every call) is found without a key to make.
    if let Some(n) = map.get_mut(name) {
        *n += by;
        return;
    }
    let key = if map.len() < COUNTED_NAMES {
        name
    } else {
        "(others)"
    };
    *map.entry(key.to_string()).or_default() += by;
}

/// Whether call `c` was answered *not found*: a sample without one invents nothing.
pub(crate) fn is_miss(c: &crate::task::Call) -> bool {
    matches!(&c.observed, Observed::Error { kind, .. } if kind == NOT_FOUND)
}

/// What one task's search keeps from call to call: the catalog, the one text that
/// its references' texts are parts of, and the hints of the tool looked up last (most
/// misses of a task are calls to one tool).
struct Finder<'c> {
    catalog: &'c Catalog,
    all: String,
    /// A parameter's path being written, kept for its room.
    path: String,
    hints: Option<(&'c str, Option<&'c Hints>)>,
}

impl<'c> Finder<'c> {
    fn hints(&mut self, tool: &str) -> Option<&'c Hints> {
        match self.hints {
            Some((name, hints)) if name == tool => hints,
            _ => {
                let found = self.catalog.get(tool);
                self.hints = found.map(|t| (t.name.as_str(), Some(&t.hints)));
                found.map(|t| &t.hints)
            }
        }
    }

    fn of_sample(&mut self, sample: &Sample, out: &mut Vec<Found>) {
        for (turn, range) in sample.turn_ranges().enumerate() {
            for j in range.clone() {
                self.of_call(sample, (turn, j), range.start, out);
            }
        }
    }

    /// The references of a call (`at` is its turn and index), whose turn
    /// starts at call `start`.
    fn of_call(&mut self, sample: &Sample, at: (usize, usize), start: usize, out: &mut Vec<Found>) {
        let call = &sample.calls[at.1];
        let Observed::Error { kind, message } = &call.observed else {
            return;
        };
        let Arguments::Json(args) = &call.arguments else {
            return;
        };
        if kind != NOT_FOUND {
            return;
        }
        let hints = self.hints(&call.tool);
        let (all, path) = (&mut self.all, &mut self.path);
        let (first, written) = (out.len(), all.len());
        // Whether a leaf the error names was met: from then on only named leaves are
        // listed, and the id-like ones listed before it are taken back.
        let mut named = false;
        // Arguments of one string member (most lookups) have no other leaf the error
        // could name instead: an id-like one is listed whether it is named or not.
        let alone = matches!(&**args, Value::Object(o)
            if o.len() == 1 && matches!(o.iter().next(), Some((_, Value::String(_)))));
        walk(args, hints, None, "", &mut |l| {
            if l.value.is_empty() {
                return;
            }
            let is_named =
                !(alone && l.id_like) && (occurs(message, l.value) || occurs(message, l.name));
            if is_named && !named {
                named = true;
                out.truncate(first);
                all.truncate(written);
            }
            if !(is_named || (!named && l.id_like)) || supplied(sample, start, l.value) {
                return;
            }
            let last = out.last().map(|f| &f.spans);
            let tool = put(all, last.map(|s| &s[0]), &call.tool);
            let parameter = match l.at {
                // A top-level member with a plain name is its own path.
                Some(At {
                    up: None,
                    step: Step::Key(k),
                }) if plain(k) => put(all, last.map(|s| &s[1]), k),
                _ => {
                    path.clear();
                    path_text(l.at, path);
                    put(all, last.map(|s| &s[1]), path)
                }
            };
            let value = put(all, last.map(|s| &s[2]), l.value);
            let error = put(all, last.map(|s| &s[3]), message);
            out.push(Found {
                turn: at.0,
                call: at.1,
                spans: [tool, parameter, value, error],
            });
        });
    }
}

/// One step of a string argument's path: a member's key or an item's index.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The steps from the arguments down to a value, each on the walk's own stack frame:
/// the path's text is built only for the arguments a miss is about.
struct At<'p, 'a> {
    up: Option<&'p At<'p, 'a>>,
    step: Step<'a>,
}

/// A string argument as the walk meets it: where it is, its key's name, the value,
/// and whether it looks like a reference (an id-like name, or an `id` or `must_exist`
/// hint). Borrowed from the arguments: most are looked at and let go.
struct Leaf<'s, 'a> {
    at: Option<&'s At<'s, 'a>>,
    name: &'a str,
    value: &'a str,
    id_like: bool,
}

fn walk<'a>(
    v: &'a Value,
    hints: Option<&Hints>,
    at: Option<&At<'_, 'a>>,
    name: &'a str,
    leaf: &mut dyn FnMut(&Leaf<'_, 'a>),
) {
    match v {
        Value::String(s) => leaf(&Leaf {
            at,
            name,
            value: s,
            id_like: id_like(name)
                || hints.is_some_and(|h| h.must_exist() || h.resolver().is_some()),
        }),
        Value::Object(o) => {
            for (k, sub) in o.iter() {
                let here = At {
                    up: at,
                    step: Step::Key(k),
                };
                // A string under an id-like name is a reference whatever its hints
                // say: they are not looked up.
                let hints = match sub {
                    Value::String(_) if id_like(k) => None,
                    _ => hints.map(|h| h.property(k)),
                };
                walk(sub, hints, Some(&here), k, leaf);
            }
        }
        Value::Array(items) => {
            for (k, sub) in items.iter().enumerate() {
                let here = At {
                    up: at,
                    step: Step::Index(k),
                };
                walk(sub, hints.map(Hints::items), Some(&here), name, leaf);
            }
        }
        _ => {}
    }
}

/// A leaf's path as records print it (`user_id`, `payment[0].id`), appended to the empty
/// `path`: members as [`push_member`] writes them, without the leading dot of the first.
fn path_text(at: Option<&At>, path: &mut String) {
    let Some(at) = at else {
        return;
    };
    path_text(at.up, path);
    match at.step {
        Step::Key(k) => {
            let first = path.is_empty();
            push_member(path, k);
            if first && path.starts_with('.') {
                path.remove(0);
            }
        }
        Step::Index(i) => {
            path.push('[');
            crate::jcs::write_usize(i, path);
            path.push(']');
        }
    }
}

/// Whether `needle` occurs in `hay`, as [`str::contains`] says: the messages and
/// names are short, and a first-byte scan answers them without building a searcher.
fn occurs(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = n.split_first() else {
        return true;
    };
    let Some(last) = h.len().checked_sub(n.len()) else {
        return false;
    };
    (h[..=last].iter().enumerate()).any(|(i, &b)| b == first && h[i + 1..i + n.len()] == *rest)
}

/// A parameter named `id`, or ending in `id`, `_id` or `Id`.
fn id_like(name: &str) -> bool {
    name.ends_with("id") || name.ends_with("Id")
}

/// Whether `value`'s exact text occurs in what the sample's conversation held before
/// the turn that starts at call `start`: what was said (system, user, the model's text
/// of earlier messages) and the arguments and results of the calls of earlier turns.
fn supplied(sample: &Sample, start: usize, value: &str) -> bool {
    let said = (sample.said.iter())
        .take_while(|s| s.before <= start)
        .any(|s| s.text.contains(value));
    said || sample.calls[..start].iter().any(|c| {
        let args = match &c.arguments {
            // The strings themselves answer most searches; the JSON text only the rest
            // (a value that spans a key and its punctuation, a number as printed).
            Arguments::Json(v) => holds(v, value) || crate::jcs::to_string(v).contains(value),
            Arguments::Malformed(text) => text.contains(value),
        };
        args || match &c.observed {
            Observed::Missing => false,
            Observed::Result(p) => match p.text() {
                Some(t) => t.contains(value) || holds(p.value(), value),
                None => holds(p.value(), value),
            },
            Observed::Error { message, .. } => message.contains(value),
            Observed::Bytes(b) => String::from_utf8_lossy(b).contains(value),
        }
    })
}

/// Whether a string in `v` (a key or a value) holds `value`: JSON text escapes what a
/// string holds, so a value with a quote in it is looked for in the strings themselves.
fn holds(v: &Value, value: &str) -> bool {
    match v {
        Value::String(s) => s.contains(value),
        Value::Array(items) => items.iter().any(|x| holds(x, value)),
        Value::Object(o) => o.iter().any(|(k, x)| k.contains(value) || holds(x, value)),
        Value::Number(n) => n.lexeme().contains(value),
        Value::Null | Value::Bool(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task_line;

    fn catalog() -> Catalog {
        Catalog::from_value(
            &crate::json::parse(
                r#"{"tools":[{"name":"get_user","deterministic":true,"parameters":{"type":"object","properties":{"user_id":{"type":"string"}}}},
                {"name":"lookup","deterministic":true,"parameters":{"type":"object","properties":{"who":{"type":"string","x-plangate":{"must_exist":true}},"note":{"type":"string"}}}}]}"#,
            )
            .unwrap(),
        )
        .unwrap()
    }

    fn found(line: &str) -> Vec<(usize, usize, usize, String, String)> {
        let t = parse_task_line(line.as_bytes()).unwrap();
        invented_references(&t, &catalog())
            .into_iter()
            .map(|r| {
                (
                    r.sample,
                    r.turn,
                    r.call,
                    r.parameter.to_string(),
                    r.value.to_string(),
                )
            })
            .collect()
    }

    const MISS: &str = r#""error":{"kind":"not_found","message":"no such user"}"#;

    /// A native line's conversation is its calls: a value an earlier result gave is
    /// supplied, one nothing gave is invented.
    #[test]
    fn native_lines_look_at_earlier_calls() {
        let line = format!(
            r#"{{"task_id":"t","samples":[
              {{"calls":[{{"tool":"get_user","arguments":{{"user_id":"u_9"}},{MISS}}}]}},
              {{"calls":[{{"tool":"find","arguments":{{"q":"Ada"}},"result":{{"id":"u_2"}}}},
                         {{"tool":"get_user","arguments":{{"user_id":"u_2"}},{MISS}}}]}},
              {{"calls":[{{"tool":"get_user","arguments":{{"user_id":"u_9"}},{MISS}}}]}}]}}"#
        )
        .replace('\n', "");
        assert_eq!(
            found(&line),
            [
                (0, 0, 0, "user_id".into(), "u_9".into()),
                (2, 0, 0, "user_id".into(), "u_9".into())
            ]
        );
    }

    /// A transcript's system and user text and the model's earlier text supply values;
    /// the model's text beside the call itself does not; an error that is not a miss is
    /// never listed.
    #[test]
    fn transcripts_look_at_what_was_said_before() {
        let call = |id: &str, user: &str| {
            format!(
                r#"{{"messages":[{{"role":"system","content":"Airline agent."}},{{"role":"user","content":"{user}"}},{{"role":"assistant","content":"Looking up {id}.","tool_calls":[{{"id":"c1","type":"function","function":{{"name":"get_user","arguments":"{{\"user_id\":\"{id}\"}}"}}}}]}},{{"role":"tool","tool_call_id":"c1","content":"{{\"error\":1}}"}}]}}"#
            )
        };
        let with_error = |sample: String, kind: &str| {
            let line = format!(r#"{{"task_id":"t","samples":[{sample}]}}"#);
            let mut t = parse_task_line(line.as_bytes()).unwrap();
            Arc::make_mut(&mut t.samples[0]).calls[0].observed = Observed::Error {
                kind: kind.into(),
                message: "Error: user not found".into(),
            };
            invented_references(&t, &catalog())
        };
        assert_eq!(with_error(call("u_42", "I am u_42"), NOT_FOUND), []);
        assert_eq!(with_error(call("U_42", "I am u_42"), NOT_FOUND).len(), 1);
        let r = &with_error(call("mei_brown_123", "I am Mei Brown"), NOT_FOUND)[0];
        assert_eq!(
            (r.turn, r.call, &*r.tool, &*r.parameter, &*r.value),
            (0, 0, "get_user", "user_id", "mei_brown_123")
        );
        assert_eq!(&*r.error, "Error: user not found");
        assert_eq!(with_error(call("mei_brown_123", "hi"), "tool_error"), []);
    }

    /// A task's references count once as a task, once per sample that has some, and
    /// by tool and model; past the names a count keeps, a tool counts as "(others)".
    #[test]
    fn a_count_adds_tasks_samples_tools_and_models() {
        let r = |sample, tool: &str| InventedReference {
            sample,
            turn: 0,
            call: 0,
            tool: tool.into(),
            parameter: "id".into(),
            value: "x".into(),
            error: "not found".into(),
        };
        let mut count = InventedCount::default();
        count.add(&[], Some("m"));
        assert_eq!(count, InventedCount::default());
        let refs = [r(0, "a"), r(0, "a"), r(1, "b"), r(3, "a"), r(3, "a")];
        count.add(&refs, Some("m"));
        count.add(&refs[2..3], None);
        assert_eq!((count.references, count.tasks, count.samples), (6, 2, 4));
        let by =
            |m: &BTreeMap<String, u64>| m.iter().map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>();
        assert_eq!(by(&count.by_tool), [("a".into(), 4), ("b".into(), 2)]);
        assert_eq!(by(&count.by_model), [("m".into(), 5)]);
        let names: Vec<String> = (0..COUNTED_NAMES + 2).map(|k| format!("t{k:03}")).collect();
        let many: Vec<InventedReference> = names.iter().map(|t| r(0, t)).collect();
        let mut count = InventedCount::default();
        count.add(&many, None);
        count.add(&many[..1], None);
        assert_eq!(count.samples, 2);
        assert_eq!(count.by_tool.len(), COUNTED_NAMES + 1);
        assert_eq!(count.by_tool["(others)"], 2);
        assert_eq!(count.by_tool["t000"], 2);
    }

    /// The parameter the error names is the one listed; else id-like names and hints.
    #[test]
    fn occurs_answers_as_contains_does() {
        for (hay, needle) in [
            ("no such user u_9", "u_9"),
            ("u_9", "u_9"),
            ("u_", "u_9"),
            ("", ""),
            ("abc", ""),
            ("ab", "abc"),
            ("method cc_7 not found", "cc_8"),
            ("é ok", "é"),
        ] {
            assert_eq!(
                occurs(hay, needle),
                hay.contains(needle),
                "{hay:?} {needle:?}"
            );
        }
    }

    #[test]
    fn the_parameter_is_the_named_one_or_an_id() {
        let line = format!(
            r#"{{"task_id":"t","samples":[{{"calls":[
              {{"tool":"lookup","arguments":{{"who":"zed","note":"x"}},{MISS}}},
              {{"tool":"pay","arguments":{{"user_id":"u_1","pay":[{{"payment_id":"cc_7"}}],"note":"hi"}},"error":{{"kind":"not_found","message":"method cc_7 not found"}}}},
              {{"tool":"pay","arguments":{{"orderId":"o_1","name":"Bo"}},{MISS}}}]}}]}}"#
        )
        .replace('\n', "");
        assert_eq!(
            found(&line),
            [
                (0, 0, 0, "who".into(), "zed".into()),
                (0, 1, 1, "pay[0].payment_id".into(), "cc_7".into()),
                (0, 2, 2, "orderId".into(), "o_1".into())
            ]
        );
    }
}
