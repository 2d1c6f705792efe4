//! The pieces of a samples line every reader shares: a line's top fields, an object's
//! fields checked against its level, a call and a result as recorded, and what reading
//! notes on the way. The general, transcript and native readers build on these, and
//! none of them on each other's.

use std::sync::Arc;

use super::fields::{Level, near_miss};
use super::{Arguments, Call, Label, Observed, Payload, ReadingNotes, TaskError, err};
use crate::json::{Duplicates, Object, Value, parse_with};

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
    pub(super) fn into_parts(self) -> (Vec<String>, ReadingNotes) {
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

/// A message's or result block's content as a value: text read as JSON when it parses
/// and as a string otherwise; a list of text parts joined first.
pub(super) fn content_value(content: Option<&Value>) -> Value {
    let text = match content {
        None | Some(Value::Null) => return Value::String(String::new()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let texts: Option<Vec<&str>> = parts
                .iter()
                .map(|p| {
                    let p = p.as_object()?;
                    (p.get("type")?.as_str()? == "text").then_some(())?;
                    p.get("text")?.as_str()
                })
                .collect();
            match texts {
                Some(t) => t.concat(),
                // Images and other blocks: compared as given.
                None => return Value::Array(parts.clone()),
            }
        }
        Some(other) => return other.clone(),
    };
    parse_with(text.as_bytes(), Duplicates::Flag).unwrap_or(Value::String(text))
}

/// The text of a result, for an error's message.
pub(super) fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => crate::jcs::to_string(other),
    }
}
