//! A benchmark's results file read as it is published: a tau-bench trajectory list
//! (`[{task_id, trial, reward, traj}, ...]`) or a tau2-bench results object
//! (`{"simulations": [{task_id, trial, messages, reward_info}, ...]}`), whose trials of
//! one task become that task's samples and whose rewards become their outcomes
//! (docs/inputs.md, "Benchmark results files"). The file is told from a samples file by
//! its first line, and turned into samples lines, one per task, that every reader of
//! samples then reads as it reads any other; problems are reported where they sit in
//! the published file, not in the lines made from it.

use std::collections::HashMap;
use std::io::{self, BufRead, Read};

use plangate_gate::errors::ErrorConvention;
use plangate_gate::task::TaskError;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Which benchmark wrote a results file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsShape {
    /// tau-bench's trajectory list: OpenAI messages under `traj`, the reward beside them.
    TauBench,
    /// tau2-bench's results object: its own messages under `simulations[k].messages`,
    /// the reward under `reward_info.reward`.
    Tau2,
}

impl ResultsShape {
    /// The shape in words, for what a run says of its input.
    pub fn name(self) -> &'static str {
        match self {
            ResultsShape::TauBench => "a tau-bench results list",
            ResultsShape::Tau2 => "a tau2-bench results object",
        }
    }
}

/// A results file that cannot be read as a whole (it is not JSON, or not a shape this
/// module reads). A problem inside one trial is that task's bad line instead.
#[derive(Debug, thiserror::Error)]
pub enum TrialsError {
    /// The file could not be read.
    #[error("failed to read samples: {0}")]
    Io(#[from] io::Error),
    /// The file is one JSON document, not one task per line, and not a results file.
    #[error("{0}")]
    Document(String),
}

/// A samples input, told apart by its first line.
pub enum Samples<R> {
    /// Samples lines (JSONL), the first line read already put back in front.
    Lines(io::Chain<io::Cursor<Vec<u8>>, R>),
    /// A benchmark's results file, made into samples lines.
    Trials(Trials),
}

/// A results file made into samples lines, one per task in the order tasks first
/// appear, each sample a trial (in trial order).
#[derive(Debug)]
pub struct Trials {
    /// The samples lines, each ending in a newline.
    pub lines: Vec<u8>,
    /// Where each line's samples came from.
    pub places: Places,
}

/// Where each made line's samples sit in the published file, to report a problem there.
#[derive(Debug, Clone)]
pub struct Places {
    shape: ResultsShape,
    /// Per line (line `i + 1`), each sample's index in the file's list of trials.
    lines: Vec<Vec<usize>>,
    /// The model whose trials the file holds, when the file names it.
    model: Option<String>,
}

impl Places {
    /// Which benchmark wrote the file.
    pub fn shape(&self) -> ResultsShape {
        self.shape
    }

    /// How the benchmark's tools write their errors, for the tools whose catalog entry
    /// does not say: tau-bench's `"Error: ..."` strings, tau2's `not found` messages.
    pub fn errors(&self) -> ErrorConvention {
        match self.shape {
            ResultsShape::TauBench => ErrorConvention::tau_bench(),
            ResultsShape::Tau2 => ErrorConvention::tau2(),
        }
    }

    /// The model whose trials the file holds, when the file names it (tau2-bench's
    /// `info.agent_info.llm`; tau-bench's trajectory lists do not).
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// How many tasks (lines) the file made.
    pub fn tasks(&self) -> usize {
        self.lines.len()
    }

    /// How many trials the file holds.
    pub fn trials(&self) -> usize {
        self.lines.iter().map(Vec::len).sum()
    }

    /// `e`, the problem with made line `number`, with its field named where it sits in
    /// the published file: `samples[2].messages[5]` of a tau-bench task becomes
    /// `[37].traj[5]`, its `samples[2].outcome` becomes `[37].reward`.
    pub fn relocate(&self, number: usize, e: &TaskError) -> TaskError {
        let mut e = e.clone();
        let Some(trials) = number.checked_sub(1).and_then(|i| self.lines.get(i)) else {
            return e;
        };
        let list = match self.shape {
            ResultsShape::TauBench => "",
            ResultsShape::Tau2 => "simulations",
        };
        let field = &e.field;
        let sample = field
            .strip_prefix("samples[")
            .and_then(|rest| rest.split_once(']'))
            .and_then(|(i, rest)| Some((trials.get(i.parse::<usize>().ok()?)?, rest)));
        e.field = match sample {
            Some((k, rest)) => {
                let (messages, reward) = match self.shape {
                    ResultsShape::TauBench => ("traj", "reward"),
                    ResultsShape::Tau2 => ("messages", "reward_info.reward"),
                };
                let rest = if let Some(r) = rest.strip_prefix(".messages") {
                    format!(".{messages}{r}")
                } else if let Some(r) = rest.strip_prefix(".outcome") {
                    format!(".{reward}{r}")
                } else {
                    rest.to_string()
                };
                format!("{list}[{k}]{rest}")
            }
            None => {
                let first = trials.first().copied().unwrap_or(0);
                let rest = if field.is_empty() {
                    String::new()
                } else {
                    format!(".{field}")
                };
                format!("{list}[{first}]{rest}")
            }
        };
        e
    }
}

/// `e`, the problem with line `number` of a samples input, placed where it sits in the
/// results file the input was made from, if it was (`places`); as it is otherwise.
pub fn place(places: Option<&Places>, number: usize, e: TaskError) -> TaskError {
    match places {
        Some(p) => p.relocate(number, &e),
        None => e,
    }
}

/// Reads the start of `input` to tell a results file from samples lines. A results file
/// is read whole (its trials of one task may lie anywhere in it); samples lines are
/// handed back to be read line by line. `max` bounds the first line, as it bounds every
/// samples line.
pub fn open<R: BufRead>(mut input: R, max: u64) -> Result<Samples<R>, TrialsError> {
    let mut first = Vec::new();
    (&mut input)
        .take(max.saturating_add(1))
        .read_until(b'\n', &mut first)?;
    let head = first.trim_ascii();
    let document = match head.first() {
        Some(b'[') => true,
        // A pretty-printed object, or one line holding a whole tau2 results object.
        Some(b'{') => head == b"{" || is_tau2_line(head),
        _ => false,
    };
    if !document {
        return Ok(Samples::Lines(io::Cursor::new(first).chain(input)));
    }
    let mut text = first;
    input.read_to_end(&mut text)?;
    let trials = entries(&text)?.map(|(shape, list, model)| {
        trials_of(shape, &list, text.len()).map(|mut t| {
            t.places.model = model;
            t
        })
    });
    match trials {
        Some(trials) => trials.map(Samples::Trials),
        // Not JSON as a whole: samples lines after all, each bad one reported on its own
        // and the rest decided.
        None => Ok(Samples::Lines(io::Cursor::new(text).chain(input))),
    }
}

/// Whether a whole line is a tau2 results object: it names `simulations` and no
/// `samples` at its top level.
fn is_tau2_line(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Top {
        simulations: Option<serde::de::IgnoredAny>,
        samples: Option<serde::de::IgnoredAny>,
    }
    memchr::memmem::find(line, b"\"simulations\"").is_some()
        && serde_json::from_slice::<Top>(line)
            .is_ok_and(|t| t.simulations.is_some() && t.samples.is_none())
}

/// One trial as either benchmark writes it, the parts plangate reads kept as written.
#[derive(Deserialize)]
struct Trial<'a> {
    #[serde(borrow)]
    task_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    trial: Option<&'a RawValue>,
    /// tau-bench's reward.
    #[serde(borrow, default)]
    reward: Option<&'a RawValue>,
    /// tau-bench's messages.
    #[serde(borrow, default)]
    traj: Option<&'a RawValue>,
    /// tau2-bench's reward.
    #[serde(borrow, default)]
    reward_info: Option<&'a RawValue>,
    /// tau2-bench's messages.
    #[serde(borrow, default)]
    messages: Option<&'a RawValue>,
}

/// The trials of a results file and which benchmark wrote it, read in one pass; None
/// when the text is not JSON as a whole.
fn entries(text: &[u8]) -> Result<Option<Entries<'_>>, TrialsError> {
    #[derive(Deserialize)]
    struct Tau2<'a> {
        #[serde(borrow)]
        simulations: Option<Vec<&'a RawValue>>,
        #[serde(default)]
        info: Option<Tau2Info>,
    }
    /// The agent's model, as tau2 names it (`info.agent_info.llm`).
    #[derive(Deserialize)]
    struct Tau2Info {
        #[serde(default)]
        agent_info: Option<AgentInfo>,
    }
    #[derive(Deserialize)]
    struct AgentInfo {
        #[serde(default)]
        llm: Option<String>,
    }
    let read = if text.trim_ascii_start().starts_with(b"[") {
        serde_json::from_slice(text).map(|list| (ResultsShape::TauBench, Some(list), None))
    } else {
        serde_json::from_slice(text).map(|t: Tau2<'_>| {
            let model = t.info.and_then(|i| i.agent_info?.llm);
            (ResultsShape::Tau2, t.simulations, model)
        })
    };
    match read {
        Ok((shape, Some(list), model)) => Ok(Some((shape, list, model))),
        Err(e) if e.classify() != serde_json::error::Category::Data => Ok(None),
        // JSON, but not a shape read here.
        _ => Err(TrialsError::Document(
            "a JSON document, not one task per line: plangate reads samples lines \
             (JSONL), a tau-bench results list or a tau2-bench results object with \
             `simulations` (docs/inputs.md)"
                .into(),
        )),
    }
}

/// A results file's trials, which benchmark wrote it, and the model when it names it.
type Entries<'a> = (ResultsShape, Vec<&'a RawValue>, Option<String>);

/// A trial with its trial number (None: not written) and its index in the file.
type Numbered<'a> = (Option<i64>, usize, Trial<'a>);

/// The samples lines a results file makes: its trials grouped by task, in the order
/// tasks first appear, each task's trials in trial order.
/// `size` is the file's, which the lines about match.
fn trials_of(shape: ResultsShape, list: &[&RawValue], size: usize) -> Result<Trials, TrialsError> {
    // Trials by task, keyed by the task id as written (`7` and `"7"` are one task).
    let mut order: Vec<(String, Vec<Numbered<'_>>)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut lines = Vec::with_capacity(size);
    let mut places = Vec::new();
    for (k, entry) in list.iter().enumerate() {
        let trial = serde_json::from_str::<Trial<'_>>(entry.get()).ok();
        let Some((id, trial)) = trial.and_then(|t| Some((task_id_of(t.task_id)?, t))) else {
            // Not a trial with a task id: its own line, which the task reader refuses
            // with a reason (reported at `[k]`).
            lines.extend_from_slice(compact(entry).get().as_bytes());
            lines.push(b'\n');
            places.push(vec![k]);
            continue;
        };
        let number = trial
            .trial
            .and_then(|t| serde_json::from_str::<i64>(t.get()).ok());
        let i = *at.entry(id.clone()).or_insert_with(|| {
            order.push((id, Vec::new()));
            order.len() - 1
        });
        order[i].1.push((number, k, trial));
    }
    // Lines whose trials had no task id come first, as they were met; then each task.
    for (id, mut trials) in order {
        // Trial numbers first (a missing one last), then file order.
        trials.sort_by_key(|&(t, k, _)| (t.is_none(), t, k));
        let samples = trials.iter().map(|(_, _, t)| sample_of(shape, t)).collect();
        let line = Line {
            task_id: &id,
            samples,
        };
        // Strings and raw JSON only: serializing cannot fail.
        serde_json::to_writer(&mut lines, &line).map_err(io::Error::other)?;
        lines.push(b'\n');
        places.push(trials.iter().map(|&(_, k, _)| k).collect());
    }
    Ok(Trials {
        lines,
        places: Places {
            shape,
            lines: places,
            model: None,
        },
    })
}

/// A task id as the task reader takes it: a string, or a number written as one.
fn task_id_of(v: Option<&RawValue>) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(v?.get()).ok()? {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `raw` on one line: the whitespace between its tokens dropped (a results file is
/// usually pretty-printed, and a samples line holds no newline). Strings are copied as
/// they are, so the value and every number's lexeme stay as written.
fn compact(raw: &RawValue) -> Box<RawValue> {
    let text = raw.get();
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\n' | '\r' | '\t') {
            in_string = c == '"';
            out.push(c);
        }
    }
    // Valid JSON with its insignificant whitespace dropped is valid JSON.
    RawValue::from_string(out).unwrap_or_else(|_| raw.to_owned())
}

/// One made samples line.
#[derive(Serialize)]
struct Line<'a> {
    task_id: &'a str,
    samples: Vec<Sample>,
}

/// One trial as a sample: its messages and its reward, as written (a value the task
/// reader refuses is refused there, and reported at its place in the file).
#[derive(Serialize)]
struct Sample {
    messages: Messages,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<Box<RawValue>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Messages {
    /// tau-bench's OpenAI messages, or tau2 messages that are not a list, as written.
    Raw(Box<RawValue>),
    /// tau2 messages, one for one in the shape the task reader reads.
    Made(Vec<Box<RawValue>>),
}

fn sample_of(shape: ResultsShape, t: &Trial<'_>) -> Sample {
    match shape {
        ResultsShape::TauBench => Sample {
            messages: Messages::Raw(compact(t.traj.unwrap_or(null()))),
            outcome: t.reward.map(compact),
        },
        ResultsShape::Tau2 => {
            let messages = t.messages.unwrap_or(null());
            Sample {
                messages: match serde_json::from_str::<Vec<&RawValue>>(messages.get()) {
                    Ok(list) => Messages::Made(list.into_iter().map(tau2_message).collect()),
                    Err(_) => Messages::Raw(compact(messages)),
                },
                outcome: t.reward_info.and_then(tau2_reward).map(compact),
            }
        }
    }
}

fn null() -> &'static RawValue {
    static NULL: std::sync::OnceLock<Box<RawValue>> = std::sync::OnceLock::new();
    NULL.get_or_init(|| RawValue::from_string("null".into()).expect("null is JSON"))
}

/// tau2's `reward_info.reward`, as written.
fn tau2_reward(info: &RawValue) -> Option<&RawValue> {
    #[derive(Deserialize)]
    struct Info<'a> {
        #[serde(borrow)]
        reward: Option<&'a RawValue>,
    }
    serde_json::from_str::<Option<Info<'_>>>(info.get())
        .ok()
        .flatten()
        .and_then(|i| i.reward)
}

/// A tau2 message.
#[derive(Deserialize)]
struct Tau2Message<'a> {
    role: String,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<Tau2Call<'a>>>,
    /// A tool message's call id.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    requestor: Option<String>,
    #[serde(default)]
    error: Option<bool>,
}

/// A tau2 tool call: arguments as an object, and who made it (the simulated user has
/// tools of its own in some domains; those calls are not the agent's plan).
#[derive(Deserialize)]
struct Tau2Call<'a> {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(borrow)]
    arguments: &'a RawValue,
    #[serde(default)]
    requestor: Option<String>,
}

fn by_user(requestor: &Option<String>) -> bool {
    requestor.as_deref() == Some("user")
}

/// A message as the task reader reads it (Anthropic's shape).
#[derive(Serialize)]
struct Made {
    role: &'static str,
    content: Vec<Block>,
}

/// An Anthropic content block.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Box<RawValue>,
    },
    ToolResult {
        tool_use_id: String,
        content: Box<RawValue>,
        is_error: bool,
    },
}

/// One tau2 message as the task reader reads it, in Anthropic's shape (content blocks
/// carry tool calls with object arguments, and results with an error flag): the
/// agent's calls as `tool_use` blocks, a tool message answering the agent as a
/// `tool_result` block, arguments and results as written. Everything else (the user's
/// own tool calls and their results) becomes a message without calls, so message `j`
/// stays message `j`; system, user and assistant text is kept as a text block. A message this does not know is kept as written, for the task
/// reader to refuse with a reason.
fn tau2_message(raw: &RawValue) -> Box<RawValue> {
    let Ok(m) = serde_json::from_str::<Tau2Message<'_>>(raw.get()) else {
        return compact(raw);
    };
    // The text of a message is kept: what the user and the system said supplies the
    // values a later call may look up (docs/design.md, "Invented references").
    let text = (m.content)
        .and_then(|c| {
            serde_json::from_str::<Option<String>>(c.get())
                .ok()
                .flatten()
        })
        .filter(|s| !s.is_empty())
        .map(|text| Block::Text { text });
    let made = match m.role.as_str() {
        "assistant" => {
            let calls = (m.tool_calls.iter().flatten())
                .filter(|c| !by_user(&c.requestor))
                .map(|c| Block::ToolUse {
                    id: c.id.clone().unwrap_or_default(),
                    name: c.name.clone(),
                    input: compact(c.arguments),
                });
            Made {
                role: "assistant",
                content: text.into_iter().chain(calls).collect(),
            }
        }
        "tool" if !by_user(&m.requestor) => Made {
            role: "user",
            content: vec![Block::ToolResult {
                tool_use_id: m.id.unwrap_or_default(),
                content: compact(m.content.unwrap_or(null())),
                is_error: m.error.unwrap_or(false),
            }],
        },
        "system" => Made {
            role: "system",
            content: text.into_iter().collect(),
        },
        // The user's own tool results are the user's to read, not the agent's.
        "tool" => Made {
            role: "user",
            content: Vec::new(),
        },
        _ => Made {
            role: "user",
            content: text.into_iter().collect(),
        },
    };
    serde_json::value::to_raw_value(&made).unwrap_or_else(|_| compact(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_str(text: &str) -> Samples<&[u8]> {
        match open(text.as_bytes(), 1 << 20) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    fn made(text: &str) -> (Vec<serde_json::Value>, Places) {
        let (raw, places) = made_raw(text);
        let values = (raw.iter())
            .map(|l| serde_json::from_str(l).expect("a made line is JSON"))
            .collect();
        (values, places)
    }

    fn made_raw(text: &str) -> (Vec<String>, Places) {
        match open_str(text) {
            Samples::Trials(t) => {
                let lines = String::from_utf8(t.lines).expect("utf-8");
                (lines.lines().map(String::from).collect(), t.places)
            }
            Samples::Lines(_) => panic!("read as samples lines"),
        }
    }

    fn read_all(s: Samples<&[u8]>) -> String {
        let mut text = String::new();
        match s {
            Samples::Lines(mut l) => l.read_to_string(&mut text).expect("read"),
            Samples::Trials(_) => panic!("read as a results file"),
        };
        text
    }

    #[test]
    fn samples_lines_are_handed_back_whole() {
        let jsonl = "{\"task_id\":\"t\",\"samples\":[{\"calls\":[{\"tool\":\"a\",\"arguments\":{\"simulations\":[]},\"result\":1}]}]}\n{\"task_id\":\"u\",\"samples\":[]}\n";
        assert_eq!(read_all(open_str(jsonl)), jsonl);
        assert_eq!(read_all(open_str("")), "");
        assert_eq!(read_all(open_str("\n\n{}")), "\n\n{}");
    }

    #[test]
    fn a_pretty_tau_bench_list_groups_trials_by_task_in_trial_order() {
        let text = r#"[
  {"task_id": 7, "trial": 1, "reward": 0.0, "info": {}, "traj": [
      {"role": "user", "content": "two  spaces\n and a newline"}]},
  {"task_id": 3, "trial": 0, "reward": 1.0, "traj": []},
  {"task_id": 7, "trial": 0, "reward": 1, "traj": [{"role": "assistant", "content": null}]}
]"#;
        let (lines, places) = made(text);
        assert_eq!(places.shape(), ResultsShape::TauBench);
        assert_eq!((places.tasks(), places.trials()), (2, 3));
        assert_eq!(lines[0]["task_id"], "7");
        // Trial 0 (written last) is the first sample; its reward's lexeme is kept.
        assert_eq!(lines[0]["samples"][0]["outcome"], 1);
        assert_eq!(lines[0]["samples"][1]["outcome"], 0.0);
        assert_eq!(
            lines[0]["samples"][1]["messages"][0]["content"],
            "two  spaces\n and a newline"
        );
        assert_eq!(lines[1]["task_id"], "3");
        // Problems are named where they sit in the file.
        let e = TaskError {
            field: "samples[1].messages[0].content".into(),
            message: "m".into(),
            task_id: None,
        };
        assert_eq!(places.relocate(1, &e).field, "[0].traj[0].content");
        let e = TaskError {
            field: "samples[0].outcome".into(),
            ..e
        };
        assert_eq!(places.relocate(1, &e).field, "[2].reward");
        let e = TaskError {
            field: "task_id".into(),
            ..e
        };
        assert_eq!(places.relocate(2, &e).field, "[1].task_id");
    }

    #[test]
    fn a_trial_without_a_task_id_is_a_line_of_its_own() {
        let (lines, places) =
            made(r#"[{"trial": 0, "traj": []}, 5, {"task_id": "a", "traj": []}]"#);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1], 5);
        let e = TaskError {
            field: String::new(),
            message: "m".into(),
            task_id: None,
        };
        assert_eq!(places.relocate(2, &e).field, "[1]");
    }

    #[test]
    fn tau2_messages_are_read_one_for_one() {
        let text = r#"{
 "timestamp": "x", "info": {}, "tasks": [], "simulations": [
 {"id": "s", "task_id": "t1", "trial": 0, "reward_info": {"reward": 1.0, "db_check": null},
  "messages": [
   {"role": "system", "content": "policy"},
   {"role": "user", "content": "hi", "tool_calls": [{"id": "u1", "name": "toggle", "arguments": {}, "requestor": "user"}]},
   {"role": "tool", "id": "u1", "content": "ok", "requestor": "user"},
   {"role": "assistant", "content": "Let me look.", "turn_idx": 3, "cost": 0.1,
    "tool_calls": [{"id": "c1", "name": "get_user", "arguments": {"user_id": "u_1", "n": 1.50}, "requestor": "assistant"}]},
   {"role": "tool", "id": "c1", "content": "{\"name\": \"Ada\"}", "requestor": "assistant", "error": false},
   {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "name": "cancel", "arguments": {}}]},
   {"role": "tool", "id": "c2", "content": "Error: not allowed", "error": true}
  ]},
 {"task_id": "t1", "trial": 1, "reward_info": null, "messages": []}
]}"#;
        let (lines, places) = made(text);
        assert_eq!(places.shape(), ResultsShape::Tau2);
        assert_eq!((places.tasks(), places.trials()), (1, 2));
        let m = &lines[0]["samples"][0]["messages"];
        assert_eq!(m.as_array().map(Vec::len), Some(7));
        // The user's own call and its result are not the agent's plan; what the system
        // and the user said is kept, to supply values.
        assert_eq!(
            m[0],
            serde_json::json!({"role": "system", "content": [{"type": "text", "text": "policy"}]})
        );
        assert_eq!(
            m[1],
            serde_json::json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(m[2], serde_json::json!({"role": "user", "content": []}));
        assert_eq!(m[3]["content"][1]["input"]["user_id"], "u_1");
        assert_eq!(m[6]["content"][0]["is_error"], true);
        assert_eq!(lines[0]["samples"][0]["outcome"], 1.0);
        assert!(lines[0]["samples"][1].get("outcome").is_none());
        // The arguments keep their lexemes.
        let line = made_raw(text).0.remove(0);
        assert!(line.contains(r#""n":1.50"#), "{line}");
        // And the task reader reads the line: two calls, the second an error.
        let task = plangate_gate::task::parse_task_line(line.as_bytes()).expect("a task");
        let calls = &task.samples[0].calls;
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].tool, "get_user");
        assert!(matches!(
            calls[1].observed,
            plangate_gate::task::Observed::Error { .. }
        ));
        assert_eq!(task.samples[0].outcome, Some(1.0));
        let said: Vec<&str> = (task.samples[0].said.iter())
            .map(|s| s.text.as_str())
            .collect();
        assert_eq!(said, ["policy", "hi", "Let me look."]);
        // The model's text beside its call counts for later calls only.
        assert_eq!(task.samples[0].said[2].before, 1);
        let e = TaskError {
            field: "samples[0].messages[4].content[0].content".into(),
            message: "m".into(),
            task_id: None,
        };
        assert_eq!(
            places.relocate(1, &e).field,
            "simulations[0].messages[4].content[0].content"
        );
    }

    #[test]
    fn a_one_line_tau2_object_is_a_results_file() {
        let (lines, _) = made(r#"{"simulations": [{"task_id": "a", "messages": []}]}"#);
        assert_eq!(lines.len(), 1);
    }

    #[test]
    fn another_document_is_refused_with_what_is_read() {
        let e = open("{\n  \"task_id\": \"t\"\n}\n".as_bytes(), 1 << 20)
            .err()
            .expect("refused");
        assert!(e.to_string().contains("tau-bench"), "{e}");
        // A broken document is read as samples lines, so each bad line is reported
        // and the rest decided.
        assert_eq!(
            read_all(open_str("[1, 2\n{\"task_id\": 1}\n")),
            "[1, 2\n{\"task_id\": 1}\n"
        );
    }
}
