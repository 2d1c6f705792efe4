//! The one-pass reader of the common line, native samples only: it keeps each result as
//! checked text and shares repeated samples, so a line of N agreeing samples costs about
//! one sample's reading. Anything it does not expect goes to the general reader.

use std::borrow::Cow;
use std::sync::Arc;

use smallvec::SmallVec;

use super::fields::{Level, near_miss};
use super::parts::{call_of, epoch_fixed_of, label_of, task_id_of};
use super::{Call, Observed, Payload, ReadingNotes, Sample, Task};
use crate::jcs::Fingerprint;
use crate::json::{Cursor, Duplicates};

/// The common line, read in one pass: native samples (`{"calls": [...]}` only), each
/// call's result kept as checked text, fields the line's parts do not know noted as the
/// general reader notes them. Anything else (another shape, a field out of place or
/// misspelt, any error) answers None and [`task_from_value`] reads the line instead,
/// which words the errors; for a line this reads, both give the same task
/// (`tests/readers.rs` and the `samples_line` fuzz target hold them to it).
pub(super) fn read_native(line: &[u8]) -> Option<Task> {
    let mut c = Cursor::new(line, Duplicates::Flag)?;
    let mut notes = ReadingNotes::default();
    let (mut task_id, mut samples, mut label, mut epoch, mut meta) =
        (None, None, None, None, false);
    let mut unknown = Unknown::new(Level::Task);
    members(&mut c, |c, key| {
        // Depths are the whole document's, so nesting limits match the general reader.
        match &*key {
            "task_id" if task_id.is_none() => task_id = Some(c.value(1)?),
            "samples" if samples.is_none() => samples = Some(native_samples(c, &mut notes)?),
            "label" if label.is_none() => label = Some(c.value(1)?),
            "epoch_fixed" if epoch.is_none() => epoch = Some(c.value(1)?),
            "meta" if !meta => {
                c.raw(1)?;
                meta = true;
            }
            _ => unknown.skip(c, key, 1)?,
        }
        Some(())
    })?;
    if !c.at_end() {
        return None;
    }
    let present = |name: &str| match name {
        "task_id" => task_id.is_some(),
        "samples" => samples.is_some(),
        "label" => label.is_some(),
        "epoch_fixed" => epoch.is_some(),
        _ => false,
    };
    unknown.settle(present, &mut notes)?;
    Some(Task {
        task_id: task_id_of(task_id.as_ref()).ok()?,
        samples: samples?,
        label: label_of(label.as_ref()).ok()?,
        epoch_fixed: epoch_fixed_of(epoch.as_ref()).ok()?,
        warnings: Vec::new(),
        notes,
    })
}

/// The fields of one object that its level does not know, skipped as they come and
/// settled once the object is read, when it is known which fields it has: a misspelling
/// of a field it lacks sends the line to the general reader, which refuses it; the
/// others are noted. A field the level knows that comes again (a duplicate), a field
/// repeated, or more unknown fields than a few send the line there too.
struct Unknown<'a> {
    level: Level,
    keys: SmallVec<[Cow<'a, str>; 2]>,
}

impl<'a> Unknown<'a> {
    /// Past this many in one object the general reader reads the line.
    const MAX: usize = 8;

    fn new(level: Level) -> Self {
        Unknown {
            level,
            keys: SmallVec::new(),
        }
    }

    /// Moves past the value of `key`, a field not read here, at nesting `depth`.
    fn skip(&mut self, c: &mut Cursor<'a>, key: Cow<'a, str>, depth: usize) -> Option<()> {
        if self.level.knows(&key) || self.keys.len() == Self::MAX || self.keys.contains(&key) {
            return None;
        }
        c.raw(depth)?;
        self.keys.push(key);
        Some(())
    }

    /// Notes the fields skipped, given which fields the object has; None when one of
    /// them misspells a field it lacks.
    fn settle(self, present: impl Fn(&str) -> bool, notes: &mut ReadingNotes) -> Option<()> {
        if (self.keys.iter()).any(|k| near_miss(self.level, k, &present).is_some()) {
            return None;
        }
        for k in &self.keys {
            notes.unknown(self.level, k);
        }
        Some(())
    }
}

/// Reads `{ "key": value, ... }`, handing each key to `member` to read its value.
fn members<'a>(
    c: &mut Cursor<'a>,
    mut member: impl FnMut(&mut Cursor<'a>, Cow<'a, str>) -> Option<()>,
) -> Option<()> {
    if !c.eat(b'{') {
        return None;
    }
    if c.eat(b'}') {
        return Some(());
    }
    loop {
        let key = c.key()?;
        member(c, key)?;
        if c.eat(b'}') {
            return Some(());
        }
        if !c.eat(b',') {
            return None;
        }
    }
}

/// Reads `[ item, ... ]`, each item by `item`.
fn elements<'a, T>(
    c: &mut Cursor<'a>,
    mut item: impl FnMut(&mut Cursor<'a>) -> Option<T>,
) -> Option<Vec<T>> {
    if !c.eat(b'[') {
        return None;
    }
    let mut out = Vec::new();
    if c.eat(b']') {
        return Some(out);
    }
    loop {
        out.push(item(c)?);
        if c.eat(b']') {
            return Some(out);
        }
        if !c.eat(b',') {
            return None;
        }
    }
}

/// A line's samples. One written byte for byte like one of the last few distinct ones
/// is that sample again and shares its reading ([`Seen`]): N samples that agree cost one
/// reading, not N.
fn native_samples<'a>(c: &mut Cursor<'a>, notes: &mut ReadingNotes) -> Option<Vec<Arc<Sample>>> {
    let mut results = Seen::new(4);
    let mut samples = Seen::new(8);
    elements(c, |c| {
        if let Some(sample) = samples.again(c) {
            return Some(sample);
        }
        let mut calls = None;
        let mut unknown = Unknown::new(Level::Sample);
        let text = c.spanned(|c| {
            members(c, |c, key| {
                match &*key {
                    "calls" if calls.is_none() => {
                        calls = Some(elements(c, |c| native_call(c, &mut results, notes))?);
                    }
                    // An OpenAI message, whatever else it has.
                    "tool_calls" => return None,
                    _ => unknown.skip(c, key, 3)?,
                }
                Some(())
            })
        })?;
        let calls = calls?;
        unknown.settle(|name| name == "calls", notes)?;
        let sample = Arc::new(Sample {
            calls,
            ..Sample::default()
        });
        samples.keep(text, Arc::clone(&sample));
        Some(sample)
    })
}

/// The last few distinct texts of a line and what each was read into (a result's
/// payload, a sample). The samples of a task mostly repeat each other and their results
/// byte for byte, and text equal to one already read is the same JSON value: an object,
/// array or string ends at its own closing byte, whatever follows it. So a repeat is
/// recognised by comparing bytes, and shares the first reading (and what was computed
/// from it) instead of being checked, built and printed again. Few enough (`cap`) that
/// a line of all-distinct texts costs a handful of failed comparisons per text, each
/// usually failing within a few bytes.
struct Seen<'a, T> {
    cap: usize,
    read: Vec<(&'a str, T)>,
}

impl<'a, T: Clone> Seen<'a, T> {
    fn new(cap: usize) -> Self {
        Seen {
            cap,
            read: Vec::with_capacity(cap),
        }
    }

    /// What the text that comes next was read into, when it is one of these; the cursor
    /// is then past it.
    fn again(&self, c: &mut Cursor<'a>) -> Option<T> {
        let (_, v) = self.read.iter().rev().find(|(text, _)| c.skip_text(text))?;
        Some(v.clone())
    }

    fn keep(&mut self, text: &'a str, v: T) {
        if self.read.len() == self.cap {
            self.read.remove(0);
        }
        self.read.push((text, v));
    }
}

/// A result's payload, shared with an earlier copy of its text in the line.
fn native_result<'a>(c: &mut Cursor<'a>, seen: &mut Seen<'a, Payload>) -> Option<Payload> {
    if let Some(p) = seen.again(c) {
        return Some(p);
    }
    let (text, fingerprint) = plain_result(c)?;
    let p = Payload::checked_text(text, fingerprint);
    // A number or literal may continue past what an earlier copy matched (`1` in `12`).
    if text.starts_with(['{', '[', '"']) {
        seen.keep(text, p.clone());
    }
    Some(p)
}

fn native_call<'a>(
    c: &mut Cursor<'a>,
    seen: &mut Seen<'a, Payload>,
    notes: &mut ReadingNotes,
) -> Option<Call> {
    let (mut tool, mut arguments, mut result, mut error) = (None, None, None, None);
    let mut unknown = Unknown::new(Level::Call);
    members(c, |c, key| {
        match &*key {
            "tool" if tool.is_none() => tool = Some(c.value(5)?),
            "arguments" if arguments.is_none() => arguments = Some(c.value(5)?),
            "result" if result.is_none() => {
                result = Some(Observed::Result(native_result(c, seen)?))
            }
            "error" if error.is_none() => error = Some(native_error(c, notes)?),
            _ => unknown.skip(c, key, 5)?,
        }
        Some(())
    })?;
    let present = |name: &str| match name {
        "tool" => tool.is_some(),
        "arguments" => arguments.is_some(),
        "result" => result.is_some(),
        "error" => error.is_some(),
        _ => false,
    };
    unknown.settle(present, notes)?;
    let observed = match (result, error) {
        (Some(_), Some(_)) => return None,
        (r, e) => r.or(e),
    };
    let observed = || Ok(observed.unwrap_or(Observed::Missing));
    call_of(tool, arguments, observed, "").ok()
}

/// A call's `error` as [`parse_error`] reads it, without building the object: a string
/// `kind`, a string `message` or none, other members noted and passed over. None for
/// anything `parse_error` refuses (a repeated key, a misspelt one), so the general
/// reader says why.
fn native_error(c: &mut Cursor<'_>, notes: &mut ReadingNotes) -> Option<Observed> {
    let (mut kind, mut message) = (None, None);
    let mut unknown = Unknown::new(Level::CallError);
    members(c, |c, key| {
        let slot = match &*key {
            "kind" if kind.is_none() => &mut kind,
            "message" if message.is_none() => &mut message,
            _ => return unknown.skip(c, key, 6),
        };
        *slot = Some(c.string_value()?.into_owned());
        Some(())
    })?;
    let present = |name: &str| match name {
        "kind" => kind.is_some(),
        "message" => message.is_some(),
        _ => false,
    };
    unknown.settle(present, notes)?;
    Some(Observed::Error {
        kind: kind?,
        message: message.unwrap_or_default(),
    })
}

/// A result's text, checked but not built, and its fingerprint; None for a result that
/// may be an MCP error or a JSON-RPC envelope (a top-level key `jsonrpc` or `isError`,
/// however escaped), which the general reader reads (`observed_result` looks at nothing
/// else). The keys are looked at in the pass that checks the text, which is cheaper than
/// searching the text again for each of their spellings.
fn plain_result<'a>(c: &mut Cursor<'a>) -> Option<(&'a str, Option<Fingerprint>)> {
    let mut envelope = false;
    let (text, fingerprint) = crate::jcs::checked_fingerprint(c, 5, |key| {
        envelope |= matches!(key, "jsonrpc" | "isError");
    })?;
    (!envelope).then_some((text, fingerprint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::tests::same_either_way;
    use crate::task::{Label, parse_task_line, parse_task_line_general, per_sample};

    #[test]
    fn reads_a_native_line() {
        let t = parse_task_line(
            br#"{"task_id":"t-1","label":"correct","samples":[{"calls":[{"tool":"get_user","arguments":{"user_id":"u_1"},"result":{"name":"Ada"}}]},{"calls":[{"tool":"get_user","arguments":{"user_id":"u_1"},"error":{"kind":"not_found","message":"no"}}]}]}"#,
        )
        .unwrap();
        assert_eq!(t.task_id, "t-1");
        assert_eq!(t.samples.len(), 2);
        assert_eq!(t.label, Some(Label::Correct));
        assert!(matches!(
            t.samples[1].calls[0].observed,
            Observed::Error { .. }
        ));
    }

    /// Case files and eval lines go through the same check in `tests/readers.rs`.
    #[test]
    fn one_pass_reader_agrees_with_the_general_reader() {
        let deep = format!(
            r#"{{"task_id":"t","samples":[{{"calls":[{{"tool":"a","result":{}1{}}}]}}]}}"#,
            "[".repeat(250),
            "]".repeat(250)
        );
        let deeper = deep.replace("[1]", "[[1]]");
        let call = r#""tool":"get_user","arguments":{"user_id":"u_1"}"#;
        for line in [
            deep.clone(),
            deeper,
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":{{"a":1,"a":2}}}}]}}]}}"#
            ),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":1,"error":{{"kind":"x"}}}}]}}]}}"#
            ),
            format!(r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":[1,}}]}}]}}"#),
            r#"{"task_id":"t","meta":[1,},"samples":[]}"#.to_string(),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":1}}],"calls":[]}}]}}"#
            ),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"tool":"b","result":1}}]}}]}}"#
            ),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"error":{{"kind":7}}}}]}}]}}"#
            ),
            format!(r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":"\ud800"}}]}}]}}"#),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":1e9999999999}}]}}]}}"#
            ),
            format!(
                r#" {{ "task_id" : 7 , "label" : "correct" , "epoch_fixed" : false , "samples" : [ {{ "calls" : [ {{ {call} , "result" : {{ "b" : [ 1 , 2.50 ] }} }} ] }} ] }} "#
            ),
            format!(r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":1}}]}}]}} x"#),
            format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"result":1}}]}}],"task_id":"u"}}"#
            ),
            r#"{"task_id":"","samples":[]}"#.to_string(),
            r#"{"task_id":"t","label":"maybe","samples":[]}"#.to_string(),
            r#"{"task_id":"t"}"#.to_string(),
            r#"{"task_id":"t","samples":[{}]}"#.to_string(),
            r#"{"task_id":"t","samples":[{"calls":[{"arguments":{},"result":1}]}]}"#.to_string(),
        ] {
            same_either_way(line.as_bytes());
        }
        // Errors, which the one-pass reader reads member by member.
        for error in [
            r#"{"kind":"x","message":"m"}"#,
            r#" { "message" : "m\n" , "kind" : "x\u00e9" } "#,
            r#"{"kind":"x"}"#,
            r#"{"kind":"x","kind":"y"}"#,
            r#"{"kind":"x","message":"m","message":"n"}"#,
            r#"{"kind":"x","extra":[1,{"a":2}],"more":null}"#,
            r#"{"kind":"x","extra":1,"extra":2}"#,
            r#"{"kind":"x","message":7}"#,
            r#"{"message":"m"}"#,
            r#"{}"#,
            r#"["x"]"#,
            r#""x""#,
            r#"{"kind":"x","message":"m",}"#,
        ] {
            let line = format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{{call},"error":{error}}}]}}]}}"#
            );
            same_either_way(line.as_bytes());
            let valid = parse_task_line_general(line.as_bytes()).is_ok();
            assert_eq!(read_native(line.as_bytes()).is_some(), valid, "{line}");
        }
        assert!(
            read_native(deep.as_bytes()).is_some(),
            "nesting within the limit reads"
        );
    }

    /// A result's top-level keys are looked at, decoded, as its text is checked: an
    /// envelope written any of those ways goes to the general reader, and text that only
    /// mentions the words, or has them as keys deeper down, stays plain.
    #[test]
    fn envelopes_are_found_however_their_keys_are_written() {
        let plain = |text: &str| {
            let mut c = Cursor::of_str(text);
            plain_result(&mut c).filter(|_| c.at_end()).map(|(t, _)| t) == Some(text)
        };
        for envelope in [
            r#"{"jsonrpc":"2.0","id":1,"result":2}"#,
            r#"{"id":1,"json\u0072pc":"2.0","result":2}"#,
            r#"{"content":[],"\u0069sError":true}"#,
            r#"{"a":1,"isError":false}"#,
        ] {
            assert!(!plain(envelope), "{envelope}");
        }
        for result in [
            r#"{"a":{"jsonrpc":"2.0","isError":true}}"#,
            r#"{"note":"isError jsonrpc \u0041","v":["jsonrpc"]}"#,
            r#"{"a":"\n"}"#,
            r#"["jsonrpc"]"#,
            r#"[{"jsonrpc":"2.0"},{"isError":true}]"#,
            r#"{"a":[],"b":{"c":{"isError":1}},"d":2}"#,
            r#"{}"#,
        ] {
            assert!(plain(result), "{result}");
        }
        for line in [
            r#"{"id":1,"json\u0072pc":"2.0","result":2}"#,
            r#"{"note":"isError jsonrpc \u0041","v":["jsonrpc"]}"#,
        ] {
            let line = format!(
                r#"{{"task_id":"t","samples":[{{"calls":[{{"tool":"a","result":{line}}}]}}]}}"#
            );
            same_either_way(line.as_bytes());
        }
    }

    #[test]
    fn samples_written_alike_are_read_once() {
        let a = r#"{"calls":[{"tool":"a","arguments":{"x":1},"result":{"y":[1,2]}}]}"#;
        let b = r#"{"calls":[{"tool":"a","arguments":{"x":2},"result":{"y":[1,2]}}]}"#;
        // The same value spaced otherwise is read again, and equal all the same.
        let a_spaced = r#"{"calls": [{"tool":"a","arguments":{"x":1},"result":{"y":[1,2]}}]}"#;
        let line = format!(r#"{{"task_id":"t","samples":[{a},{b},{a}, {a},{a_spaced},{b}]}}"#);
        let t = parse_task_line(line.as_bytes()).unwrap();
        let same = |i: usize, j: usize| Arc::ptr_eq(&t.samples[i], &t.samples[j]);
        assert!(same(0, 2) && same(0, 3) && same(1, 5));
        assert!(!same(0, 1) && !same(0, 4));
        assert_eq!(t.samples[0], t.samples[4]);
        assert_eq!(t, parse_task_line_general(line.as_bytes()).unwrap());
        // Each answer once per distinct sample; a refused answer is computed again.
        let mut asked = Vec::new();
        let answers = per_sample(
            &t.samples,
            |&n: &usize| n != 4,
            |i, _| {
                asked.push(i);
                i
            },
        );
        assert_eq!(answers, [0, 1, 0, 0, 4, 1]);
        assert_eq!(asked, [0, 1, 4]);
    }
}
