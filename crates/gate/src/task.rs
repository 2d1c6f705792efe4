//! One task as plangate reads it (docs/design.md, "Inputs"): N sampled plans, each a list of
//! tool calls with what each call returned. Parsing a samples line lives here, pure, so
//! `score` and `eval` read lines identically and report bad ones the same way.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use crate::jcs::{Fingerprint, fingerprint};
use crate::json::{Cursor, Duplicates, Object, Value, parse_str_with, parse_with};

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
    /// value, for a result built as one); None for one that has none. Keys tell results
    /// apart by it without printing them.
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

/// Whether a number in `v` is written as a float (Python reads it as one).
pub(crate) fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.written_as_float(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(o) => o.iter().any(|(_, v)| has_float(v)),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

/// A printed form of JSON that [`Keys`] compare by, from a value or a result payload
/// (printed from its text when it has one).
pub(crate) trait Form {
    /// Whether payloads are told apart by their [`Fingerprint`]s before printing: true
    /// only for a form whose equal forms have equal fingerprints, and whose printed
    /// keys, read as JSON text, have the fingerprint of every text they are the form
    /// of (or are no JSON at all). RFC 8785 and `json.dumps` are such forms (see
    /// [`Fingerprint`]).
    const FINGERPRINTS: bool = false;
    /// The form of a value.
    fn of_value(&self, v: &Value) -> String;
    /// The form of a result payload.
    fn of_payload(&self, p: &Payload) -> String;
    /// The fingerprint of a key handed over printed: of its text read as JSON.
    fn fingerprint_key(&self, key: &str) -> Option<Fingerprint> {
        fingerprint(key)
    }
}

/// RFC 8785 as a [`Form`].
pub(crate) struct Jcs;

impl Form for Jcs {
    const FINGERPRINTS: bool = true;
    fn of_value(&self, v: &Value) -> String {
        crate::jcs::to_string(v)
    }
    fn of_payload(&self, p: &Payload) -> String {
        p.canonical().0
    }
}

/// The last few distinct things a task computed, found again by equality. Samples
/// repeat a handful of calls and results, so a short list catches them; its bound
/// keeps a task of thousands of distinct calls linear (each lookup is at most
/// [`Recent::CAP`] comparisons, and what does not fit is simply computed again).
pub(crate) struct Recent<K, V>(Vec<(K, V)>);

impl<K: PartialEq, V: Clone> Recent<K, V> {
    const CAP: usize = 64;

    /// An empty list.
    pub(crate) fn new() -> Self {
        Recent(Vec::new())
    }

    /// An empty list with room for the `n` things a caller expects to keep (never
    /// more than it keeps), so it is allocated once instead of grown.
    pub(crate) fn with_room(n: usize) -> Self {
        Recent(Vec::with_capacity(n.min(Self::CAP)))
    }

    /// What was computed for a key equal to `key`, or `compute`'s answer, kept while
    /// there is room.
    pub(crate) fn get_or(&mut self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Some((_, v)) = self.0.iter().find(|(seen, _)| *seen == key) {
            return v.clone();
        }
        let v = compute();
        if self.0.len() < Self::CAP {
            self.0.push((key, v.clone()));
        }
        v
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
    let mut firsts: Recent<*const Sample, usize> = Recent::with_room(samples.len());
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

/// Task-local ids of keys: equal keys get equal ids. Results are looked up by text
/// first, so the copies of one result in N samples cost one lookup, and a new text is
/// told apart from the others by its [`Fingerprint`], printed only when another key
/// has the same one; comparing ids is cheaper than comparing printed results of
/// hundreds of bytes.
pub(crate) struct Keys<'a, F> {
    table: Table<'a, F>,
    next: u32,
    texts: Recent<&'a str, u32>,
    values: Recent<&'a Value, u32>,
    calls: Recent<(&'a str, Arc<Value>), u32>,
}

/// The ids of keys by printed form, numbered in order of first appearance from a
/// counter the caller holds (the naive scorer numbers two tables from one).
///
/// The first value or payload keyed waits unprinted while it is the only key: a task
/// whose samples all returned one text, or wrote one value, never needs its form (its
/// copies are found by text or as equal trees), and most tasks are such. Once there is
/// more than one key, a payload of a [`Form::FINGERPRINTS`] form is given its id by
/// fingerprint while no other key has the same one, and stays unprinted; keys handed
/// over printed are fingerprinted from their text then. Where two fingerprints meet,
/// both keys are printed and compared by form: a hash never decides that two
/// results agree, so no tool can make different results agree by writing a collision.
pub(crate) struct Table<'a, F> {
    /// Printed forms and their ids.
    ids: BTreeMap<String, u32>,
    /// The first key, not printed yet, and its id.
    waiting: Option<(Waiting<'a>, u32)>,
    /// Once a payload or value was keyed by fingerprint: the fingerprint of every form
    /// keyed, with the payload or value and id of the one form not printed (None:
    /// printed, in `ids`; several printed forms may share a fingerprint). Unprinted
    /// forms differ from each other and from every printed one.
    hashes: Slots<'a>,
    /// Whether `hashes` is kept.
    hashed: bool,
    /// A printed form has no fingerprint (it is no JSON text): every payload is printed.
    opaque: bool,
    form: F,
}

/// A task's small map: a task has a handful of tool names, or of fingerprints in a
/// [`Table`], found in a short list; past [`FEW`] of them (a hostile line of thousands),
/// a map keeps each search from growing with them. A map for the few cost an allocation
/// and its freeing per task, 1.7% of `score`'s time for a table's fingerprints.
pub(crate) struct Few<K, V> {
    listed: Vec<(K, V)>,
    more: BTreeMap<K, V>,
}

/// Keys a [`Few`] finds in its short list.
pub(crate) const FEW: usize = 16;

impl<K, V> Default for Few<K, V> {
    fn default() -> Self {
        Few {
            listed: Vec::new(),
            more: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy, V> Few<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.listed.len() + self.more.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The value of `key`, `value()` put in first when there is none.
    pub(crate) fn get_or_insert_with(&mut self, key: K, value: impl FnOnce() -> V) -> &mut V {
        if let Some(i) = self.listed.iter().position(|(k, _)| *k == key) {
            return &mut self.listed[i].1;
        }
        if self.listed.len() < FEW {
            self.listed.push((key, value()));
            return &mut self.listed.last_mut().expect("just pushed").1;
        }
        self.more.entry(key).or_insert_with(value)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        (self.listed.iter_mut().map(|(_, v)| v)).chain(self.more.values_mut())
    }
}

/// A [`Table`]'s fingerprints, each with the one key of that fingerprint not printed
/// yet (None: printed).
type Slots<'a> = Few<u64, Option<(Waiting<'a>, u32)>>;

/// What [`Table`] keyed and has not printed yet.
#[derive(Clone)]
enum Waiting<'a> {
    Value(&'a Value),
    Payload(&'a Payload),
    /// A call of a tool with canonical arguments (see [`crate::jcs::call_key`]).
    Call(&'a str, Arc<Value>),
}

impl Waiting<'_> {
    /// Its form.
    fn print(&self, form: &impl Form) -> String {
        match self {
            Waiting::Value(v) => form.of_value(v),
            Waiting::Payload(p) => form.of_payload(p),
            Waiting::Call(tool, v) => crate::jcs::call_key(tool, v, false),
        }
    }

    /// Its fingerprint, where the form tells keys apart by them.
    fn fingerprint<F: Form>(&self) -> Option<Fingerprint> {
        if !F::FINGERPRINTS {
            return None;
        }
        match self {
            Waiting::Value(v) => crate::jcs::fingerprint_value(v),
            Waiting::Payload(p) => p.fingerprint(),
            Waiting::Call(tool, v) => crate::jcs::fingerprint_call(tool, v),
        }
    }
}

impl<'a, F: Form> Table<'a, F> {
    /// An empty table keying by `form`.
    pub(crate) fn new(form: F) -> Self {
        Table {
            ids: BTreeMap::new(),
            waiting: None,
            hashes: Slots::default(),
            hashed: false,
            opaque: false,
            form,
        }
    }

    fn fresh(next: &mut u32) -> u32 {
        let id = *next;
        *next = next.saturating_add(1);
        id
    }

    /// The id of the first key, which waits; None when something was keyed already.
    fn first(&mut self, first: impl FnOnce() -> Waiting<'a>, next: &mut u32) -> Option<u32> {
        let empty = self.ids.is_empty() && self.hashes.is_empty() && self.waiting.is_none();
        empty.then(|| {
            let id = Self::fresh(next);
            self.waiting = Some((first(), id));
            id
        })
    }

    /// The id of a printed form.
    pub(crate) fn id(&mut self, key: String, next: &mut u32) -> u32 {
        self.settle();
        if !self.hashed {
            return *self.ids.entry(key).or_insert_with(|| Self::fresh(next));
        }
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        // A new form: the unprinted key it may be is the one of its fingerprint.
        match self.form.fingerprint_key(&key) {
            Some(f) => {
                if let Some((q, id)) = self.hashes.get_or_insert_with(f.hash, || None).take() {
                    self.ids.insert(q.print(&self.form), id);
                }
            }
            None => {
                self.opaque = true;
                for slot in self.hashes.values_mut() {
                    if let Some((q, id)) = slot.take() {
                        self.ids.insert(q.print(&self.form), id);
                    }
                }
            }
        }
        *self.ids.entry(key).or_insert_with(|| Self::fresh(next))
    }

    /// The id of a value's form, by fingerprint while no other key shares it.
    pub(crate) fn value(&mut self, v: &'a Value, next: &mut u32) -> u32 {
        self.keyed(Waiting::Value(v), next)
    }

    /// The id of a payload's form, by fingerprint while no other key shares it.
    pub(crate) fn payload(&mut self, p: &'a Payload, next: &mut u32) -> u32 {
        self.keyed(Waiting::Payload(p), next)
    }

    fn keyed(&mut self, w: Waiting<'a>, next: &mut u32) -> u32 {
        if let Some(id) = self.first(|| w.clone(), next) {
            return id;
        }
        let Some(f) = w.fingerprint::<F>() else {
            let key = w.print(&self.form);
            return self.id(key, next);
        };
        self.settle();
        self.hash_printed();
        // A fingerprint not seen before is a new form: its id, and the key waits
        // unprinted (unless printed forms have no fingerprint, `opaque`). One search.
        let (opaque, mut new) = (self.opaque, None);
        let slot = self.hashes.get_or_insert_with(f.hash, || {
            (!opaque).then(|| {
                let id = Self::fresh(next);
                new = Some(id);
                (w.clone(), id)
            })
        });
        if let Some(id) = new {
            return id;
        }
        if let Some((q, id)) = slot.take() {
            self.ids.insert(q.print(&self.form), id);
        }
        let key = w.print(&self.form);
        *self.ids.entry(key).or_insert_with(|| Self::fresh(next))
    }

    /// Keys the waiting first key before another is compared with it: by fingerprint
    /// when it has one, else printed.
    fn settle(&mut self) {
        let Some((first, id)) = self.waiting.take() else {
            return;
        };
        if let Some(f) = first.fingerprint::<F>() {
            self.hashed = true;
            self.hashes.get_or_insert_with(f.hash, || Some((first, id)));
            return;
        }
        self.ids.insert(first.print(&self.form), id);
    }

    /// Starts keeping fingerprints: those of the forms printed so far.
    fn hash_printed(&mut self) {
        if self.hashed {
            return;
        }
        self.hashed = true;
        for key in self.ids.keys() {
            match self.form.fingerprint_key(key) {
                Some(f) => {
                    self.hashes.get_or_insert_with(f.hash, || None);
                }
                None => self.opaque = true,
            }
        }
    }
}

impl<'a, F: Form> Keys<'a, F> {
    /// Ids of keys; values and payloads are keyed by their `form`.
    pub(crate) fn new(form: F) -> Self {
        Keys {
            table: Table::new(form),
            next: 0,
            texts: Recent::new(),
            values: Recent::new(),
            calls: Recent::new(),
        }
    }

    /// The id of `key`.
    pub(crate) fn id(&mut self, key: String) -> u32 {
        self.table.id(key, &mut self.next)
    }

    /// The id of `v`'s key, from an earlier equal value when there is one (values
    /// equal as trees have equal keys).
    pub(crate) fn value(&mut self, v: &'a Value) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        self.values.get_or(v, || table.value(v, next))
    }

    /// The id of the key of a call of `tool` with canonical arguments `args`
    /// ([`crate::jcs::call_key`]'s, not violating the schema), from an earlier call
    /// equal as a tree when there is one (the hints map most spellings of a call to one
    /// tree).
    pub(crate) fn call(&mut self, tool: &'a str, args: &Arc<Value>) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        self.calls.get_or((tool, Arc::clone(args)), || {
            table.keyed(Waiting::Call(tool, Arc::clone(args)), next)
        })
    }

    /// The id of `p`'s key, from an earlier copy of its text when there is one.
    pub(crate) fn payload(&mut self, p: &'a Payload) -> u32 {
        let (table, next) = (&mut self.table, &mut self.next);
        match p.text() {
            Some(text) => self.texts.get_or(text, || table.payload(p, next)),
            None => table.payload(p, next),
        }
    }
}

/// The ids agreement gives the results of one task's calls, in order (`decide::prepare`
/// keys them so); public only so `tests/props.rs` can hold them to the ids of printed
/// forms.
#[doc(hidden)]
pub fn result_ids(results: &[Observed]) -> Vec<Option<u32>> {
    let mut keys = Keys::new(Jcs);
    results.iter().map(|o| o.key_id(&mut keys)).collect()
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

fn err(field: impl Into<String>, message: impl Into<String>) -> TaskError {
    TaskError {
        field: field.into(),
        message: message.into(),
        task_id: None,
    }
}

/// Parses one samples line.
pub fn parse_task_line(line: &[u8]) -> Result<Task, TaskError> {
    match read_native(line) {
        Some(task) => Ok(task),
        None => parse_task_line_general(line),
    }
}

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

fn no_duplicates(o: &Object, field: &str) -> Result<(), TaskError> {
    match o.duplicate_key() {
        Some(k) => Err(err(field, format!("duplicate key {k:?}"))),
        None => Ok(()),
    }
}

fn known_fields(o: &Object, field: &str, known: &[&str]) -> Result<(), TaskError> {
    no_duplicates(o, field)?;
    for k in o.keys() {
        if !known.contains(&k.as_str()) {
            let at = if field.is_empty() {
                k.clone()
            } else {
                format!("{field}.{k}")
            };
            return Err(err(
                at,
                format!("unknown field (expected one of {})", known.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Reads a task from a parsed line.
pub fn task_from_value(doc: &Value) -> Result<Task, TaskError> {
    let o = doc
        .as_object()
        .ok_or_else(|| err("", format!("expected a task object, found {}", doc.kind())))?;
    known_fields(
        o,
        "",
        &["task_id", "samples", "label", "epoch_fixed", "meta"],
    )?;
    let task_id = task_id_of(o.get("task_id"))?;
    let mut notes = Notes::default();
    let samples = match o.get("samples") {
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| parse_sample(s, &format!("samples[{i}]"), &mut notes).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(err("samples", "expected an array of samples")),
        None => return Err(err("samples", "missing")),
    };
    Ok(Task {
        task_id,
        samples,
        label: label_of(o.get("label"))?,
        epoch_fixed: epoch_fixed_of(o.get("epoch_fixed"))?,
        warnings: notes.into_warnings(),
    })
}

fn task_id_of(v: Option<&Value>) -> Result<String, TaskError> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.lexeme().to_string()),
        Some(_) => Err(err("task_id", "expected a non-empty string")),
        None => Err(err("task_id", "missing")),
    }
}

fn label_of(v: Option<&Value>) -> Result<Option<Label>, TaskError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s == "correct" => Ok(Some(Label::Correct)),
        Some(Value::String(s)) if s == "hallucinated" => Ok(Some(Label::Hallucinated)),
        Some(_) => Err(err("label", "expected \"correct\" or \"hallucinated\"")),
    }
}

fn epoch_fixed_of(v: Option<&Value>) -> Result<Option<bool>, TaskError> {
    match v {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(err("epoch_fixed", "expected true or false")),
    }
}

/// The common line, read in one pass: native samples (`{"calls": [...]}` only), each
/// call's result kept as checked text. Anything else (another shape, a field out of
/// place, any error) answers None and [`task_from_value`] reads the line instead, which
/// words the errors; for a line this reads, both give the same task (`tests/readers.rs`
/// and the `samples_line` fuzz target hold them to it).
fn read_native(line: &[u8]) -> Option<Task> {
    let mut c = Cursor::new(line, Duplicates::Flag)?;
    let (mut task_id, mut samples, mut label, mut epoch, mut meta) =
        (None, None, None, None, false);
    members(&mut c, |c, key| {
        // Depths are the whole document's, so nesting limits match the general reader.
        match key {
            "task_id" if task_id.is_none() => task_id = Some(c.value(1)?),
            "samples" if samples.is_none() => samples = Some(native_samples(c)?),
            "label" if label.is_none() => label = Some(c.value(1)?),
            "epoch_fixed" if epoch.is_none() => epoch = Some(c.value(1)?),
            "meta" if !meta => {
                c.raw(1)?;
                meta = true;
            }
            _ => return None,
        }
        Some(())
    })?;
    if !c.at_end() {
        return None;
    }
    Some(Task {
        task_id: task_id_of(task_id.as_ref()).ok()?,
        samples: samples?,
        label: label_of(label.as_ref()).ok()?,
        epoch_fixed: epoch_fixed_of(epoch.as_ref()).ok()?,
        warnings: Vec::new(),
    })
}

/// Reads `{ "key": value, ... }`, handing each key to `member` to read its value.
fn members<'a>(
    c: &mut Cursor<'a>,
    mut member: impl FnMut(&mut Cursor<'a>, &str) -> Option<()>,
) -> Option<()> {
    if !c.eat(b'{') {
        return None;
    }
    if c.eat(b'}') {
        return Some(());
    }
    loop {
        let key = c.key()?;
        member(c, &key)?;
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
fn native_samples<'a>(c: &mut Cursor<'a>) -> Option<Vec<Arc<Sample>>> {
    let mut results = Seen::new(4);
    let mut samples = Seen::new(8);
    elements(c, |c| {
        if let Some(sample) = samples.again(c) {
            return Some(sample);
        }
        let mut calls = None;
        let text = c.spanned(|c| {
            members(c, |c, key| {
                (key == "calls" && calls.is_none()).then_some(())?;
                calls = Some(elements(c, |c| native_call(c, &mut results))?);
                Some(())
            })
        })?;
        let sample = Arc::new(Sample {
            calls: calls?,
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

fn native_call<'a>(c: &mut Cursor<'a>, seen: &mut Seen<'a, Payload>) -> Option<Call> {
    let (mut tool, mut arguments, mut result, mut error) = (None, None, None, None);
    members(c, |c, key| {
        match key {
            "tool" if tool.is_none() => tool = Some(c.value(5)?),
            "arguments" if arguments.is_none() => arguments = Some(c.value(5)?),
            "result" if result.is_none() => {
                result = Some(Observed::Result(native_result(c, seen)?))
            }
            "error" if error.is_none() => error = Some(native_error(c)?),
            _ => return None,
        }
        Some(())
    })?;
    let observed = match (result, error) {
        (Some(_), Some(_)) => return None,
        (r, e) => r.or(e),
    };
    call_of(tool, arguments, observed, None, "").ok()
}

/// A call's `error` as [`parse_error`] reads it, without building the object: a string
/// `kind`, a string `message` or none, other members passed over. None for anything
/// `parse_error` refuses (a repeated key among them), so the general reader says why.
fn native_error(c: &mut Cursor<'_>) -> Option<Observed> {
    let (mut kind, mut message) = (None, None);
    let mut others: Vec<String> = Vec::new();
    members(c, |c, key| {
        let slot = match key {
            "kind" => &mut kind,
            "message" => &mut message,
            _ => {
                if others.iter().any(|k| *k == key) {
                    return None;
                }
                others.push(key.to_string());
                return c.raw(6).map(drop);
            }
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(c.string_value()?.into_owned());
        Some(())
    })?;
    Some(Observed::Error {
        kind: kind?,
        message: message.unwrap_or_default(),
    })
}

/// A result's text, checked but not built, and its fingerprint; None for a result that
/// may be an MCP error or a JSON-RPC envelope (a top-level key `jsonrpc` or `isError`,
/// however escaped), which the general reader reads (`observed_result` looks at nothing
/// else). The keys are looked at in the pass that checks the text, where three searches
/// of the text for their spellings cost a tenth of that pass.
fn plain_result<'a>(c: &mut Cursor<'a>) -> Option<(&'a str, Option<Fingerprint>)> {
    let mut envelope = false;
    let (text, fingerprint) = crate::jcs::checked_fingerprint(c, 5, |key| {
        envelope |= matches!(key, "jsonrpc" | "isError");
    })?;
    (!envelope).then_some((text, fingerprint))
}

/// What a line's reader notes on the way, for the decision's warnings.
#[derive(Default)]
struct Notes {
    /// Results that were whole JSON-RPC responses, by place.
    envelopes: Vec<String>,
}

impl Notes {
    fn into_warnings(self) -> Vec<String> {
        let Some(first) = self.envelopes.first() else {
            return Vec::new();
        };
        vec![format!(
            "json_rpc_unwrapped: {} result(s) were whole JSON-RPC responses (first: {first}); \
             each response's `result` was compared, not its `id`, which differs per call",
            self.envelopes.len()
        )]
    }
}

/// Reads one sample in whichever shape it comes: native `{"calls": [...]}` or
/// `{"turns": [[...], ...]}`, a logged conversation `{"messages": [...]}` (OpenAI or
/// Anthropic), an OpenAI assistant message (`tool_calls`), an Anthropic message
/// (`tool_use` content blocks), or a list of MCP `tools/call` params. A bare message or
/// MCP list carries no results: `eval` executes its calls.
fn parse_sample(s: &Value, field: &str, notes: &mut Notes) -> Result<Sample, TaskError> {
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
        Value::Array(items) => return parse_mcp_calls(items, field),
        Value::Object(o) => o,
        _ => return Err(shape_error()),
    };
    if o.contains_key("messages") {
        known_fields(o, field, &["messages"])?;
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
        no_duplicates(o, field)?;
        check_role(o, field)?;
        let mut t = Transcript::default();
        t.assistant(o, field)?;
        return Ok(t.sample);
    }
    known_fields(o, field, &["calls", "turns"])?;
    match (o.get("calls"), o.get("turns")) {
        (Some(_), Some(_)) => Err(err(field, "a sample has `calls` or `turns`, not both")),
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

/// Provider messages are read leniently (they grow fields often), but a message from
/// another role than the assistant is not a plan.
fn check_role(o: &Object, field: &str) -> Result<(), TaskError> {
    match o.get("role") {
        None => Ok(()),
        Some(Value::String(r)) if r == "assistant" => Ok(()),
        Some(_) => Err(err(
            format!("{field}.role"),
            "expected \"assistant\": only the model's own message is a plan",
        )),
    }
}

fn tool_name(o: &Object, key: &str, field: &str) -> Result<String, TaskError> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        _ => Err(err(format!("{field}.{key}"), "expected the tool's name")),
    }
}

fn foreign_call(tool: String, arguments: Arguments, origin: String) -> Call {
    Call {
        origin: Some(origin.into()),
        tool,
        arguments,
        observed: Observed::Missing,
    }
}

/// A sample read from provider messages: each assistant message's calls are a turn, and
/// a result finds its call by the provider's call id.
#[derive(Default)]
struct Transcript {
    sample: Sample,
    /// Call id -> index of the call, for the results that name it.
    ids: BTreeMap<String, usize>,
}

impl Transcript {
    /// An assistant message in either provider's shape: OpenAI `tool_calls`, or
    /// Anthropic `tool_use` content blocks. Text is the model's prose, not plan.
    fn assistant(&mut self, o: &Object, field: &str) -> Result<(), TaskError> {
        let before = self.sample.calls.len();
        if o.contains_key("tool_calls") {
            self.openai_calls(o, field)?;
        } else if let Some(Value::Array(blocks)) = o.get("content") {
            self.anthropic_calls(blocks, &format!("{field}.content"))?;
        }
        let made = self.sample.calls.len() - before;
        if made > 0 {
            self.sample.turns.push(made);
        }
        Ok(())
    }

    fn register(&mut self, id: Option<&Value>, at: &str) -> Result<(), TaskError> {
        let index = self.sample.calls.len();
        match id {
            None => Ok(()),
            Some(Value::String(id)) => match self.ids.insert(id.clone(), index) {
                None => Ok(()),
                Some(_) => Err(err(
                    at,
                    format!("call id {id:?} is used by an earlier call too"),
                )),
            },
            Some(_) => Err(err(at, "expected a string")),
        }
    }

    /// `{"role":"assistant","tool_calls":[{"id":..,"type":"function","function":{"name":..,
    /// "arguments":"<JSON text>"}}]}`. The arguments text is the model's output: text that
    /// is not JSON spoils that call (`Arguments::Malformed`), not the task.
    fn openai_calls(&mut self, o: &Object, field: &str) -> Result<(), TaskError> {
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
            no_duplicates(tc, &at)?;
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
            no_duplicates(f, &fat)?;
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
    fn anthropic_calls(&mut self, blocks: &[Value], field: &str) -> Result<(), TaskError> {
        for (i, b) in blocks.iter().enumerate() {
            let at = format!("{field}[{i}]");
            let b = b
                .as_object()
                .ok_or_else(|| err(&at, "expected a content block object"))?;
            if b.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            no_duplicates(b, &at)?;
            let tool = tool_name(b, "name", &at)?;
            let arguments = json_arguments(b, "input");
            self.register(b.get("id"), &format!("{at}.id"))?;
            self.sample.calls.push(foreign_call(tool, arguments, at));
        }
        Ok(())
    }

    /// Records what the call with `id` returned.
    fn result(
        &mut self,
        id: Option<&Value>,
        at: &str,
        observed: Observed,
    ) -> Result<(), TaskError> {
        let Some(Value::String(id)) = id else {
            return Err(err(at, "expected the id of the call this result answers"));
        };
        let Some(&index) = self.ids.get(id) else {
            return Err(err(at, format!("no earlier tool call has the id {id:?}")));
        };
        let call = &mut self.sample.calls[index];
        if !matches!(call.observed, Observed::Missing) {
            return Err(err(at, format!("a second result for call {id:?}")));
        }
        call.observed = observed;
        Ok(())
    }
}

/// `{"messages": [...]}`: a logged conversation in OpenAI or Anthropic shape. System,
/// user and plain text messages are context; assistant messages give the turns; OpenAI
/// `tool` messages and Anthropic `tool_result` blocks give the results, by call id.
fn parse_transcript(
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
        no_duplicates(o, &at)?;
        match o.get("role").and_then(Value::as_str) {
            Some("assistant") => t.assistant(o, &at)?,
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
                let Some(Value::Array(blocks)) = o.get("content") else {
                    continue;
                };
                for (i, b) in blocks.iter().enumerate() {
                    let bat = format!("{at}.content[{i}]");
                    let Some(b) = b.as_object() else { continue };
                    if b.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    no_duplicates(b, &bat)?;
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
            Some("system" | "developer") => {}
            _ => {
                return Err(err(
                    format!("{at}.role"),
                    "expected \"system\", \"user\", \"assistant\" or \"tool\"",
                ));
            }
        }
    }
    Ok(t.sample)
}

/// A message's or result block's content as a value: text read as JSON when it parses
/// and as a string otherwise; a list of text parts joined first.
fn content_value(content: Option<&Value>) -> Value {
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
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => crate::jcs::to_string(other),
    }
}

/// A result as recorded, read for what it is: an MCP `CallToolResult` with
/// `isError: true` is the tool's error, not a result; a whole JSON-RPC response is
/// unwrapped (its `id` differs per call, so compared whole every tool would look
/// flaky), and noted.
fn observed_result(v: Value, field: &str, notes: &mut Notes) -> Observed {
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

/// `[{"name":..,"arguments":{..}}, ...]`: the params of successive MCP `tools/call`s.
fn parse_mcp_calls(items: &[Value], field: &str) -> Result<Sample, TaskError> {
    let mut calls = Vec::with_capacity(items.len());
    for (i, c) in items.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let o = c.as_object().ok_or_else(|| {
            err(
                &at,
                "expected tools/call params {\"name\": ..., \"arguments\": {...}}",
            )
        })?;
        known_fields(o, &at, &["name", "arguments", "_meta"])?;
        let tool = tool_name(o, "name", &at)?;
        let arguments = json_arguments(o, "arguments");
        calls.push(foreign_call(tool, arguments, at));
    }
    Ok(Sample {
        calls,
        ..Sample::default()
    })
}

/// The arguments under `key` as written; a call that gives none passes `{}`.
fn json_arguments(o: &Object, key: &str) -> Arguments {
    arguments_or_empty(o.get(key).cloned())
}

fn arguments_or_empty(v: Option<Value>) -> Arguments {
    Arguments::Json(Arc::new(v.unwrap_or_else(|| Value::Object(Object::new()))))
}

fn parse_call(c: &Value, field: &str, notes: &mut Notes) -> Result<Call, TaskError> {
    let o = c
        .as_object()
        .ok_or_else(|| err(field, format!("expected a call object, found {}", c.kind())))?;
    known_fields(o, field, &["tool", "arguments", "result", "error"])?;
    let result_field = format!("{field}.result");
    call_of(
        o.get("tool").cloned(),
        o.get("arguments").cloned(),
        o.get("result")
            .cloned()
            .map(|v| observed_result(v, &result_field, notes)),
        o.get("error"),
        field,
    )
}

/// A native call from its fields, however they were read.
fn call_of(
    tool: Option<Value>,
    arguments: Option<Value>,
    result: Option<Observed>,
    error: Option<&Value>,
    field: &str,
) -> Result<Call, TaskError> {
    let tool = match tool {
        Some(Value::String(s)) => s,
        _ => return Err(err(format!("{field}.tool"), "expected the tool's name")),
    };
    let observed = match (result, error) {
        (Some(_), Some(_)) => {
            return Err(err(field, "a call has a result or an error, not both"));
        }
        (Some(r), None) => r,
        (None, Some(e)) => parse_error(e, &format!("{field}.error"))?,
        (None, None) => Observed::Missing,
    };
    Ok(Call {
        origin: None,
        tool,
        // Arguments that are not an object are the model's mistake, not the file's:
        // the sample becomes malformed (canonicalization says so), the task is decided.
        arguments: arguments_or_empty(arguments),
        observed,
    })
}

fn parse_error(e: &Value, field: &str) -> Result<Observed, TaskError> {
    let o = e
        .as_object()
        .ok_or_else(|| err(field, "expected {\"kind\": ..., \"message\": ...}"))?;
    no_duplicates(o, field)?;
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

impl Sample {
    /// The index ranges of the sample's turns, in order.
    pub fn turn_ranges(&self) -> Vec<std::ops::Range<usize>> {
        turn_ranges(&self.turns, self.calls.len())
    }
}

/// The index ranges of `calls` calls grouped by turn lengths `turns` (empty: every call
/// its own turn), for a sample and for its prepared steps alike.
pub(crate) fn turn_ranges(turns: &[usize], calls: usize) -> Vec<std::ops::Range<usize>> {
    if turns.is_empty() {
        return (0..calls).map(|j| j..j + 1).collect();
    }
    let mut start = 0;
    turns
        .iter()
        .map(|&len| {
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
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
    pub(crate) fn key_id<'a>(&'a self, keys: &mut Keys<'a, impl Form>) -> Option<u32> {
        match self {
            Observed::Result(p) => Some(keys.payload(p)),
            other => other.key().map(|k| keys.id(k)),
        }
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

    /// Past the short list of fingerprints a table keeps ([`FEW`]), results are
    /// told apart and found again as before: equal results one id, distinct ones their
    /// own, whichever of the list or the map holds them.
    #[test]
    fn many_distinct_results_keep_their_ids() {
        let n = 3 * FEW;
        let result = |i: usize| {
            let text = format!("{{\"n\":{i},\"s\":\"r{i}\"}}");
            Observed::Result(Payload::from(crate::json::parse(&text).unwrap()))
        };
        let results: Vec<Observed> = (0..n).chain((0..n).rev()).map(result).collect();
        let ids = result_ids(&results);
        let (first, again) = ids.split_at(n);
        let distinct: std::collections::BTreeSet<_> = first.iter().collect();
        assert_eq!(distinct.len(), n, "{first:?}");
        let back: Vec<_> = again.iter().rev().copied().collect();
        assert_eq!(back, first);
    }

    /// What each sample's first call of `line` observed.
    fn first_calls(line: &[u8]) -> Vec<Observed> {
        let task = parse_task_line(line).unwrap();
        (task.samples.iter())
            .map(|s| s.calls[0].observed.clone())
            .collect()
    }

    /// Whether a payload's RFC 8785 form was printed.
    fn printed(o: &Observed) -> bool {
        match o {
            Observed::Result(Payload(PayloadRepr::Text(t))) => t.canonical.get().is_some(),
            other => panic!("{other:?}"),
        }
    }

    /// Results whose fingerprints differ from every other key's get their ids unprinted;
    /// those that print alike are printed, compared and agree, an error among them.
    #[test]
    fn results_are_told_apart_without_printing() {
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1.0,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":2,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"b":"x","a":10e-1}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1.0,"b":"x"}}]},
            {"calls":[{"tool":"x","arguments":{},"error":{"kind":"k","message":"m"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":[1,{"c":null}],"b":"y"}}]}]}"#;
        let observed = first_calls(line);
        let ids: Vec<Option<u32>> = result_ids(&observed).into_iter().collect();
        let want = [0, 1, 0, 0, 2, 2, 3];
        assert_eq!(ids, want.map(Some));
        for (i, o) in observed.iter().enumerate() {
            // The results that share a form with another key were printed; no other.
            if i != 4 {
                assert_eq!(printed(o), [0, 2, 3, 5].contains(&i), "result {i}");
            }
        }
        // A repeated key leaves the fingerprint out; the result is printed and keyed.
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":[1]}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":0,"a":1}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"a":1}}]}]}"#;
        let observed = first_calls(line);
        assert_eq!(result_ids(&observed), [0, 1, 1].map(Some));
        assert!(printed(&observed[1]) && printed(&observed[2]) && !printed(&observed[0]));
    }

    /// The first result waits unprinted; whatever comes next is still compared with
    /// its printed form: an error that prints the same, a text that reads the same.
    #[test]
    fn the_first_result_keys_as_if_printed() {
        let line = br#"{"task_id":"t","samples":[
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"message":"m","kind":"k"}}}]},
            {"calls":[{"tool":"x","arguments":{},"error":{"kind":"k","message":"m"}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error": {"kind":"k","message":"m"}}}]},
            {"calls":[{"tool":"x","arguments":{},"result":{"error":{"kind":"k","message":"n"}}}]},
            {"calls":[{"tool":"x","arguments":{}}]}]}"#;
        let task = parse_task_line(line).unwrap();
        let observed: Vec<&Observed> = task.samples.iter().map(|s| &s.calls[0].observed).collect();
        for first in 0..observed.len() {
            // Every order of arrival, each result first once.
            let order: Vec<usize> = (first..observed.len()).chain(0..first).collect();
            let mut keys = Keys::new(Jcs);
            let mut ids = vec![None; observed.len()];
            for &i in &order {
                ids[i] = observed[i].key_id(&mut keys);
            }
            let same = Some(ids[0].unwrap());
            assert_eq!(&ids[..4], &[same; 4], "first {first}");
            assert!(ids[4].is_some() && ids[4] != same, "first {first}");
            assert_eq!(ids[5], None);
        }
    }

    /// So does the first value: `1` and `1.0` are two trees with one RFC 8785 form.
    #[test]
    fn the_first_value_keys_as_if_printed() {
        let values: Vec<Value> = [r#"{"a":1}"#, r#"{"a":1.0}"#, r#"{"a":2}"#]
            .iter()
            .map(|t| crate::json::parse(t).unwrap())
            .collect();
        for first in 0..values.len() {
            let mut keys = Keys::new(Jcs);
            let mut ids = [0; 3];
            for i in (first..values.len()).chain(0..first) {
                ids[i] = keys.value(&values[i]);
            }
            assert_eq!(ids[0], ids[1], "first {first}");
            assert_ne!(ids[0], ids[2], "first {first}");
        }
    }

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

    /// The one-pass reader either declines a line or reads it exactly as the general
    /// reader does, results kept as text included.
    fn same_either_way(line: &[u8]) {
        let general = parse_task_line_general(line);
        if let Some(fast) = read_native(line) {
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

    /// Repeats are found again; past the bound new things are computed every time and
    /// the list stops growing, so a task of many distinct calls stays linear.
    #[test]
    fn recent_remembers_a_bounded_few() {
        let computed = std::cell::Cell::new(0);
        let mut recent: Recent<u32, u32> = Recent::new();
        let mut get = |k: u32| {
            recent.get_or(k, || {
                computed.set(computed.get() + 1);
                k * 10
            })
        };
        assert_eq!((get(1), get(1), get(2)), (10, 10, 20));
        assert_eq!(computed.get(), 2, "the repeat was not computed again");
        for k in 0..200 {
            assert_eq!(get(k), k * 10);
        }
        let before = computed.get();
        assert_eq!(get(150), 1500, "answers stay right past the bound");
        assert_eq!(
            computed.get(),
            before + 1,
            "150 did not fit, so it is computed again"
        );
        assert_eq!(get(5), 50);
        assert_eq!(computed.get(), before + 1, "5 fit within the first 64");
        assert_eq!(recent.0.len(), Recent::<u32, u32>::CAP);
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

    fn result(json: &str) -> Observed {
        Observed::Result(crate::json::parse(json).unwrap().into())
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
        assert_eq!(t.samples[0].turn_ranges(), [0..2, 2..3]);
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
                r#"{"task_id":"t","samples":[{"messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"w","arguments":"{}"}},{"id":"a","function":{"name":"w","arguments":"{}"}}]}]}]}"#,
                "samples[0].messages[0].tool_calls[1].id",
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
