//! Provider transcripts decide the same whether their call ids are unique, all alike or
//! absent: logs written each of these ways must not change a decision, and results that
//! cannot be placed must refuse the line with the reason.

use plangate_gate::catalog::Catalog;
use plangate_gate::decide::{self, Options, tool_states};
use plangate_gate::json;
use plangate_gate::task::{IdMatching, Level, Observed, Task, TaskError, parse_task_line};

/// How a transcript spells its call ids.
#[derive(Debug, Clone, Copy)]
enum Ids {
    /// Each call its own id, as the providers do.
    Unique,
    /// Every call `call_0`, as some servers do.
    Same,
    /// No id on calls or results.
    Absent,
    /// Null ids on calls, empty ones on results.
    Blank,
}

const SPELLINGS: [Ids; 4] = [Ids::Unique, Ids::Same, Ids::Absent, Ids::Blank];

/// One call: tool, arguments, the result's text (None: no result was logged).
type Call = (&'static str, &'static str, Option<&'static str>);

/// The id member of the `n`th call of a conversation, or of its result, with the comma
/// that follows it.
fn id(ids: Ids, key: &str, n: usize, result: bool) -> String {
    match ids {
        Ids::Unique => format!(r#""{key}":"c{n}","#),
        Ids::Same => format!(r#""{key}":"call_0","#),
        Ids::Absent => String::new(),
        Ids::Blank if result => format!(r#""{key}":"","#),
        Ids::Blank => format!(r#""{key}":null,"#),
    }
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// An OpenAI conversation: each turn an assistant message, its results tool messages in
/// order.
fn openai(turns: &[&[Call]], ids: Ids) -> String {
    let mut messages = vec![r#"{"role":"user","content":"weather?"}"#.to_string()];
    let mut n = 0;
    for turn in turns {
        let first = n;
        let calls: Vec<String> = (turn.iter())
            .map(|(tool, args, _)| {
                n += 1;
                format!(
                    r#"{{{}"type":"function","function":{{"name":"{tool}","arguments":{}}}}}"#,
                    id(ids, "id", n, false),
                    quoted(args)
                )
            })
            .collect();
        messages.push(format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{}]}}"#,
            calls.join(",")
        ));
        for (k, (_, _, result)) in turn.iter().enumerate() {
            if let Some(r) = result {
                messages.push(format!(
                    r#"{{"role":"tool",{}"content":{}}}"#,
                    id(ids, "tool_call_id", first + k + 1, true),
                    quoted(r)
                ));
            }
        }
    }
    messages.push(r#"{"role":"assistant","content":"Done."}"#.to_string());
    format!(r#"{{"messages":[{}]}}"#, messages.join(","))
}

/// The same conversation in Anthropic's shape: results as `tool_result` blocks of one
/// user message per turn.
fn anthropic(turns: &[&[Call]], ids: Ids) -> String {
    let mut messages = vec![r#"{"role":"user","content":"weather?"}"#.to_string()];
    let mut n = 0;
    for turn in turns {
        let first = n;
        let mut blocks = vec![r#"{"type":"text","text":"Checking."}"#.to_string()];
        for (tool, args, _) in turn.iter() {
            n += 1;
            blocks.push(format!(
                r#"{{"type":"tool_use",{}"name":"{tool}","input":{args}}}"#,
                id(ids, "id", n, false)
            ));
        }
        messages.push(format!(
            r#"{{"role":"assistant","content":[{}]}}"#,
            blocks.join(",")
        ));
        let results: Vec<String> = (turn.iter().enumerate())
            .filter_map(|(k, (_, _, r))| {
                r.map(|r| {
                    format!(
                        r#"{{"type":"tool_result",{}"content":{}}}"#,
                        id(ids, "tool_use_id", first + k + 1, true),
                        quoted(r)
                    )
                })
            })
            .collect();
        if !results.is_empty() {
            messages.push(format!(
                r#"{{"role":"user","content":[{}]}}"#,
                results.join(",")
            ));
        }
    }
    format!(r#"{{"messages":[{}]}}"#, messages.join(","))
}

const OSLO: Call = ("w", r#"{"city":"Oslo"}"#, Some(r#"{"t":3}"#));
const ROME: Call = ("w", r#"{"city":"Rome"}"#, Some(r#"{"t":19}"#));
const ROME_WARM: Call = ("w", r#"{"city":"Rome"}"#, Some(r#"{"t":20}"#));
const SEND: Call = ("s", r#"{"to":"me"}"#, Some("sent"));

/// Samples of one task: two calls made together then one, three times (once with
/// another result), and the calls one at a time as a tau-bench agent makes them.
fn conversations() -> Vec<Vec<&'static [Call]>> {
    vec![
        vec![&[OSLO, ROME], &[SEND]],
        vec![&[OSLO, ROME], &[SEND]],
        vec![&[OSLO, ROME_WARM], &[SEND]],
        vec![&[OSLO], &[ROME], &[SEND]],
    ]
}

fn line(shape: fn(&[&[Call]], Ids) -> String, ids: Ids) -> String {
    let samples: Vec<String> = (conversations().iter())
        .map(|turns| shape(turns, ids))
        .collect();
    format!(r#"{{"task_id":"t","samples":[{}]}}"#, samples.join(","))
}

fn read(line: &str) -> Result<Task, TaskError> {
    parse_task_line(line.as_bytes())
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

#[test]
fn ids_unique_alike_or_absent_decide_the_same() {
    let c = catalog();
    for shape in [openai as fn(&[&[Call]], Ids) -> String, anthropic] {
        let unique = read(&line(shape, Ids::Unique)).unwrap();
        assert_eq!(unique.notes.id_matching, IdMatching::default());
        assert!(
            (unique.samples.iter())
                .flat_map(|s| &s.calls)
                .all(|call| !matches!(call.observed, Observed::Missing)),
            "every call has its result"
        );
        let want = outputs(&unique, &c);
        for ids in SPELLINGS {
            let spelled = line(shape, ids);
            let mut task = read(&spelled).unwrap_or_else(|e| panic!("{ids:?}: {e}"));
            assert_eq!(outputs(&task, &c), want, "{ids:?}: {spelled}");
            let counts = task.notes.id_matching;
            let (reused, positional) = match ids {
                Ids::Unique => (0, 0),
                Ids::Same => (12, 0),
                Ids::Absent | Ids::Blank => (0, 12),
            };
            assert_eq!(counts, IdMatching { reused, positional }, "{ids:?}");
            task.notes.id_matching = IdMatching::default();
            assert_eq!(task, unique, "{ids:?}: {spelled}");
        }
    }
}

/// Ids only from the calls: a result with no id still finds its call in order.
#[test]
fn results_without_ids_answer_calls_with_ids_in_order() {
    let unique = read(&line(openai, Ids::Unique)).unwrap();
    let calls_only = line(openai, Ids::Unique).replace(r#""tool_call_id":"c"#, r#""x":"c"#);
    // The tool messages' ids are gone; `x` is a field the reader passes over, noted.
    let mut task = read(&calls_only).unwrap();
    assert_eq!(task.notes.id_matching.positional, 12);
    let noted: Vec<_> = task.notes.unknown_fields["x"].iter().collect();
    assert_eq!(noted, [Level::Message]);
    task.notes = Default::default();
    assert_eq!(task, unique);
}

/// A call whose result was never logged keeps waiting; a later call with its id takes
/// the next result with that id, while a result with no id takes the oldest waiting call.
#[test]
fn a_result_answers_the_latest_turn_with_its_id() {
    const LOST: Call = ("w", r#"{"city":"Oslo"}"#, None);
    let turns: &[&[Call]] = &[&[LOST], &[ROME]];
    let observed = |ids| {
        let t = read(&format!(
            r#"{{"task_id":"t","samples":[{}]}}"#,
            openai(turns, ids)
        ))
        .unwrap();
        let calls = &t.samples[0].calls;
        let got: Vec<bool> = (calls.iter())
            .map(|c| !matches!(c.observed, Observed::Missing))
            .collect();
        (got, t.notes.id_matching)
    };
    let (unique, _) = observed(Ids::Unique);
    assert_eq!(unique, [false, true]);
    let (same, counts) = observed(Ids::Same);
    assert_eq!(same, unique);
    assert_eq!(counts.reused, 1);
    let (absent, counts) = observed(Ids::Absent);
    assert_eq!(absent, [true, false]);
    assert_eq!(counts.positional, 1);
}

fn refused(line: &str) -> TaskError {
    read(line).expect_err(line)
}

#[test]
fn results_that_cannot_be_placed_refuse_the_line_with_why() {
    let call = |id: &str| {
        format!(
            r#"{{"role":"assistant","tool_calls":[{{{id}"function":{{"name":"w","arguments":"{{}}"}}}}]}}"#
        )
    };
    let result = |id: &str| format!(r#"{{"role":"tool",{id}"content":"1"}}"#);
    let task = |messages: &[String]| {
        format!(
            r#"{{"task_id":"t","samples":[{{"messages":[{}]}}]}}"#,
            messages.join(",")
        )
    };
    let (c0, none) = (r#""id":"call_0","#, "");
    let (r0, r_none) = (r#""tool_call_id":"call_0","#, "");
    // An id no call has, even with a call waiting.
    let e = refused(&task(&[call(none), result(r#""tool_call_id":"zz","#)]));
    assert_eq!(e.field, "samples[0].messages[1].tool_call_id");
    assert!(e.message.contains(r#""zz""#), "{e}");
    // A second result for the one call with an id, and a third for the two.
    let e = refused(&task(&[call(c0), result(r0), result(r0)]));
    assert_eq!(e.field, "samples[0].messages[2].tool_call_id");
    assert_eq!(e.message, r#"a second result for call "call_0""#);
    let e = refused(&task(&[
        call(c0),
        result(r0),
        call(c0),
        result(r0),
        result(r0),
    ]));
    assert_eq!(e.field, "samples[0].messages[4].tool_call_id");
    assert!(e.message.contains("each of the 2 earlier calls"), "{e}");
    // A result with no id, and no call waiting: none made, or all answered.
    for messages in [
        vec![result(r_none)],
        vec![call(c0), result(r0), result(r_none)],
    ] {
        let e = refused(&task(&messages));
        let at = messages.len() - 1;
        assert_eq!(e.field, format!("samples[0].messages[{at}].tool_call_id"));
        assert!(e.message.contains("no earlier call is waiting"), "{e}");
    }
    // Anthropic's blocks are refused alike, at the block.
    let e = refused(
        r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"w","input":{}}]},{"role":"user","content":[{"type":"tool_result","content":"1"},{"type":"tool_result","content":"2"}]}]}]}"#,
    );
    assert_eq!(e.field, "samples[0].messages[1].content[1].tool_use_id");
}

#[test]
fn reused_ids_in_one_message_read() {
    let two = r#"[{"id":"a","function":{"name":"w","arguments":"{}"}},{"id":"a","function":{"name":"w","arguments":"{}"}}]"#;
    for line in [
        format!(r#"{{"task_id":"t","samples":[{{"role":"assistant","tool_calls":{two}}}]}}"#),
        format!(
            r#"{{"task_id":"t","samples":[{{"messages":[{{"role":"assistant","tool_calls":{two}}}]}}]}}"#
        ),
    ] {
        let t = read(&line).unwrap();
        assert_eq!(t.samples[0].calls.len(), 2);
        assert_eq!(t.samples[0].turns, [2]);
        // Calls with no result placed nothing.
        assert!(t.notes.id_matching.is_exact());
    }
}

/// The counts add over a task's samples: exact matches count nothing, a result by an
/// id that several calls carry counts as reused, one without an id as positional.
#[test]
fn the_counts_add_over_samples() {
    let sample = r#"{"messages":[
        {"role":"assistant","tool_calls":[{"id":"u","function":{"name":"w","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"u","content":"1"},
        {"role":"assistant","tool_calls":[{"id":"r","function":{"name":"w","arguments":"{}"}},
            {"id":"r","function":{"name":"w","arguments":"{}"}},{"function":{"name":"w","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"r","content":"2"},
        {"role":"tool","content":"3"},
        {"role":"tool","tool_call_id":null,"content":"4"}]}"#
        .replace(['\n', ' '], "");
    let one = read(&format!(r#"{{"task_id":"t","samples":[{sample}]}}"#)).unwrap();
    assert_eq!(
        one.notes.id_matching,
        IdMatching {
            reused: 1,
            positional: 2
        }
    );
    // The results land in order: "2" on the first `r`, "3" on the second, "4" on the
    // call without an id.
    let results: Vec<String> = (one.samples[0].calls.iter())
        .map(|c| c.observed.key().unwrap())
        .collect();
    assert_eq!(results, ["1", "2", "3", "4"]);
    let three = read(&format!(
        r#"{{"task_id":"t","samples":[{sample},{sample},{sample}]}}"#
    ))
    .unwrap();
    assert_eq!(
        three.notes.id_matching,
        IdMatching {
            reused: 3,
            positional: 6
        }
    );
}
