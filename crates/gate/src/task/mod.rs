//! One task as plangate reads it (docs/design.md, "Inputs"): N sampled plans, each a list of
//! tool calls with what each call returned. Parsing a samples line lives here, pure, so
//! `score` and `eval` read lines identically and report bad ones the same way.
//!
//! The readers are split by the input they read: `native` reads the common native line
//! in one pass, `general` reads any line from its parsed tree (and words every error),
//! `transcript` reads provider messages, and `keys` gives a task's keys their ids.
//! `fields` says which fields each part of a line has, and `notes` what reading noted
//! for the run.

mod fields;
mod general;
mod keys;
mod native;
mod notes;
mod parts;
mod transcript;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::jcs::{Fingerprint, fingerprint};
use crate::json::{Duplicates, Object, Value, parse_str_with};

pub use fields::Level;
pub use general::{parse_task_line_general, task_from_value};
pub(crate) use keys::{BoundedMemo, Form, IdsByForm, KeyInterner, Rfc8785Form, SmallMap};
pub use notes::{FieldSeen, IdMatching, Levels, ReadingNotes, RunNotes};

/// Ground truth attached to a task by an eval team.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    /// The plan is right.
    Correct,
    /// The plan's arguments were made up.
    Hallucinated,
}

impl Label {
    /// The label as serde writes it (held equal by `tests/records.rs`).
    pub fn as_str(self) -> &'static str {
        match self {
            Label::Correct => "correct",
            Label::Hallucinated => "hallucinated",
        }
    }
}

/// One task: N samples of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The caller's ID.
    pub task_id: String,
    /// The sampled plans. A sample written byte for byte like an earlier one of its line
    /// is read once and shared (`Arc::ptr_eq`), so what is computed per sample can be
    /// computed per distinct sample; a caller that changes one makes it its own
    /// (`Arc::make_mut`).
    pub samples: Vec<Arc<Sample>>,
    /// Ground truth, when known.
    pub label: Option<Label>,
    /// `false` when the recorded results came from a drifting epoch (score mode).
    pub epoch_fixed: Option<bool>,
    /// What reading the line changed or assumed (a JSON-RPC envelope unwrapped), said in
    /// the decision.
    pub warnings: Vec<String>,
    /// What reading the line noted for the run (how a transcript's results found their
    /// calls, the fields passed over), so a run can say each once; never part of a
    /// decision.
    pub notes: ReadingNotes,
}

/// One sampled plan.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    /// Tool calls in order.
    pub calls: Vec<Call>,
    /// The lengths of the sample's turns, in order: a turn is the calls the model made
    /// together (one OpenAI assistant message's `tool_calls`), which have no order among
    /// themselves. Empty: every call is its own turn (the native `calls` form).
    pub turns: Vec<usize>,
    /// Set when the sample as a whole could not be read (it then agrees with nothing).
    pub malformed: Option<String>,
    /// What the run this sample came from scored (a benchmark trial's reward; true and
    /// false read as 1 and 0), when the input says. Never read by the rule: it is
    /// carried to the decision and counted in the summary (docs/inputs.md, "Outcomes").
    pub outcome: Option<f64>,
    /// What the conversation said around the calls, for a sample read from messages:
    /// system and user text and the model's own text, each with the number of calls made
    /// before it. Empty for a native sample, whose conversation is its calls. Read only
    /// to tell a value the conversation supplied from one the model invented
    /// (`crate::invented`).
    pub said: Vec<Said>,
}

/// Text a conversation held before call `before` of its sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    /// How many of the sample's calls were made before it.
    pub before: usize,
    /// The text, as written.
    pub text: String,
}

/// One tool call of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Where the call sits in the line, in the shape the user wrote it
    /// (`samples[2].tool_calls[1]`); None for the native `samples[i].calls[j]`.
    pub origin: Option<Box<str>>,
    /// The tool the model named.
    pub tool: String,
    /// The arguments as the model wrote them.
    pub arguments: Arguments,
    /// What the call returned, if known.
    pub observed: Observed,
}

/// A call's arguments as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// A JSON value (canonicalization checks it further); shared with the canonical
    /// form when the hints leave it as written.
    Json(Arc<Value>),
    /// Text that is not JSON at all (an OpenAI `arguments` string that fails to parse).
    Malformed(String),
}

/// What one call returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// Not known (not executed yet).
    Missing,
    /// A JSON result payload.
    Result(Payload),
    /// The tool failed; `kind` is machine-readable.
    Error {
        /// Failure class, e.g. `not_found`, `timeout`, `trap`.
        kind: String,
        /// Human-readable detail.
        message: String,
    },
    /// The tool succeeded but printed bytes that are not JSON.
    Bytes(Vec<u8>),
}

/// A call's JSON result: built, or kept as the checked text of the samples line and
/// built only when a caller needs the value. Most results of one task are the same
/// bytes, so `decide::prepare` keys each distinct text once instead of building and
/// printing every copy (docs/benchmarks.md).
#[derive(Debug, Clone)]
pub struct Payload(PayloadRepr);

/// Why a samples line was refused: a field path such as `samples[2].calls[0].tool`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TaskError {
    /// Where in the line (empty: the line as a whole).
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// The task's ID when it could be read, so reports can name it.
    pub task_id: Option<String>,
}

/// Parses one samples line.
pub fn parse_task_line(line: &[u8]) -> Result<Task, TaskError> {
    match native::read_native(line) {
        Some(task) => Ok(task),
        None => parse_task_line_general(line),
    }
}

/// The ids agreement gives the results of one task's calls, in order (`decide::prepare`
/// keys them so); public only so `tests/props.rs` can hold them to the ids of printed
/// forms.
#[doc(hidden)]
pub fn result_ids(results: &[Observed]) -> Vec<Option<u32>> {
    let mut keys = KeyInterner::new(Rfc8785Form);
    results.iter().map(|o| o.key_id(&mut keys)).collect()
}

impl Sample {
    /// The index ranges of the sample's turns, in order.
    pub fn turn_ranges(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        turn_ranges(&self.turns, self.calls.len())
    }
}

impl Call {
    /// Where the call sits in the line as the user wrote it, given its sample and index.
    pub fn place(&self, sample: usize, index: usize) -> String {
        match &self.origin {
            Some(o) => o.to_string(),
            None => format!("samples[{sample}].calls[{index}]"),
        }
    }
}

impl Observed {
    /// The value the seed's code would see as this call's result.
    pub fn as_value(&self) -> Value {
        match self {
            Observed::Missing => Value::Null,
            Observed::Result(p) => p.value().clone(),
            Observed::Error { kind, message } => Value::Object(Object::from_iter([(
                "error".to_string(),
                Value::Object(Object::from_iter([
                    ("kind".to_string(), Value::String(kind.clone())),
                    ("message".to_string(), Value::String(message.clone())),
                ])),
            )])),
            Observed::Bytes(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        }
    }

    /// The key results are compared by: canonical JSON, or a digest of raw bytes.
    pub fn key(&self) -> Option<String> {
        use sha2::Digest;
        match self {
            Observed::Missing => None,
            // Not through `as_value`: that deep-copies every result only to print it.
            Observed::Result(p) => Some(p.canonical().0),
            Observed::Error { .. } => self.error_form(),
            Observed::Bytes(b) => Some(format!("bytes:{:x}", sha2::Sha256::digest(b))),
        }
    }

    /// For an error, the form both RFC 8785 and the seed's `json.dumps` give
    /// [`Observed::as_value`], printed without building the value; None otherwise.
    pub(crate) fn error_form(&self) -> Option<String> {
        match self {
            Observed::Error { kind, message } => Some(error_form(kind, message)),
            _ => None,
        }
    }

    /// The id of [`Observed::key`] in `keys`, a result's text looked up first.
    pub(crate) fn key_id<'a>(&'a self, keys: &mut KeyInterner<'a, impl Form>) -> Option<u32> {
        match self {
            Observed::Result(p) => Some(keys.payload(p)),
            other => other.key().map(|k| keys.id(k)),
        }
    }
}

impl Payload {
    /// Keeps JSON text the reader has checked, with the fingerprint it computed on the
    /// way ([`crate::jcs::checked_fingerprint`]).
    fn checked_text(text: &str, fingerprint: Option<Fingerprint>) -> Self {
        Payload(PayloadRepr::Text(Arc::new(Text {
            text: text.into(),
            value: OnceLock::new(),
            canonical: OnceLock::new(),
            fingerprint: OnceLock::from(fingerprint),
        })))
    }

    /// The result's RFC 8785 form, and whether a number in it is written as a float;
    /// printed from the text, once, when there is text. Both agreement and the naive
    /// scorer's `json.dumps` equality key by it (see `baseline`).
    pub(crate) fn canonical(&self) -> (String, bool) {
        let (form, float) = self.canonical_ref();
        (form.into_owned(), float)
    }

    /// [`Payload::canonical`], borrowed from the payload when it keeps its text: the
    /// naive scorer compares by it without copying it.
    pub(crate) fn canonical_ref(&self) -> (Cow<'_, str>, bool) {
        let of_value = |v: &Value| (crate::jcs::to_string(v), has_float(v));
        match &self.0 {
            PayloadRepr::Value(v) => {
                let (form, float) = of_value(v);
                (Cow::Owned(form), float)
            }
            PayloadRepr::Text(t) => {
                let (form, float) = t.canonical.get_or_init(|| {
                    crate::jcs::print_text(&t.text, &crate::jcs::JCS)
                        .unwrap_or_else(|| of_value(self.value()))
                });
                (Cow::Borrowed(form), *float)
            }
        }
    }

    /// The [`Fingerprint`] of the result's forms, computed from its text once (from the
    /// value, for a result built as one); None for one that has none. A [`KeyInterner`]
    /// tells results apart by it without printing them.
    pub(crate) fn fingerprint(&self) -> Option<Fingerprint> {
        match &self.0 {
            PayloadRepr::Value(v) => crate::jcs::fingerprint_value(v),
            PayloadRepr::Text(t) => *t.fingerprint.get_or_init(|| fingerprint(&t.text)),
        }
    }

    /// Whether a number in the result is written as a float, from its fingerprint
    /// when it has one, else as [`Payload::canonical`] says.
    pub(crate) fn has_float(&self) -> bool {
        self.fingerprint()
            .map_or_else(|| self.canonical_ref().1, |f| f.float)
    }

    /// The result as a value, built from its text the first time it is asked for.
    pub fn value(&self) -> &Value {
        match &self.0 {
            PayloadRepr::Value(v) => v,
            PayloadRepr::Text(t) => t.value.get_or_init(|| {
                // The text passed the same reader when the line was read, so this
                // cannot fail; were it to, the text stays a distinct value.
                parse_str_with(&t.text, Duplicates::Flag)
                    .unwrap_or_else(|_| Value::String(t.text.to_string()))
            }),
        }
    }

    /// The text the result was written with, when it was kept unparsed. Equal texts
    /// are equal values (not conversely: spacing and key order may differ).
    pub fn text(&self) -> Option<&str> {
        match &self.0 {
            PayloadRepr::Value(_) => None,
            PayloadRepr::Text(t) => Some(&t.text),
        }
    }
}

impl From<Value> for Payload {
    fn from(v: Value) -> Self {
        Payload(PayloadRepr::Value(v))
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        match (self.text(), other.text()) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.value() == other.value(),
        }
    }
}

#[derive(Debug, Clone)]
enum PayloadRepr {
    Value(Value),
    /// JSON text the strict reader checked, shared by the copies of it in one line.
    Text(Arc<Text>),
}

/// JSON text the strict reader checked (duplicate keys flagged, last one kept), its
/// value once a caller asked for it, and its RFC 8785 form once one did.
#[derive(Debug)]
struct Text {
    text: Box<str>,
    value: OnceLock<Value>,
    canonical: OnceLock<(String, bool)>,
    fingerprint: OnceLock<Option<Fingerprint>>,
}

/// Whether a number in `v` is written as a float (Python reads it as one).
pub(crate) fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.written_as_float(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(o) => o.iter().any(|(_, v)| has_float(v)),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// What `per` answers for each of `samples`, computed once per distinct sample: one
/// the reader shared with an earlier sample (`Arc::ptr_eq`, see [`Task::samples`]) takes
/// that sample's answer when `reusable` allows it (an answer that names its sample's
/// place, say, does not carry over).
pub(crate) fn per_sample<'a, T: Clone>(
    samples: &'a [Arc<Sample>],
    reusable: impl Fn(&T) -> bool,
    mut per: impl FnMut(usize, &'a Sample) -> T,
) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(samples.len());
    let mut firsts: BoundedMemo<*const Sample, usize> = BoundedMemo::with_room(samples.len());
    for (i, sample) in samples.iter().enumerate() {
        let first = firsts.get_or(Arc::as_ptr(sample), || i);
        let answer = match out.get(first) {
            Some(earlier) if first < i && reusable(earlier) => earlier.clone(),
            _ => per(i, sample),
        };
        out.push(answer);
    }
    out
}

/// The index ranges of `calls` calls grouped by turn lengths `turns` (empty: every call
/// its own turn), for a sample and for its prepared steps alike. An iterator: the
/// invented-reference search walks every sample with a miss, and needs no list.
pub(crate) fn turn_ranges(
    turns: &[usize],
    calls: usize,
) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let count = if turns.is_empty() { calls } else { turns.len() };
    let mut start = 0;
    (0..count).map(move |t| {
        let r = start..start + turns.get(t).copied().unwrap_or(1);
        start = r.end;
        r
    })
}

fn err(field: impl Into<String>, message: impl Into<String>) -> TaskError {
    TaskError {
        field: field.into(),
        message: message.into(),
        task_id: None,
    }
}

/// `{"error":{"kind":..,"message":..}}` as RFC 8785 and `json.dumps` both print
/// [`Observed::as_value`] of an error (its keys are in order either way).
fn error_form(kind: &str, message: &str) -> String {
    let mut out = String::with_capacity(kind.len() + message.len() + 40);
    out.push_str("{\"error\":{\"kind\":");
    crate::jcs::write_string(kind, &mut out);
    out.push_str(",\"message\":");
    crate::jcs::write_string(message, &mut out);
    out.push_str("}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_as_their_value() {
        for (kind, message) in [
            ("not_found", "no user 'u_1'"),
            ("k\"\\\n\u{1}", "\u{e9}\u{1F600}"),
        ] {
            let e = Observed::Error {
                kind: kind.into(),
                message: message.into(),
            };
            assert_eq!(e.key(), Some(crate::jcs::to_string(&e.as_value())));
            assert_eq!(e.error_form(), e.key());
        }
    }

    #[test]
    fn errors_name_field_and_task() {
        let e = parse_task_line(br#"{"task_id":"t-9","samples":[{"calls":[{"tol":"x"}]}]}"#)
            .unwrap_err();
        assert_eq!(e.field, "samples[0].calls[0].tol");
        assert_eq!(e.task_id.as_deref(), Some("t-9"));
        let e = parse_task_line(br#"{"task_id":"t","task_id":"u","samples":[]}"#).unwrap_err();
        assert!(e.message.contains("duplicate key"));
        let e = parse_task_line(b"{\"task_id\":").unwrap_err();
        assert!(e.message.contains("column 12"), "{e}");
    }

    /// The one-pass reader either declines a line or reads it exactly as the general
    /// reader does, results kept as text included.
    pub(super) fn same_either_way(line: &[u8]) {
        let general = parse_task_line_general(line);
        if let Some(fast) = native::read_native(line) {
            assert_eq!(
                Ok(&fast),
                general.as_ref(),
                "{}",
                String::from_utf8_lossy(line)
            );
            for c in fast.samples.iter().flat_map(|s| &s.calls) {
                if let Observed::Result(p) = &c.observed {
                    assert!(p.text().is_some(), "results stay text");
                }
            }
        }
        assert_eq!(parse_task_line(line), general);
    }

    pub(super) fn result(json: &str) -> Observed {
        Observed::Result(crate::json::parse(json).unwrap().into())
    }
}
