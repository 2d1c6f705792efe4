//! What the proxy answers for a judged step: the modal choice as the upstream wrote it
//! (accept, or a deferral passed on), a well-formed assistant message without tool
//! calls that says why (a refusal), or an error status with the record; as one JSON
//! completion, or as server-sent events in OpenAI's chunk format.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plangate_gate::decide::{Decision, Verdict};
use serde_json::{Map, Value, json};

use crate::judge::Judged;

/// Each value shown in a refusal is cut to this many characters.
const VALUE_CHARS: usize = 80;
/// At most this many of the values seen are shown.
const VALUES_SHOWN: usize = 3;

/// The completion answered: the upstream's first answer with one choice, and the record
/// under `plangate`.
pub(crate) fn completion(
    answer: &Map<String, Value>,
    choice: Value,
    record: Option<&str>,
) -> Value {
    let mut out = answer.clone();
    let mut choice = choice;
    if let Value::Object(c) = &mut choice {
        c.insert("index".into(), 0.into());
    }
    out.insert("choices".into(), Value::Array(vec![choice]));
    if let Some(record) = record.and_then(|r| serde_json::from_str::<Value>(r).ok()) {
        out.insert("plangate".into(), record);
    }
    Value::Object(out)
}

/// The choice that refuses a step: no tool calls, `finish_reason: "stop"`, and a text
/// naming the tool, the diverging parameter and some of the values seen.
pub(crate) fn refusal(judged: &Judged, messages: &[&Value]) -> Value {
    json!({
        "index": 0,
        "message": {"role": "assistant", "content": refusal_text(&judged.decision, messages)},
        "finish_reason": "stop",
        "logprobs": null,
    })
}

/// The text of a refusal: the verdict, its reasons, and the diverging parameter with
/// some of the values seen (or the decision's first explanation).
pub(crate) fn refusal_text(d: &Decision, messages: &[&Value]) -> String {
    let verdict = match d.verdict {
        Verdict::Reject => "rejected",
        _ => "deferred",
    };
    let reasons: Vec<&str> = d.reasons.iter().map(|r| r.as_str()).collect();
    let mut text = format!(
        "plangate {verdict} this step ({}): its tool calls were not made.",
        reasons.join(", ")
    );
    if let Some((step, tool, param, values)) = diverging(d, messages) {
        let shown: Vec<String> = values.iter().map(|v| format!("{:?}", cut(v))).collect();
        text.push_str(&format!(
            " The {} sampled plans disagree on `{tool}`'s `{param}` (call {}); values seen: {}.",
            d.n,
            step + 1,
            shown.join(", ")
        ));
    } else if let Some(first) = d.explanation.first() {
        text.push(' ');
        text.push_str(first);
    }
    text
}

/// The first divergent argument path (`$.steps[S].arguments.P...`): the step, its tool,
/// the parameter as written in the path, and up to three distinct values the choices
/// gave it, in the order they came.
fn diverging(d: &Decision, messages: &[&Value]) -> Option<(usize, String, String, Vec<String>)> {
    let path = d
        .divergent_paths
        .iter()
        .find(|p| p.path.contains(".arguments"))?;
    let rest = path.path.strip_prefix("$.steps[")?;
    let (step, rest) = rest.split_once(']')?;
    let step: usize = step.parse().ok()?;
    let param = rest.strip_prefix(".arguments")?.trim_start_matches('.');
    let mut tool = None;
    let mut values: Vec<String> = Vec::new();
    for m in messages {
        let Some(call) = m.get("tool_calls").and_then(|c| c.get(step)) else {
            continue;
        };
        tool = tool.or_else(|| call.pointer("/function/name").and_then(Value::as_str));
        let args = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .and_then(|a| serde_json::from_str::<Value>(a).ok());
        let value = args.as_ref().and_then(|a| at_path(a, param));
        let shown = match value {
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => "(absent)".into(),
        };
        if !values.contains(&shown) && values.len() < VALUES_SHOWN {
            values.push(shown);
        }
    }
    Some((step, tool?.to_string(), param.to_string(), values))
}

/// The value at a path as the gate writes it (`user.id`, `items[2]`).
fn at_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    let mut here = v;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            here = here.get(name)?;
        }
        for index in indexes.split('[').filter(|s| !s.is_empty()) {
            here = here.get(index.trim_end_matches(']').parse::<usize>().ok()?)?;
        }
    }
    Some(here)
}

/// At most [`VALUE_CHARS`] characters, with an ellipsis when cut.
fn cut(s: &str) -> String {
    match s.char_indices().nth(VALUE_CHARS) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// A JSON completion, or its chunks as server-sent events when the client streams;
/// with the decision's headers when there is one.
pub(crate) fn answer(body: Value, stream: bool, headers: &[(&'static str, String)]) -> Response {
    let mut response = if stream {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            )],
            events(&body),
        )
            .into_response()
    } else {
        crate::app::json(StatusCode::OK, body.to_string())
    };
    with_headers(&mut response, headers);
    response
}

/// Sets each header on the answer (a value that is not a header value is left out).
pub(crate) fn with_headers(response: &mut Response, headers: &[(&'static str, String)]) {
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(value) {
            response.headers_mut().insert(*name, v);
        }
    }
}

/// A whole completion as OpenAI streams one: per choice, a chunk with the role and the
/// content or the tool calls (each call whole, with its index), a last chunk with the
/// finish reason (and the record under `plangate`), then `[DONE]`.
fn events(body: &Value) -> String {
    let field = |k: &str| body.get(k).cloned().unwrap_or(Value::Null);
    let chunk = |choices: Value, extra: Option<(&str, Value)>| {
        let mut c = json!({
            "id": field("id"),
            "object": "chat.completion.chunk",
            "created": field("created"),
            "model": field("model"),
            "choices": choices,
        });
        if let (Some((k, v)), Value::Object(o)) = (extra, &mut c) {
            o.insert(k.into(), v);
        }
        format!("data: {c}\n\n")
    };
    let mut out = String::new();
    for choice in body
        .get("choices")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let index = choice.get("index").cloned().unwrap_or(0.into());
        let message = choice.get("message").cloned().unwrap_or(Value::Null);
        let mut delta = json!({"role": "assistant", "content": message.get("content").cloned().unwrap_or(Value::Null)});
        if let Some(Value::Array(calls)) = message.get("tool_calls") {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut c = c.clone();
                    if let Value::Object(o) = &mut c {
                        o.insert("index".into(), i.into());
                    }
                    c
                })
                .collect();
            delta["tool_calls"] = Value::Array(calls);
        }
        out.push_str(&chunk(
            json!([{"index": index, "delta": delta, "finish_reason": null}]),
            None,
        ));
        let finish = choice.get("finish_reason").cloned().unwrap_or(Value::Null);
        out.push_str(&chunk(
            json!([{"index": index, "delta": {}, "finish_reason": finish}]),
            body.get("plangate").map(|p| ("plangate", p.clone())),
        ));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_cut_at_eighty_characters_not_bytes() {
        let long = "é".repeat(100);
        let cut = cut(&long);
        assert_eq!(cut.chars().count(), VALUE_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(super::cut("short"), "short");
    }

    #[test]
    fn a_path_is_read_as_the_gate_writes_it() {
        let v = json!({"user": {"ids": [1, 2, {"x": "y"}]}});
        assert_eq!(at_path(&v, "user.ids[2].x"), Some(&json!("y")));
        assert_eq!(at_path(&v, "user.missing"), None);
    }
}
