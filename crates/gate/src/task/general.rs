//! The general reader: any samples line from its parsed tree, every shape a sample comes
//! in, with errors that name the field. The native shapes (`calls`, `turns`), MCP
//! `tools/call` lists and recorded results are read here; provider messages in
//! `transcript`.

use std::sync::Arc;

use super::fields::Level;
use super::parts::{
    Notes, call_of, check_fields, epoch_fixed_of, foreign_call, json_arguments, label_of,
    observed_result, task_id_of, tool_name,
};
use super::transcript::{Transcript, check_role, parse_transcript};
use super::{Call, Observed, Sample, Task, TaskError, err};
use crate::json::{Duplicates, Value, parse_with};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::tests::{result, same_either_way};
    use crate::task::{Arguments, parse_task_line};

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
