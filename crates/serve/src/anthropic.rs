//! Anthropic's Messages API as the proxy reads and writes it: a message's `tool_use`
//! blocks read as an assistant message with `tool_calls` (the shape the judging reads),
//! a refusal as a message with one text block, errors in Anthropic's shape, and a whole
//! message written as Anthropic's event stream (`message_start`, the content blocks,
//! `message_delta`, `message_stop`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::reply::with_headers;

/// Anthropic's error shape: `{"type": "error", "error": {"type", "message"}}`, with
/// the decision record under `plangate` when there is one.
pub(crate) fn error(
    status: StatusCode,
    kind: &str,
    message: &str,
    record: Option<&str>,
) -> Response {
    let mut body = json!({"type": "error", "error": {"type": kind, "message": message}});
    if let Some(record) = record.and_then(|r| serde_json::from_str::<Value>(r).ok()) {
        body["plangate"] = record;
    }
    crate::app::json(status, body.to_string())
}

/// Whether an upstream answer is a message: an object with a `content` array.
pub(crate) fn is_message(v: &Value) -> bool {
    v.get("content").is_some_and(Value::is_array)
}

/// A message's `tool_use` blocks as an assistant message with `tool_calls`, each
/// call's `input` as its arguments' JSON text; no `tool_calls` when it has none.
pub(crate) fn as_tool_calls(message: &Value) -> Value {
    let calls: Vec<Value> = blocks(message)
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|b| {
            let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
            json!({"id": b.get("id").cloned().unwrap_or(Value::Null), "type": "function",
                   "function": {"name": b.get("name").cloned().unwrap_or(Value::Null),
                                "arguments": input.to_string()}})
        })
        .collect();
    if calls.is_empty() {
        json!({"role": "assistant"})
    } else {
        json!({"role": "assistant", "tool_calls": calls})
    }
}

fn blocks(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The message answered: `message` with the record under `plangate`.
pub(crate) fn with_record(message: &Value, record: Option<&str>) -> Value {
    let mut out = message.clone();
    if let (Value::Object(o), Some(record)) = (
        &mut out,
        record.and_then(|r| serde_json::from_str::<Value>(r).ok()),
    ) {
        o.insert("plangate".into(), record);
    }
    out
}

/// A refusal: the first message's id, model and usage, one text block, and
/// `stop_reason: "end_turn"`.
pub(crate) fn refusal(first: &Value, text: String) -> Value {
    let field = |k: &str| first.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "id": field("id"),
        "type": "message",
        "role": "assistant",
        "model": field("model"),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": field("usage"),
    })
}

/// A message as JSON, or as Anthropic's event stream when the client streams, with
/// the decision's headers.
pub(crate) fn answer(
    message: &Value,
    stream: bool,
    headers: &[(&'static str, String)],
) -> Response {
    let mut response = if stream {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            )],
            events(message),
        )
            .into_response()
    } else {
        crate::app::json(StatusCode::OK, message.to_string())
    };
    with_headers(&mut response, headers);
    response
}

/// A whole message as Anthropic streams one: `message_start` (the message without its
/// content, stop reason or stop sequence; the record under `plangate`), each block as
/// `content_block_start` (the block without its text or input), one
/// `content_block_delta` with all of it, and `content_block_stop`; then
/// `message_delta` (the stop reason and the output tokens) and `message_stop`.
pub(crate) fn events(message: &Value) -> String {
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    let mut start = message.as_object().cloned().unwrap_or_default();
    start.insert("content".into(), json!([]));
    start.insert("stop_reason".into(), Value::Null);
    start.insert("stop_sequence".into(), Value::Null);
    event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    );
    for (index, block) in blocks(message).iter().enumerate() {
        let (opening, delta) = opened_block(block);
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": opening}),
        );
        if let Some(delta) = delta {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    let field = |k: &str| message.get(k).cloned().unwrap_or(Value::Null);
    let output_tokens = message
        .pointer("/usage/output_tokens")
        .cloned()
        .unwrap_or(0.into());
    event(
        "message_delta",
        json!({"type": "message_delta",
               "delta": {"stop_reason": field("stop_reason"), "stop_sequence": field("stop_sequence")},
               "usage": {"output_tokens": output_tokens}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

/// A block as `content_block_start` opens it, and the one delta that fills it: text
/// and thinking by their text, a tool use by its input's JSON; any other block is
/// opened whole.
fn opened_block(block: &Value) -> (Value, Option<Value>) {
    let mut opening: Map<String, Value> = block.as_object().cloned().unwrap_or_default();
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let delta = match kind {
        "text" => {
            let text = opening.insert("text".into(), "".into());
            Some(json!({"type": "text_delta", "text": text.unwrap_or_else(|| "".into())}))
        }
        "thinking" => {
            let text = opening.insert("thinking".into(), "".into());
            Some(json!({"type": "thinking_delta", "thinking": text.unwrap_or_else(|| "".into())}))
        }
        "tool_use" => {
            let input = opening
                .insert("input".into(), json!({}))
                .unwrap_or_else(|| json!({}));
            Some(json!({"type": "input_json_delta", "partial_json": input.to_string()}))
        }
        _ => None,
    };
    (Value::Object(opening), delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message() -> Value {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
               "content": [{"type": "text", "text": "Let me look."},
                           {"type": "tool_use", "id": "toolu_1", "name": "get_user",
                            "input": {"user_id": "u_1"}}],
               "stop_reason": "tool_use", "stop_sequence": null,
               "usage": {"input_tokens": 10, "output_tokens": 7}})
    }

    #[test]
    fn tool_use_blocks_are_read_as_tool_calls() {
        let m = as_tool_calls(&message());
        assert_eq!(m["tool_calls"][0]["function"]["name"], "get_user");
        assert_eq!(
            m["tool_calls"][0]["function"]["arguments"],
            r#"{"user_id":"u_1"}"#
        );
        let prose = json!({"content": [{"type": "text", "text": "hi"}]});
        assert!(as_tool_calls(&prose).get("tool_calls").is_none());
    }

    /// Every event's data, put together as a client does, gives back the message.
    #[test]
    fn the_event_stream_rebuilds_the_message() {
        let text = events(&message());
        let mut names = Vec::new();
        let mut rebuilt = Value::Null;
        let mut partial: Vec<String> = Vec::new();
        for chunk in text.split("\n\n").filter(|c| !c.is_empty()) {
            let (name, data) = chunk.split_once('\n').unwrap();
            let name = name.strip_prefix("event: ").unwrap();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name);
            names.push(name.to_string());
            match name {
                "message_start" => rebuilt = data["message"].clone(),
                "content_block_start" => {
                    rebuilt["content"]
                        .as_array_mut()
                        .unwrap()
                        .push(data["content_block"].clone());
                    partial.push(String::new());
                }
                "content_block_delta" => {
                    let i = data["index"].as_u64().unwrap() as usize;
                    match data["delta"]["type"].as_str().unwrap() {
                        "text_delta" => {
                            rebuilt["content"][i]["text"] = data["delta"]["text"].clone()
                        }
                        _ => partial[i].push_str(data["delta"]["partial_json"].as_str().unwrap()),
                    }
                }
                "content_block_stop" => {
                    let i = data["index"].as_u64().unwrap() as usize;
                    if !partial[i].is_empty() {
                        rebuilt["content"][i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                    }
                }
                "message_delta" => {
                    rebuilt["stop_reason"] = data["delta"]["stop_reason"].clone();
                    rebuilt["usage"]["output_tokens"] = data["usage"]["output_tokens"].clone();
                }
                _ => {}
            }
        }
        assert_eq!(names.first().map(String::as_str), Some("message_start"));
        assert_eq!(names.last().map(String::as_str), Some("message_stop"));
        assert_eq!(rebuilt, message());
    }
}
