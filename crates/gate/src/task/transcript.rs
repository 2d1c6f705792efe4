//! Provider messages as samples: one OpenAI or Anthropic assistant message, or a whole
//! logged conversation (`{"messages": [...]}`), whose results find their calls by the
//! provider's call id. Kept apart because these shapes are the providers', not ours: they
//! grow fields often, and a message says its role rather than its shape.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::fields::Level;
use super::parts::{
    Notes, check_fields, content_value, foreign_call, json_arguments, observed_result, text_of,
    tool_name,
};
use super::{Arguments, IdMatching, Observed, Said, Sample, TaskError, err};
use crate::json::{Duplicates, Object, Value, parse_with};

/// A sample read from provider messages: each assistant message's calls are a turn, and
/// a result finds its call by the provider's call id, or by position when it has none.
/// Logs reuse ids (a server numbering every call `call_0`, an agent log restarting its
/// count) or leave them out, so ids are read as they come rather than trusted to be
/// unique.
#[derive(Default)]
pub(super) struct Transcript {
    pub(super) sample: Sample,
    /// Call id -> the calls that carry it.
    ids: BTreeMap<String, IdCalls>,
    /// The calls still waiting for a result, by index, with the id each carries.
    waiting: BTreeMap<usize, Option<String>>,
    /// Results with no id, placed on the oldest waiting call.
    positional: u32,
}

/// The calls of one transcript that carry one id.
#[derive(Default)]
struct IdCalls {
    /// How many calls carry it.
    calls: u32,
    /// Those still waiting, in order, each with its turn.
    waiting: VecDeque<(usize, usize)>,
    /// How many results named it.
    matched: u32,
}

impl Transcript {
    /// An assistant message in either provider's shape: OpenAI `tool_calls`, or
    /// Anthropic `tool_use` content blocks. Text is the model's prose, not plan.
    pub(super) fn assistant(
        &mut self,
        o: &Object,
        field: &str,
        notes: &mut Notes,
    ) -> Result<(), TaskError> {
        let before = self.sample.calls.len();
        if o.contains_key("tool_calls") {
            self.openai_calls(o, field, notes)?;
        } else if let Some(Value::Array(blocks)) = o.get("content") {
            self.anthropic_calls(blocks, &format!("{field}.content"), notes)?;
        }
        let made = self.sample.calls.len() - before;
        if made > 0 {
            self.sample.turns.push(made);
        }
        // The model's text beside its calls supplies nothing to them: it counts for
        // the calls of later messages.
        self.say(o.get("content"));
        Ok(())
    }

    /// Keeps the text of a message's content (a string, or its text blocks) as said
    /// before the calls still to come.
    fn say(&mut self, content: Option<&Value>) {
        let before = self.sample.calls.len();
        let mut keep = |text: &str| {
            if !text.is_empty() {
                self.sample.said.push(Said {
                    before,
                    text: text.to_string(),
                });
            }
        };
        match content {
            Some(Value::String(s)) => keep(s),
            Some(Value::Array(blocks)) => {
                for b in blocks.iter().filter_map(Value::as_object) {
                    if b.get("type").and_then(Value::as_str) == Some("text")
                        && let Some(Value::String(t)) = b.get("text")
                    {
                        keep(t);
                    }
                }
            }
            _ => {}
        }
    }

    /// Notes the call about to be pushed as waiting, under its id when it has one; an
    /// empty or null id is no id.
    fn register(&mut self, id: Option<&Value>, at: &str) -> Result<(), TaskError> {
        let index = self.sample.calls.len();
        let id = match id {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if id.is_empty() => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => return Err(err(at, "expected a string")),
        };
        if let Some(id) = id {
            let calls = self.ids.entry(id.clone()).or_default();
            calls.calls += 1;
            // The turn being read is pushed once its calls are.
            calls.waiting.push_back((index, self.sample.turns.len()));
        }
        self.waiting.insert(index, id.cloned());
        Ok(())
    }

    /// How results were matched, once every message is read: a result counts as
    /// reused when its id is carried by more than one call of the conversation.
    pub(super) fn id_matching(&self) -> IdMatching {
        let reused = (self.ids.values())
            .filter(|c| c.calls > 1)
            .map(|c| c.matched)
            .fold(0u32, u32::saturating_add);
        IdMatching {
            reused,
            positional: self.positional,
        }
    }

    /// `{"role":"assistant","tool_calls":[{"id":..,"type":"function","function":{"name":..,
    /// "arguments":"<JSON text>"}}]}`. The arguments text is the model's output: text that
    /// is not JSON spoils that call (`Arguments::Malformed`), not the task.
    fn openai_calls(
        &mut self,
        o: &Object,
        field: &str,
        notes: &mut Notes,
    ) -> Result<(), TaskError> {
        let list = match o.get("tool_calls") {
            Some(Value::Array(items)) => items,
            Some(Value::Null) => return Ok(()),
            _ => {
                return Err(err(
                    format!("{field}.tool_calls"),
                    "expected an array of tool calls",
                ));
            }
        };
        for (i, tc) in list.iter().enumerate() {
            let at = format!("{field}.tool_calls[{i}]");
            let tc = tc
                .as_object()
                .ok_or_else(|| err(&at, "expected a tool call object"))?;
            check_fields(tc, &at, Level::ToolCall, notes)?;
            if let Some(t) = tc.get("type")
                && t.as_str() != Some("function")
            {
                return Err(err(format!("{at}.type"), "expected \"function\""));
            }
            let f = match tc.get("function") {
                Some(Value::Object(f)) => f,
                _ => {
                    return Err(err(
                        format!("{at}.function"),
                        "expected {\"name\": ..., \"arguments\": \"...\"}",
                    ));
                }
            };
            let fat = format!("{at}.function");
            check_fields(f, &fat, Level::Function, notes)?;
            let tool = tool_name(f, "name", &fat)?;
            let arguments = match f.get("arguments") {
                None => Arguments::Json(Arc::new(Value::Object(Object::new()))),
                Some(Value::String(text)) => match parse_with(text.as_bytes(), Duplicates::Flag) {
                    Ok(v) => Arguments::Json(Arc::new(v)),
                    Err(e) => Arguments::Malformed(format!("{fat}.arguments: not JSON: {e}")),
                },
                // Some gateways pass the object through already parsed.
                Some(v @ Value::Object(_)) => Arguments::Json(Arc::new(v.clone())),
                Some(other) => Arguments::Malformed(format!(
                    "{fat}.arguments: expected a JSON string, found {}",
                    other.kind()
                )),
            };
            self.register(tc.get("id"), &format!("{at}.id"))?;
            self.sample.calls.push(foreign_call(tool, arguments, at));
        }
        Ok(())
    }

    /// `[{"type":"text",..},{"type":"tool_use","id":..,"name":..,"input":{..}}]`: the
    /// `tool_use` blocks in order.
    fn anthropic_calls(
        &mut self,
        blocks: &[Value],
        field: &str,
        notes: &mut Notes,
    ) -> Result<(), TaskError> {
        for (i, b) in blocks.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let b = b
                .as_object()
                .ok_or_else(|| err(&at, "expected a content block object"))?;
            if b.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            check_fields(b, &at, Level::ToolUse, notes)?;
            let tool = tool_name(b, "name", &at)?;
            let arguments = json_arguments(b, "input");
            self.register(b.get("id"), &format!("{at}.id"))?;
            self.sample.calls.push(foreign_call(tool, arguments, at));
        }
        Ok(())
    }

    /// Records what a result returned, on the call it answers: with an id, the first
    /// waiting call with that id in the latest turn that has one (the result right
    /// after a call answers it, even when an earlier call with its id never got a
    /// result; calls made together are answered in order); with none, the oldest call
    /// still waiting.
    fn result(
        &mut self,
        id: Option<&Value>,
        at: &str,
        observed: Observed,
    ) -> Result<(), TaskError> {
        let index = match id {
            None | Some(Value::Null) => self.by_position(at)?,
            Some(Value::String(id)) if id.is_empty() => self.by_position(at)?,
            Some(Value::String(id)) => self.by_id(id, at)?,
            Some(_) => return Err(err(at, "expected the id of the call this result answers")),
        };
        self.sample.calls[index].observed = observed;
        Ok(())
    }

    fn by_id(&mut self, id: &str, at: &str) -> Result<usize, TaskError> {
        let Some(calls) = self.ids.get_mut(id) else {
            return Err(err(at, format!("no earlier tool call has the id {id:?}")));
        };
        let Some(&(_, turn)) = calls.waiting.back() else {
            return Err(err(
                at,
                match calls.calls {
                    1 => format!("a second result for call {id:?}"),
                    n => format!(
                        "a result for {id:?}, but each of the {n} earlier calls with that id \
                         already has one"
                    ),
                },
            ));
        };
        let first = calls.waiting.partition_point(|&(_, t)| t < turn);
        let (index, _) = calls
            .waiting
            .remove(first)
            .expect("a waiting call of that turn");
        calls.matched += 1;
        self.waiting.remove(&index);
        Ok(index)
    }

    fn by_position(&mut self, at: &str) -> Result<usize, TaskError> {
        let Some((index, id)) = self.waiting.pop_first() else {
            return Err(err(
                at,
                "a result with no call id, but no earlier call is waiting for one",
            ));
        };
        if let Some(id) = id
            && let Some(calls) = self.ids.get_mut(&id)
        {
            // The oldest waiting call is the oldest waiting one of its id too.
            let front = calls.waiting.pop_front();
            debug_assert_eq!(front.map(|(i, _)| i), Some(index));
        }
        self.positional = self.positional.saturating_add(1);
        Ok(index)
    }
}

/// `{"messages": [...]}`: a logged conversation in OpenAI or Anthropic shape. System,
/// user and plain text messages are context; assistant messages give the turns; OpenAI
/// `tool` messages and Anthropic `tool_result` blocks give the results, by call id or,
/// without one, by position.
pub(super) fn parse_transcript(
    messages: &[Value],
    field: &str,
    notes: &mut Notes,
) -> Result<Sample, TaskError> {
    let mut t = Transcript::default();
    for (k, m) in messages.iter().enumerate() {
        let at = format!("{field}[{k}]");
        let o = m.as_object().ok_or_else(|| {
            err(
                &at,
                format!("expected a message object, found {}", m.kind()),
            )
        })?;
        check_fields(o, &at, Level::Message, notes)?;
        match o.get("role").and_then(Value::as_str) {
            Some("assistant") => t.assistant(o, &at, notes)?,
            Some("tool") => {
                let content = format!("{at}.content");
                let observed = observed_result(content_value(o.get("content")), &content, notes);
                t.result(
                    o.get("tool_call_id"),
                    &format!("{at}.tool_call_id"),
                    observed,
                )?;
            }
            Some("user") => {
                t.say(o.get("content"));
                let Some(Value::Array(blocks)) = o.get("content") else {
                    continue;
                };
                for (i, b) in blocks.iter().enumerate() {
                    let bat = format!("{at}.content[{i}]");
                    let Some(b) = b.as_object() else { continue };
                    if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    check_fields(b, &bat, Level::ToolResult, notes)?;
                    let value = content_value(b.get("content"));
                    let observed = match b.get("is_error") {
                        Some(Value::Bool(true)) => Observed::Error {
                            kind: "tool_error".into(),
                            message: text_of(&value),
                        },
                        None | Some(Value::Bool(false)) => {
                            observed_result(value, &format!("{bat}.content"), notes)
                        }
                        Some(_) => {
                            return Err(err(format!("{bat}.is_error"), "expected true or false"));
                        }
                    };
                    t.result(
                        b.get("tool_use_id"),
                        &format!("{bat}.tool_use_id"),
                        observed,
                    )?;
                }
            }
            Some("system" | "developer") => t.say(o.get("content")),
            _ => {
                return Err(err(
                    format!("{at}.role"),
                    "expected \"system\", \"user\", \"assistant\" or \"tool\"",
                ));
            }
        }
    }
    notes.run.id_matching += t.id_matching();
    Ok(t.sample)
}

/// A message from another role than the assistant is not a plan.
pub(super) fn check_role(o: &Object, field: &str) -> Result<(), TaskError> {
    match o.get("role") {
        None => Ok(()),
        Some(Value::String(r)) if r == "assistant" => Ok(()),
        Some(_) => Err(err(
            format!("{field}.role"),
            "expected \"assistant\": only the model's own message is a plan",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::parse_task_line;
    use crate::task::tests::result;

    fn calls(line: &str) -> Vec<(String, Result<String, String>)> {
        let t = parse_task_line(line.as_bytes()).unwrap();
        t.samples
            .iter()
            .flat_map(|s| &s.calls)
            .map(|c| {
                assert_eq!(c.observed, Observed::Missing);
                let a = match &c.arguments {
                    Arguments::Json(v) => Ok(crate::jcs::to_string(v)),
                    Arguments::Malformed(why) => Err(why.clone()),
                };
                (c.tool.clone(), a)
            })
            .collect()
    }

    #[test]
    fn foreign_shapes_read_as_the_same_calls() {
        let want = vec![
            (
                "get_user".to_string(),
                Ok(r#"{"user_id":"u_1"}"#.to_string()),
            ),
            (
                "get_order".to_string(),
                Ok(r#"{"order_id":"o_1"}"#.to_string()),
            ),
        ];
        let native = r#"{"task_id":"t","samples":[{"calls":[{"tool":"get_user","arguments":{"user_id":"u_1"}},{"tool":"get_order","arguments":{"order_id":"o_1"}}]}]}"#;
        let openai = r#"{"task_id":"t","samples":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_user","arguments":"{\"user_id\": \"u_1\"}"}},{"id":"c2","type":"function","function":{"name":"get_order","arguments":"{\"order_id\":\"o_1\"}"}}]}]}"#;
        let anthropic = r#"{"task_id":"t","samples":[{"role":"assistant","content":[{"type":"text","text":"Looking up."},{"type":"tool_use","id":"x","name":"get_user","input":{"user_id":"u_1"}},{"type":"tool_use","id":"y","name":"get_order","input":{"order_id":"o_1"}}]}]}"#;
        let mcp = r#"{"task_id":"t","samples":[[{"name":"get_user","arguments":{"user_id":"u_1"}},{"name":"get_order","arguments":{"order_id":"o_1"}}]]}"#;
        for line in [native, openai, anthropic, mcp] {
            assert_eq!(calls(line), want, "{line}");
        }
    }

    #[test]
    fn openai_arguments_that_are_not_json_spoil_only_that_call() {
        let line = r#"{"task_id":"t","samples":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"get_user","arguments":"{\"user_id\": u_1"}}]},{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"get_user","arguments":"{\"a\":1,\"a\":2}"}}]}]}"#;
        let c = calls(line);
        assert!(c[0].1.as_ref().unwrap_err().contains("not JSON"), "{c:?}");
        let t = parse_task_line(line.as_bytes()).unwrap();
        let Arguments::Json(v) = &t.samples[1].calls[0].arguments else {
            panic!("duplicate keys are flagged, not refused")
        };
        let Value::Object(o) = &**v else {
            panic!("object expected")
        };
        assert_eq!(o.duplicate_key(), Some("a"));
    }

    #[test]
    fn foreign_shape_errors_name_the_field() {
        let e = parse_task_line(
            br#"{"task_id":"t","samples":[{"role":"user","content":[{"type":"tool_use","name":"x","input":{}}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.field, "samples[0].role");
        let e = parse_task_line(br#"{"task_id":"t","samples":[[{"nme":"x"}]]}"#).unwrap_err();
        assert_eq!(e.field, "samples[0][0].nme");
        let e = parse_task_line(br#"{"task_id":"t","samples":[{"tool_calls":[{"type":"function","function":{"arguments":"{}"}}]}]}"#).unwrap_err();
        assert_eq!(e.field, "samples[0].tool_calls[0].function.name");
        let e = parse_task_line(br#"{"task_id":"t","samples":[7]}"#).unwrap_err();
        assert!(e.message.contains("OpenAI"), "{e}");
        // A message with no tool call is a plan of no calls.
        let t = parse_task_line(
            br#"{"task_id":"t","samples":[{"role":"assistant","content":"no tools needed"}]}"#,
        )
        .unwrap();
        assert!(t.samples[0].calls.is_empty());
    }

    fn observed(line: &str) -> Vec<Vec<(String, String, Observed)>> {
        let t = parse_task_line(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
        t.samples
            .iter()
            .map(|s| {
                s.calls
                    .iter()
                    .map(|c| {
                        let a = match &c.arguments {
                            Arguments::Json(v) => crate::jcs::to_string(v),
                            Arguments::Malformed(why) => why.clone(),
                        };
                        (c.tool.clone(), a, c.observed.clone())
                    })
                    .collect()
            })
            .collect()
    }

    /// A logged conversation gives the same calls, turns and results as the native
    /// shape, in either provider's form; results find their calls by id, in any order.
    #[test]
    fn transcripts_read_as_turns_with_results() {
        let native = r#"{"task_id":"t","samples":[{"turns":[[{"tool":"w","arguments":{"city":"Oslo"},"result":{"t":3}},{"tool":"w","arguments":{"city":"Rome"},"result":"sunny"}],[{"tool":"s","arguments":{},"error":{"kind":"tool_error","message":"down"}}]]}]}"#;
        let openai = r#"{"task_id":"t","samples":[{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Oslo\"}"}},{"id":"c2","type":"function","function":{"name":"w","arguments":"{\"city\":\"Rome\"}"}}]},{"role":"tool","tool_call_id":"c2","content":"sunny"},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"{\"t\": 3}"}]},{"role":"assistant","tool_calls":[{"id":"c3","type":"function","function":{"name":"s","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c3","content":"{\"content\":[{\"type\":\"text\",\"text\":\"down\"}],\"isError\":true}"},{"role":"assistant","content":"Done."}]}]}"#;
        let anthropic = r#"{"task_id":"t","samples":[{"messages":[{"role":"user","content":"weather?"},{"role":"assistant","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"a","name":"w","input":{"city":"Oslo"}},{"type":"tool_use","id":"b","name":"w","input":{"city":"Rome"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"sunny"},{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"{\"t\":3}"}]}]},{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"s","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","is_error":true,"content":"down"}]}]}]}"#;
        let want = observed(native);
        assert_eq!(
            want[0][2].2,
            Observed::Error {
                kind: "tool_error".into(),
                message: "down".into()
            }
        );
        assert_eq!(want[0][0].2, result(r#"{"t":3}"#));
        for line in [openai, anthropic] {
            assert_eq!(observed(line), want, "{line}");
            let t = parse_task_line(line.as_bytes()).unwrap();
            assert_eq!(t.samples[0].turns, [2, 1]);
        }
        let t = parse_task_line(native.as_bytes()).unwrap();
        assert_eq!(t.samples[0].turns, [2, 1]);
        assert_eq!(t.samples[0].turn_ranges().collect::<Vec<_>>(), [0..2, 2..3]);
        assert_eq!(t.samples[0].calls[1].place(0, 1), "samples[0].turns[0][1]");
        let t = parse_task_line(openai.as_bytes()).unwrap();
        assert_eq!(
            t.samples[0].calls[1].place(0, 1),
            "samples[0].messages[2].tool_calls[1]"
        );
    }

    #[test]
    fn transcript_errors_name_the_users_field() {
        let bad = [
            (
                r#"{"task_id":"t","samples":[{"messages":[{"role":"tool","tool_call_id":"x","content":"1"}]}]}"#,
                "samples[0].messages[0].tool_call_id",
            ),
            (
                r#"{"task_id":"t","samples":[{"messages":[{"role":"robot","content":"1"}]}]}"#,
                "samples[0].messages[0].role",
            ),
            (
                r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","tool_calls":[{"id":7,"function":{"name":"w","arguments":"{}"}}]}]}]}"#,
                "samples[0].messages[0].tool_calls[0].id",
            ),
            (
                r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"1"},{"type":"tool_result","tool_use_id":"a","content":"2"}]}]}]}"#,
                "samples[0].messages[1].content[1].tool_use_id",
            ),
            (
                r#"{"task_id":"t","samples":[{"turns":[{"tool":"w"}]}]}"#,
                "samples[0].turns[0]",
            ),
            (
                r#"{"task_id":"t","samples":[{"turns":[[{"tool":"w","argumnts":{}}]]}]}"#,
                "samples[0].turns[0][0].argumnts",
            ),
            (
                r#"{"task_id":"t","samples":[{"turns":[],"calls":[]}]}"#,
                "samples[0]",
            ),
        ];
        for (line, field) in bad {
            let e = parse_task_line(line.as_bytes()).unwrap_err();
            assert_eq!(e.field, field, "{line}: {e}");
        }
        // Arguments the model wrote as broken JSON spoil the call, named in the user's shape.
        let c = observed(
            r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"w","arguments":"{oops"}}]}]}]}"#,
        );
        assert!(
            c[0][0]
                .1
                .starts_with("samples[0].messages[0].tool_calls[0].function.arguments: not JSON"),
            "{c:?}"
        );
    }
}
