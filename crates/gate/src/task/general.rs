//! The general reader: any samples line from its parsed tree, every shape a sample comes
//! in, with errors that name the field. The native shapes (`calls`, `turns`), MCP
//! `tools/call` lists and recorded results are read here; provider messages in
//! `transcript`.

use std::sync::Arc;

use super::fields::{Level, near_miss};
use super::transcript::{Transcript, check_role, content_value, parse_transcript, text_of};
use super::{
    Arguments, Call, Label, Observed, Payload, ReadingNotes, Sample, Task, TaskError, err,
};
use crate::json::{Duplicates, Object, Value, parse_with};

/// [`parse_task_line`] without its one-pass reader for native lines: every line through
/// the general reader. Both give the same task or error; public so the fuzz target
/// `samples_line` can hold them to that.
#[doc(hidden)]
pub fn parse_task_line_general(line: &[u8]) -> Result<Task, TaskError> {
    // Flag, not Refuse: a duplicate key inside one sample's arguments spoils that sample,
    // not the task; structural duplicates are refused below.
    // A samples line holds no newline, so its column is the whole position.
    let doc = parse_with(line, Duplicates::Flag)
        .map_err(|e| err("", format!("{} at column {}", e.kind, e.column)))?;
    let task_id = doc
        .as_object()
        .and_then(|o| o.get("task_id"))
        .and_then(Value::as_str)
        .map(str::to_string);
    task_from_value(&doc).map_err(|mut e| {
        e.task_id = task_id;
        e
    })
}

/// Reads a task from a parsed line.
pub fn task_from_value(doc: &Value) -> Result<Task, TaskError> {
    let o = doc
        .as_object()
        .ok_or_else(|| err("", format!("expected a task object, found {}", doc.kind())))?;
    let mut notes = Notes::default();
    check_fields(o, "", Level::Task, &mut notes)?;
    let task_id = task_id_of(o.get("task_id"))?;
    let samples = match o.get("samples") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| parse_sample(s, &format!("samples[{i}]"), &mut notes).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(err("samples", "expected an array of samples")),
        None => return Err(err("samples", "missing")),
    };
    let label = label_of(o.get("label"))?;
    let epoch_fixed = epoch_fixed_of(o.get("epoch_fixed"))?;
    let (warnings, notes) = notes.into_parts();
    Ok(Task {
        task_id,
        samples,
        label,
        epoch_fixed,
        warnings,
        notes,
    })
}

/// Reads one sample in whichever shape it comes: native `{"calls": [...]}` or
/// `{"turns": [[...], ...]}`, a logged conversation `{"messages": [...]}` (OpenAI or
/// Anthropic), an OpenAI assistant message (`tool_calls`), an Anthropic message
/// (`tool_use` content blocks), or a list of MCP `tools/call` params. A bare message or
/// MCP list carries no results: `eval` executes its calls.
fn parse_sample(s: &Value, field: &str, notes: &mut Notes) -> Result<Sample, TaskError> {
    let mut sample = parse_sample_shape(s, field, notes)?;
    if let Value::Object(o) = s {
        sample.outcome = outcome_of(o.get("outcome"), field)?;
    }
    Ok(sample)
}

/// A sample's `outcome` (docs/inputs.md, "Outcomes"): what the run it came from scored,
/// a number (a benchmark's reward) or true / false (1 / 0).
fn outcome_of(v: Option<&Value>, field: &str) -> Result<Option<f64>, TaskError> {
    let x = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::Number(n)) => n.as_f64(),
        Some(_) => f64::NAN,
    };
    if x.is_finite() {
        Ok(Some(x))
    } else {
        Err(err(
            format!("{field}.outcome"),
            "expected a finite number (a reward) or true / false",
        ))
    }
}

/// [`parse_sample`] without its outcome: the sample's calls in whichever shape they come.
fn parse_sample_shape(s: &Value, field: &str, notes: &mut Notes) -> Result<Sample, TaskError> {
    let shape_error = || {
        err(
            field,
            format!(
                "expected {{\"calls\": [...]}}, {{\"turns\": [...]}}, {{\"messages\": [...]}}, \
                 an OpenAI or Anthropic assistant message, or a list of MCP tools/call \
                 params; found {}",
                s.kind()
            ),
        )
    };
    let o = match s {
        Value::Array(items) => return parse_mcp_calls(items, field, notes),
        Value::Object(o) => o,
        _ => return Err(shape_error()),
    };
    let one_of = || err(field, "a sample has one of `calls`, `turns` or `messages`");
    if o.contains_key("messages") {
        check_fields(o, field, Level::Sample, notes)?;
        if o.contains_key("calls") || o.contains_key("turns") {
            return Err(one_of());
        }
        let Some(Value::Array(messages)) = o.get("messages") else {
            return Err(err(
                format!("{field}.messages"),
                "expected an array of messages",
            ));
        };
        return parse_transcript(messages, &format!("{field}.messages"), notes);
    }
    let native = o.contains_key("calls") || o.contains_key("turns");
    let message = o.contains_key("role") || matches!(o.get("content"), Some(Value::Array(_)));
    if o.contains_key("tool_calls") || (!native && message) {
        // One assistant message is one turn; one with no tool call is a plan of none.
        check_fields(o, field, Level::Message, notes)?;
        check_role(o, field)?;
        let mut t = Transcript::default();
        t.assistant(o, field, notes)?;
        return Ok(t.sample);
    }
    check_fields(o, field, Level::Sample, notes)?;
    match (o.get("calls"), o.get("turns")) {
        (Some(_), Some(_)) => Err(one_of()),
        (Some(Value::Array(items)), None) => Ok(Sample {
            calls: items
                .iter()
                .enumerate()
                .map(|(i, c)| parse_call(c, &format!("{field}.calls[{i}]"), notes))
                .collect::<Result<Vec<_>, _>>()?,
            ..Sample::default()
        }),
        (None, Some(Value::Array(turns))) => {
            let mut sample = Sample::default();
            for (t, turn) in turns.iter().enumerate() {
                let at = format!("{field}.turns[{t}]");
                let Value::Array(calls) = turn else {
                    return Err(err(at, "expected an array of the calls made together"));
                };
                for (k, c) in calls.iter().enumerate() {
                    let place = format!("{at}[{k}]");
                    let mut call = parse_call(c, &place, notes)?;
                    call.origin = Some(place.into());
                    sample.calls.push(call);
                }
                if !calls.is_empty() {
                    sample.turns.push(calls.len());
                }
            }
            Ok(sample)
        }
        (None, Some(_)) => Err(err(
            format!("{field}.turns"),
            "expected an array of turns, each an array of calls",
        )),
        _ => Err(err(format!("{field}.calls"), "expected an array of calls")),
    }
}

/// `[{"name":..,"arguments":{..}}, ...]`: the params of successive MCP `tools/call`s.
fn parse_mcp_calls(items: &[Value], field: &str, notes: &mut Notes) -> Result<Sample, TaskError> {
    let mut calls = Vec::with_capacity(items.len());
    for (i, c) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let o = c.as_object().ok_or_else(|| {
            err(
                &at,
                "expected tools/call params {\"name\": ..., \"arguments\": {...}}",
            )
        })?;
        check_fields(o, &at, Level::McpCall, notes)?;
        let tool = tool_name(o, "name", &at)?;
        let arguments = json_arguments(o, "arguments");
        calls.push(foreign_call(tool, arguments, at));
    }
    Ok(Sample {
        calls,
        ..Sample::default()
    })
}

fn parse_call(c: &Value, field: &str, notes: &mut Notes) -> Result<Call, TaskError> {
    let o = c
        .as_object()
        .ok_or_else(|| err(field, format!("expected a call object, found {}", c.kind())))?;
    check_fields(o, field, Level::Call, notes)?;
    let result_field = format!("{field}.result");
    let result = (o.get("result").cloned()).map(|v| observed_result(v, &result_field, notes));
    let observed = || match (result, o.get("error")) {
        (Some(_), Some(_)) => Err(err(field, "a call has a result or an error, not both")),
        (Some(r), None) => Ok(r),
        (None, Some(e)) => parse_error(e, &format!("{field}.error"), notes),
        (None, None) => Ok(Observed::Missing),
    };
    call_of(
        o.get("tool").cloned(),
        o.get("arguments").cloned(),
        observed,
        field,
    )
}

/// A native call from its fields, however they were read; `observed` reads what it
/// returned, once its tool is known to be named.
pub(super) fn call_of(
    tool: Option<Value>,
    arguments: Option<Value>,
    observed: impl FnOnce() -> Result<Observed, TaskError>,
    field: &str,
) -> Result<Call, TaskError> {
    let tool = match tool {
        Some(Value::String(s)) => s,
        _ => return Err(err(format!("{field}.tool"), "expected the tool's name")),
    };
    let observed = observed()?;
    Ok(Call {
        origin: None,
        tool,
        // Arguments that are not an object are the model's mistake, not the file's:
        // the sample becomes malformed (canonicalization says so), the task is decided.
        arguments: arguments_or_empty(arguments),
        observed,
    })
}

fn parse_error(e: &Value, field: &str, notes: &mut Notes) -> Result<Observed, TaskError> {
    let o = e
        .as_object()
        .ok_or_else(|| err(field, "expected {\"kind\": ..., \"message\": ...}"))?;
    check_fields(o, field, Level::CallError, notes)?;
    let kind = match o.get("kind") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(err(format!("{field}.kind"), "expected a string")),
    };
    let message = match o.get("message") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(err(format!("{field}.message"), "expected a string")),
    };
    Ok(Observed::Error { kind, message })
}

/// A result as recorded, read for what it is: an MCP `CallToolResult` with
/// `isError: true` is the tool's error, not a result; a whole JSON-RPC response is
/// unwrapped (its `id` differs per call, so compared whole every tool would look
/// flaky), and noted.
pub(super) fn observed_result(v: Value, field: &str, notes: &mut Notes) -> Observed {
    let Value::Object(o) = &v else {
        return Observed::Result(Payload::from(v));
    };
    let envelope = o.contains_key("jsonrpc")
        && o.contains_key("id")
        && o.keys()
            .all(|k| matches!(k.as_str(), "jsonrpc" | "id" | "result" | "error"));
    if envelope {
        match (o.get("result"), o.get("error")) {
            (Some(r), None) => {
                notes.envelopes.push(field.to_string());
                return observed_result(r.clone(), &format!("{field}.result"), notes);
            }
            (None, Some(e)) => {
                notes.envelopes.push(field.to_string());
                let e = e.as_object();
                let code = e.and_then(|e| e.get("code")).map(text_of);
                let message = e
                    .and_then(|e| e.get("message"))
                    .map(text_of)
                    .unwrap_or_default();
                return Observed::Error {
                    kind: format!(
                        "json_rpc_error{}",
                        code.map(|c| format!(":{c}")).unwrap_or_default()
                    ),
                    message,
                };
            }
            _ => {}
        }
    }
    if let (Some(Value::Bool(true)), Some(content @ Value::Array(_))) =
        (o.get("isError"), o.get("content"))
    {
        return Observed::Error {
            kind: "tool_error".into(),
            message: text_of(&content_value(Some(content))),
        };
    }
    Observed::Result(Payload::from(v))
}

/// What a line's reader notes on the way: for the decision's warnings, and for the run.
#[derive(Default)]
pub(super) struct Notes {
    /// Results that were whole JSON-RPC responses, by place.
    envelopes: Vec<String>,
    /// What the run hears of: how transcript results were placed, the fields passed over.
    pub(super) run: ReadingNotes,
}

impl Notes {
    /// The decision's warnings, and the notes for the run.
    fn into_parts(self) -> (Vec<String>, ReadingNotes) {
        let Some(first) = self.envelopes.first() else {
            return (Vec::new(), self.run);
        };
        let warning = format!(
            "json_rpc_unwrapped: {} result(s) were whole JSON-RPC responses (first: {first}); \
             each response's `result` was compared, not its `id`, which differs per call",
            self.envelopes.len()
        );
        (vec![warning], self.run)
    }
}

pub(super) fn no_duplicates(o: &Object, field: &str) -> Result<(), TaskError> {
    match o.duplicate_key() {
        Some(k) => Err(err(field, format!("duplicate key {k:?}"))),
        None => Ok(()),
    }
}

/// Checks an object's keys against what its `level` knows (docs/inputs.md, "Unknown
/// fields"): a duplicate, or a misspelling of a field read there that the object lacks,
/// refuses the line; any other field the level does not know is noted and passed over.
pub(super) fn check_fields(
    o: &Object,
    field: &str,
    level: Level,
    notes: &mut Notes,
) -> Result<(), TaskError> {
    no_duplicates(o, field)?;
    for k in o.keys() {
        if level.knows(k) {
            continue;
        }
        if let Some(name) = near_miss(level, k, |n| o.contains_key(n)) {
            let at = if field.is_empty() {
                k.clone()
            } else {
                format!("{field}.{k}")
            };
            return Err(err(
                at,
                format!(
                    "unknown field: did you mean {name:?}? (a near miss of a field plangate \
                     reads is taken for a misspelling, not passed over)"
                ),
            ));
        }
        notes.run.unknown(level, k);
    }
    Ok(())
}

pub(super) fn task_id_of(v: Option<&Value>) -> Result<String, TaskError> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.lexeme().to_string()),
        Some(_) => Err(err("task_id", "expected a non-empty string")),
        None => Err(err("task_id", "missing")),
    }
}

pub(super) fn label_of(v: Option<&Value>) -> Result<Option<Label>, TaskError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "correct" => Ok(Some(Label::Correct)),
        Some(Value::String(s)) if s == "hallucinated" => Ok(Some(Label::Hallucinated)),
        Some(_) => Err(err("label", "expected \"correct\" or \"hallucinated\"")),
    }
}

pub(super) fn epoch_fixed_of(v: Option<&Value>) -> Result<Option<bool>, TaskError> {
    match v {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(err("epoch_fixed", "expected true or false")),
    }
}

pub(super) fn tool_name(o: &Object, key: &str, field: &str) -> Result<String, TaskError> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(err(format!("{field}.{key}"), "expected the tool's name")),
    }
}

pub(super) fn foreign_call(tool: String, arguments: Arguments, origin: String) -> Call {
    Call {
        origin: Some(origin.into()),
        tool,
        arguments,
        observed: Observed::Missing,
    }
}

/// The arguments under `key` as written; a call that gives none passes `{}`.
pub(super) fn json_arguments(o: &Object, key: &str) -> Arguments {
    arguments_or_empty(o.get(key).cloned())
}

fn arguments_or_empty(v: Option<Value>) -> Arguments {
    Arguments::Json(Arc::new(v.unwrap_or_else(|| Value::Object(Object::new()))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task_line;
    use crate::task::tests::{result, same_either_way};

    /// MCP results say what they are: `isError` is an error, and a pasted JSON-RPC
    /// response is unwrapped (escaped keys too) with a warning, in both readers.
    #[test]
    fn mcp_results_are_read_for_what_they_are() {
        let call = r#""tool":"w","arguments":{}"#;
        let line = |r: &str| {
            format!(r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":{r}}}]}}]}}"#)
        };
        let cases = [
            (
                r#"{"content":[{"type":"text","text":"no such city"}],"isError":true}"#,
                Observed::Error {
                    kind: "tool_error".into(),
                    message: "no such city".into(),
                },
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"12"}],"isError":false}"#,
                result(r#"{"content":[{"type":"text","text":"12"}],"isError":false}"#),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"12"}]}}"#,
                result(r#"{"content":[{"type":"text","text":"12"}]}"#),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"result":{"content":[],"isError":true}}"#,
                Observed::Error {
                    kind: "tool_error".into(),
                    message: String::new(),
                },
                true,
            ),
            (
                r#"{"\u006asonrpc":"2.0","id":9,"error":{"code":-32602,"message":"bad params"}}"#,
                Observed::Error {
                    kind: "json_rpc_error:-32602".into(),
                    message: "bad params".into(),
                },
                true,
            ),
            (
                r#"{"jsonrpc":"2.0"}"#,
                result(r#"{"jsonrpc":"2.0"}"#),
                false,
            ),
        ];
        for (r, want, warned) in cases {
            let l = line(r);
            same_either_way(l.as_bytes());
            let t = parse_task_line(l.as_bytes()).unwrap();
            assert_eq!(t.samples[0].calls[0].observed, want, "{r}");
            assert_eq!(
                t.warnings.len(),
                usize::from(warned),
                "{r}: {:?}",
                t.warnings
            );
            if warned {
                assert!(
                    t.warnings[0].contains("samples[0].calls[0].result"),
                    "{:?}",
                    t.warnings
                );
            }
        }
    }

    #[test]
    fn duplicate_argument_keys_spoil_only_the_sample() {
        let t = parse_task_line(
            br#"{"task_id":"t","samples":[{"calls":[{"tool":"a","arguments":{"x":1,"x":2}}]}]}"#,
        )
        .unwrap();
        let Arguments::Json(v) = &t.samples[0].calls[0].arguments else {
            panic!("object expected")
        };
        let Value::Object(o) = &**v else {
            panic!("object expected")
        };
        assert_eq!(o.duplicate_key(), Some("x"));
    }
}
