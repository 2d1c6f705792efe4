//! Fields plangate does not know, at every level of every sample shape, are passed over
//! and noted once per line with where they sat: the line reads, and decides, as it does
//! without them, through either reader. A misspelling of a field plangate reads is
//! refused, naming the field as written and the name it misses (docs/inputs.md,
//! "Unknown fields").

use std::collections::BTreeMap;

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, tool_states};
use plangate_gate::json;
use plangate_gate::task::{
    Level, Observed, RunNotes, Task, parse_task_line, parse_task_line_general,
};

/// Each placeholder, where it sits, and the foreign fields put there. `%name%` opens an
/// object (the fields and a comma), `%,name%` closes one (a comma and the fields).
const EXTRAS: [(&str, Level, &str); 10] = [
    (
        "task",
        Level::Task,
        r#""trial":3,"reward":0.5,"info":{"steps":[1,{"a":null}]},"metadata":{"run":"r1"}"#,
    ),
    ("sample", Level::Sample, r#""id":"s-1","model":"m-1""#),
    (
        "call",
        Level::Call,
        r#""id":"c-1","timestamp":"2025-01-01T00:00:00Z""#,
    ),
    ("error", Level::CallError, r#""code":404"#),
    (
        "message",
        Level::Message,
        r#""timestamp":"t","reasoning_content":"hm""#,
    ),
    ("toolcall", Level::ToolCall, r#""status":"done""#),
    ("function", Level::Function, r#""strict":true"#),
    ("tooluse", Level::ToolUse, r#""caller":{"type":"direct"}"#),
    ("toolresult", Level::ToolResult, r#""duration_ms":12"#),
    ("mcp", Level::McpCall, r#""server":"files""#),
];

/// One line in every shape a sample comes in, with placeholders at every level.
const SHAPES: [&str; 7] = [
    // Native calls: a result, an error, a sample written twice (read once).
    r#"{%task%"task_id":"native","samples":[{%sample%"calls":[{%call%"tool":"w","arguments":{"city":"Oslo"},"result":{"t":3}},{"tool":"s","arguments":{"to":"me"},"error":{"kind":"tool_error","message":"down"%,error%}%,call%}]},{"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":{"t":3}},{"tool":"s","arguments":{"to":"me"},"error":{"kind":"tool_error","message":"down"}}]%,sample%},{"calls":[{"tool":"w","arguments":{"city":"Oslo"},"result":{"t":3}},{"tool":"s","arguments":{"to":"me"},"error":{"kind":"tool_error","message":"down"}}]%,sample%}]}"#,
    // Native turns.
    r#"{"task_id":"turns",%task%"samples":[{%sample%"turns":[[{%call%"tool":"w","arguments":{"city":"Oslo"},"result":{"t":3}},{"tool":"w","arguments":{"city":"Rome"},"result":{"t":19}%,call%}]]}]}"#,
    // An OpenAI conversation.
    r#"{%task%"task_id":"openai","samples":[{%sample%"messages":[{%message%"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{%toolcall%"id":"c1","type":"function","function":{%function%"name":"w","arguments":"{\"city\":\"Oslo\"}"}}]%,message%},{"role":"tool","tool_call_id":"c1","content":"{\"t\":3}"%,message%}]}]}"#,
    // An Anthropic conversation.
    r#"{%task%"task_id":"anthropic","samples":[{"messages":[{"role":"user","content":"weather?"},{%message%"role":"assistant","content":[{"type":"text","text":"Checking."},{%tooluse%"type":"tool_use","id":"a","name":"w","input":{"city":"Oslo"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"{\"t\":3}"%,toolresult%}]}]%,sample%}]}"#,
    // A bare OpenAI assistant message.
    r#"{%task%"task_id":"bare-openai","samples":[{%message%"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Oslo\"}"%,function%}%,toolcall%}]}]}"#,
    // A bare Anthropic assistant message.
    r#"{"task_id":"bare-anthropic","samples":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{"city":"Oslo"}%,tooluse%}]%,message%}]%,task%}"#,
    // A list of MCP tools/call params.
    r#"{%task%"task_id":"mcp","samples":[[{%mcp%"name":"w","arguments":{"city":"Oslo"}},{"name":"w","arguments":{"city":"Rome"}%,mcp%}]]}"#,
];

/// `shape` without its placeholders, and with the foreign fields in their place, with
/// the names the second should note and where.
fn spelled(shape: &str) -> (String, String, BTreeMap<String, Vec<Level>>) {
    let (mut plain, mut extra) = (shape.to_string(), shape.to_string());
    let mut want: BTreeMap<String, Vec<Level>> = BTreeMap::new();
    for (name, level, fields) in EXTRAS {
        let (open, close) = (format!("%{name}%"), format!("%,{name}%"));
        if !shape.contains(&open) && !shape.contains(&close) {
            continue;
        }
        plain = plain.replace(&open, "").replace(&close, "");
        extra = extra
            .replace(&open, &format!("{fields},"))
            .replace(&close, &format!(",{fields}"));
        let doc = json::parse(&format!("{{{fields}}}")).unwrap();
        for key in doc.as_object().unwrap().keys() {
            let levels = want.entry(key.clone()).or_default();
            levels.push(level);
            levels.sort();
        }
    }
    assert!(!plain.contains('%') && !extra.contains('%'), "{shape}");
    (plain, extra, want)
}

fn catalog() -> Catalog {
    Catalog::from_value(
        &json::parse(
            r#"[{"name":"w","input_schema":{"type":"object","properties":{
                  "city":{"type":"string"}},"required":["city"]},
                  "x-plangate":{"deterministic":true,"verified":true}},
                {"name":"s","input_schema":{"type":"object"},
                  "x-plangate":{"deterministic":true,"verified":true}}]"#,
        )
        .unwrap(),
    )
    .unwrap()
}

/// The decision record and the prepared line, as a run writes them.
fn outputs(task: &Task, c: &Catalog) -> (serde_json::Value, String) {
    let prepared = decide::prepare(task, c, None);
    let decision = decide::classify(&prepared, &tool_states(c), &Options::default());
    (
        serde_json::from_str::<serde_json::Value>(&plangate_gate::record::json(&decision)).unwrap(),
        prepared.to_line(),
    )
}

/// Whether the one-pass reader read the line (it keeps native results as text).
fn read_in_one_pass(task: &Task) -> bool {
    (task.samples.iter())
        .flat_map(|s| &s.calls)
        .any(|c| matches!(&c.observed, Observed::Result(p) if p.text().is_some()))
}

#[test]
fn foreign_fields_at_every_level_decide_as_without_them() {
    let c = catalog();
    let mut seen = Vec::new();
    for shape in SHAPES {
        let (plain, extra, want) = spelled(shape);
        let without = parse_task_line(plain.as_bytes()).unwrap_or_else(|e| panic!("{plain}: {e}"));
        assert!(without.notes.unknown_fields.is_empty(), "{plain}");
        let mut with = parse_task_line(extra.as_bytes()).unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert_eq!(
            Ok(&with),
            parse_task_line_general(extra.as_bytes()).as_ref(),
            "{extra}"
        );
        // Native lines stay on the one-pass reader, foreign fields and all.
        assert_eq!(
            read_in_one_pass(&with),
            read_in_one_pass(&without),
            "{extra}"
        );
        let noted: BTreeMap<String, Vec<Level>> = (with.notes.unknown_fields.iter())
            .map(|(name, levels)| (name.to_string(), levels.iter().collect()))
            .collect();
        assert_eq!(noted, want, "{extra}");
        assert_eq!(outputs(&with, &c), outputs(&without, &c), "{extra}");
        with.notes.unknown_fields.clear();
        assert_eq!(with, without, "{extra}");
        seen.extend(want.into_values().flatten());
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        Level::ALL,
        "every level has a foreign field in some shape"
    );
    assert!(read_in_one_pass(
        &parse_task_line(spelled(SHAPES[0]).1.as_bytes()).unwrap()
    ));
}

#[test]
fn a_run_names_each_foreign_field_once() {
    let mut run = RunNotes::default();
    for _ in 0..3 {
        for shape in SHAPES {
            run.add(&parse_task_line(spelled(shape).1.as_bytes()).unwrap().notes);
        }
    }
    let warnings = run.warnings();
    let timestamp: Vec<&String> = (warnings.iter())
        .filter(|w| w.contains("\"timestamp\""))
        .collect();
    assert_eq!(timestamp.len(), 1, "{warnings:#?}");
    // In calls of the native lines, in messages of the transcripts and bare messages.
    assert!(
        timestamp[0].contains("in calls and messages passed over on 18 lines"),
        "{timestamp:?}"
    );
    let trial = warnings.iter().find(|w| w.contains("\"trial\"")).unwrap();
    assert!(
        trial.contains("in tasks passed over on 21 lines"),
        "{trial}"
    );
}

/// A misspelling of a field plangate reads, at each level: refused by both readers,
/// naming the field as written and the name it misses.
#[test]
fn misspellings_are_refused_naming_field_and_name() {
    let cases = [
        (r#"{"task_id":"t","sampels":[]}"#, "sampels", "samples"),
        (r#"{"task_ld":"t","samples":[]}"#, "task_ld", "task_id"),
        (
            r#"{"task_id":"t","samples":[],"labell":"correct"}"#,
            "labell",
            "label",
        ),
        (
            r#"{"task_id":"t","samples":[{"cals":[]}]}"#,
            "samples[0].cals",
            "calls",
        ),
        (
            r#"{"task_id":"t","samples":[{"calls":[{"tool":"w","argumnets":{"city":"Oslo"},"result":1}]}]}"#,
            "samples[0].calls[0].argumnets",
            "arguments",
        ),
        (
            r#"{"task_id":"t","samples":[{"calls":[{"tool":"w","arguments":{},"reslt":1}]}]}"#,
            "samples[0].calls[0].reslt",
            "result",
        ),
        (
            r#"{"task_id":"t","samples":[{"calls":[{"tool":"w","error":{"kind":"x","mesage":"m"}}]}]}"#,
            "samples[0].calls[0].error.mesage",
            "message",
        ),
        (
            r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"w","arguments":"{}"}}]},{"role":"tool","tool_cal_id":"c","content":"1"}]}]}"#,
            "samples[0].messages[1].tool_cal_id",
            "tool_call_id",
        ),
        (
            r#"{"task_id":"t","samples":[{"role":"assistant","tool_calls":[{"id":"c","fucntion":{"name":"w","arguments":"{}"}}]}]}"#,
            "samples[0].tool_calls[0].fucntion",
            "function",
        ),
        (
            r#"{"task_id":"t","samples":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"w","argumnets":"{}"}}]}]}"#,
            "samples[0].tool_calls[0].function.argumnets",
            "arguments",
        ),
        (
            r#"{"task_id":"t","samples":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","inptu":{}}]}]}"#,
            "samples[0].content[0].inptu",
            "input",
        ),
        (
            r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_di":"a","content":"1"}]}]}]}"#,
            "samples[0].messages[1].content[0].tool_use_di",
            "tool_use_id",
        ),
        (
            r#"{"task_id":"t","samples":[[{"name":"w","argumnets":{}}]]}"#,
            "samples[0][0].argumnets",
            "arguments",
        ),
    ];
    for (line, field, name) in cases {
        let e = parse_task_line(line.as_bytes()).unwrap_err();
        assert_eq!(Err(&e), parse_task_line_general(line.as_bytes()).as_ref());
        assert_eq!(e.field, field, "{line}");
        assert!(
            e.message.contains(&format!("did you mean \"{name}\"?")),
            "{line}: {e}"
        );
    }
}

/// The one-pass reader hands a line it cannot settle alone to the general reader:
/// many foreign fields in one object, one repeated, one after a known field's repeat.
#[test]
fn lines_the_one_pass_reader_hands_over_read_alike() {
    let many: String = (0..12).map(|i| format!(r#""x{i}":{i},"#)).collect();
    for line in [
        format!(r#"{{"task_id":"t","samples":[{{"calls":[{{{many}"tool":"w","result":1}}]}}]}}"#),
        format!(r#"{{{many}"task_id":"t","samples":[]}}"#),
        r#"{"task_id":"t","x":1,"samples":[],"x":2}"#.to_string(),
        r#"{"task_id":"t","samples":[{"calls":[],"x":1,"x":[2]}]}"#.to_string(),
        r#"{"task_id":"t","samples":[{"calls":[{"tool":"w","result":1,"x":1,"x":2}]}]}"#
            .to_string(),
        r#"{"task_id":"t","samples":[{"calls":[{"tool":"w","error":{"kind":"k","x":1,"x":2}}]}]}"#
            .to_string(),
        r#"{"task_id":"t","samples":[{"calls":[],"tool_calls":[]}]}"#.to_string(),
        r#"{"task_id":"t","samples":[{"calls":[],"messages":[]}]}"#.to_string(),
        r#"{"task_id":"t","samples":[],"meta":1,"meta":2}"#.to_string(),
        r#"{"task_id":"t","samples":[],"x":[1,}"#.to_string(),
    ] {
        let fast = parse_task_line(line.as_bytes());
        assert_eq!(fast, parse_task_line_general(line.as_bytes()), "{line}");
        if let Ok(t) = fast {
            assert!(!t.notes.unknown_fields.is_empty(), "{line}");
        }
    }
}
